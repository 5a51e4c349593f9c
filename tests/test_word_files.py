"""The user's own word files for Chinese SimHash (issue 10, item 4): ``neardup idf fit``, ``--idf PATH``,
``--user-dict PATH``, ``--stop-words PATH`` — on the yanyiwu-compatible compiled path (against the
Python port, and against the shipped tables given as files) and on the native path (against
``SimHasher.fit_idf``), in dedup, sign and the index; each bad file line named."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.config import DedupConfig
from neardup.errors import ConfigError, InputFormatError
from neardup.index.disk import IndexConfigError, SimHashDiskIndex
from neardup.sketches.compat import yanyiwu
from neardup.sketches.simhash import SimHasher, feature_signer
from neardup.text import dictionaries
from neardup.text.jieba_dict import read_idf


def _pages(shared) -> list[str]:
    root = shared / "corpora"
    paths = sorted((root / "manpages_zh_sample").glob("zh_*/*")) + sorted(
        (root / "yanyiwu_simhash_testdata").glob("news_content*"))
    return [p.read_text(encoding="utf-8") for p in paths]


def _jsonl(path: Path, texts) -> Path:
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(texts)), encoding="utf-8")
    return path


def _hmm_words(texts) -> list[str]:
    """Two-character words the HMM made (not dictionary words), in text order."""
    trie = yanyiwu._resources().trie
    out = []
    for t in texts:
        out += [w for w in yanyiwu.cut(t) if len(w) == 2 and trie.get(w) is None and all(
            "\u4e00" <= c <= "\u9fff" for c in w)]
    return out


@pytest.fixture(scope="module")
def files(shared, tmp_path_factory) -> dict:
    """A user dictionary in all three line shapes (with one-character words), an IDF table fitted on
    the pages by cppjieba's segmentation, and a stop-word list."""
    d = tmp_path_factory.mktemp("words")
    texts = _pages(shared)
    made = _hmm_words(texts)
    assert len(made) >= 4
    (d / "user.txt").write_text("\n".join([
        "手册页面", "命令行工具 n", "程序 3 n", "文件系统 900000 n", made[0][0], f"{made[1][0]} x",
        f"{made[2]} 50 n"]) + "\n", encoding="utf-8")
    runner = CliRunner()
    src = _jsonl(d / "pages.jsonl", texts)
    res = runner.invoke(main, ["idf", "fit", str(src), "--compat", "yanyiwu", "-o", str(d / "idf.txt")])
    assert res.exit_code == 0, res.output
    (d / "stop.txt").write_text("命令\n选项\n文件\n", encoding="utf-8")
    return {"user_dict": str(d / "user.txt"), "idf": str(d / "idf.txt"), "stop_words": str(d / "stop.txt"),
            "hmm": made, "dir": d}


# -- yanyiwu's path: the compiled kernel against the Python port, with the user's files ---------
@pytest.mark.parametrize("which", [("user_dict",), ("idf",), ("stop_words",), ("user_dict", "idf", "stop_words")])
def test_compiled_equals_port_with_user_files(shared, files, which):
    texts = _pages(shared)
    kw = {k: files[k] for k in which}
    got = yanyiwu.simhash_batch(texts, 20, **kw)
    want = [yanyiwu.simhash_reference(t, 20, **kw) for t in texts]
    assert got.tolist() == want
    assert got.tolist() != yanyiwu.simhash_batch(texts, 20).tolist()      # the files change fingerprints


def test_segmentation_with_a_user_dictionary(shared, files):
    texts = _pages(shared)
    for t in texts[:20]:
        assert yanyiwu.cut_compiled(t, files["user_dict"]) == yanyiwu.cut(t, files["user_dict"])
    text = next(t for t in texts if "手册页面" in t.replace("手册页", "手册页面", 1)).replace("手册页", "手册页面", 1)
    assert "手册页面" in yanyiwu.cut(text, files["user_dict"])
    # a one-character user word stays a word: the HMM no longer joins it to its neighbour
    word = files["hmm"][0]
    text = next(t for t in texts if word in t)
    before, after = yanyiwu.cut(text), yanyiwu.cut(text, files["user_dict"])
    assert word in before and word not in after and word[0] in after


