"""SimHash's feature options everywhere (config.PARAMS → sketches.simhash.feature_signer): ``dedup``,
``sign``, the index, ``dedup --index``; one set of rules, refusals naming the option."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from neardup import run_dedup
from neardup.cli import main
from neardup.config import DedupConfig
from neardup.errors import ConfigError
from neardup.index.disk import IndexConfigError, SimHashDiskIndex
from neardup.sketches.compat import yanyiwu
from neardup.sketches.simhash import SimHasher, feature_signer


def _news(shared) -> list[tuple[str, str]]:
    root = shared / "corpora" / "yanyiwu_simhash_testdata"
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(root.glob("news_content*"))]


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps({"id": k, "text": t}, ensure_ascii=False) + "\n" for k, t in rows),
                    encoding="utf-8")
    return path


def test_dedup_with_yanyiwu_fingerprints_follows_the_published_equalities(shared, tmp_path):
    """yanyiwu's tests: make(news_content, 50) == make(news_content.2, 50); .3 == .4; .2 != .3. With
    k = 0 bits, dedup's clusters are exactly those equalities."""
    src = _jsonl(tmp_path / "news.jsonl", _news(shared))
    rep = run_dedup([str(src)], str(tmp_path / "o"), DedupConfig(method="simhash", compat="yanyiwu", top_n=50, bits=0,
                                                                  id_field="id", html=False, quiet=True, workers=1))
    recs = {r["id"]: r for r in map(json.loads, (tmp_path / "o" / "clusters.jsonl").read_text().splitlines())}
    assert recs["news_content.2"]["cluster"] == "news_content" and recs["news_content.4"]["cluster"] == "news_content.3"
    assert recs["news_content.3"]["kept"] and rep["counts"]["kept"] == 2


def test_every_path_signs_alike(shared, tmp_path):
    """sign, dedup, the index and the Python API give one fingerprint per option set (the classic
    SimHash's features where none is given: sign's default, which verified dedup does not use)."""
    texts = [t for _, t in _news(shared)] + ["我是蓝翔技工拖拉机学院手扶拖拉机专业的。", "plain English text here"]
    for n, opts in enumerate(({"compat": "yanyiwu", "top_n": 5}, {"compat": "yanyiwu"}, {"compat": "1e0ng"},
                              {"idf": "jieba", "top_n": 10}, {"weighting": "uniform", "ngram": 2}, {})):
        cfg = DedupConfig(method="simhash", **opts, **({} if opts.get("compat") else {"bits": 3})).resolved()
        want = feature_signer(cfg.tokenizer, cfg.ngram, cfg.weighting, cfg.idf, cfg.top_n, cfg.compat)(texts)[0]
        if opts.get("compat") == "yanyiwu":
            assert want.tolist() == [yanyiwu.simhash_reference(t, opts.get("top_n") or yanyiwu.top_n_for_length(
                len(t.encode()))) for t in texts]
        if not opts.get("compat"):
            hasher = SimHasher(tokenizer=cfg.tokenizer, ngram=cfg.ngram, weighting=cfg.weighting or "tf",
                               idf=cfg.idf, top_n=cfg.top_n)
            assert want.tolist() == [int(v) for v in hasher.sign_batch(texts)]
        src = _jsonl(tmp_path / "t.jsonl", [(f"d{i}", t) for i, t in enumerate(texts)])
        flags = [x for k, v in opts.items() for x in (f"--{k.replace('_', '-')}", str(v))]
        res = CliRunner().invoke(main, ["sign", str(src), "--method", "simhash", *flags])
        assert res.exit_code == 0, res.output
        assert [json.loads(x)["simhash"] for x in res.output.splitlines()] == want.tolist(), opts
        idx = tmp_path / f"idx-{n}"
        SimHashDiskIndex.create(idx, max_distance=3, **{**opts, "weighting": cfg.weighting or "tf",
                                                        "ngram": cfg.ngram}).close()
        with SimHashDiskIndex.open(idx) as index:
            index.add_batch([f"d{i}" for i in range(len(texts))], texts)
            st = index.store
            keys, raw = st.fetch_arrays(st.live_ids())
            got = dict(zip(keys, raw.view("<u8").reshape(-1).tolist()))
            assert [got[f"d{i}"] for i in range(len(texts))] == want.tolist(), opts


