import json

import numpy as np
import pytest

from neardup import MinHasher, Signatures
from neardup.clusters import build_clusters
from neardup.dedup import containment_from_jaccard, find_equal_duplicates, find_minhash_duplicates
from neardup.index.lsh import candidate_pairs, choose_params, datasketch_params, recall_params, s_curve


def test_datasketch_parameters_reproduced(shared):
    ref = json.loads((shared / "corpora/reference_values/values.json").read_text())["datasketch"]
    for key, br in ref["lsh_params_num_perm128_default_weights"].items():
        t = float(key.split()[1])
        assert datasketch_params(t, 128) == (br["b"], br["r"])


@pytest.mark.parametrize("t", [0.5, 0.7, 0.8, 0.9])
@pytest.mark.parametrize("target", [0.9, 0.99, 0.999])
def test_recall_params_reach_target_and_are_cheapest(t, target):
    b, r = recall_params(t, 128, target)
    assert b * r <= 128
    assert s_curve(t, b, r) >= target
    # no other feasible (b', r') with P(t) >= target has less mass below t
    from neardup.index.lsh import false_positive_mass
    mine = false_positive_mass(t, b, r)
    for r2 in range(1, 129):
        for b2 in range(1, 128 // r2 + 1):
            if s_curve(t, b2, r2) >= target:
                assert false_positive_mass(t, b2, r2) >= mine - 1e-12


def test_explicit_and_invalid_params():
    assert (choose_params(0.8, 128, b=8, r=16).b, choose_params(0.8, 128, b=8, r=16).r) == (8, 16)
    with pytest.raises(ValueError):
        choose_params(0.8, 128, b=20, r=10)
    with pytest.raises(ValueError):
        recall_params(1.2, 128)


def test_candidate_probability_follows_s_curve():
    """Empirical candidate rate of planted pairs at similarity s matches 1-(1-s^r)^b."""
    rng = np.random.default_rng(1)
    k, b, r, pairs = 128, 16, 6, 4000
    for s in (0.5, 0.7):
        base = rng.integers(0, 2**32, (pairs, k), dtype=np.uint64)
        other = base.copy()
        mask = rng.random((pairs, k)) >= s            # each slot agrees with probability s
        other[mask] = rng.integers(0, 2**32, int(mask.sum()), dtype=np.uint64)
        vals = np.empty((2 * pairs, k), dtype=np.uint32)
        vals[0::2], vals[1::2] = base, other
        lo, hi = candidate_pairs(vals, b, r)
        found = np.sum((hi == lo + 1) & (lo % 2 == 0))
        p = s_curve(s, b, r)
        assert abs(found / pairs - p) <= 4 * np.sqrt(p * (1 - p) / pairs)


def test_identical_documents_cost_linear_edges():
    vals = np.repeat(np.arange(128, dtype=np.uint32)[None, :], 50_000, axis=0)
    res = find_minhash_duplicates(Signatures(vals, "oph", 1), 0.8)
    assert res.candidates == 0                       # identical rows never reach the LSH stage
    assert res.pairs_lo.shape[0] == 49_999
    assert res.clusters.kept.sum() == 1


def test_large_bucket_is_a_star_not_quadratic():
    rng = np.random.default_rng(2)
    vals = rng.integers(0, 2**32, (3000, 128), dtype=np.uint64).astype(np.uint32)
    vals[:, :6] = 7                                   # everyone shares band 0 (r = 6)
    lo, hi = candidate_pairs(vals, 16, 6, max_bucket=64)
    assert lo.shape[0] == 2999 and np.all(lo == 0)


def test_end_to_end_clusters_keep_policy_and_chaining():
    base = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()
    docs = [" ".join(base), " ".join(base[:-1] + ["sigma"]), " ".join(base[:-2] + ["sigma", "tau"]),
            "unrelated words that share nothing with the greek alphabet sequence at all", "",
            " ".join(base) + " extra words at the end making it longer"]
    h = MinHasher(num_perm=256, ngram=2)
    sigs = h.sign_batch(docs)
    res = find_minhash_duplicates(sigs, 0.7, lengths=[len(d) for d in docs], keep="longest")
    c = res.clusters
    assert c.cluster[3] == 3 and c.cluster[4] == 4           # unrelated and empty stay alone
    assert len({c.cluster[0], c.cluster[1], c.cluster[2]}) == 1
    rep = c.cluster[0]
    assert c.kept[rep] and c.kept.sum() == len(docs) - (np.bincount(c.cluster)[rep] - 1)
    assert np.all(c.similarity[c.cluster == np.arange(len(docs))] == 1.0)
    first = find_minhash_duplicates(sigs, 0.7, keep="first").clusters
    assert first.cluster[1] == 0


def test_drift_split_breaks_chains():
    # path graph 0-1-2-3 where similarity to rep 0 decays along the chain
    sim = {(0, 1): 0.9, (0, 2): 0.6, (0, 3): 0.3, (2, 3): 0.9, (1, 2): 0.9, (1, 3): 0.6}

    def sim_to(a, b):
        return np.array([1.0 if x == y else sim[(min(x, y), max(x, y))] for x, y in zip(a, b)])

    lo, hi = np.array([0, 1, 2]), np.array([1, 2, 3])
    chained = build_clusters(4, lo, hi, sim_to)
    assert chained.cluster.tolist() == [0, 0, 0, 0]
    split = build_clusters(4, lo, hi, sim_to, threshold=0.8, max_drift=0.1)
    assert split.cluster.tolist() == [0, 0, 2, 2]
    assert split.similarity.tolist() == [1.0, 0.9, 1.0, 0.9]


def test_containment_from_jaccard_and_equal_grouping():
    # |A|=10 inside |B|=40: J = 10/40
    assert containment_from_jaccard(0.25, 10, 40) == pytest.approx(1.0)
    assert containment_from_jaccard(0.25, 40, 10) == pytest.approx(0.25)
    res = find_equal_duplicates(np.array([9, 4, 9, 0, 4], np.uint64), valid=np.array([1, 1, 1, 0, 1], bool))
    assert res.clusters.cluster.tolist() == [0, 1, 0, 3, 1]


def test_simhash_duplicates_identical_fingerprints_are_linear():
    from neardup.dedup import find_simhash_duplicates

    fps = np.full(200_000, 0xDEADBEEF, dtype=np.uint64)
    fps[-1] ^= np.uint64(0b111)                      # within k = 3 of all the others
    fps[-2] = ~np.uint64(0xDEADBEEF)                 # far from everyone
    res = find_simhash_duplicates(fps, 3)
    c = res.clusters
    assert c.kept.sum() == 2 and c.kept[0] and c.kept[-2]
    assert c.similarity[-1] == 1 - 3 / 64 and c.similarity[1] == 1.0


def _reference_pairs(vals, b, r, rows, max_bucket):
    """Candidate pairs by the definition: per band, rows with equal keys (band_keys of a copy of the
    selected rows), all pairs of a bucket up to max_bucket members, else a star from its smallest."""
    from neardup.kernels.lsh import band_keys

    keys = band_keys(np.ascontiguousarray(vals[rows]), b, r)
    out = set()
    for band in range(b):
        buckets: dict = {}
        for x, key in zip(rows.tolist(), keys[:, band].tolist()):
            buckets.setdefault(key, []).append(x)
        for members in buckets.values():
            members.sort()
            if len(members) <= max_bucket:
                out.update((u, v) for i, u in enumerate(members) for v in members[i + 1:])
            else:
                out.update((members[0], v) for v in members[1:])
    return sorted(out)


@pytest.mark.parametrize("seed", [3, 4])
def test_candidate_pairs_band_by_band_match_the_definition(seed):
    """candidate_pairs reads each band's keys in place (band_key_rows) and folds each band's pairs
    into the distinct codes as it goes: the same pairs as the definition, for every row subset and
    bucket limit (buckets of 2, of several members, and over the limit)."""
    rng = np.random.default_rng(seed)
    n, k, b, r = 600, 32, 8, 4
    vals = rng.integers(0, 2**32, (n, k), dtype=np.uint64).astype(np.uint32)
    for _ in range(120):                                   # planted partial copies: shared bands
        a, c = rng.integers(0, n, 2)
        band = rng.integers(0, b)
        vals[c, band * r:(band + 1) * r] = vals[a, band * r:(band + 1) * r]
    vals[rng.choice(n, 40, replace=False), :r] = 9        # one large bucket in band 0
    for rows in (np.arange(n), np.sort(rng.choice(n, 350, replace=False))):
        for max_bucket in (64, 8):
            lo, hi = candidate_pairs(vals, b, r, max_bucket=max_bucket, rows=rows if rows.shape[0] < n else None)
            assert list(zip(lo.tolist(), hi.tolist())) == _reference_pairs(vals, b, r, rows, max_bucket)


def test_merge_unique_and_band_key_rows():
    from neardup.kernels.lsh import band_key_rows, band_keys, merge_unique

    rng = np.random.default_rng(5)
    for _ in range(50):
        a = np.unique(rng.integers(0, 40, rng.integers(0, 30)))
        c = np.unique(rng.integers(0, 40, rng.integers(0, 30)))
        assert merge_unique(a.astype(np.int64), c.astype(np.int64)).tolist() == sorted(set(a) | set(c))
    vals = rng.integers(0, 2**32, (50, 24), dtype=np.uint64).astype(np.uint32)
    rows = np.array([3, 7, 7, 40, 0], dtype=np.int64)
    keys = band_keys(np.ascontiguousarray(vals[rows]), 4, 6)
    for band in range(4):
        assert np.array_equal(band_key_rows(vals, rows, band, 6), keys[:, band])


def test_empty_rows_are_rows_of_the_empty_value_only():
    from neardup.dedup.methods.minhash import _empty_rows
    from neardup.sketches.minhash import empty_value

    e = empty_value("oph")
    vals = np.arange(5 * 8, dtype=np.uint32).reshape(5, 8)
    vals[1] = e                  # empty
    vals[2, 0] = e               # only its first slot
    vals[3, 1:] = e              # all but its first slot
    assert _empty_rows(Signatures(vals, "oph", 1)).tolist() == [False, True, False, False, False]
def test_merge_order_is_lexsort_by_similarity_then_pair():
    """clusters.cluster.merge_order (two stable sorts) equals np.lexsort((hi, lo, -sim)) — ties in
    similarity, repeated pairs, zero similarities and both sides of the lo·n + hi fallback."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from neardup.clusters.cluster import merge_order

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.sampled_from([0.0, 0.5, 0.75, 0.8, 1.0])),
                    max_size=80), st.booleans())
    def check(edges, huge):
        lo = np.array([a for a, _, _ in edges], dtype=np.int64)
        hi = np.array([b for _, b, _ in edges], dtype=np.int64)
        sim = np.array([s for _, _, s in edges], dtype=np.float64)
        n = (1 << 31) if huge else 31
        assert merge_order(n, lo, hi, sim).tolist() == np.lexsort((hi, lo, -sim)).tolist()

    check()


def test_group_order_puts_equal_keys_together():
    """kernels.lsh.group_order is NumPy's stable argsort — keys sharing their top 16 bits, repeated
    keys, one key only — so equal band keys are consecutive (what bucket_pairs reads of it) and
    candidate pairs from it equal those from a full argsort."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from neardup.kernels.lsh import bucket_pairs, group_order

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.sampled_from([0, 1, 5, 2**48, 2**48 + 3, 2**63, 2**64 - 1, 7 << 50]), max_size=60),
           st.integers(2, 8))
    def check(keys, max_bucket):
        col = np.array(keys, dtype=np.uint64)
        order = group_order(col)
        assert order.tolist() == np.argsort(col, kind="stable").tolist()      # (a stable sort, in fact)
        seen, last = set(), None
        for k in col[order].tolist():
            assert k == last or k not in seen
            seen.add(k)
            last = k
        ids = np.arange(len(keys), dtype=np.int64) * 3
        a = bucket_pairs(col, order, ids, max_bucket)
        b = bucket_pairs(col, np.argsort(col, kind="stable"), ids, max_bucket)
        assert sorted(zip(*map(np.ndarray.tolist, a))) == sorted(zip(*map(np.ndarray.tolist, b)))

    check()


