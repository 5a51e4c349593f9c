"""Exact Hamming-distance pair search (permuted block tables) against brute force."""
import math
import time
from itertools import combinations

import numpy as np
import pytest

from neardup.index.simhash_index import (
    CollapsedPairs,
    SimHashIndex,
    all_pairs,
    layout,
    plan_tables,
)
from neardup.kernels.simhash import hamming_many

ONE = np.uint64(1)


def flip(v, bits):
    v = np.uint64(v)
    for b in bits:
        v ^= ONE << np.uint64(b)
    return v


def planted(rng, n, k, n_pairs, allow_zero=True):
    """n random fingerprints, then n_pairs of them overwritten by near copies of others
    at distances 0..k+1 (1..k+1 when allow_zero is false)."""
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    lo = 0 if allow_zero else 1
    for _ in range(n_pairs):
        a, b = rng.integers(n, size=2)
        if a != b:
            fps[b] = flip(fps[a], rng.choice(64, rng.integers(lo, k + 2), replace=False))
    return fps


def brute(fps, k):
    out = set()
    n = len(fps)
    for i in range(n - 1):
        d = hamming_many(np.full(n - i - 1, fps[i], np.uint64), fps[i + 1:])
        for j in np.flatnonzero(d <= k):
            out.add((i, i + 1 + int(j), int(d[j])))
    return out


def as_set(res):
    i, j, d = res
    got = set(zip(i.tolist(), j.tolist(), d.tolist()))
    assert len(got) == len(i), "a pair was reported twice"
    assert np.all(i < j)
    return got


# ------------------------------------------------------------------------------ plans

@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 7])
def test_every_layout_covers_all_patterns_within_k(k):
    """Pigeonhole: every XOR pattern of weight <= k leaves some table's key bits untouched."""
    plans = [plan_tables(64, k, n) for n in (10, 10**6, 10**9)]
    plans += [layout(64, k, (k + 1,)), layout(64, k, (k + 2,))]
    if k:
        plans.append(layout(64, k, (k + 1, k + 1)))
    rng = np.random.default_rng(k)
    if k <= 3:   # exhaustive
        pats = [sum(1 << b for b in c) for w in range(k + 1) for c in combinations(range(64), w)]
    else:        # weight-k patterns, random and clustered in one region
        pats = [sum(1 << int(b) for b in rng.choice(64, k, replace=False)) for _ in range(20000)]
        pats += [((1 << k) - 1) << s for s in range(64 - k + 1)]
    x = np.array(pats, dtype=np.uint64)
    for p in plans:
        assert p.k == k and all(b > k for b in p.levels)
        covered = np.zeros(x.size, bool)
        for m in p.key_masks:
            covered |= (x & m) == 0
        assert covered.all(), p.describe()


def test_plan_shape_and_growth():
    p = plan_tables(64, 3, 1000)
    assert p.levels == (4,) and p.n_tables == 4 and set(p.key_bits.tolist()) == {16}
    assert plan_tables(64, 3, 10**7).n_tables > 4            # larger n: more, longer keys
    big = plan_tables(64, 3, 10**9)
    assert big.n_tables >= 10 and big.key_bits.min() >= 25
    assert layout(64, 3, (5,)).n_tables == math.comb(5, 3) == 10
    two = layout(64, 3, (4, 4))
    assert two.n_tables == 16 and set(two.key_bits.tolist()) == {28}   # Manku's 16 x 28 bits
    for plan in (p, big, two):   # keys: bits of the mask, fields consistent with it
        for t, fields in enumerate(plan.tables):
            m = 0
            for s, w in fields:
                m |= ((1 << w) - 1) << s
            assert m == int(plan.key_masks[t]) and bin(m).count("1") == plan.key_bits[t]
    assert "tables" in p.describe()
    with pytest.raises(ValueError):
        plan_tables(64, 64, 100)
    with pytest.raises(ValueError):
        layout(64, 3, (3,))


# ------------------------------------------------------------------------------ batch

