"""Explanations agree with the decisions they explain (neardup/explain.py, ``compare --explain``,
``neardup explain OUT A B``): slot agreements give the signature estimate, each slot's listed shingle
really gives that minimum, colliding bands make an LSH candidate, the listed differing bits give the
distance; and every bad input is one clear line."""
from __future__ import annotations

import gzip
import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neardup import run_dedup
from neardup.cli import main
from neardup.config import DedupConfig
from neardup.explain import explain_minhash, explain_sentences, explain_simhash
from neardup.index.lsh import candidate_pairs
from neardup.sketches.minhash import MinHasher
from neardup.sketches.simhash import feature_signer, hamming

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "data" / "debian_copyright.jsonl.gz"
SEED_SETS = ["a d", "c", "b d e", "a c d"]          # the seed's example sets {a,d}, {c}, {b,d,e}, {a,c,d}
SCHEMES = ("oph", "permutation", "bottomk")


@pytest.fixture(scope="module")
def demo() -> list[str]:
    return [json.loads(x)["text"] for x in gzip.open(DEMO, "rt", encoding="utf-8")]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_seed_sets_slot_by_slot(scheme):
    h = MinHasher(num_perm=16, scheme=scheme, seed=7, ngram=1)
    for a, b in itertools.combinations(SEED_SETS, 2):
        e = explain_minhash(a, b, h)
        assert e["consistent"]
        assert e["estimate"] == e["signature_estimate"] == sum(s["equal"] for s in e["slots"]) / len(e["slots"])
        sa, sb = set(a.split()), set(b.split())
        assert e["jaccard"] == len(sa & sb) / len(sa | sb)
        if scheme == "permutation":    # each listed shingle gives the minimum: signed alone, it has that value
            for side, text in (("a", a), ("b", b)):
                sig = h.sign_batch([text]).values[0]
                alone = {t: h.sign_batch([t]).values[0] for t in text.split()}
                for s in e["slots"]:
                    j, w = s["slot"], s[side]["shingle"]
                    assert alone[w][j] == sig[j] == min(v[j] for v in alone.values())
        for s in e["slots"]:           # agreeing slots are decided by a shared shingle
            if s["equal"] and scheme != "bottomk":
                assert s["a"]["shingle"] == s["b"]["shingle"] and s["a"]["shingle"] in sa & sb


@pytest.mark.parametrize("scheme", SCHEMES)
def test_real_documents_and_lsh_bands(demo, scheme):
    h = MinHasher(scheme=scheme)
    pairs = [(1, 2), (4, 5), (0, 1), (10, 11), (3, 300)]
    for i, j in pairs:
        e = explain_minhash(demo[i], demo[j], h, bands=(16, 6))
        assert e["consistent"], (scheme, i, j)
        if scheme == "bottomk":
            continue
        sig = h.sign_batch([demo[i], demo[j]]).values
        lo, _ = candidate_pairs(sig, 16, 6)
        assert e["bands"]["candidate"] == bool(lo.shape[0]), (i, j)
        eq = sig[0] == sig[1]
        assert e["bands"]["colliding"] == [b for b in range(16) if eq[b * 6:(b + 1) * 6].all()]


def test_empty_and_short_documents():
    h = MinHasher(ngram=5)
    for a, b in (("", "some words here"), ("", ""), ("two words", "two words"), ("x", "y z")):
        e = explain_minhash(a, b, h, bands=(16, 6))
        assert e["consistent"] and (e["estimate"] == 0.0 if not a else True)
    s = explain_simhash("", "text")
    assert s["consistent"] and s["a"]["features"] == 0
    assert explain_sentences("", "")["match"] is False


@pytest.mark.parametrize("opts", [{}, {"ngram": 1, "weighting": "uniform"}, {"compat": "yanyiwu", "ngram": None,
                                                                             "top_n": 5},
                                  {"compat": "1e0ng", "ngram": None},
                                  {"tokenizer": "jieba", "ngram": 1, "weighting": "tfidf", "idf": "jieba", "top_n": 8}])
def test_simhash_bits_give_the_distance(demo, opts):
    texts = [demo[1], demo[2], "我是蓝翔技工拖拉机学院手扶拖拉机专业的。", "我是蓝翔技工拖拉机学院手扶拖拉机专业的，不用多久。"]
    for a, b in ((0, 1), (2, 3), (0, 3)):
        e = explain_simhash(texts[a], texts[b], **opts)
        fa, fb = feature_signer(opts.get("tokenizer", "word"), opts.get("ngram", 3), opts.get("weighting"),
                                opts.get("idf"), opts.get("top_n"), opts.get("compat"))([texts[a], texts[b]])[0]
        assert e["consistent"] and e["a"]["fingerprint"] == int(fa) and e["b"]["fingerprint"] == int(fb)
        assert e["distance"] == len(e["differing_bits"]) == hamming(fa, fb)
        for j in e["differing_bits"]:     # a differing bit: the sums have different signs (> 0 vs ≤ 0)
            assert (e["a"]["sums"][j] > 0) != (e["b"]["sums"][j] > 0)


def test_sentences():
    a = "The first sentence is long enough. Short one. Another fairly long sentence here!"
    e = explain_sentences(a, a + " Tiny.", n=2)
    assert e["match"] and e["a"] == e["b"] and len(e["a"]) == 2


