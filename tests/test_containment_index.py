"""neardup.index.containment: containment search (after LSH Ensemble) — the S-curve each pair gets
in the containment domain, recall and exactness against brute force on real text, the two entry
points agreeing, growth by batches, and bad input."""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from neardup import ConfigError, ContainmentIndex, Features, MinHash, MinHasher, Shingler, containment_candidates
from neardup.index.containment import _layouts, class_table, containment_params, containment_to_jaccard
from neardup.index.lsh import candidate_pairs, recall_params
from neardup.similarity.jaccard import containment_pairs
from neardup.sketches.minhash import Signatures

ROOT = Path(__file__).resolve().parents[1]
DOCS = [json.loads(x)["text"] for x in gzip.open(ROOT / "examples" / "data" / "debian_copyright.jsonl.gz", "rt")]
WORDS = " ".join(DOCS).split()


@pytest.fixture(scope="module")
def real():
    """The 550 real documents: features, sizes and every ordered pair's exact containment."""
    feats = Shingler().features(DOCS).unique()
    sizes = feats.sizes()
    n = len(DOCS)
    ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    ii, jj = ii.ravel(), jj.ravel()
    keep = (ii != jj) & (sizes[ii] > 0) & (sizes[jj] > 0)
    ii, jj = ii[keep], jj[keep]
    return feats, sizes, ii, jj, containment_pairs(feats, ii, jj)


def _sets(rng, q, x, c):
    """Q of q random items and X of x items holding round(c q) of them (so C(Q ⊆ X) = that / q)."""
    shared = int(round(c * q))
    items = rng.integers(0, 2**63, size=q + x - shared, dtype=np.uint64)
    return items[:q], items[q - shared:]


def _features(sets) -> Features:
    off = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sets], out=off[1:])
    return Features(np.concatenate(sets), off).unique()


@pytest.mark.parametrize("t, q, x, c", [
    (0.7, 200, 2000, 0.30),     # ρ = 10: one-row bands; P ≈ 0.85
    (0.7, 200, 2000, 0.15),     # P ≈ 0.61
    (0.7, 400, 400, 0.50),      # ρ = 1: three-row bands; P ≈ 0.66
    (0.5, 300, 900, 0.30),      # ρ = 3
])
def test_each_pair_gets_the_s_curve_of_its_ratio_class(t, q, x, c):
    """Over 300 independent pairs (k independent hash functions: slots agree independently with
    probability J), the rate at which containment_candidates proposes (Q, X) is the designed
    1 − (1 − J^r)^b with (b, r) of the pair's ratio class, within 4.5 binomial standard errors."""
    rng = np.random.default_rng(12345)
    trials = 300
    sets = []
    for _ in range(trials):
        sets.extend(_sets(rng, q, x, c))
    feats = _features(sets)
    sizes = feats.sizes()
    sigs = MinHasher(num_perm=128, scheme="permutation", seed=7).sign_features(feats)
    lo, hi = containment_candidates(sigs, sizes, t)
    found = set(zip(lo.tolist(), hi.tolist()))
    hits = sum((2 * i, 2 * i + 1) in found for i in range(trials))
    b, r = containment_params(t, 128, int(sizes[0]), int(sizes[1]),
                              layouts=_layouts(t, 128, "recall", 0.99, 8))
    j = containment_to_jaccard(round(c * q) / q, x / q)
    p = 1 - (1 - j ** r) ** b
    assert 0.05 < p < 0.95                     # a case that can fail in both directions
    sd = math.sqrt(trials * p * (1 - p))
    assert abs(hits - trials * p) <= 4.5 * sd, (hits, trials * p, b, r)


@pytest.mark.parametrize("ratio", [0.75, 1, 2, 5, 10, 18])
def test_recall_at_the_threshold_itself(ratio):
    """Pairs at exactly C = t: the recall-mode bands give P ≥ 0.99 wherever b r ≤ k can (for t = 0.7,
    k = 128: up to ρ ≈ 19), so among 300 pairs the misses are at most the Binomial(300, 0.01) bound
    3 + 4.5 sd ≈ 11."""
    t, q = 0.7, 300
    x = int(round(ratio * q))
    rng = np.random.default_rng(99)
    sets = []
    for _ in range(300):
        sets.extend(_sets(rng, q, x, t))
    feats = _features(sets)
    sigs = MinHasher(num_perm=128, scheme="permutation", seed=3).sign_features(feats)
    lo, hi = containment_candidates(sigs, feats.sizes(), t)
    found = set(zip(lo.tolist(), hi.tolist()))
    misses = sum((2 * i, 2 * i + 1) not in found for i in range(300))
    assert misses <= 3 + 4.5 * math.sqrt(300 * 0.01 * 0.99)


