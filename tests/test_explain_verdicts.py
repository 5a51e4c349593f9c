"""The sentence that leads ``neardup explain`` and ``neardup compare`` agrees with what the run recorded
(neardup/explain/verdict.py): for small corpora built to produce each decision — identical
signatures, the estimate, an exact check in the borderline band, containment (and the container
removed itself, and a larger share elsewhere), bounded linkage's refusal, the drift split, a chain
through other members, LSH never proposing the pair, SimHash within and over its bits — every pair's
verdict has the run's same_cluster, names the removed row's ``decided`` as its rule, and gives the
record's similarity where the pair is the removed row's with its kept one. ``compare`` reaches the
verdict a two-document dedup run reaches."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from neardup import run_dedup
from neardup.cli import main
from neardup.config import DedupConfig
from neardup.dedup.signing import make_signer

#: the phrase of each decision word in a sentence
PHRASE = {"identical": "identical", "estimate": "so it decided (not checked exactly)", "exact": "checked exactly",
          "contained": "is contained in", "candidate": "unverified"}
#: SimHash's: its estimate is the fingerprints' distance
PHRASE_BITS = {"identical": "identical fingerprints", "estimate": "Hamming distance"}
CHINESE = ("我是蓝翔技工拖拉机学院手扶拖拉机专业的。不用多久，我就会升职加薪，当上总经理，出任CEO，走上人生巅峰。",
           "我是蓝翔技工拖拉机学院手扶拖拉机专业的。不用多久，我就会升职加薪，当上总经理，出任CEO，迎娶白富美，走上人生巅峰。")


def words(seed: int, n: int = 400) -> list[str]:
    """n words drawn from 20,000 (so a document's word 5-grams are distinct)."""
    return [f"w{x}" for x in np.random.default_rng(seed).integers(0, 20000, n)]


def edit(w: list[str], m: int, start: int = 10, step: int = 7, tag: str = "x") -> list[str]:
    """``w`` with m words replaced, ``step`` apart from ``start``: each kills 5 word 5-grams and adds 5,
    so J = (S − 5m) / (S + 5m) for S shingles."""
    w = list(w)
    for i in range(m):
        w[start + i * step] = f"{tag}{i}"
    return w


def text(w) -> str:
    return " ".join(w)


def dedup(tmp_path, name: str, docs: list[str], **cfg):
    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs)),
                   encoding="utf-8")
    out = tmp_path / name
    run_dedup([str(src)], str(out), DedupConfig(id_field="id", html=False, quiet=True, workers=1, **cfg))
    recs = {r["id"]: r for r in map(json.loads, (out / "clusters.jsonl").read_text(encoding="utf-8").splitlines())}
    return out, recs


def explain(out, a: str, b: str, *more) -> dict:
    res = CliRunner().invoke(main, ["explain", str(out), a, b, "--json", *more])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def agrees(out, recs: dict, a: str, b: str) -> dict:
    """The verdict on (a, b), checked against the records: same cluster, who is kept, the removed row's
    decision as the rule (a direct pair), and its similarity as the sentence's number."""
    got = explain(out, a, b)
    v, ra, rb = got["verdict"], recs[a], recs[b]
    assert v["sentence"].startswith(v["verdict"] + ":")
    assert v["replayed"], v
    same = ra["cluster"] == rb["cluster"]
    assert v["same_cluster"] == same, (v, ra, rb)
    assert set(v["kept"]) == {s for s, r in (("A", ra), ("B", rb)) if r["kept"]}
    assert v["decided"] == {s: r["decided"] for s, r in (("A", ra), ("B", rb)) if not r["kept"]}
    if same and (ra["kept"] or rb["kept"]) and v["verdict"] == "duplicates":
        gone = rb if ra["kept"] else ra
        assert v["rule"] == gone["decided"], v
        bits = got["run"]["method"] == "simhash" and got["verdict"]["distance"] is not None and "Jaccard" not in \
            v["sentence"]
        assert (PHRASE_BITS if bits else PHRASE)[gone["decided"]] in v["sentence"]
        if gone["decided"] not in ("identical", "contained"):
            assert v["value"] == pytest.approx(gone["similarity"], abs=1e-6)
    return v