def test_shipped_tables_given_as_files_change_nothing(shared, tmp_path):
    """cppjieba's stop words and IDF table, passed as files, give the default fingerprints: the
    file route reads them by the same rules (mean over the file's lines for unknown words)."""
    import jieba

    texts = _pages(shared)
    idf, _ = read_idf(Path(jieba.__file__).parent / "analyse" / "idf.txt")
    (tmp_path / "idf.utf8").write_text("".join(f"{w} {v!r}\n" for w, v in idf.items()), encoding="utf-8")
    stop = shared / "corpora" / "cppjieba_dict" / "stop_words.utf8"
    want = yanyiwu.simhash_batch(texts, 10)
    got = yanyiwu.simhash_batch(texts, 10, idf=str(tmp_path / "idf.utf8"), stop_words=str(stop))
    assert got.tolist() == want.tolist()


def test_unknown_words_get_the_mean_over_lines_read(tmp_path):
    """cppjieba divides the IDF sum by the lines read, blank lines included."""
    p = tmp_path / "idf.txt"
    p.write_text("区块 20.5\n发展 3.0\n\n", encoding="utf-8")
    f = dictionaries.load_idf(p)
    assert f.mean == pytest.approx(23.5 / 3) and f.median == pytest.approx(11.75)
    kws = dict(yanyiwu.extract_keywords("区块链发展，未知词汇很多，未知词汇", 5, idf=str(p)))
    assert kws["区块"] == 20.5 and kws["发展"] == 3.0
    assert kws["词汇"] == pytest.approx(2 * 23.5 / 3)


# -- the native pipeline ---------------------------------------------------------------------------
def test_idf_fit_then_idf_path_equals_fit_idf(shared, tmp_path):
    """``neardup idf fit`` + ``--idf PATH`` weighs every word of the corpus as ``SimHasher.fit_idf``."""
    texts = _pages(shared)
    src = _jsonl(tmp_path / "p.jsonl", texts)
    res = CliRunner().invoke(main, ["idf", "fit", str(src), "--tokenizer", "jieba", "-o", str(tmp_path / "i.txt")])
    assert res.exit_code == 0, res.output
    fitted = SimHasher(tokenizer="jieba", ngram=1, weighting="tfidf", top_n=10).fit_idf(texts)
    from_file = SimHasher(tokenizer="jieba", ngram=1, weighting="tfidf", top_n=10, idf=str(tmp_path / "i.txt"))
    assert from_file.sign_batch(texts).tolist() == fitted.sign_batch(texts).tolist()
    cfg = DedupConfig(method="simhash", tokenizer="jieba", idf=str(tmp_path / "i.txt"), top_n=10).resolved()
    assert (cfg.weighting, cfg.ngram) == ("tfidf", 1)
    assert feature_signer(cfg.tokenizer, cfg.ngram, cfg.weighting, cfg.idf, cfg.top_n)(texts)[0].tolist() == \
        fitted.sign_batch(texts).tolist()


def test_idf_fit_is_deterministic_and_formatted(shared, tmp_path):
    texts = _pages(shared)
    a, b = _jsonl(tmp_path / "a.jsonl", texts), _jsonl(tmp_path / "b.jsonl", texts[::-1])
    runner = CliRunner()
    for src, out in ((a, "1.txt"), (b, "2.txt"), (a, "3.txt")):
        res = runner.invoke(main, ["idf", "fit", str(src), "-o", str(tmp_path / out)])
        assert res.exit_code == 0, res.output
    one = (tmp_path / "1.txt").read_bytes()
    assert one == (tmp_path / "2.txt").read_bytes() == (tmp_path / "3.txt").read_bytes()
    head, *lines = one.decode().splitlines()
    assert head.startswith("#neardup-tokenizer:jieba ")          # the tokenizer counted with, first
    words = [ln.split(" ")[0] for ln in lines]
    assert words == sorted(words) and len(set(words)) == len(words)
    n = len(texts)
    for ln in lines:
        w, v = ln.split(" ")
        df = (1 + n) / math.exp(float(v) - 1) - 1
        assert abs(df - round(df)) < 1e-6 and 1 <= round(df) <= n
    res = runner.invoke(main, ["idf", "fit", str(a), "--min-df", "3", "-o", str(tmp_path / "m.txt")])
    assert res.exit_code == 0, res.output
    kept = (tmp_path / "m.txt").read_text().splitlines()[1:]
    assert 0 < len(kept) < len(lines) and set(kept) <= set(lines)
    assert all((1 + n) / math.exp(float(ln.split(" ")[1]) - 1) - 1 >= 3 - 1e-6 for ln in kept)