def test_compare_explain_cli():
    res = CliRunner().invoke(main, ["compare", "--text", "a d", "a c d", "--ngram", "1", "--num-perm", "16",
                                    "--explain", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    ex = out["explain"]
    assert set(ex) == {"minhash", "simhash", "sentences"} and ex["minhash"]["consistent"]
    assert ex["minhash"]["estimate"] == out["minhash_jaccard"]
    res = CliRunner().invoke(main, ["compare", "--text", "a d", "a c d", "--ngram", "1", "--explain"])
    assert res.exit_code == 0 and "slots agree" in res.output and "SimHash: distance" in res.output
    res = CliRunner().invoke(main, ["compare", "--text", "a", "b", "--scheme", "datasketch-legacy", "--explain"])
    assert res.exit_code != 0 and "native schemes" in res.output and "Traceback" not in res.output


@pytest.fixture()
def run(tmp_path):
    src = tmp_path / "demo.jsonl"
    src.write_bytes(gzip.decompress(DEMO.read_bytes()))
    out = tmp_path / "out"
    run_dedup([str(src)], str(out), DedupConfig(id_field="id", html=False, quiet=True, workers=1))
    return src, out


def test_explain_a_finished_run(run):
    src, out = run
    recs = [json.loads(x) for x in (out / "clusters.jsonl").read_text(encoding="utf-8").splitlines()]
    dup = next(r for r in recs if not r["kept"])
    res = CliRunner().invoke(main, ["explain", str(out), str(dup["id"]), str(dup["cluster"]), "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    assert got["decision"]["same_cluster"] and got["explain"]["consistent"]
    assert got["explain"]["estimate"] == pytest.approx(dup["similarity"], abs=1e-6)
    assert got["explain"]["bands"]["candidate"] or got["explain"]["estimate"] == 1.0
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert rep["samples"]
    checked = 0
    for smp in rep["samples"]:        # the report's compact form: its slot count is the pair's estimate;
        e = smp["explain"]            # the sample's similarity is that, or the exact value where checked
        assert smp["similarity"] in (round(e["agreeing_slots"] / e["slots"], 4), e["exact_jaccard"])
        checked += smp["similarity"] == e["exact_jaccard"] != round(e["agreeing_slots"] / e["slots"], 4)
    assert checked < len(rep["samples"])
    v = got["verdict"]                # the sentence: the removed row's decision, its number
    assert v["same_cluster"] and v["rule"] == dup["decided"] and v["sentence"].startswith(v["verdict"] + ": ")
    other = next(r for r in recs if r["kept"] and r["id"] != dup["cluster"])
    res = CliRunner().invoke(main, ["explain", str(out), str(dup["id"]), str(other["id"])])
    assert res.exit_code == 0 and "different clusters" in res.output
    assert res.output.split(":")[0] in ("not candidates", "not duplicates", "not merged")


def test_explain_bad_inputs(run, tmp_path):
    src, out = run
    first = json.loads((out / "clusters.jsonl").read_text(encoding="utf-8").splitlines()[0])["id"]

    def fails(args, needle):
        res = CliRunner().invoke(main, ["explain", *map(str, args)])
        assert res.exit_code != 0 and needle in res.output and "Traceback" not in res.output, res.output

    fails([out, first, "no-such-id"], "no document with id 'no-such-id'")
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    with open(bad / "clusters.jsonl", "a", encoding="utf-8") as fh:
        fh.write("{truncated\n")
    fails([bad, first, first], "clusters.jsonl:551: malformed JSON")
    fails([tmp_path / "nowhere", 1, 2], "no report.json")
    other = tmp_path / "other"
    other.mkdir()
    (other / "report.json").write_text('{"neardup_version": "0.0.1", "counts": {}}')
    fails([other, 1, 2], "no run parameters")
    (other / "report.json").write_text("{not json")
    fails([other, 1, 2], "cannot be read")
    moved = tmp_path / "moved.jsonl"
    shutil.copy(src, moved)
    src.write_text(src.read_text(encoding="utf-8") + json.dumps({"id": "new", "text": "x"}) + "\n", encoding="utf-8")
    fails([out, first, first], "changed since the run")
    src.unlink()
    fails([out, first, first], "cannot be read again")


def test_explain_a_document_of_the_index(tmp_path, days):
    idx = tmp_path / "idx"
    cfg = dict(id_field="id", html=False, quiet=True, workers=1, index=str(idx))
    run_dedup([str(days / "day1.jsonl")], str(tmp_path / "d1"), DedupConfig(**cfg))
    run_dedup([str(days / "day2.jsonl")], str(tmp_path / "d2"), DedupConfig(**cfg))
    recs = [json.loads(x) for x in (tmp_path / "d2" / "clusters.jsonl").read_text(encoding="utf-8").splitlines()]
    r = next(x for x in recs if x.get("indexed"))
    res = CliRunner().invoke(main, ["explain", str(tmp_path / "d2"), str(r["id"]), str(r["cluster"])])
    assert res.exit_code != 0 and "document of the index" in res.output


def test_estimate_variance_matches_slot_agreement_rate(demo):
    """Over many seeds, the fraction of agreeing slots estimates J without bias (|mean − J| within
    4 standard errors of the mean, σ² = J(1 − J)/k per seed)."""
    a, b = demo[1], demo[2]
    ests = [explain_minhash(a, b, MinHasher(num_perm=64, scheme="permutation", seed=s))["estimate"] for s in range(40)]
    j = explain_minhash(a, b, MinHasher(num_perm=64))["jaccard"]
    se = (j * (1 - j) / 64 / len(ests)) ** 0.5
    assert abs(np.mean(ests) - j) <= 4 * se