@pytest.fixture(scope="module")
def jaccard_run(tmp_path_factory):
    """identical (d0, d1), the estimate (d0, d2), an exact check passed (d3, d4) and failed (d5, d6),
    unrelated (d7), and a candidate whose estimate stays below the band (d8, d9: the first of the
    deterministic variants of J ≈ 0.6 that LSH proposes)."""
    from neardup.explain.replay import SmallRun

    t0, t1, t2, t3, t4 = (words(s) for s in range(1, 6))
    low = None
    for start in range(10, 60):              # J = 0.6: a candidate with probability 0.53
        pair = [text(t4), text(edit(t4, 20, start=start, step=15))]
        run = SmallRun(pair, DedupConfig().resolved())
        if run.pair(0, 1).candidate:
            low = pair
            break
    assert low is not None
    docs = [text(t0), text(t0), text(edit(t0, 1)), text(t1), text(edit(t1, 7)), text(t2), text(edit(t2, 9)),
            text(t3), *low]
    return dedup(tmp_path_factory.mktemp("j"), "jaccard", docs)


def test_identical_estimate_exact_and_apart(jaccard_run):
    out, recs = jaccard_run
    v = agrees(out, recs, "d0", "d1")
    assert v["verdict"] == "duplicates" and v["sentence"].startswith("duplicates: identical signatures (128 of 128 slots)")
    v = agrees(out, recs, "d0", "d2")
    assert v["rule"] == "estimate" and "outside the borderline band 0.8 ± 0.106" in v["sentence"]
    v = agrees(out, recs, "d3", "d4")
    assert v["rule"] == "exact" and v["in_band"] and "was within the borderline band 0.8 ± 0.106" in v["sentence"]
    assert f"(a threshold above {v['value']:.3f} would keep both)" in v["sentence"]
    v = agrees(out, recs, "d5", "d6")
    assert v["verdict"] == "not duplicates" and v["how"] == "exact" and v["value"] < 0.8 <= v["estimate"] + 0.106
    assert "< 0.8" in v["sentence"] and "or less would accept it" in v["sentence"]
    v = agrees(out, recs, "d8", "d9")
    assert v["verdict"] == "not duplicates" and "(below the borderline band)" in v["sentence"]
    v = agrees(out, recs, "d0", "d7")
    assert v["verdict"] == "not candidates" and "none of the 16 LSH bands of 6 rows collides" in v["sentence"]
    v = agrees(out, recs, "d1", "d2")           # two removed rows of one cluster
    assert v["verdict"] == "duplicates" and "both were removed for 'd0'" in v["sentence"]


def test_every_pair_agrees(jaccard_run):
    out, recs = jaccard_run
    ids = sorted(recs)
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            agrees(out, recs, a, b)


def test_evidence_slots_and_containment(jaccard_run):
    out, _ = jaccard_run
    res = CliRunner().invoke(main, ["explain", str(out), "d3", "d4"])
    assert res.exit_code == 0, res.output
    first, rest = res.output.split("\n", 1)
    assert first.startswith("duplicates: the estimate") and "slots hidden" in rest
    assert "containment: C(A ⊆ B) exact" in rest
    shown = [x for x in rest.splitlines() if x.strip()[:4].strip().isdigit() and ("≠" in x or " = " in x)]
    res = CliRunner().invoke(main, ["explain", str(out), "d3", "d4", "--slots", "all"])
    every = [x for x in res.output.splitlines() if x.strip()[:4].strip().isdigit() and ("≠" in x or " = " in x)]
    assert len(every) == 128 > len(shown) and "slots hidden" not in res.output
    e = explain(out, "d3", "d4")["explain"]
    c, z = e["containment"], e["shingles"]
    assert c["a_in_b"]["exact"] == z["shared"] / z["a"] and c["b_in_a"]["exact"] == z["shared"] / z["b"]


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """X ~ Y ~ Z at exact Jaccard 0.838, X and Z at 0.700 (checked exactly: deterministic)."""
    x = words(10)
    y = edit(x, 7, 10, tag="y")
    return [text(x), text(y), text(edit(y, 7, 200, tag="z"))], tmp_path_factory.mktemp("c")


def test_bounded_linkage_refusal(chain):
    docs, tmp = chain
    out, recs = dedup(tmp, "bounded", docs, verify="exact")
    v = agrees(out, recs, "d1", "d2")
    assert v["verdict"] == "not merged" and v["rule"] == "linkage"
    assert ("bounded linkage kept the clusters apart: joining would put 'd0' and B at 0.7 < t − δ = 0.75 "
            "(--max-drift 0.101 or more would allow it)") in v["sentence"]
    agrees(out, recs, "d0", "d1")
    agrees(out, recs, "d0", "d2")


