"""Exact set-similarity kernels over sorted, de-duplicated CSR shingle sets."""
from __future__ import annotations

import numpy as np
from numba import njit


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
def intersect_size(h, sa, ea, sb, eb):
    return intersect_runs(h, sa, ea, h, sb, eb)


@njit(cache=True)
def pair_stats(h, off, ii, jj):
    """For each pair: (|A ∩ B|, |A|, |B|) of the sorted unique sets of rows ii[p], jj[p]."""
    n = ii.shape[0]
    inter = np.empty(n, dtype=np.int64)
    na = np.empty(n, dtype=np.int64)
    nb = np.empty(n, dtype=np.int64)
    for p in range(n):
        a = ii[p]
        b = jj[p]
        inter[p] = intersect_size(h, off[a], off[a + 1], off[b], off[b + 1])
        na[p] = off[a + 1] - off[a]
        nb[p] = off[b + 1] - off[b]
    return inter, na, nb