def test_native_stop_words_are_dropped(tmp_path):
    (tmp_path / "stop.txt").write_text("the\nOf\n", encoding="utf-8")     # normalised like the text
    h = SimHasher(ngram=1, stop_words=str(tmp_path / "stop.txt"))
    plain = SimHasher(ngram=1)
    a, b = "alpha beta gamma delta", "alpha the beta of gamma THE delta"
    fps, sizes = h.sign_batch_sizes([a, b, "the of The"])
    assert fps[0] == fps[1] == plain.sign(a) and fps[0] != plain.sign(b)
    assert sizes.tolist() == [4, 4, 0]                                    # only stop words: an empty document


def test_native_user_dictionary(tmp_path):
    (tmp_path / "u.txt").write_text("区块链技术 5 n\n小明硕士\n", encoding="utf-8")
    text = "区块链技术发展很快，小明硕士毕业于中国科学院"
    h = SimHasher(tokenizer="jieba", ngram=1, user_dict=str(tmp_path / "u.txt"))
    assert "区块链技术" in h.shingler.tokens(text) and "小明硕士" in h.shingler.tokens(text)
    assert "区块链技术" not in SimHasher(tokenizer="jieba", ngram=1).shingler.tokens(text)
    assert h.sign(text) != SimHasher(tokenizer="jieba", ngram=1).sign(text)
    assert "user_dict_sha256" in h.config()


# -- the command line and the index ---------------------------------------------------------------
def test_dedup_and_sign_take_the_files(shared, files, tmp_path):
    texts = _pages(shared)
    src = _jsonl(tmp_path / "p.jsonl", texts)
    flags = ["--user-dict", files["user_dict"], "--idf", files["idf"], "--stop-words", files["stop_words"]]
    runner = CliRunner()
    res = runner.invoke(main, ["sign", str(src), "--method", "simhash", "--compat", "yanyiwu", "--top-n", "8", *flags])
    assert res.exit_code == 0, res.output
    want = yanyiwu.simhash_batch(texts, 8, user_dict=files["user_dict"], idf=files["idf"],
                                 stop_words=files["stop_words"])
    assert [json.loads(x)["simhash"] for x in res.output.splitlines()] == want.tolist()
    # the binary formats too (--compat with --format parquet used to be refused for a default --ngram)
    res = runner.invoke(main, ["sign", str(src), "--method", "simhash", "--compat", "yanyiwu", "--top-n", "8", *flags,
                               "--format", "parquet", "-o", str(tmp_path / "s.parquet")])
    assert res.exit_code == 0, res.output
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "s.parquet").column("simhash").to_pylist() == want.tolist()
    res = runner.invoke(main, ["dedup", str(src), "-o", str(tmp_path / "o"), "--method", "simhash", "--compat",
                               "yanyiwu", "--top-n", "8", "--no-html", "--id-field", "id", *flags])
    assert res.exit_code == 0, res.output
    params = json.loads((tmp_path / "o" / "report.json").read_text())["parameters"]
    assert params["user_dict"] == str(Path(files["user_dict"]).resolve())


def test_index_records_the_files_and_refuses_changed_ones(files, tmp_path):
    user = tmp_path / "u.txt"
    user.write_text(Path(files["user_dict"]).read_text(encoding="utf-8"), encoding="utf-8")
    idx = SimHashDiskIndex.create(tmp_path / "idx", compat="yanyiwu", user_dict=str(user), idf=files["idf"])
    idx.add("a", "手册页面说明了命令行工具的用法")
    idx.close()
    again = SimHashDiskIndex.open(tmp_path / "idx")
    assert again.config["user_dict"] == str(user.resolve())
    assert [k for k, _ in again.query("手册页面说明了命令行工具的用法")] == ["a"]
    again.close()
    with open(user, "a", encoding="utf-8") as fh:
        fh.write("新词\n")
    with pytest.raises(IndexConfigError, match="user_dict file .*u.txt has changed"):
        SimHashDiskIndex.open(tmp_path / "idx")


# -- MinHash with the jieba tokenizer: the user dictionary too ------------------------------------
_UD_TEXTS = ["区块链技术发展很快，小明硕士毕业于中国科学院，后来去了日本京都大学深造。",
             "区块链技术发展很快，小明硕士毕业于中国科学院，后来去了日本京都大学读书。",
             "今天天气很好，我们一起去公园散步，然后去图书馆看书。"]