def test_recall_mode_parameters_meet_the_target_or_do_their_best():
    t, k = 0.7, 128
    layouts = tuple(range(1, k + 1))
    m_lo, tab_r, tab_b = class_table(t, k, layouts)
    for i in range(0, tab_r.shape[0], 7):
        rho = 2.0 ** ((m_lo + i) / 8)
        jt = t / (1 + rho - t)
        p = 1 - (1 - jt ** tab_r[i]) ** tab_b[i]
        assert tab_b[i] * tab_r[i] <= k
        best = max(1 - (1 - jt ** r) ** (k // r) for r in range(1, k + 1))
        assert p >= 0.99 or p >= best * (1 - 1e-9), (rho, tab_b[i], tab_r[i], p, best)


def test_the_bug_report_excerpt_is_found():
    """A 200-word excerpt of a 1,154-word document (C = 1, J ≈ 0.15) at t = 0.7: Jaccard banding for
    0.7 proposes it with probability < 0.05; banding for its ratio with probability > 0.999."""
    host = " ".join(WORDS[40000:41154])
    passage = " ".join(WORDS[40400:40600])
    f = Shingler().features([passage, host]).unique()
    q, x = f.sizes()
    assert containment_pairs(f, [0], [1])[0] == 1.0
    jac = q / x
    b, r = recall_params(0.7, 128)
    assert 1 - (1 - jac ** r) ** b < 0.05
    b2, r2 = containment_params(0.7, 128, int(q), int(x))
    assert 1 - (1 - containment_to_jaccard(1.0, x / q) ** r2) ** b2 > 0.999
    found = 0
    for seed in range(1, 11):
        sig = MinHasher(seed=seed).sign_features(f)
        lo, hi = containment_candidates(sig, f.sizes(), 0.7)
        found += (0, 1) in set(zip(lo.tolist(), hi.tolist()))
        idx = ContainmentIndex(threshold=0.7, seed=seed)
        idx.add(["host"], [host])
        found += idx.query(passage) == ["host"]
    assert found == 20
    naive = sum(len(candidate_pairs(MinHasher(seed=s).sign_features(f).values, b, r)[0]) for s in range(1, 11))
    assert naive <= 3


def test_index_answers_against_brute_force(real):
    """Exact verification: every answer is a true pair (precision 1); pairs with C ≥ t + 0.05 are
    each found with probability ≥ 0.99 where b r ≤ k allows it, so at most a few % are missed even
    though one seed's errors are correlated across pairs."""
    feats, sizes, ii, jj, c = real
    keys = [f"d{i}" for i in range(len(DOCS))]
    for t in (0.5, 0.8):
        idx = ContainmentIndex(threshold=t)
        idx.add(keys, DOCS)
        res = idx.query_batch(DOCS, with_scores=True)
        got = {(a, int(k[1:])): s for a, hits in enumerate(res) for k, s in hits if int(k[1:]) != a}
        truth = {(a, b): v for a, b, v in zip(ii.tolist(), jj.tolist(), c.tolist()) if v >= t}
        assert set(got) <= set(truth)
        assert all(abs(got[p] - truth[p]) < 1e-12 for p in got)
        want = [p for p, v in truth.items() if v >= t + 0.05]
        assert len(want) > 500
        recall = np.mean([p in got for p in want])
        assert recall >= 0.97, recall
        # every document contains itself
        assert all(hits and hits[0][1] == 1.0 for a, hits in enumerate(res) if sizes[a] > 0)


def test_estimate_and_raw_candidates(real):
    feats, sizes, ii, jj, c = real
    keys = list(range(len(DOCS)))
    idx = ContainmentIndex(threshold=0.8, keep_shingles=False)
    sigs = MinHasher().sign_features(feats)
    idx.add_signatures(keys, sigs, sizes)
    raw = idx.query_signatures(sigs, sizes, verify="none", with_scores=True)
    est = idx.query_signatures(sigs, sizes, with_scores=True)
    for a in range(0, len(DOCS), 25):
        assert {k for k, _ in est[a]} <= {k for k, _ in raw[a]}
        assert all(s >= 0.8 for _, s in est[a])
        assert [s for _, s in est[a]] == sorted((s for _, s in est[a]), reverse=True)
    with pytest.raises(ConfigError, match="keep_shingles=False"):
        idx.query(DOCS[0], verify="exact")
    assert idx.query(DOCS[3])[0] in (3, *[k for k, s in est[3] if s == 1.0])


def test_collection_candidates_match_the_index(real):
    feats, sizes, *_ = real
    sigs = MinHasher().sign_features(feats)
    lo, hi = containment_candidates(sigs, sizes, 0.7)
    assert np.all(lo != hi) and np.all(sizes[lo] > 0) and np.all(sizes[hi] > 0)
    assert np.all(sizes[hi] >= 0.7 * sizes[lo] - 1e-9)           # x < t q cannot hold t of q
    idx = ContainmentIndex(threshold=0.7, keep_shingles=False)
    idx.add_signatures(range(len(DOCS)), sigs, sizes)
    qi, ri = idx.candidates(sigs, sizes)
    other = qi != ri
    assert set(zip(lo.tolist(), hi.tolist())) == set(zip(qi[other].tolist(), ri[other].tolist()))
    # a subset of rows: pairs among those rows only, named by their rows in the whole matrix
    rows = np.arange(0, len(DOCS), 3)
    slo, shi = containment_candidates(sigs, sizes, 0.7, rows=rows)
    full = set(zip(lo.tolist(), hi.tolist()))
    sub = set(zip(slo.tolist(), shi.tolist()))
    assert sub == {(a, b) for a, b in full if a % 3 == 0 and b % 3 == 0}


def test_growing_by_batches_and_removing_give_the_same_answers():
    keys = [f"d{i}" for i in range(len(DOCS))]
    one = ContainmentIndex(threshold=0.6)
    one.add(keys, DOCS)
    many = ContainmentIndex(threshold=0.6)
    for s, e in ((0, 100), (100, 101), (101, 102), (102, 300), (300, 301), (301, 550)):
        many.add(keys[s:e], DOCS[s:e])
    assert len(many._tables) <= 1 + math.ceil(math.log2(len(DOCS)))
    queries = DOCS[::11]
    assert one.query_batch(queries, with_scores=True) == many.query_batch(queries, with_scores=True)
    hit = one.query(DOCS[22])
    assert "d22" in hit
    many.remove("d22")
    assert "d22" not in many.query(DOCS[22]) and "d22" not in many and len(many) == 549
    with pytest.raises(KeyError):
        many.remove("d22")
    many.add(["d22"], [DOCS[22]])                   # back under the same key, as a new row (later in ties)
    assert sorted(many.query(DOCS[22])) == sorted(hit)


def test_query_threshold_override_and_ensemble_mode():
    keys = [f"d{i}" for i in range(200)]
    idx = ContainmentIndex(threshold=0.6)
    idx.add(keys, DOCS[:200])
    for q in DOCS[:200:20]:
        loose = idx.query(q, with_scores=True)
        strict = idx.query(q, threshold=0.9, with_scores=True)
        assert {k for k, _ in strict} <= {k for k, _ in loose}
        assert all(s >= 0.9 for _, s in strict)
    ens = ContainmentIndex(threshold=0.6, mode="ensemble")
    ens.add(keys, DOCS[:200])
    f = Shingler().features(DOCS[:200]).unique()
    for a in range(0, 200, 20):
        for k, s in ens.query(DOCS[a], with_scores=True):
            assert s == containment_pairs(f, [a], [int(k[1:])])[0] >= 0.6


def test_bad_input():
    idx = ContainmentIndex(threshold=0.8)
    idx.add(["a", "b", "empty"], [DOCS[0], DOCS[1], ""])
    # an empty query, and an empty document, are in no answer
    assert idx.query("") == [] and idx.query("   \n") == []
    assert "empty" not in idx.query(DOCS[0]) and idx.query(DOCS[0])[0] == "a"
    # a query longer than every document: nothing holds 80 % of it, no error
    assert idx.query(" ".join(WORDS[:30000])) == []
    for t in (0, -0.1, 1.5, float("nan"), True, "0.8", None):
        with pytest.raises(ConfigError, match="threshold"):
            ContainmentIndex(threshold=t)
        with pytest.raises(ConfigError, match="threshold"):
            idx.query(DOCS[0], threshold=t) if t is not None else containment_candidates(np.zeros((2, 4)), [1, 1], t)
    with pytest.raises(ConfigError, match="mode"):
        ContainmentIndex(mode="jaccard")
    with pytest.raises(ConfigError, match="bottom-k"):
        ContainmentIndex(scheme="bottomk")
    with pytest.raises(ConfigError, match="verify"):
        idx.query(DOCS[0], verify="maybe")
    with pytest.raises(ValueError, match="twice"):
        idx.add(["x", "x"], ["p q r s t", "u v w x y"])
    with pytest.raises(ValueError, match="already in the index"):
        idx.add(["a"], [DOCS[2]])
    with pytest.raises(TypeError):
        idx.query([DOCS[0]])
    with pytest.raises(TypeError):
        idx.add(["z"], "one text, not a list")
    with pytest.raises(ValueError, match="keeps shingles"):
        idx.add_signatures(["z"], MinHasher().sign_batch([DOCS[3]]), [10])
    assert len(idx) == 3

    sk = ContainmentIndex(threshold=0.8, keep_shingles=False)
    f = Shingler().features(DOCS[:3]).unique()
    sigs = MinHasher().sign_features(f)
    sk.add_signatures(["a", "b", "c"], sigs, f.sizes())
    for bad in ([np.nan, 1, 2], [-1, 1, 2], [1.5, 1, 2], [1, 2], ["1", "2", "3"]):
        with pytest.raises(ValueError, match="sizes"):
            sk.add_signatures(["x", "y", "z"], sigs, bad)
    with pytest.raises(ValueError, match="size 0 ⇔ empty"):
        sk.add_signatures(["x", "y", "z"], sigs, [0, 5, 5])
    empty = MinHasher().sign_batch([""])
    with pytest.raises(ValueError, match="size 0 ⇔ empty"):
        sk.add_signatures(["x"], empty, [3])
    sk.add_signatures(["e"], empty, [0])
    assert sk.query_signatures(empty, [0]) == [[]]
    # sketches made with another (num_perm, scheme, seed) are refused, not silently compared
    for other in (MinHasher(num_perm=64), MinHasher(seed=2), MinHasher(scheme="permutation")):
        with pytest.raises(ValueError, match="scheme, seed, num_perm"):
            sk.query_signatures(other.sign_batch([DOCS[0]]), [int(f.sizes()[0])])
    with pytest.raises(ValueError, match="scheme, seed, num_perm"):
        sk.query_signatures([MinHash(seed=5).update(["a", "b"])], [2])
    with pytest.raises(ValueError, match="slots"):
        sk.query_signatures(np.zeros((1, 64), np.uint32), [1])
    with pytest.raises(ValueError, match="no shingles"):
        sk.query_signatures(sigs, f.sizes(), verify="exact")
    with pytest.raises(ConfigError, match="bottom-k"):
        containment_candidates(Signatures(np.zeros((2, 8), np.uint64), "bottomk", 1), [1, 1], 0.5)
    with pytest.raises(ValueError, match="sizes"):
        containment_candidates(sigs, [1, 2], 0.5)
    with pytest.raises(ValueError, match="≥ 1"):
        containment_params(0.5, 128, 0, 10)
    lo, hi = containment_candidates(sigs, [0, 0, 0], 0.5)          # only empty documents: no pairs
    assert lo.shape == hi.shape == (0,)


def test_datasketch_scheme_by_text():
    """The datasketch-compatible schemes hash shingle strings: documents and queries come as text."""
    idx = ContainmentIndex(threshold=0.7, scheme="datasketch-legacy")
    idx.add(range(30), DOCS[:30])
    part = " ".join(DOCS[4].split()[:120])
    assert 4 in idx.query(part) and 4 in idx.query(part, verify="minhash") + idx.query(part, verify="none")
    with pytest.raises(ValueError, match="as text"):
        idx.add_features([99], Shingler().features([DOCS[40]]))
    with pytest.raises(ValueError, match="as text"):
        idx.query_features(Shingler().features([part]))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dedup_metric_containment_finds_passages(tmp_path, seed):
    """``dedup --metric containment`` bands each pair for its size ratio: a 200-word excerpt and the first
    10 %, 30 % and 50 % of a 1,154-word host (C = 1, J from 0.09 to 0.5; Jaccard banding for 0.7 found
    only the 60 % and longer passages) land in the host's cluster; unrelated documents stay alone."""
    from hostile import cli, write_jsonl

    host = WORDS[40000:41154]
    texts = [" ".join(host), " ".join(host[400:600])] + [" ".join(host[:int(len(host) * p)]) for p in (0.1, 0.3, 0.5)]
    others = [" ".join(WORDS[s:s + 300]) for s in (1000, 9000, 20000, 60000)]
    src = write_jsonl(tmp_path / "in.jsonl", texts + others, ids=[f"d{i}" for i in range(len(texts) + len(others))])
    out = tmp_path / "o"
    code, _, err = cli("dedup", src, "-o", out, "--id-field", "id", "--metric", "containment", "--threshold", "0.7",
                       "--seed", str(seed), "--linkage", "components", "-q")
    assert code == 0, err
    recs = [json.loads(x) for x in (out / "clusters.jsonl").read_text(encoding="utf-8").splitlines()]
    cluster = {r["id"]: r["cluster"] for r in recs}
    assert {cluster[f"d{i}"] for i in range(len(texts))} == {"d0"}
    assert all(cluster[f"d{i}"] == f"d{i}" for i in range(len(texts), len(texts) + len(others)))
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert rep["parameters"]["lsh_mode"].startswith("containment per size ratio")
    b, r = rep["lsh"]["b"], rep["lsh"]["r"]          # the curve: two documents of equal size, over C
    assert rep["lsh"]["curve_of"].startswith("containment")
    assert rep["lsh"]["curve"][50][1] == pytest.approx(1 - (1 - (0.5 / 1.5) ** r) ** b, abs=1e-6)


def test_dedup_metric_containment_hostile_corpora(tmp_path):
    """Empty documents, one-word documents (a set of one shingle), exact copies and a single document:
    no crash, every row accounted, empties never clustered, copies removed; --bands/--rows keep Jaccard
    banding (named in the report)."""
    from hostile import cli, write_jsonl

    passage = " ".join(WORDS[500:700])
    texts = ["", "   ", "word", "word", passage, passage, " ".join(WORDS[300:1200]), "another"]
    src = write_jsonl(tmp_path / "in.jsonl", texts, ids=[f"d{i}" for i in range(len(texts))])
    for extra, mode in (([], "containment per size ratio"), (["--bands", "16", "--rows", "8"], "explicit")):
        out = tmp_path / f"o{len(extra)}"
        code, _, err = cli("dedup", src, "-o", out, "--id-field", "id", "--metric", "containment", "--threshold",
                           "0.8", "-q", "--pairs", *extra)
        assert code == 0, err
        recs = {r["id"]: r for r in map(json.loads, (out / "clusters.jsonl").read_text(encoding="utf-8").splitlines())}
        assert len(recs) == len(texts)
        assert recs["d0"]["kept"] and recs["d1"]["kept"] and recs["d0"]["empty"] and recs["d0"]["cluster"] == "d0"
        assert recs["d3"]["cluster"] == "d2"
        rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
        assert rep["counts"]["accounted"] and rep["parameters"]["lsh_mode"].startswith(mode)
        if not extra:    # the passage is inside the long document (found only by per-ratio banding): the
            # passage and its copy go, the host that holds them stays — whatever the keep policy prefers
            assert recs["d4"]["cluster"] == recs["d5"]["cluster"] == "d6" and recs["d6"]["kept"]
        else:
            assert recs["d5"]["cluster"] == "d4" and recs["d6"]["cluster"] == "d6"
    one = write_jsonl(tmp_path / "one.jsonl", [passage], ids=["x"])
    code, _, err = cli("dedup", one, "-o", tmp_path / "single", "--metric", "containment", "-q")
    assert code == 0, err