@pytest.mark.parametrize("k", [0, 1, 3, 5, 7])
@pytest.mark.parametrize("n", [0, 1, 2, 300, 5000])
def test_all_pairs_equals_brute_force(k, n):
    rng = np.random.default_rng(1000 * k + n)
    for allow_zero in (False, True):      # distinct values only / with identical copies
        fps = planted(rng, n, k, n // 3, allow_zero)
        if not allow_zero:
            fps = np.unique(fps)
            rng.shuffle(fps)
        exp = brute(fps, k)
        assert as_set(all_pairs(fps, k)) == exp
        if n == 300:    # every fixed layout is exact too, whatever n it was sized for
            for lv in [(k + 1,), (k + 2,)] + ([(k + 1, k + 1)] if k else []):
                assert as_set(all_pairs(fps, k, layout(64, k, lv))) == exp


def test_smaller_k_with_a_larger_plan_and_wrong_plan():
    rng = np.random.default_rng(5)
    fps = planted(rng, 2000, 5, 800)
    assert as_set(all_pairs(fps, 2, plan_tables(64, 5, 2000))) == brute(fps, 2)
    with pytest.raises(ValueError):
        all_pairs(fps, 5, plan_tables(64, 3, 2000))


def test_many_pairs_in_one_run_grow_the_output():
    """A dense cluster: every pair shares every key; far more answers than the first buffer."""
    rng = np.random.default_rng(6)
    center = rng.integers(0, 2**64, dtype=np.uint64)
    fps = np.array([flip(center, rng.choice(16, rng.integers(0, 3), replace=False) + 40)
                    for _ in range(1500)] + list(rng.integers(0, 2**64, 600, dtype=np.uint64)),
                   dtype=np.uint64)
    fps = np.unique(fps)
    exp = brute(fps, 3)
    assert len(exp) > 1024
    assert as_set(all_pairs(fps, 3)) == exp


def test_seomoz_simhash_py_find_all_expectations():
    """seomoz/simhash-py test/test.py: find_all(hashes, blocks 4..9, 3 bits) -> 24 / 20 pairs."""
    basic = [0x000000FF, 0x000000EF, 0x000000EE, 0x000000CE, 0x00000033,
             0x0000FF00, 0x0000EF00, 0x0000EE00, 0x0000CE00, 0x00003300,
             0x00FF0000, 0x00EF0000, 0x00EE0000, 0x00CE0000, 0x00330000,
             0xFF000000, 0xEF000000, 0xEE000000, 0xCE000000, 0x33000000]
    diverse = [0x00000000, 0x10101000, 0x10100010, 0x10001010, 0x00101010,
               0x01010100, 0x01010001, 0x01000101, 0x00010101]
    for hashes, n_expected in ((basic, 24), (diverse, 20)):
        fps = np.array(hashes, dtype=np.uint64)
        truth = {(min(hashes[i], hashes[j]), max(hashes[i], hashes[j]))
                 for i, j, _ in brute(fps, 3)}
        assert len(truth) == n_expected
        plans = [None] + [layout(64, 3, (b,)) for b in range(4, 10)]
        for p in plans:
            i, j, d = all_pairs(fps, 3, p)
            assert len(i) == n_expected
            got = {(min(hashes[a], hashes[b]), max(hashes[a], hashes[b]))
                   for a, b in zip(i.tolist(), j.tolist())}
            assert got == truth
        if n_expected == 24:   # spot checks from the expected list
            assert (0x000000CE, 0x000000FF) in truth and (0xCE000000, 0xEF000000) in truth
    i, j, d = all_pairs(np.array([0xCE, 0xFF], np.uint64), 3)
    assert d.tolist() == [3]


def test_identical_fingerprints_expand_and_collapse():
    rng = np.random.default_rng(8)
    base = rng.integers(0, 2**64, 40, dtype=np.uint64)
    fps = np.concatenate([np.repeat(base[:3], [30, 5, 2]), base[3:],
                          [flip(base[0], [3]), flip(base[1], [7, 9, 60])]]).astype(np.uint64)
    rng.shuffle(fps)
    exp = brute(fps, 3)
    res = all_pairs(fps, 3)
    assert as_set(res) == exp
    col = all_pairs(fps, 3, collapse_identical=True)
    assert isinstance(col, CollapsedPairs)
    assert sorted(len(g) for g in col.groups()) == [2, 5, 30]
    for g in col.groups():
        assert np.all(fps[g] == fps[g[0]]) and np.all(col.rep[g] == g.min())
    assert np.all(col.dist >= 1) and np.all(col.i < col.j)
    assert np.all(col.rep[col.i] == col.i) and np.all(col.rep[col.j] == col.j)
    assert col.n_pairs() == len(exp)
    assert as_set(col.expand()) == exp
    # no duplicates: collapse is the identity
    u = np.unique(fps)
    c2 = all_pairs(u, 3, collapse_identical=True)
    assert np.array_equal(c2.rep, np.arange(u.size)) and c2.groups() == []


def test_100k_copies_of_one_fingerprint():
    """All C(n, 2) pairs are real answers; 5e9 of them is refused fast by default, and the
    collapsed form is one group."""
    n = 100_000
    fps = np.full(n, 0xDEADBEEFDEADBEEF, dtype=np.uint64)
    fps[::1000] = 12345          # 100 copies of a second value
    t = time.perf_counter()
    with pytest.raises(ValueError, match="collapse_identical"):
        all_pairs(fps, 3)
    col = all_pairs(fps, 3, collapse_identical=True)
    assert time.perf_counter() - t < 5.0
    assert sorted(len(g) for g in col.groups()) == [100, n - 100]
    assert col.i.size == 0
    assert col.n_pairs() == math.comb(n - 100, 2) + math.comb(100, 2)
    # a moderate number of copies is expanded in full when allowed
    small = np.full(3000, 7, dtype=np.uint64)
    i, j, d = all_pairs(small, 3)
    assert i.size == math.comb(3000, 2) and not d.any() and np.all(i < j)
    with pytest.raises(ValueError):
        all_pairs(small, 3, max_pairs=1000)


def test_input_types():
    big = [2**64 - 1, 2**64 - 2, 2**63, 5]
    i, j, d = all_pairs(big, 1)
    assert sorted(zip(i.tolist(), j.tolist(), d.tolist())) == [(0, 1, 1)]
    i, j, d = all_pairs(np.array([1, 3, 100], np.int64), 1)
    assert list(zip(i.tolist(), j.tolist())) == [(0, 1)]
    with pytest.raises(ValueError):
        all_pairs(np.array([-1, 3], np.int64), 1)
    with pytest.raises(TypeError):
        all_pairs(np.array([1.0, 3.0]), 1)


def test_narrow_fingerprints():
    """f < 64: blocks over the low f bits; still exact."""
    rng = np.random.default_rng(9)
    fps = planted(rng, 1500, 3, 500) & np.uint64((1 << 32) - 1)
    p = plan_tables(32, 3, fps.size)
    assert all(int(m) < 2**32 for m in p.key_masks)
    assert as_set(all_pairs(fps, 3, p)) == brute(fps, 3)


# ------------------------------------------------------------------------------ online

def brute_query(store, q, k):
    return sorted(((key, bin(fp ^ q).count("1")) for key, fp in store.items()
                   if bin(fp ^ q).count("1") <= k), key=lambda kv: kv[1])


def norm(res):
    return sorted(res, key=lambda kv: (kv[1], str(kv[0])))


@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_online_equals_brute_force(k):
    rng = np.random.default_rng(20 + k)
    idx = SimHashIndex(k=k, expected_n=500, capacity=16)   # small: exercises growth
    store = {}
    base = rng.integers(0, 2**64, 300, dtype=np.uint64).tolist()
    for _ in range(3000):
        op = rng.random()
        if op < 0.55 or not store:
            key = f"d{rng.integers(400)}"
            src = base[rng.integers(len(base))]
            fp = int(flip(src, rng.choice(64, rng.integers(0, k + 2), replace=False)))
            idx.add(key, fp)
            store[key] = fp
        elif op < 0.7:
            key = list(store)[rng.integers(len(store))]
            idx.remove(key)
            del store[key]
        else:
            src = base[rng.integers(len(base))]
            q = int(flip(src, rng.choice(64, rng.integers(0, k + 2), replace=False)))
            got = idx.query(q)
            assert [d for _, d in got] == sorted(d for _, d in got)
            assert norm(got) == norm(brute_query(store, q, k))
        assert len(idx) == len(store)
    for key in list(store)[:20]:
        assert key in idx and idx.fingerprint(key) == store[key]
    assert "missing" not in idx
    qs = rng.integers(0, 2**64, 50, dtype=np.uint64)
    qs[:25] = [store[kk] for kk in list(store)[:25]]
    many = idx.query_many(qs)
    assert [norm(r) for r in many] == [norm(idx.query(int(q))) for q in qs]
    assert [norm(r) for r in many] == [norm(brute_query(store, int(q), k)) for q in qs]
    if k:
        q = int(qs[0])
        assert norm(idx.query(q, k=k - 1)) == norm(brute_query(store, q, k - 1))


def test_online_add_many_replace_remove_and_errors():
    rng = np.random.default_rng(31)
    fps = planted(rng, 3000, 3, 1000)
    idx = SimHashIndex(k=3, expected_n=3000)
    idx.add_many(range(3000), fps)
    assert len(idx) == 3000
    store = {i: int(v) for i, v in enumerate(fps)}
    for q in fps[:200].tolist():
        assert norm(idx.query(q)) == norm(brute_query(store, q, 3))
    # batch with a repeated key (last wins) and keys already stored (replaced)
    idx.add_many([5, 5, 7, "x"], np.array([1, 2, 3, 4], np.uint64))
    store.update({5: 2, 7: 3, "x": 4})
    assert len(idx) == len(store) and idx.fingerprint(5) == 2
    assert norm(idx.query(3)) == norm(brute_query(store, 3, 3))
    idx.add(7, 2**64 - 1)                # replace with a different fingerprint
    store[7] = 2**64 - 1
    assert (7, 0) in idx.query(2**64 - 1) and (7, 0) not in idx.query(3)
    idx.remove("x")
    del store["x"]
    with pytest.raises(KeyError):
        idx.remove("x")
    idx.discard("x")
    assert norm(idx.query(4)) == norm(brute_query(store, 4, 3))
    with pytest.raises(ValueError):
        idx.add("neg", -1)
    with pytest.raises(ValueError):
        idx.query(1, k=4)
    with pytest.raises(ValueError):
        SimHashIndex(k=4, plan=plan_tables(64, 3, 100, "online"))


def test_online_identical_fingerprints():
    idx = SimHashIndex(k=3, expected_n=100)
    for i in range(5000):
        idx.add(i, 0xABCDEF)
    idx.add("near", 0xABCDEF ^ 0b1011)
    res = idx.query(0xABCDEF)
    assert len(res) == 5001 and res[-1] == ("near", 3)
    assert [k for k, _ in res[:5000]] == list(range(5000))   # ties: insertion order
    for i in range(0, 5000, 2):
        idx.remove(i)
    assert len(idx.query(0xABCDEF)) == 2501
    assert idx.query_many([0xABCDEF])[0] == idx.query(0xABCDEF)


def test_online_matches_all_pairs():
    rng = np.random.default_rng(41)
    fps = planted(rng, 4000, 3, 1500, allow_zero=False)
    idx = SimHashIndex(k=3, expected_n=4000)
    idx.add_many(range(fps.size), fps)
    pairs = set()
    for a, res in enumerate(idx.query_many(fps)):
        pairs |= {(min(a, b), max(a, b), d) for b, d in res if b != a}
    assert pairs == as_set(all_pairs(fps, 3))


def test_online_copies_do_not_slow_other_queries():
    """100 000 copies of one value occupy one table entry: a query that shares a table key
    with it but is far away does not walk the copies."""
    v = 0x0123456789ABCDEF
    idx = SimHashIndex(k=3, expected_n=100_000)
    idx.add_many(range(100_000), np.full(100_000, v, np.uint64))
    assert len(idx) == 100_000
    far = [v ^ (0xFFF << 40) ^ i for i in range(20_000)]      # same low bits, 12+ bits away
    t = time.perf_counter()
    assert all(r == [] for r in idx.query_many(far))
    for q in far[:2000]:
        assert idx.query(q) == []
    assert time.perf_counter() - t < 3.0
    assert len(idx.query(v ^ 1)) == 100_000
    for key in range(0, 100_000, 3):
        idx.remove(key)
    res = idx.query(v)
    assert len(res) == len(idx) and [k for k, _ in res] == sorted(k for k in range(100_000) if k % 3)
