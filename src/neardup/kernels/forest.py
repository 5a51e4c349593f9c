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

from .minhash import equal_fraction


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
def forest_top_k(sig, perms, live, m, q, want, k, empty):
    """Up to ``k`` rows most similar to ``q`` (estimate = fraction of equal slots), best first, from
    at least ``want`` candidates (fewer when the forest holds fewer): (rows, estimates)."""
    n = sig.shape[0]
    trees = perms.shape[0]
    seen = np.zeros(n, dtype=np.bool_)
    cand = np.empty(max(want, 16), dtype=np.int64)
    c = 0
    for d in range(m, 0, -1):
        for t in range(trees):
            a, b = _prefix_range(sig, perms[t], q, t * m, d, 0, n)
            for i in range(a, b):
                r = perms[t, i]
                if seen[r] or not live[r]:
                    continue
                seen[r] = True
                if c == cand.shape[0]:
                    grown = np.empty(2 * c, dtype=np.int64)
                    grown[:c] = cand
                    cand = grown
                cand[c] = r
                c += 1
        if c >= want:
            break
    cand = np.sort(cand[:c])                   # ties of the estimate: the older row first
    # the estimate is (equal slots) / num_perm: a counting sort on the equal slots, stable, gives the
    # order (−estimate, row) in O(c + num_perm)
    slots = sig.shape[1]
    eq = np.empty(c, dtype=np.int64)
    for i in range(c):
        eq[i] = np.int64(round(equal_fraction(sig[cand[i]], q, empty) * slots))
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