def test_minhash_jieba_with_a_user_dictionary(tmp_path):
    from neardup.sketches.minhash import MinHasher

    (tmp_path / "u.txt").write_text("区块链技术 5 n\n小明硕士\n", encoding="utf-8")
    ud = str(tmp_path / "u.txt")
    with_ud = MinHasher(tokenizer="jieba", ngram=2, user_dict=ud)
    plain = MinHasher(tokenizer="jieba", ngram=2)
    assert "区块链技术" in with_ud.shingler.tokens(_UD_TEXTS[0])
    assert not np.array_equal(with_ud.sign_batch(_UD_TEXTS).values, plain.sign_batch(_UD_TEXTS).values)
    assert with_ud.config()["user_dict_sha256"] == dictionaries.load_user_dict(ud).sha256
    with pytest.raises(ValueError, match="user dictionary is for the jieba tokenizer"):
        MinHasher(tokenizer="word", user_dict=ud)
    with pytest.raises(ConfigError, match="[(]--user-dict[)]"):
        DedupConfig(method="minhash", tokenizer="word", user_dict=ud).resolved()
    # sign and dedup give the signatures of the Python API, and the report names the file
    src = _jsonl(tmp_path / "t.jsonl", _UD_TEXTS)
    runner = CliRunner()
    res = runner.invoke(main, ["sign", str(src), "--tokenizer", "jieba", "--ngram", "2", "--user-dict", ud])
    assert res.exit_code == 0, res.output
    assert [json.loads(x)["minhash"] for x in res.output.splitlines()] == with_ud.sign_batch(_UD_TEXTS).values.tolist()
    res = runner.invoke(main, ["sign", str(src), "--tokenizer", "word", "--user-dict", ud])
    assert res.exit_code == 2 and "--user-dict" in res.output
    res = runner.invoke(main, ["dedup", str(src), "-o", str(tmp_path / "o"), "--tokenizer", "jieba", "--ngram", "2",
                               "--user-dict", ud, "--threshold", "0.5", "--no-html", "--workers", "1"])
    assert res.exit_code == 0, res.output
    params = json.loads((tmp_path / "o" / "report.json").read_text())["parameters"]
    assert params["user_dict"] == str(Path(ud).resolve())


def test_minhash_index_records_the_user_dictionary_and_refuses_a_changed_one(tmp_path):
    from neardup.index.disk import DiskIndex

    user = tmp_path / "u.txt"
    user.write_text("区块链技术 5 n\n", encoding="utf-8")
    src = _jsonl(tmp_path / "t.jsonl", _UD_TEXTS)
    runner = CliRunner()
    res = runner.invoke(main, ["dedup", str(src), "-o", str(tmp_path / "o"), "--index", str(tmp_path / "idx"),
                               "--tokenizer", "jieba", "--ngram", "2", "--user-dict", str(user), "--threshold",
                               "0.5", "--no-html", "--workers", "1", "--id-field", "id"])
    assert res.exit_code == 0, res.output
    idx = DiskIndex.open(tmp_path / "idx", readonly=True)
    assert idx.config["user_dict"] == str(user.resolve())
    assert idx.hasher.config()["user_dict_sha256"] == dictionaries.load_user_dict(str(user)).sha256
    assert [k for k, _ in idx.query(_UD_TEXTS[0])]          # the kept first text is found again
    idx.close()
    # a run without the dictionary is refused naming it
    res = runner.invoke(main, ["dedup", str(src), "-o", str(tmp_path / "o2"), "--index", str(tmp_path / "idx"),
                               "--tokenizer", "jieba", "--ngram", "2", "--threshold", "0.5", "--no-html",
                               "--id-field", "id"])
    assert res.exit_code != 0 and "user_dict" in res.output
    with open(user, "a", encoding="utf-8") as fh:
        fh.write("小明硕士\n")
    with pytest.raises(IndexConfigError, match="user_dict file .*u.txt has changed"):
        DiskIndex.open(tmp_path / "idx")
    user.unlink()
    with pytest.raises(IndexConfigError, match="user dictionary cannot be used"):
        DiskIndex.open(tmp_path / "idx")
    # SimHash: reusing an index made with a dictionary, without one, is refused too
    user.write_text("区块链技术 5 n\n", encoding="utf-8")
    SimHashDiskIndex.create(tmp_path / "sidx", tokenizer="jieba", ngram=1, user_dict=str(user)).close()
    with pytest.raises(IndexConfigError, match="user_dict="):
        SimHashDiskIndex.create(tmp_path / "sidx", tokenizer="jieba", ngram=1, exist_ok=True)


