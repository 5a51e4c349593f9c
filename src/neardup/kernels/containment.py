"""Containment LSH kernels: band tables sorted for lookup, batch probing with per-pair banding, and
intersection sizes between two CSR shingle collections.

A *layout* r cuts the k signature slots into ⌊k/r⌋ bands of r rows; its band keys are
:func:`neardup.kernels.lsh.band_keys` (seeded with the band and with r, so keys of different
layouts never meet). A table stores, for every band of every layout, the (key, row) entries of a
set of documents sorted by (key, size): one binary search finds a bucket, and inside it the
documents too small or too large for the query's classes are skipped by a second one.

:func:`probe` answers a batch of queries. For a query of size q and a document of size x the
ratio class is m = ⌈G log₂(x / q)⌉ (G classes per doubling); the class's parameters (b_m, r_m)
say which bands may make the pair a candidate: those with r = r_m and band index < b_m.
Probing visits, per layout, only the bands some class of the query's size range uses; a hit
counts when its own class uses that band, so every pair is banded with the parameters of its
own ratio — one table serves all of them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .jaccard import intersect_bounded
from .lsh import _grow


@njit(cache=True)
def ratio_class(x, q, grid):
    """m = ⌈grid · log₂(x / q)⌉ (with a 1e-9 tolerance, so an exact power lands in its own class)."""
    return np.int64(np.ceil(grid * np.log2(x / q) - 1e-9))


@njit(cache=True)
def _first_at_least(skeys, srows, sizes, lo, hi, key, size):
    """First position p in [lo, hi) with (skeys[p], sizes[srows[p]]) ≥ (key, size)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        k = skeys[mid]
        if k < key or (k == key and sizes[srows[mid]] < size):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _class_sizes(q, m, grid, reverse):
    """The document sizes x of ratio class m for a query of size q, widened by one for rounding:
    ρ = x / q ∈ (2^((m−1)/G), 2^(m/G)], or with ``reverse`` ρ = q / x in that range."""
    if reverse:
        return (np.int64(np.floor(q / 2.0 ** (m / grid))), np.int64(np.ceil(q / 2.0 ** ((m - 1) / grid))) + 1)
    return np.int64(np.floor(q * 2.0 ** ((m - 1) / grid))), np.int64(np.ceil(q * 2.0 ** (m / grid))) + 1


