"""Exact set-similarity kernels over sorted, de-duplicated CSR shingle sets."""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True)
def intersect_runs(ha, sa, ea, hb, sb, eb):
    """|A ∩ B| of the sorted distinct runs ha[sa:ea] and hb[sb:eb], by a merge."""
    i = sa
    j = sb
    c = 0
    while i < ea and j < eb:
        if ha[i] < hb[j]:
            i += 1
        elif hb[j] < ha[i]:
            j += 1
        else:
            c += 1
            i += 1
            j += 1
    return c


@njit(cache=True)
def intersect_bounded(ha, sa, ea, hb, sb, eb, need):
    """|A ∩ B| of two sorted distinct runs, or −1 as soon as it cannot reach ``need`` (the values of
    A not yet looked up could not make up the difference). Each value of A is found in B by
    galloping from the previous find (steps 1, 2, 4, … then a binary search): O(|A| log(|B|/|A|))
    reads, each near the last — the case of a passage against a long document; when |A| > |B|/8
    a merge is cheaper and the early stop is left out."""
    if (ea - sa) * 8 >= eb - sb:
        return intersect_runs(ha, sa, ea, hb, sb, eb)
    c = 0
    lo = sb
    for i in range(sa, ea):
        if c + (ea - i) < need:
            return -1
        v = ha[i]
        step = 1
        hi = lo
        while hi < eb and hb[hi] < v:
            lo = hi + 1
            hi = lo + step
            step *= 2
        if hi > eb:
            hi = eb
        while lo < hi:                      # the first position ≥ v lies in [lo, hi]
            mid = (lo + hi) >> 1
            if hb[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        if lo == eb:
            break
        if hb[lo] == v:
            c += 1
    return c if c >= need else -1


@njit(cache=True)
def intersect_size(h, sa, ea, sb, eb):
    """|A ∩ B| of two runs of one array: the smaller looked up in the larger by galloping when their
    sizes differ by 8× or more (a passage against a long document), else a merge."""
    if ea - sa <= eb - sb:
        return intersect_bounded(h, sa, ea, h, sb, eb, 0)
    return intersect_bounded(h, sb, eb, h, sa, ea, 0)


@njit(cache=True)
def _pair_range(h, off, ii, jj, inter, na, nb, start, end):
    for p in range(start, end):
        a = ii[p]
        b = jj[p]
        inter[p] = intersect_size(h, off[a], off[a + 1], off[b], off[b + 1])
        na[p] = off[a + 1] - off[a]
        nb[p] = off[b + 1] - off[b]


@njit(cache=True)
def pair_stats(h, off, ii, jj):
    """For each pair: (|A ∩ B|, |A|, |B|) of the sorted unique sets of rows ii[p], jj[p]."""
    n = ii.shape[0]
    inter = np.empty(n, dtype=np.int64)
    na = np.empty(n, dtype=np.int64)
    nb = np.empty(n, dtype=np.int64)
    _pair_range(h, off, ii, jj, inter, na, nb, 0, n)
    return inter, na, nb


@njit(cache=True, parallel=True)
def pair_stats_parallel(h, off, ii, jj, chunks):
    """:func:`pair_stats` with the pairs cut into ``chunks`` stretches run on all threads (for large
    batches; numba's default thread pool must not be entered from two Python threads at once)."""
    n = ii.shape[0]
    inter = np.empty(n, dtype=np.int64)
    na = np.empty(n, dtype=np.int64)
    nb = np.empty(n, dtype=np.int64)
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        _pair_range(h, off, ii, jj, inter, na, nb, c * step, min(n, (c + 1) * step))
    return inter, na, nb


@njit(cache=True)
def query_jaccard(qh, hb, start, end, rows):
    """Exact Jaccard of one query's sorted distinct hashes ``qh`` with each stored set
    ``hb[start[r]:end[r]]`` of ``rows`` (0 where either is empty)."""
    nq = qh.shape[0]
    out = np.zeros(rows.shape[0], dtype=np.float64)
    for p in range(rows.shape[0]):
        r = rows[p]
        s = start[r]
        e = end[r]
        nb = e - s
        if nq == 0 or nb <= 0:
            continue
        if nq <= nb:
            c = intersect_bounded(qh, 0, nq, hb, s, e, 0)
        else:
            c = intersect_bounded(hb, s, e, qh, 0, nq, 0)
        out[p] = c / (nq + nb - c)
    return out
