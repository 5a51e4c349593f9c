"""``--compat jieba-analyse``: ``simhash.Simhash(jieba.analyse.extract_tags(text, topK=N, withWeight=True)).value``
(PyPI jieba 0.42, 1e0ng's PyPI simhash 2.1) reproduced bit for bit by the compiled mode, on 1,000 Chinese
documents from ../shared and on generated text; the cut against Python jieba's own; the md5 and fold kernels
against hashlib and the library; every path (sign, dedup, index create/add/query, serve); refusals in one line.
Tests that need the peers skip, saying so, when they are not importable."""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hostile import error_line
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neardup import run_dedup
from neardup.cli import main
from neardup.config import DedupConfig
from neardup.errors import ConfigError
from neardup.index.disk import SimHashDiskIndex
from neardup.kernels.jieba_analyse import fold_majority, md5_tail64_batch
from neardup.kernels.segment import decode_utf8, rs_cut
from neardup.sketches.compat import jieba_analyse as ja
from neardup.sketches.simhash import feature_signer
from neardup.text.jieba_dict import jieba_analyse_stop_words, jieba_median, tables

try:
    import jieba
    import jieba.analyse
    jieba.setLogLevel(60)
    HAVE_JIEBA = True
except ImportError:          # pragma: no cover (jieba is a dependency of neardup)
    HAVE_JIEBA = False
try:
    import simhash
except ImportError:
    simhash = None

needs_jieba = pytest.mark.skipif(not HAVE_JIEBA, reason="jieba is not importable")
needs_recipe = pytest.mark.skipif(not HAVE_JIEBA or simhash is None,
                                  reason="the recipe's packages are not importable: jieba and 1e0ng's simhash "
                                         "(pip install simhash)")


def recipe(text: str, top_n: int = 20) -> int:
    """The crawler's recipe itself."""
    return simhash.Simhash(jieba.analyse.extract_tags(text, topK=top_n, withWeight=True)).value


@pytest.fixture(scope="module")
def documents(chinese_pages) -> list[str]:
    """1,000 Chinese documents: the 104 pages of ../shared whole, and 896 passages of them (4 to 40
    consecutive lines at a seeded random place)."""
    pages = [t for _, t in chinese_pages]
    rng = random.Random(40)
    docs = list(pages)
    while len(docs) < 1000:
        lines = rng.choice(pages).splitlines(keepends=True)
        a = rng.randrange(len(lines))
        docs.append("".join(lines[a:a + rng.randint(4, 40)]))
    return docs


@needs_recipe
def test_equal_to_the_python_recipe_on_1000_chinese_documents(documents):
    got = ja.simhash_batch(documents).tolist()
    assert len(documents) == 1000 and sum(g != 0 for g in got) > 900
    bad = [i for i, (d, g) in enumerate(zip(documents, got)) if recipe(d) != g]
    assert not bad, (len(bad), [ja.extract_tags(documents[i])[:3] for i in bad[:3]])
    # other topK; the keywords and their weights as extract_tags gives them
    for top_n in (1, 5, 50, 200):
        sub = documents[::25]
        assert ja.simhash_batch(sub, top_n).tolist() == [recipe(d, top_n) for d in sub], top_n
    for d in documents[::50]:
        assert ja.extract_tags(d, 30) == jieba.analyse.extract_tags(d, topK=30, withWeight=True)


@needs_jieba
def test_the_cut_is_python_jiebas(chinese_pages):
    """Python jieba's cut (not the jieba tokenizer's jieba-rs): its han class and its HMM's pattern for
    ASCII, where jieba-rs keeps ``2003-04-29`` and ``1.47.3`` whole."""
    for _, text in chinese_pages:
        assert _cut(text) == list(jieba.cut(text))
    assert _cut("日期2003-04-29版本1.47.3。") == ["日期", "2003", "-", "04", "-", "29", "版本", "1.47", ".", "3", "。"]