def test_drift_split_and_chain(chain):
    docs, tmp = chain
    out, recs = dedup(tmp, "drift", docs, verify="exact", linkage="components")
    v = agrees(out, recs, "d1", "d2")
    assert v["verdict"] == "not merged" and v["rule"] == "drift" and "B is at 0.7 from the kept 'd0'" in v["sentence"]
    out, recs = dedup(tmp, "loose", docs, verify="exact", linkage="components", max_drift=0.2)
    v = agrees(out, recs, "d0", "d2")
    assert v["verdict"] == "in one cluster through other members" and v["rule"] == "chain"
    assert "joined through 'd1': A–'d1' 0.838, 'd1'–B 0.838" in v["sentence"]
    assert "B decided exact by its pair with 'd1'" in v["sentence"]


def test_containment_keeps_the_container(tmp_path):
    host = words(20)
    big = words(21, 1000)
    middle = big[100:350] + words(22, 50)          # 83 % of it in big, its last 50 words its own
    shared = words(24, 100)
    docs = [text(host[:100]), text(host),          # d0 ⊆ d1: d1 kept though d0 comes first
            text(big), text(middle), text(middle[240:300]),    # d4 ⊆ d3 ⊆ d2, but d2 holds little of d4
            text(words(25, 200) + shared[:85]), text(shared), text(words(26, 200) + shared)]  # d6: 0.84 in d5, 1 in d7
    out, recs = dedup(tmp_path, "containment", docs, metric="containment")
    v = agrees(out, recs, "d0", "d1")
    assert v["rule"] == "contained" and recs["d0"]["contained_in"] == "d1"
    assert ("A is contained in B, C(A ⊆ B) = 1 ≥ 0.8" in v["sentence"] and "so B is kept and A removed "
            "(containment never removes the container); the keep policy alone (--keep first) would have kept A"
            in v["sentence"])
    v = agrees(out, recs, "d3", "d4")
    assert v["verdict"] == "not removed" and ("B is held by A (C(B ⊆ A) = 1 ≥ 0.8) but A was removed itself (held "
                                              "by 'd2'), and 'd2' holds only 0.107 of B < 0.8") in v["sentence"]
    v = agrees(out, recs, "d5", "d6")
    assert v["verdict"] == "not in one cluster" and "but B was removed for 'd7', which holds more of it" in v["sentence"]
    for a, b in (("d2", "d3"), ("d2", "d4"), ("d6", "d7"), ("d1", "d2")):
        agrees(out, recs, a, b)