@njit(cache=True)
def probe(qkeys, qsizes, qrows, skeys, srows, sizes, live, lay_r, lay_start, tab_r, tab_b, m_lo, grid,
          threshold, max_size, seen, reverse=False):
    """Candidate pairs (query a, document row) of a batch of queries against one table.

    ``qkeys`` (nq × B): the queries' band keys of every layout side by side (layout j's bands are
    columns lay_start[j]:lay_start[j+1]); ``skeys``/``srows`` (B × n): the table, each band
    column sorted by (key, size); ``sizes``/``live``: per row of the table; ``qrows``: the query's
    own row (skipped; −1 for none). ``tab_r``/``tab_b``: parameters of ratio class m at index
    m − m_lo (clipped at both ends). Rows with x < threshold · q cannot hold a fraction t of the
    query and are never visited. ``seen`` (one flag per row, all False on entry and on return) drops
    repeats of a row within a query. Returns (query index, row) arrays.

    ``reverse``: the other direction — the documents X that the query Q may *hold* to C(X ⊆ Q) ≥ t:
    each pair is banded as if X were the query and Q the document (class of ρ = q / x), and only
    x ≤ q / t is visited. Both directions of a batch against a table give exactly the candidate
    pairs that :func:`probe` gives over the union of the two collections, between them."""
    nq = qkeys.shape[0]
    nl = lay_r.shape[0]
    nt = tab_r.shape[0]
    n = skeys.shape[1] if skeys.shape[0] > 0 else 0
    cap = 64
    oq = np.empty(cap, dtype=np.int64)
    orow = np.empty(cap, dtype=np.int64)
    p = 0
    bmax = np.zeros(nl, dtype=np.int64)
    xlo = np.zeros(nl, dtype=np.int64)
    xhi = np.zeros(nl, dtype=np.int64)
    for a in range(nq):
        q = qsizes[a]
        if q <= 0 or n == 0:
            continue
        if reverse:     # C(X ⊆ Q) ≥ t needs t·x ≤ |X ∩ Q| ≤ q
            xmin = np.int64(1)
            # the largest x the forward rule admits with X as the query: ⌈t·x − 1e-9⌉ ≤ q, in floats
            xmax = np.int64(np.floor((q + 1e-9) / threshold))
            while np.ceil(threshold * (xmax + 1) - 1e-9) <= q:
                xmax += 1
            while xmax > 0 and np.ceil(threshold * xmax - 1e-9) > q:
                xmax -= 1
            xmax = min(xmax, max_size)
            m0 = ratio_class(np.float64(q), np.float64(xmax), grid)
            m1 = ratio_class(np.float64(q), np.float64(xmin), grid)
        else:
            xmin = np.int64(np.ceil(threshold * q - 1e-9))
            if xmin < 1:
                xmin = 1
            xmax = max_size
            m0 = ratio_class(np.float64(xmin), np.float64(q), grid)
            m1 = ratio_class(np.float64(xmax), np.float64(q), grid)
        if xmin > xmax:
            continue
        # which bands of which layout the classes of this query's size range use
        for j in range(nl):
            bmax[j] = 0
            xlo[j] = max_size + 1
            xhi[j] = 0
        for m in range(m0, m1 + 1):
            t = min(max(m - m_lo, 0), nt - 1)
            for j in range(nl):
                if lay_r[j] == tab_r[t]:
                    if tab_b[t] > bmax[j]:
                        bmax[j] = tab_b[t]
                    lo, hi = _class_sizes(q, m, grid, reverse)
                    if lo < xlo[j]:
                        xlo[j] = lo
                    if hi > xhi[j]:
                        xhi[j] = hi
        for j in range(nl):
            r = lay_r[j]
            lo_size = max(xlo[j], xmin)
            hi_size = min(xhi[j], xmax)
            for i in range(bmax[j]):
                c = lay_start[j] + i
                key = qkeys[a, c]
                s = _first_at_least(skeys[c], srows[c], sizes, 0, n, key, lo_size)
                while s < n and skeys[c, s] == key:
                    row = srows[c, s]
                    s += 1
                    x = sizes[row]
                    if x > hi_size:
                        break
                    if seen[row] or row == qrows[a] or not live[row]:
                        continue
                    if reverse:
                        m = ratio_class(np.float64(q), np.float64(x), grid)
                    else:
                        m = ratio_class(np.float64(x), np.float64(q), grid)
                    t = min(max(m - m_lo, 0), nt - 1)
                    if tab_r[t] != r or i >= tab_b[t]:
                        continue
                    seen[row] = True
                    if p == cap:
                        oq = _grow(oq, p + 1)
                        orow = _grow(orow, p + 1)
                        cap = oq.shape[0]
                    oq[p] = a
                    orow[p] = row
                    p += 1
        # clear the flags this query set (cheaper than the whole array): the tail of the output
        k = p - 1
        while k >= 0 and oq[k] == a:
            seen[orow[k]] = False
            k -= 1
    return oq[:p].copy(), orow[:p].copy()


@njit(cache=True)
def cross_intersections(ha, offa, ii, hb, offb, jj, need):
    """|A_ii[p] ∩ B_jj[p]| for sets of two sorted distinct CSR collections (a, b), or −1 where it is
    below ``need[p]`` (pass zeros for every exact size)."""
    n = ii.shape[0]
    out = np.empty(n, dtype=np.int64)
    for p in range(n):
        a = ii[p]
        b = jj[p]
        out[p] = intersect_bounded(ha, offa[a], offa[a + 1], hb, offb[b], offb[b + 1], need[p])
    return out