def _cut(text: str) -> list[str]:
    data = text.encode("utf-8", "surrogatepass")
    cp, _ = decode_utf8(np.frombuffer(data or b"\0", np.uint8), 0, len(data))
    t = tables()
    args = list(t.rs_args())
    args[7] = t.log_total_lines
    ends = rs_cut(cp, *args, True).tolist()
    chars = [chr(c) for c in cp.tolist()]
    return ["".join(chars[a:b]) for a, b in zip([0, *ends], ends)]


_MIXED = st.one_of(
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
    st.sampled_from(["C++", "T恤", "B超", "中国", "人民", "北京烤鸭", "中华人民共和国", "A股", "iPhone", "卡拉OK", "3D",
                     "Linux", "The", "OF", "and", "的", "了", "\r\n"]),
    st.sampled_from(list("的了是在一不人有我他这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之年过发后")),
    st.sampled_from(list(" \t\n\r，。、！？；：“”（）abcXYZ019.#+&-_%@/:　")),
    st.characters(min_codepoint=0x3400, max_codepoint=0x4DBF),      # CJK extension A: no han run for Python jieba
    st.characters(min_codepoint=0x9FD0, max_codepoint=0x9FFF),      # past U+9FD5
    st.characters(min_codepoint=0x20, max_codepoint=0x2FFF),
    st.characters(min_codepoint=0x10000, max_codepoint=0x2A6DF))


@needs_recipe
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_MIXED, max_size=80).map("".join), min_size=1, max_size=5))
@example(["2003-04-29 bugs.debian.org 1.47.3. a..b 12% 1.5% x_y a+b C++ THE The of 中国人民 中国人民 人民中国"])
@example(["", " ", "\r\n\r\n", "的了，。", "the of and is", "a b c 1 2 3", "㐀㐁㐂", "𠀀𠀁"])
def test_equal_to_the_recipe_on_generated_text(texts):
    assert [_cut(t) for t in texts] == [list(jieba.cut(t)) for t in texts]
    assert ja.simhash_batch(texts).tolist() == [recipe(t) for t in texts]
    for t in texts:
        assert ja.extract_tags(t) == jieba.analyse.extract_tags(t, topK=20, withWeight=True)


def test_documents_without_keywords_sign_zero():
    """Empty text, punctuation, white space, one-character words, stop words only, a lone surrogate: no
    keyword, fingerprint 0 (the library's value of no features), keyword count 0."""
    texts = ["", "   \n\t", "，。！？", "的 了 是", "the of and is The OF", "\r\n\r\n", "a b c 1 2 3", "\ud800", "中"]
    fps, sizes = ja.simhash_batch_sizes(texts)
    assert fps.tolist() == [0] * len(texts) and sizes.tolist() == [0] * len(texts)
    if simhash is not None:
        assert simhash.Simhash([]).value == 0


def test_long_and_odd_keywords_hash_as_md5():
    """md5's padding at every length around the 64-byte blocks, and keywords of one or several blocks."""
    rng = np.random.default_rng(7)
    blobs = [bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in [*range(0, 140), 1000, 4097]]
    off = np.zeros(len(blobs) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in blobs], out=off[1:])
    got = md5_tail64_batch(np.frombuffer(b"".join(blobs), np.uint8), off).tolist()
    assert got == [int.from_bytes(hashlib.md5(b).digest()[-8:], "big") for b in blobs]
    long_word = "x" * 300 + "中文" + "y" * 90          # one ASCII run: one keyword of several md5 blocks
    kws = ja.extract_tags(long_word + " 中华人民共和国")
    assert ["x" * 300, "y" * 90] == sorted(w for w, _ in kws if w.isascii())