# -- bad files: a clear error naming the file and line ---------------------------------------------
BAD = [
    ("idf", "好 1.0\n坏 一\n", r"bad.txt:2: the idf of '坏' must be a finite number"),
    ("idf", "好 1.0\n坏 nan\n", r"bad.txt:2: the idf"),
    ("idf", "好 1.0\n\n坏 2 3\n", r"bad.txt:3: expected 'word idf'"),
    ("idf", "好  1.0\n", r"bad.txt:1: expected 'word idf'"),
    ("idf", "\n\n", r"bad.txt: the IDF table has no entries"),
    ("idf", b"ok 1\n\xff\xfe 2\n", r"bad.txt:2: the IDF table is not UTF-8"),
    ("user_dict", "词 3 n\n词 x n\n", r"bad.txt:2: the frequency of '词' must be a positive integer"),
    ("user_dict", "词 0 n\n", r"bad.txt:1: the frequency"),
    ("user_dict", "词 99999999999999999999999 n\n", r"bad.txt:1: the frequency of '词' must be a positive integer up"),
    ("user_dict", "词 99999999999999999999999\n", r"bad.txt:1: the frequency of '词' must be at most"),
    ("user_dict", "a b c d\n", r"bad.txt:1: expected 'word \[freq\] \[tag\]'"),
    ("user_dict", "好\n词  n\n", r"bad.txt:2: expected"),
    ("stop_words", b"the\nof\n\xc3\n", r"bad.txt:3: the stop-word list is not UTF-8"),
]


@pytest.mark.parametrize("kind,body,message", BAD)
def test_bad_file_lines_are_named(tmp_path, kind, body, message):
    p = tmp_path / "bad.txt"
    p.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    opts = {"compat": "yanyiwu"} if kind != "user_dict" else {"tokenizer": "jieba"}
    with pytest.raises(ConfigError, match=message):
        DedupConfig(method="simhash", **opts, **{kind: str(p)}).resolved()
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "你好"}\n', encoding="utf-8")
    res = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / "o"), "--method", "simhash",
                                    *(["--compat", "yanyiwu"] if kind != "user_dict" else ["--tokenizer", "jieba"]),
                                    f"--{kind.replace('_', '-')}", str(p)])
    assert res.exit_code == 2 and "bad.txt" in res.output and not (tmp_path / "o").exists()


def test_missing_file_bom_and_crlf(tmp_path):
    with pytest.raises(InputFormatError, match="nothere.txt: cannot read the IDF table"):
        dictionaries.load_idf(tmp_path / "nothere.txt")
    p = tmp_path / "w.txt"
    p.write_bytes(b"\xef\xbb\xbf\xe5\xa5\xbd 1.5\r\n\xe5\x9d\x8f 2\r\n")
    f = dictionaries.load_idf(p)
    assert f.words == ("好", "坏") and f.values.tolist() == [1.5, 2.0]
    s = tmp_path / "s.txt"
    s.write_bytes(b"\xef\xbb\xbfthe\r\nof\n")
    assert dictionaries.load_stop_words(s).words == frozenset({"the", "of"})
    assert dictionaries.load_stop_words(_empty(tmp_path)).words == frozenset()


def _empty(tmp_path) -> Path:
    p = tmp_path / "empty.txt"
    p.write_bytes(b"")
    return p


@pytest.mark.parametrize("opts,flag", [
    ({"tokenizer": "word", "user_dict": "U"}, "--user-dict"),
    ({"stop_words": "S", "ngram": 3}, "--ngram"),
    ({"idf": "I", "ngram": 2}, "--ngram"),
    ({"compat": "1e0ng", "idf": "I"}, "--idf"),
    ({"compat": "1e0ng", "stop_words": "S"}, "--stop-words"),
    ({"compat": "yanyiwu", "idf": "jieba"}, "--idf"),
    ({"idf": "I", "weighting": "tf"}, "--weighting"),
    ({"method": "minhash", "stop_words": "S"}, "--stop-words"),
    ({"tokenizer": "char", "stop_words": "S", "ngram": 1}, "--stop-words"),
    ({"tokenizer": "char", "idf": "I"}, "--idf"),
])
def test_combinations_refused_naming_the_option(tmp_path, opts, flag):
    for name, letter in (("user_dict", "U"), ("stop_words", "S"), ("idf", "I")):
        if opts.get(name) == letter:
            p = tmp_path / f"{name}.txt"
            p.write_text("词 1\n", encoding="utf-8")
            opts = {**opts, name: str(p)}
    with pytest.raises(ConfigError, match=f"[(]{flag}[);]"):
        DedupConfig(**{"method": "simhash", **opts}).resolved()


