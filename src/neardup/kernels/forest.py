"""LSH Forest (Bawa, Condie & Ganesan, WWW 2005) over a MinHash signature matrix, for top-k queries.

Tree t orders the rows lexicographically by their slots ``t·m … t·m + m − 1`` (``perms[t]``). Rows
agreeing with a query on the first d slots of tree t are one contiguous range of that order, and
the range only widens as d falls. A query descends from d = m, collecting the rows of every tree's
range, until it holds ``want`` distinct rows; they are then ranked by the estimate on the full
signature. Two documents of Jaccard J agree on a d-slot prefix with probability J^d, so the most
similar rows enter first.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .index_probe import _lower_bound, _upper_bound
from .minhash import is_empty_row


@njit(cache=True)
def _cmp_prefix(sig, row, q, start, d):
    """−1, 0, 1: the d slots of ``row`` from ``start`` against the query's."""
    for j in range(start, start + d):
        a = sig[row, j]
        b = q[j]
        if a < b:
            return -1
        if a > b:
            return 1
    return 0


@njit(cache=True)
def _prefix_range(sig, perm, q, start, d, lo, hi):
    """[first, end) of the rows of ``perm[lo:hi]`` whose d-slot prefix equals the query's."""
    a, b = lo, hi
    while a < b:
        mid = (a + b) >> 1
        if _cmp_prefix(sig, perm[mid], q, start, d) < 0:
            a = mid + 1
        else:
            b = mid
    first = a
    b = hi
    while a < b:
        mid = (a + b) >> 1
        if _cmp_prefix(sig, perm[mid], q, start, d) <= 0:
            a = mid + 1
        else:
            b = mid
    return first, a


@njit(cache=True)
def _key_range(keys, lo_key, hi_key):
    """[first, end) of the sorted ``keys`` within [lo_key, hi_key]."""
    first = _lower_bound(keys, lo_key)
    return first, _upper_bound(keys, hi_key, first)


@njit(cache=True)
def forest_top_k(sig, perms, keys, live, m, q, want, k, empty):
    """Up to ``k`` rows most similar to ``q`` (estimate = fraction of equal slots), best first, from
    at least ``want`` candidates (fewer when the forest holds fewer): (rows, estimates). ``keys``
    (:func:`build_keys`, for m ≤ 2): each tree's prefixes as sorted 64-bit keys, searched in one
    contiguous array instead of through ``perms`` into the signature matrix (a cache miss per step)."""
    n = sig.shape[0]
    trees = perms.shape[0]
    seen = np.zeros(n, dtype=np.bool_)
    cand = np.empty(max(want, 16), dtype=np.int64)
    c = 0
    packed = keys.shape[1] == n and m <= 2
    first = np.empty(trees, dtype=np.int64)
    stop = np.empty(trees, dtype=np.int64)
    for d in range(m, 0, -1):
        room = c
        for t in range(trees):
            if packed:
                hi32 = np.uint64(q[t * m]) << np.uint64(32)
                if m == 2 and d == 2:
                    lo_key = hi32 | np.uint64(q[t * m + 1])
                    hi_key = lo_key
                else:
                    lo_key = hi32
                    hi_key = hi32 | np.uint64(0xFFFFFFFF)
                a, b = _key_range(keys[t], lo_key, hi_key)
            else:
                a, b = _prefix_range(sig, perms[t], q, t * m, d, 0, n)
            first[t] = a
            stop[t] = b
            room += b - a
        # room for the level's candidates first: an array replaced inside the loop below would cost
        # numba's reference counting at every candidate
        if room > cand.shape[0]:
            grown = np.empty(max(room, 2 * cand.shape[0]), dtype=np.int64)
            grown[:c] = cand[:c]
            cand = grown
        for t in range(trees):
            for i in range(first[t], stop[t]):
                r = perms[t, i]
                if seen[r] or not live[r]:
                    continue
                seen[r] = True
                cand[c] = r
                c += 1
        if c >= want:
            break
    # ties of the estimate: the older row first, so the candidates go in row order — read off the
    # ``seen`` flags when that is cheaper than sorting them (c log c against n bytes)
    if n <= 16 * c * max(1, int(np.log2(c + 1))):
        c = 0
        for r in range(n):
            if seen[r]:
                cand[c] = r
                c += 1
        cand = cand[:c]
    else:
        cand = np.sort(cand[:c])
    # the estimate is (equal slots) / num_perm: a counting sort on the equal slots, stable, gives the
    # order (−estimate, row) in O(c + num_perm)
    slots = sig.shape[1]
    flat = sig.reshape(-1)
    eq = np.empty(c, dtype=np.int64)
    q_empty = is_empty_row(q, empty)
    for i in range(c):
        base = np.uint64(cand[i] * slots)
        same = 0
        for j in range(slots):               # branch-free on unsigned indices: LLVM vectorises it
            same += flat[base + np.uint64(j)] == q[np.uint64(j)]
        # equal_fraction's rule: an empty row (or query) scores 0
        eq[i] = 0 if q_empty or (same > 0 and is_empty_row(sig[cand[i]], empty)) else same
    start = np.zeros(slots + 2, dtype=np.int64)
    for i in range(c):
        start[slots - eq[i] + 1] += 1
    for v in range(1, slots + 2):
        start[v] += start[v - 1]
    take = min(k, c)
    rows = np.empty(take, dtype=np.int64)
    out = np.empty(take, dtype=np.float64)
    for i in range(c):
        at = start[slots - eq[i]]
        start[slots - eq[i]] += 1
        if at < take:
            rows[at] = cand[i]
            out[at] = eq[i] / slots
    return rows, out


def build_perms(sig: np.ndarray, trees: int, m: int) -> np.ndarray:
    """Per tree, the row order sorted by its m slots (lexicographic; ties by row)."""
    n = sig.shape[0]
    perms = np.empty((trees, n), dtype=np.int64)
    for t in range(trees):
        cols = sig[:, t * m:(t + 1) * m]
        perms[t] = np.lexsort(tuple(cols[:, j] for j in range(m - 1, -1, -1)))
    return perms


def build_keys(sig: np.ndarray, perms: np.ndarray, m: int) -> np.ndarray:
    """Per tree, the m ≤ 2 prefix slots of each row in ``perms`` order as one uint64 (first slot in
    the high 32 bits): sorted, since ``perms`` orders the rows by those slots. (trees, 0) for m > 2."""
    trees, n = perms.shape
    if m > 2 or sig.dtype.itemsize > 4:
        return np.zeros((trees, 0), dtype=np.uint64)
    keys = np.empty((trees, n), dtype=np.uint64)
    for t in range(trees):
        rows = perms[t]
        k = sig[rows, t * m].astype(np.uint64) << np.uint64(32)
        if m == 2:
            k |= sig[rows, t * m + 1].astype(np.uint64)
        keys[t] = k
    return keys