def test_bounded_linkage_by_components_on_all_threads_equals_one_pass(monkeypatch):
    """Bounded linkage run per connected component on all threads (kernels.clusters
    .bounded_components_parts, the edges cut by clusters.cluster.component_parts) gives the labels
    of one pass over all edges — MinHash rows and the always-equal oracle, chains and stars that
    the sample check splits, 1 to 7 parts — and build_clusters takes that path above its threshold
    with the same clusters."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    import neardup.clusters.cluster as cluster
    from neardup.clusters import SimilarityOracle
    from neardup.clusters.cluster import component_parts, merge_order
    from neardup.kernels.clusters import bounded_components, bounded_components_parts

    @settings(max_examples=150, deadline=None)
    @given(st.integers(2, 60), st.lists(st.tuples(st.integers(0, 59), st.integers(0, 59)), max_size=150),
           st.integers(1, 7), st.integers(1, 4), st.integers(0, 2**31))
    def check(n, raw, parts, sample, seed):
        rng = np.random.default_rng(seed)
        pairs = sorted({(min(a % n, b % n), max(a % n, b % n)) for a, b in raw if a % n != b % n})
        lo = np.array([a for a, _ in pairs], dtype=np.int64)
        hi = np.array([b for _, b in pairs], dtype=np.int64)
        # rows drawn from a few prototypes with a few slots changed: similar and dissimilar members
        proto = rng.integers(0, 5, (4, 16)).astype(np.uint32)
        sig = proto[rng.integers(0, 4, n)].copy()
        flip = rng.random(sig.shape) < 0.15
        sig[flip] = rng.integers(0, 5, int(flip.sum())).astype(np.uint32)
        sim = rng.random(lo.shape[0])
        order = merge_order(n, lo, hi, sim)
        for kind in (0, 3):
            args = (kind, sig, np.uint32(2**32 - 1), np.zeros(1, np.uint64), np.zeros(2, np.int64),
                    np.zeros(1, np.uint64), 0.7, sample, np.int32)
            one = bounded_components(n, lo, hi, order, *args)
            cut, offsets = component_parts(n, lo, hi, order, parts)
            assert sorted(cut.tolist()) == sorted(order.tolist()) and offsets[-1] == order.shape[0]
            assert np.array_equal(bounded_components_parts(n, lo, hi, cut, offsets, *args), one)

    check()
    rng = np.random.default_rng(4)
    n = 400
    sig = rng.integers(0, 9, (6, 32)).astype(np.uint32)[rng.integers(0, 6, n)]
    sig[rng.random(sig.shape) < 0.1] = 9                  # (members near their prototype, not equal)
    lo = rng.integers(0, n - 1, 900)
    hi = np.minimum(lo + rng.integers(1, 40, 900), n - 1)
    keep = lo < hi
    lo, hi = lo[keep], hi[keep]
    sim = np.round(rng.random(lo.shape[0]), 2)
    kw = dict(keep="first", threshold=0.8, max_drift=0.1, linkage="bounded", edge_sim=sim,
              oracle=SimilarityOracle.minhash(sig, 2**32 - 1))
    serial = build_clusters(n, lo, hi, lambda a, b: np.ones(a.shape[0]), **kw)
    used = []
    real = cluster.bounded_components_parts
    monkeypatch.setattr(cluster, "bounded_components_parts", lambda *a: used.append(1) or real(*a))
    monkeypatch.setattr(cluster, "PARALLEL_LINKAGE_EDGES", 1)
    monkeypatch.setattr(cluster, "_linkage_threads", lambda edges: 2)
    parallel = build_clusters(n, lo, hi, lambda a, b: np.ones(a.shape[0]), **kw)
    assert used == [1] and np.array_equal(serial.cluster, parallel.cluster) and serial.kept.sum() < n