def test_idf_fit_refuses_bad_outputs_and_counts_skips(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "区块链技术发展很快"}\nnot json\n{"text": "区块链发展"}\n', encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(main, ["idf", "fit", str(src), "-o", str(tmp_path)])
    assert res.exit_code == 2 and "is a folder" in res.output
    res = runner.invoke(main, ["idf", "fit", str(src), "-o", str(src)])
    assert res.exit_code == 2 and "is the input" in res.output
    assert src.read_text(encoding="utf-8").startswith('{"text"')
    res = runner.invoke(main, ["idf", "fit", str(src), "-o", str(tmp_path / "i.txt")])
    assert res.exit_code != 0 and "in.jsonl:2" in res.output and not (tmp_path / "i.txt").exists()
    res = runner.invoke(main, ["idf", "fit", str(src), "-o", str(tmp_path / "i.txt"), "--on-error", "skip"])
    assert res.exit_code == 0 and "2 documents" in res.output and "1 rows skipped" in res.output
    words = dict(ln.split(" ") for ln in (tmp_path / "i.txt").read_text(encoding="utf-8").splitlines())
    assert float(words["发展"]) == pytest.approx(np.log(3 / 3) + 1)
    res = runner.invoke(main, ["idf", "fit", str(src), "-o", str(tmp_path / "j.txt"), "--compat", "1e0ng"])
    assert res.exit_code == 2


def test_index_run_with_signing_workers_does_not_abort(shared, tmp_path):
    """A run on an existing yanyiwu index signs the index's probe text before its signing workers fork:
    that must not start numba's OpenMP pool (a fork after it aborts the process)."""
    import subprocess
    import sys

    src = _jsonl(tmp_path / "p.jsonl", _pages(shared))
    for day, workers in ((0, 1), (1, 2), (2, 2)):    # day 0: no workers, its own index (the reference)
        res = subprocess.run([sys.executable, "-m", "neardup", "dedup", str(src), "-o", str(tmp_path / f"o{day}"),
                              "--id-field", "id", "--method", "simhash", "--compat", "yanyiwu", "--index",
                              str(tmp_path / ("idx0" if day == 0 else "idx")), "--workers", str(workers),
                              "--no-html"], capture_output=True, text=True, timeout=300)
        assert res.returncode == 0 and "Terminating" not in res.stderr, res.stderr
    want = (tmp_path / "o0" / "clusters.jsonl").read_bytes()
    assert (tmp_path / "o1" / "clusters.jsonl").read_bytes() == want == (tmp_path / "o2" / "clusters.jsonl").read_bytes()


def test_idf_fit_survives_a_lone_surrogate(tmp_path):
    """JSON can carry a lone surrogate: it reaches neither segmenter (U+FFFD, as the signer's buffer)."""
    src = tmp_path / "s.jsonl"
    src.write_text('{"text": "我的朋友\\ud800很好，朋友"}\n', encoding="utf-8")
    for extra in ([], ["--compat", "yanyiwu"]):
        res = CliRunner().invoke(main, ["idf", "fit", str(src), "-o", str(tmp_path / "i.txt"), *extra])
        assert res.exit_code == 0, res.output
        assert "朋友 1" in (tmp_path / "i.txt").read_text(encoding="utf-8")


def test_workers_after_a_parallel_kernel_in_this_process(shared, tmp_path):
    """Python code that ran a parallel kernel (numba's OpenMP pool started) and then deduplicates with
    signing workers gets the one-process result: workers start from a fork server then, since a
    child forked after the pool started computes wrong fingerprints or aborts."""
    from neardup.engines.local.run import run_dedup
    from neardup.engines.local.workers import _worker_context

    texts = _pages(shared)
    yanyiwu.simhash_batch(texts[:20], 5)                       # 20 documents: the prange kernel
    assert _worker_context().get_start_method() == "forkserver"
    src = _jsonl(tmp_path / "p.jsonl", texts)
    out = {}
    for workers in (1, 2):
        run_dedup([str(src)], str(tmp_path / f"w{workers}"),
                  DedupConfig(method="simhash", compat="yanyiwu", top_n=8, id_field="id", workers=workers,
                              batch_size=16, html=False, quiet=True))
        out[workers] = (tmp_path / f"w{workers}" / "clusters.jsonl").read_bytes()
    assert out[1] == out[2]