@pytest.mark.skipif(simhash is None, reason="1e0ng's simhash is not importable (pip install simhash)")
def test_fold_is_the_librarys_on_float_weights():
    """The library's majority over float weights (S_j > W / 2, sums left to right), ties included."""
    rng = random.Random(3)
    for trial in range(300):
        k = rng.randint(1, 40)
        words = [f"w{trial}-{i}" for i in range(k)]
        pool = [0.5, 0.25, 1e-3, 1 / 3, 0.1, 2.0]
        weights = [rng.choice(pool) if trial % 2 else rng.random() for _ in range(k)]
        hashes = ja.keyword_hashes(words)
        got = int(fold_majority(hashes, np.array(weights), k))
        assert got == simhash.Simhash(list(zip(words, weights))).value, trial


@needs_jieba
def test_jiebas_tables_are_the_ones_read():
    """The IDF values, median and stop words the kernel reads are jieba.analyse's own."""
    tfidf = jieba.analyse.default_tfidf
    assert tables().idf_median == tfidf.median_idf == jieba_median(list(tfidf.idf_freq.values()))
    assert jieba_analyse_stop_words() == frozenset(tfidf.STOP_WORDS)
    assert jieba_median([1.0, 2.0, 3.0, 4.0]) == 3.0          # the upper middle, where np.median gives 2.5
    words = [w for w in list(tfidf.idf_freq)[::97] if len(w) >= 2]
    # a word alone is its own keyword: weight = 1 · idf / 1
    for w in words[:200]:
        kws = ja.extract_tags(w)
        if kws and kws[0][0] == w:
            assert kws[0][1] == tfidf.idf_freq[w], w


# ------------------------------------------------------------------------------------------ every path
def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps({"id": k, "text": t}, ensure_ascii=False) + "\n" for k, t in rows),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sample(chinese_pages) -> list[str]:
    pages = [t for _, t in chinese_pages]
    # a page, its near copy (one line dropped), other pages, and a text with no keyword
    lines = pages[0].splitlines(keepends=True)
    return [pages[0], "".join(lines[:3] + lines[4:]), *pages[1:6], "，。"]