def _variant(cfg: DedupConfig, base: list[str], lo: int, hi: int) -> str:
    """The first variant of ``base`` (more words replaced each time) whose fingerprint lies lo–hi bits
    from its own (deterministic)."""
    sign = make_signer(cfg)
    for m in range(1, len(base) // 9 - 1):
        other = text(edit(base, m, step=9))
        fps, _, _ = sign([text(base), other])
        if lo <= int(fps[0] ^ fps[1]).bit_count() <= hi:
            return other
    raise AssertionError("no variant at that distance")


def test_simhash_within_and_over_the_bits(tmp_path):
    base, other = words(30, 300), words(32, 300)
    cfg = DedupConfig(method="simhash", bits=3).resolved()
    near, far = _variant(cfg, base, 1, 3), _variant(cfg, other, 4, 12)
    out, recs = dedup(tmp_path, "simhash", [text(base), near, text(words(31, 300)), text(base), text(other), far],
                      method="simhash", bits=3)
    v = agrees(out, recs, "d0", "d1")
    assert v["verdict"] == "duplicates" and f"Hamming distance {v['distance']} ≤ 3 bits" in v["sentence"]
    v = agrees(out, recs, "d4", "d5")
    assert v["verdict"] == "not duplicates"
    d = v["distance"]
    assert f"Hamming distance {d} > 3 bits (a limit of --bits {d} would join them)" in v["sentence"]
    v = agrees(out, recs, "d0", "d3")
    assert v["sentence"].startswith("duplicates: identical fingerprints (Hamming distance 0 ≤ 3 bits)")
    e = explain(out, "d4", "d5", "--show", "1000")["explain"]
    for j in e["differing_bits"]:            # the differing features account for each differing bit's sums
        push = sum(f["delta"] * (1 if f["hash"] >> j & 1 else -1) for f in e["differing_features"])
        assert push == pytest.approx(e["a"]["sums"][j] - e["b"]["sums"][j], abs=1e-4)
        assert any(j in f["pushes"] for f in e["differing_features"])


def test_verified_simhash(tmp_path):
    base = words(40, 300)
    out, recs = dedup(tmp_path, "verified", [text(base), text(edit(base, 2)), text(words(41, 300))], method="simhash")
    v = agrees(out, recs, "d0", "d1")
    assert v["rule"] == "exact" and "(the candidate radius), so the pair was checked exactly: Jaccard" in v["sentence"]
    assert agrees(out, recs, "d0", "d2")["verdict"] in ("not candidates", "not duplicates")


# -- compare: the pair as a two-document run -------------------------------------------------------------
def _compare(args) -> dict:
    res = CliRunner().invoke(main, ["compare", "--text", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


PAIRS = {"near": (text(words(50)), text(edit(words(50), 7))), "copy": (text(words(51)), text(edit(words(51), 1))),
         "apart": (text(words(52)), text(words(53))), "passage": (text(words(54)[:120]), text(words(54)))}


@pytest.mark.parametrize("opts,pairs", [
    ([], ("near", "copy", "apart")),
    (["--threshold", "0.9"], ("near", "copy")),
    (["--metric", "containment"], ("passage", "near")),
    (["--verify", "exact", "--keep", "longest"], ("passage", "near")),
    (["--bits", "3"], ("copy", "apart")),
    (["--method", "simhash"], ("copy", "near")),
    (["--idf", "jieba", "--tokenizer", "jieba"], ("chinese",)),
])
def test_compare_reaches_the_runs_verdict(tmp_path, opts, pairs):
    for name in pairs:
        a, b = CHINESE if name == "chinese" else PAIRS[name]
        got = _compare([a, b, *opts])
        v = got["verdict"]
        src = tmp_path / f"{name}.jsonl"
        src.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n"
                               for i, t in (("A", a), ("B", b))), encoding="utf-8")
        res = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / name), "--id-field", "id", "-q",
                                        "--workers", "1", "--no-html", "--method", got["method"], *opts])
        assert res.exit_code == 0, res.output
        recs = {r["id"]: r for r in map(json.loads, (tmp_path / name / "clusters.jsonl").read_text().splitlines())}
        assert v["same_cluster"] == (recs["A"]["cluster"] == recs["B"]["cluster"]), (name, opts, v)
        assert v["decided"] == {k: r["decided"] for k, r in recs.items() if not r["kept"]}, (name, opts, v)
        if not recs["B"]["kept"] and recs["B"]["decided"] not in ("identical", "contained"):
            assert v["value"] == pytest.approx(recs["B"]["similarity"], abs=1e-6)


def test_compare_leads_with_the_sentence():
    a, b = PAIRS["near"]
    res = CliRunner().invoke(main, ["compare", "--text", a, b])
    first = res.output.splitlines()[0]
    assert res.exit_code == 0 and first.startswith("duplicates: the estimate") and "checked exactly: 0.838 ≥ 0.8" in first
    res = CliRunner().invoke(main, ["compare", "--text", a, b, "--threshold", "0.85"])
    assert res.output.startswith("not duplicates:") and "0.838 < 0.85" in res.output.splitlines()[0]
    got = _compare([*CHINESE, "--idf", "jieba", "--tokenizer", "jieba"])
    assert got["method"] == "simhash" and got["parameters"]["run"]["idf"] == "jieba" and got["verdict"]["sentence"]
    got = _compare(["a b c d e f", "a b c d e g", "--num-perm", "1"])
    assert got["verdict"]["sentence"].startswith("no verdict: --num-perm 1 has no LSH bands")


def test_compare_refuses_an_option_that_does_not_apply():
    res = CliRunner().invoke(main, ["compare", "--text", "a b", "a c", "--bits", "3", "--metric", "containment"])
    lines = [x for x in res.output.splitlines() if x.startswith("Error: ")]
    assert res.exit_code != 0 and len(lines) == 1 and "not used by --method simhash: metric (--metric" in lines[0]
    res = CliRunner().invoke(main, ["compare", "--text", "a b", "a c", "--method", "lines"])
    assert res.exit_code != 0 and "compare judges whole documents" in res.output