# -- the tokenizer a table was fitted with -----------------------------------------------------------
def test_a_table_records_its_tokenizer_and_every_command_checks_it(shared, tmp_path):
    """idf fit writes the tokenizer (or yanyiwu) on the table's first line, in the 'word idf' form jieba
    still reads; dedup, sign, index create and the Python API refuse the table with another tokenizer in
    one line naming --idf and both tokenizers; a table without the line is used as given."""
    jieba_analyse = pytest.importorskip("jieba.analyse", reason="jieba is not importable")
    from hostile import error_line

    from neardup.text.dictionaries import load_idf

    texts = _pages(shared)[:20]
    src = _jsonl(tmp_path / "p.jsonl", texts)
    runner = CliRunner()
    tables = {}
    for name, flags in (("jieba", []), ("word", ["--tokenizer", "word"]), ("yanyiwu", ["--compat", "yanyiwu"])):
        tables[name] = str(tmp_path / f"{name}.idf")
        res = runner.invoke(main, ["idf", "fit", str(src), *flags, "-o", tables[name]])
        assert res.exit_code == 0, res.output
        f = load_idf(tables[name])
        assert f.tokenizer == name and not any(w.startswith("#") for w in f.words)
    raw = open(tables["jieba"], encoding="utf-8").read().splitlines()
    assert raw[0].startswith("#neardup-tokenizer:jieba ") and len(raw) == len(load_idf(tables["jieba"]).words) + 1
    assert jieba_analyse.TFIDF(idf_path=tables["jieba"]).idf_freq[raw[1].split(" ")[0]] > 0     # jieba reads it
    # the mean (cppjieba's default) and the median leave the first line out
    f = load_idf(tables["jieba"])
    assert f.mean == pytest.approx(float(f.values.mean()), rel=1e-12)
    ok = [(tables["jieba"], ["--tokenizer", "jieba"]), (tables["word"], []), (tables["yanyiwu"], ["--compat", "yanyiwu"])]
    for table, flags in ok:
        res = runner.invoke(main, ["sign", str(src), "--method", "simhash", "--idf", table, *flags])
        assert res.exit_code == 0, res.output
    refused = [(tables["jieba"], [], "--tokenizer jieba"), (tables["word"], ["--tokenizer", "jieba"], "--tokenizer word"),
               (tables["jieba"], ["--compat", "yanyiwu"], "--tokenizer jieba"),
               (tables["yanyiwu"], ["--tokenizer", "jieba"], "--compat yanyiwu")]
    for table, flags, made in refused:
        for cmd in (["sign", str(src)], ["dedup", str(src), "-o", str(tmp_path / "o")],
                    ["index", "create", str(tmp_path / "i")]):
            res = runner.invoke(main, [*cmd, "--method", "simhash", "--idf", table, *flags])
            assert res.exit_code in (1, 2), (cmd, flags, res.output)
            line = error_line(res.output)
            assert "--idf" in line and made in line and table in line, line
    assert not (tmp_path / "o").exists() and not (tmp_path / "i").exists()
    with pytest.raises(ValueError, match="--tokenizer jieba"):
        SimHasher(ngram=1, weighting="tfidf", idf=tables["jieba"])
    with pytest.raises(ValueError, match="--tokenizer word"):
        feature_signer("word", None, None, tables["word"], 5, "yanyiwu")
    # a table written by hand (no first line) is used with any tokenizer
    (tmp_path / "hand.idf").write_text("中文 3.5\n手册 2.0\n", encoding="utf-8")
    assert load_idf(tmp_path / "hand.idf").tokenizer is None
    for flags in ([], ["--tokenizer", "jieba"], ["--compat", "yanyiwu"]):
        res = runner.invoke(main, ["sign", str(src), "--method", "simhash", "--idf", str(tmp_path / "hand.idf"), *flags])
        assert res.exit_code == 0, res.output