def test_every_path_signs_alike(sample, tmp_path):
    """sign, dedup, index create/add/query and the signer give the same fingerprints (and the recipe's,
    where importable)."""
    want = ja.simhash_batch(sample, 12).tolist()
    assert feature_signer(compat="jieba-analyse", top_n=12)(sample)[0].tolist() == want
    if simhash is not None:
        assert want == [recipe(t, 12) for t in sample]
    src = _jsonl(tmp_path / "t.jsonl", [(f"d{i}", t) for i, t in enumerate(sample)])
    runner = CliRunner()
    res = runner.invoke(main, ["sign", str(src), "--method", "simhash", "--compat", "jieba-analyse", "--top-n", "12"])
    assert res.exit_code == 0, res.output
    assert [json.loads(x)["simhash"] for x in res.output.splitlines()] == want
    # the default topK is 20
    res = runner.invoke(main, ["sign", str(src), "--method", "simhash", "--compat", "jieba-analyse"])
    assert [json.loads(x)["simhash"] for x in res.output.splitlines()] == ja.simhash_batch(sample).tolist()
    # dedup: the near copy is a duplicate of the page within 3 bits; the text without keywords stays alone
    rep = run_dedup([str(src)], str(tmp_path / "o"), DedupConfig(method="simhash", compat="jieba-analyse", top_n=12,
                                                                  id_field="id", html=False, quiet=True, workers=1))
    recs = {r["id"]: r for r in map(json.loads, (tmp_path / "o" / "clusters.jsonl").read_text().splitlines())}
    near = bin(want[0] ^ want[1]).count("1")
    assert (recs["d1"]["cluster"] == "d0") == (near <= 3) and recs[f"d{len(sample) - 1}"]["kept"]
    assert rep["parameters"]["compat"] == "jieba-analyse"
    # the index: create, add, query
    idx = tmp_path / "idx"
    res = runner.invoke(main, ["index", "create", str(idx), "--method", "simhash", "--compat", "jieba-analyse",
                               "--top-n", "12"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["index", "add", str(idx), str(src), "--id-field", "id"])
    assert res.exit_code == 0, res.output
    with SimHashDiskIndex.open(idx, readonly=True) as index:
        keys, raw = index.store.fetch_arrays(index.store.live_ids())
        got = dict(zip(keys, raw.view("<u8").reshape(-1).tolist()))
    assert [got[f"d{i}"] for i in range(len(sample))] == want
    res = runner.invoke(main, ["index", "query", str(idx), "--text", sample[1]])
    assert res.exit_code == 0, res.output
    assert ("d0" in res.output) == (near <= 3) and "d1" in res.output
    # dedup --index: a day against the index (the same options, recorded by it), then its kept rows added
    day = _jsonl(tmp_path / "day.jsonl", [("n0", sample[0]), ("n1", "一段全新的中文文本，谈论天气和城市交通")])
    rep = run_dedup([str(day)], str(tmp_path / "o2"), DedupConfig(method="simhash", compat="jieba-analyse", top_n=12,
                                                                   id_field="id", html=False, quiet=True, workers=1,
                                                                   index=str(idx)))
    recs = {r["id"]: r for r in map(json.loads, (tmp_path / "o2" / "clusters.jsonl").read_text().splitlines())}
    assert not recs["n0"]["kept"] and recs["n0"].get("indexed") and recs["n1"]["kept"], recs
    assert rep["index"]["added"] == 1
    with SimHashDiskIndex.open(idx, readonly=True) as index:
        assert int(index.get("n1")[0]) == int(ja.simhash_batch(["一段全新的中文文本，谈论天气和城市交通"], 12)[0])


def test_serve_signs_as_the_recipe(sample, tmp_path):
    """``neardup serve`` over a jieba-analyse index: a checked text's matches and a stored fingerprint."""
    pytest.importorskip("fastapi", reason="the service needs FastAPI (pip install 'neardup[serve]')")
    pytest.importorskip("uvicorn", reason="the service needs uvicorn (pip install 'neardup[serve]')")
    from test_service import Server

    idx = tmp_path / "idx"
    with SimHashDiskIndex.create(idx, max_distance=3, compat="jieba-analyse") as index:
        index.add_batch(["p0"], sample[:1])
    s = Server(idx)
    try:
        status, res = s.call("POST", "/v1/check-and-add", {"documents": [{"id": "p3", "text": sample[3]}]})
        assert status == 200 and res["results"][0]["added"], res
        assert s.call("GET", "/v1/docs/p3")[1]["fingerprint"] == int(ja.simhash_batch([sample[3]])[0])
        status, res = s.call("POST", "/v1/check", {"documents": [{"text": sample[0]}]})
        assert status == 200 and {"id": "p0", "distance": 0} in res["results"][0]["matches"], res
    finally:
        s.stop()


@needs_recipe
def test_a_stop_word_file_is_set_stop_words(documents, tmp_path):
    """``--stop-words FILE`` is ``jieba.analyse.set_stop_words(FILE)``: its words are stop words besides
    jieba's, a piece matching when its lower() is one (so ``Linux`` in the file matches nothing, ``http``
    matches ``HTTP``); on every path that signs."""
    words = tmp_path / "stop.txt"
    words.write_text("命令\n选项\n文件\n使用\n程序\nLinux\nhttp\nfb\n", encoding="utf-8")
    tf = jieba.analyse.TFIDF()            # a fresh extractor: the module's default one stays untouched
    tf.set_stop_words(str(words))
    sub = documents[::10]
    want = [simhash.Simhash(tf.extract_tags(d, topK=20, withWeight=True)).value for d in sub]
    got = ja.simhash_batch(sub, stop_words=str(words)).tolist()
    assert got == want and got != ja.simhash_batch(sub).tolist()
    for d in sub[:20]:
        assert ja.extract_tags(d, 20, str(words)) == tf.extract_tags(d, topK=20, withWeight=True)
    src = _jsonl(tmp_path / "t.jsonl", [(f"d{i}", t) for i, t in enumerate(sub[:8])])
    res = CliRunner().invoke(main, ["sign", str(src), "--method", "simhash", "--compat", "jieba-analyse",
                                    "--stop-words", str(words)])
    assert res.exit_code == 0, res.output
    assert [json.loads(x)["simhash"] for x in res.output.splitlines()] == want[:8]
    idx = tmp_path / "idx"
    with SimHashDiskIndex.create(idx, compat="jieba-analyse", stop_words=str(words)) as index:
        index.add_batch([f"d{i}" for i in range(8)], sub[:8])
        assert [int(index.get(f"d{i}")[0]) for i in range(8)] == want[:8]


@needs_recipe
def test_an_idf_file_is_set_idf_path(documents, tmp_path):
    """``--idf FILE`` is ``jieba.analyse.set_idf_path(FILE)``: the file's idf and its median for unknown
    words. A table written by hand, and one ``idf fit --compat jieba-analyse`` counted (jieba reads its
    first line as one more word; the median stays), give the recipe's values with that file; a table of
    another tokenizer is refused in one line."""
    sub = documents[::20]
    hand = tmp_path / "hand.idf"          # jieba's own words, every value halved, and an even count
    base = jieba.analyse.default_tfidf.idf_freq
    hand.write_text("".join(f"{w} {v / 2:.6f}\n" for w, v in list(base.items())[:5000:3]), encoding="utf-8")
    src = _jsonl(tmp_path / "d.jsonl", [(f"d{i}", t) for i, t in enumerate(documents[:300])])
    fitted = tmp_path / "fitted.idf"
    res = CliRunner().invoke(main, ["idf", "fit", str(src), "--compat", "jieba-analyse", "-o", str(fitted)])
    assert res.exit_code == 0, res.output
    assert fitted.read_text(encoding="utf-8").startswith("#neardup-tokenizer:jieba-analyse ")
    for table in (hand, fitted):
        tf = jieba.analyse.TFIDF(idf_path=str(table))
        want = [simhash.Simhash(tf.extract_tags(d, topK=20, withWeight=True)).value for d in sub]
        assert ja.simhash_batch(sub, idf=str(table)).tolist() == want, table.name
        for d in sub[:10]:
            assert ja.extract_tags(d, 20, idf=str(table)) == tf.extract_tags(d, topK=20, withWeight=True)
        res = CliRunner().invoke(main, ["sign", str(_jsonl(tmp_path / "s.jsonl", [("a", sub[0])])), "--method",
                                        "simhash", "--compat", "jieba-analyse", "--idf", str(table)])
        assert res.exit_code == 0 and json.loads(res.output)["simhash"] == want[0], res.output
    # the counted words are the keywords: every fitted word is one extract_tags can give
    words = {ln.split(" ")[0] for ln in fitted.read_text(encoding="utf-8").splitlines()[1:]}
    assert words == {w for d in documents[:300] for w in ja.keywords([d])[0]}
    other = tmp_path / "jieba.idf"
    res = CliRunner().invoke(main, ["idf", "fit", str(src), "--tokenizer", "jieba", "-o", str(other)])
    assert res.exit_code == 0, res.output
    for table, flags, made in ((other, ["--compat", "jieba-analyse"], "--tokenizer jieba"),
                               (fitted, ["--tokenizer", "jieba"], "--compat jieba-analyse")):
        res = CliRunner().invoke(main, ["sign", str(src), "--method", "simhash", "--idf", str(table), *flags])
        assert res.exit_code == 2 and made in error_line(res.output), res.output


# ------------------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize("flags,option", [
    (["--idf", "jieba"], "--idf"),
    (["--tokenizer", "jieba"], "--tokenizer"),
    (["--weighting", "tfidf"], "--weighting"),
    (["--ngram", "1"], "--ngram"),
    (["--top-n", "0"], "--top-n"),
    (["--top-n", "x"], "--top-n"),
])
def test_refused_combinations_are_one_line(flags, option, tmp_path):
    src = _jsonl(tmp_path / "x.jsonl", [("a", "中文文本")])
    for cmd in (["sign", str(src)], ["dedup", str(src), "-o", str(tmp_path / "o")],
                ["index", "create", str(tmp_path / "i")]):
        res = CliRunner().invoke(main, [*cmd, "--method", "simhash", "--compat", "jieba-analyse", *flags])
        assert res.exit_code in (1, 2), (cmd, res.output)          # (index create: 1, as for every refusal)
        assert option in error_line(res.output), (cmd, res.output)
    assert not (tmp_path / "o").exists() and not (tmp_path / "i").exists()