def test_index_records_the_options_and_refuses_others(tmp_path):
    idx = tmp_path / "idx"
    res = CliRunner().invoke(main, ["index", "create", str(idx), "--method", "simhash", "--compat", "yanyiwu",
                                    "--top-n", "5"])
    assert res.exit_code == 0, res.output
    with pytest.raises(IndexConfigError, match="compat"):
        SimHashDiskIndex.open(idx, compat="1e0ng")
    day = _jsonl(tmp_path / "d.jsonl", [("a", "我是蓝翔技工拖拉机学院手扶拖拉机专业的。不用多久，我就会升职加薪"),
                                        ("b", "我是蓝翔技工拖拉机学院手扶拖拉机专业的。不用多久，我就会升职加薪。")])
    base = dict(method="simhash", id_field="id", html=False, quiet=True, workers=1, index=str(idx))
    rep = run_dedup([str(day)], str(tmp_path / "o"), DedupConfig(compat="yanyiwu", top_n=5, **base))
    assert rep["counts"]["kept"] == 1 and rep["index"]["added"] == 1
    with pytest.raises(IndexConfigError, match="top_n"):
        run_dedup([str(day)], str(tmp_path / "o2"), DedupConfig(compat="yanyiwu", top_n=6, **base))
    with pytest.raises(IndexConfigError, match="compat"):
        run_dedup([str(day)], str(tmp_path / "o3"), DedupConfig(**base))


@pytest.mark.parametrize("opts,flag", [
    ({"compat": "yanyiwu", "ngram": 2}, "--ngram"),
    ({"compat": "yanyiwu", "tokenizer": "char"}, "--tokenizer"),
    ({"compat": "yanyiwu", "idf": "jieba"}, "--idf"),
    ({"compat": "1e0ng", "top_n": 3}, "--top-n"),
    ({"weighting": "tfidf"}, "--idf"),
    ({"idf": "jieba", "weighting": "tf"}, "--weighting"),
    ({"idf": "jieba", "ngram": 3}, "--ngram"),
    ({"compat": "other"}, "--compat"),
    ({"top_n": 0}, "--top-n"),
])
def test_bad_combinations_are_refused_naming_the_option(opts, flag, tmp_path):
    with pytest.raises(ConfigError, match=flag):
        DedupConfig(method="simhash", **opts).resolved()
    flags = [x for k, v in opts.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    src = _jsonl(tmp_path / "x.jsonl", [("a", "text")])
    for cmd in (["dedup", str(src), "-o", str(tmp_path / "o")], ["sign", str(src)]):
        res = CliRunner().invoke(main, [*cmd, "--method", "simhash", *flags])
        assert res.exit_code != 0 and flag in res.output and "Traceback" not in res.output, (cmd, res.output)
    assert not (tmp_path / "o").exists()


def test_options_are_refused_for_other_methods(tmp_path):
    src = _jsonl(tmp_path / "x.jsonl", [("a", "text")])
    for cmd in (["dedup", str(src), "-o", str(tmp_path / "o")], ["sign", str(src)]):
        res = CliRunner().invoke(main, [*cmd, "--method", "minhash", "--compat", "yanyiwu"])
        assert res.exit_code != 0 and "--compat" in res.output and "simhash" in res.output, res.output


def test_compat_with_script_conversion_reads_the_converted_text(shared):
    """--convert applies before a peer's features: traditional text signs as its simplified form."""
    pytest.importorskip("opencc")
    from neardup.text.normalize import _converter

    tw = (shared / "corpora/manpages_zh_sample/zh_TW").glob("*")
    texts = [p.read_text(encoding="utf-8") for p in sorted(tw)][:5]
    conv = _converter("tw2sp").convert
    for compat, top_n in (("yanyiwu", 5), ("1e0ng", None)):
        got = feature_signer("word", None, None, None, top_n, compat, "tw2sp")(texts)[0]
        want = feature_signer("word", None, None, None, top_n, compat, None)([conv(t) for t in texts])[0]
        assert got.tolist() == want.tolist()


def test_index_signs_with_its_own_seed(tmp_path):
    """An index made with a hash seed signs with it (its SimHasher), not with the default seed."""
    texts = ["some text here for a test document", "another one entirely different words"]
    with SimHashDiskIndex.create(tmp_path / "i", seed=5) as idx:
        got = idx._sign(texts)[0].ravel().tolist()
    assert got == [int(x) for x in SimHasher(seed=5).sign_batch(texts)]
    assert got != [int(x) for x in SimHasher(seed=0).sign_batch(texts)]