def test_word_files_are_refused_naming_the_option(tmp_path):
    words = tmp_path / "w.txt"
    words.write_text("中文 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="--user-dict.*jieba-analyse"):
        DedupConfig(method="simhash", compat="jieba-analyse", user_dict=str(words)).resolved()
    res = CliRunner().invoke(main, ["idf", "fit", str(words), "--compat", "jieba-analyse", "--user-dict", str(words),
                                    "-o", str(tmp_path / "t")])
    assert res.exit_code == 2 and "--user-dict" in error_line(res.output) and not (tmp_path / "t").exists()
    res = CliRunner().invoke(main, ["idf", "fit", str(words), "--compat", "1e0ng", "-o", str(tmp_path / "t")])
    assert res.exit_code == 2 and "--compat 1e0ng" in error_line(res.output)
    # the crawler who tried 1e0ng with jieba's table is pointed to this mode
    with pytest.raises(ConfigError, match="--compat jieba-analyse"):
        DedupConfig(method="simhash", compat="1e0ng", idf="jieba").resolved()
    with pytest.raises(ValueError, match="top_n"):
        ja.simhash_batch(["中文"], 0)
    # a stop-word file that cannot be read: one line naming it; an empty one changes nothing
    src = _jsonl(tmp_path / "x.jsonl", [("a", "中文文本处理的方法")])
    res = CliRunner().invoke(main, ["sign", str(src), "--method", "simhash", "--compat", "jieba-analyse",
                                    "--stop-words", str(tmp_path / "absent.txt")])
    assert res.exit_code == 2 and "absent.txt" in error_line(res.output), res.output
    (tmp_path / "empty.txt").write_bytes(b"")
    text = ["中文文本处理的方法，文本处理"]
    assert ja.simhash_batch(text, stop_words=str(tmp_path / "empty.txt")).tolist() == ja.simhash_batch(text).tolist()


def test_explain_folds_as_the_library(chinese_pages):
    """``neardup explain`` of a jieba-analyse run: the keywords, weights and fingerprint of the signer,
    also on the second page, where bit 36's Σ ±w is −1.8e-16 yet S_j > W / 2 (the library sets it)."""
    from neardup.explain.evidence import explain_simhash
    from neardup.kernels.simhash import fold_one

    pages = [t for _, t in chinese_pages][:8]
    kws = ja.extract_tags(pages[1])
    h, w = ja.keyword_hashes([k for k, _ in kws]), np.array([x for _, x in kws])
    assert int(fold_majority(h, w, len(w))) != int(fold_one(h, w, 0, len(w)))      # the case is real
    for a, b in zip(pages[::2], pages[1::2]):
        r = explain_simhash(a, b, compat="jieba-analyse")
        assert r["consistent"] and r["b"]["fingerprint"] == int(ja.simhash_batch([b])[0])
        assert [t["feature"] for t in r["a"]["top"]] == [k for k, _ in ja.extract_tags(a)][:10]
