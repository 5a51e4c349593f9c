"""Exact set-similarity kernels over sorted, de-duplicated CSR shingle sets."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .swar import AHEAD, equal_pairs_4x4, prefetch, prefetch_range


@njit(cache=True)
def intersect_runs(ha, sa, ea, hb, sb, eb):
    """|A ∩ B| of the sorted distinct runs ha[sa:ea] and hb[sb:eb], by a merge."""
    return _merge_bounded(ha, sa, ea, hb, sb, eb, 0)


@njit(cache=True)
def _merge_bounded(ha, sa, ea, hb, sb, eb, need):
    """|A ∩ B| by a merge, or −1 once the values left on the shorter side cannot reach ``need``."""
    if need <= 0:
        return _merge(ha, sa, ea, hb, sb, eb)
    i = sa
    j = sb
    c = 0
    while i < ea and j < eb:
        if c + min(ea - i, eb - j) < need:
            return -1
        c, i, j = _step(ha[i], hb[j], c, i, j)
    return c if c >= need else -1


@njit(cache=True, inline="always")
def _merge(ha, sa, ea, hb, sb, eb):
    """|A ∩ B| by a merge of blocks of four: the 16 pairs of the two current blocks are compared at
    once (:func:`~neardup.kernels.swar.equal_pairs_4x4`), then the block with the smaller last value
    moves on (both on a tie) — a match is never in a block already left, since the values left are
    all below the other block's last; the last few values merge one at a time, a branch on equality
    (near-duplicates share most values: it is predicted well) and branch-free steps otherwise.
    Against one-at-a-time steps: the band's 2.56 M pairs of the 1 M corpus 1.55 → 1.02 s, unrelated
    sets of 200 half as long (Schlegel, Willhalm & Lehner, "Fast sorted-set intersection using SIMD
    instructions", ADMS 2011)."""
    i = sa
    j = sb
    c = 0
    while i + 4 <= ea and j + 4 <= eb:
        c += equal_pairs_4x4(ha, i, hb, j)
        x = ha[i + 3]
        y = hb[j + 3]
        i += 4 * (x <= y)
        j += 4 * (y <= x)
    while i < ea and j < eb:
        c, i, j = _step(ha[i], hb[j], c, i, j)
    return c


@njit(cache=True, inline="always")
def _step(x, y, c, i, j):
    """One step of a merge: equal values count and advance both sides, else the smaller advances."""
    if x == y:
        return c + 1, i + 1, j + 1
    return c, i + (x < y), j + (y < x)


@njit(cache=True)
def intersect_bounded(ha, sa, ea, hb, sb, eb, need):
    """|A ∩ B| of two sorted distinct runs, or −1 as soon as it cannot reach ``need`` (the values of
    A not yet looked up could not make up the difference). Each value of A is found in B by
    galloping from the previous find (steps 1, 2, 4, … then a binary search): O(|A| log(|B|/|A|))
    reads, each near the last — the case of a passage against a long document; when |A| > |B|/8
    a merge is cheaper (it too stops early when ``need`` > 0)."""
    if (ea - sa) * 8 >= eb - sb:
        return _merge_bounded(ha, sa, ea, hb, sb, eb, need)
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
def _pair_range(h, first, stop, ii, jj, inter, na, nb, start, end):
    """:func:`pair_stats` of pairs ``start:end``. The sets of the pair :data:`AHEAD` places on are
    prefetched, a cache line at a time: a set read from a random place otherwise stalls the merge
    on every line (the band's 2.56 M pairs of the 1 M corpus, 193 values a set: 2.4 s → 1.7 s on two
    cores, with :func:`_merge`)."""
    for p in range(start, end):
        q = p + AHEAD
        if q < end:
            for r in (ii[q], jj[q]):
                prefetch_range(h, first[r], stop[r])
        a = ii[p]
        b = jj[p]
        inter[p] = intersect_size(h, first[a], stop[a], first[b], stop[b])
        na[p] = stop[a] - first[a]
        nb[p] = stop[b] - first[b]


@njit(cache=True)
def pair_stats(h, first, stop, ii, jj):
    """For each pair: (|A ∩ B|, |A|, |B|) of the sorted distinct sets h[first[r]:stop[r]] of rows
    ii[p], jj[p] (a CSR's offsets give first = off[:-1], stop = off[1:]; the sets may also lie in any
    order, as the band's do when the workers write them)."""
    n = ii.shape[0]
    inter = np.empty(n, dtype=np.int64)
    na = np.empty(n, dtype=np.int64)
    nb = np.empty(n, dtype=np.int64)
    _pair_range(h, first, stop, ii, jj, inter, na, nb, 0, n)
    return inter, na, nb


@njit(cache=True, parallel=True)
def pair_stats_parallel(h, first, stop, ii, jj, chunks):
    """:func:`pair_stats` with the pairs cut into ``chunks`` stretches run on all threads (for large
    batches; numba's default thread pool must not be entered from two Python threads at once)."""
    n = ii.shape[0]
    inter = np.empty(n, dtype=np.int64)
    na = np.empty(n, dtype=np.int64)
    nb = np.empty(n, dtype=np.int64)
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        _pair_range(h, first, stop, ii, jj, inter, na, nb, c * step, min(n, (c + 1) * step))
    return inter, na, nb


@njit(cache=True)
def pair_order(lo, hi, place, m):
    """An order of the pairs (``a = place[lo[p]]``, ``b = place[hi[p]]``, a < b < m) that reads each
    set while it is hot: each row's anchor is the smallest of itself and its partners, and the pairs are
    counting-sorted by the anchor of ``a`` (stable: a function of the pairs alone). So the pairs of a
    group of near-duplicates — all partners of its smallest row — come together, and the group's
    sets are read from memory once for all of its pairs, then from cache.

    In the pairs' own order (by the first row) the second row's set was a random read per pair:
    58.8 M pairs of 1.5 KB sets at 10 M documents took 60.9–65.6 s, 53.2 s in this order. (The
    pairs' graph has a giant component — 60 % of the 11.4 M pairs at 3 M documents — so components
    are no unit of locality; and cutting the order into batches whose pages are given back after
    each did not bound resident memory: every random read of a mapped file maps its cached
    neighbours too, 16 pages, and the band's 8.6 GB came back within each batch.)"""
    n = lo.shape[0]
    anchor = np.arange(m, dtype=np.int64)
    for p in range(n):
        a = place[lo[p]]
        b = place[hi[p]]
        if a < anchor[b]:
            anchor[b] = a
        if b < anchor[a]:
            anchor[a] = b
    count = np.zeros(m + 1, dtype=np.int64)
    for p in range(n):
        count[anchor[place[lo[p]]] + 1] += 1
    for g in range(m):
        count[g + 1] += count[g]
    order = np.empty(n, dtype=np.int64)
    for p in range(n):
        g = anchor[place[lo[p]]]
        order[count[g]] = p
        count[g] += 1
    return order


@njit(cache=True)
def pair_order_blocks(lo, hi, place, blk, nb, g):
    """The pairs grouped by where their sets lie, for reading the sets a block at a time (``blk[r]``:
    the block, of ``nb``, of row r's set; blocks in groups of ``g``). A pair whose blocks x ≤ y are
    in one group has key G(x)·(nb + 1) + nb, one across groups G(x)·(nb + 1) + y. Returns (order,
    offsets): the pairs of key c are ``order[offsets[c]:offsets[c + 1]]``, in their own order
    (a counting sort: stable)."""
    n = lo.shape[0]
    key = np.empty(n, dtype=np.int32)
    nk = ((nb + g - 1) // g) * (nb + 1)
    offsets = np.zeros(nk + 1, dtype=np.int64)
    for p in range(n):
        # (``hi`` is in no order: its rows' places, then their blocks, fetched ahead)
        if p + 2 * AHEAD < n:
            prefetch(place, hi[p + 2 * AHEAD])
        if p + AHEAD < n:
            prefetch(blk, place[hi[p + AHEAD]])
        x = blk[place[lo[p]]]
        y = blk[place[hi[p]]]
        if x > y:
            x, y = y, x
        c = (x // g) * (nb + 1) + (nb if x // g == y // g else y)
        key[p] = c
        offsets[c + 1] += 1
    for c in range(nk):
        offsets[c + 1] += offsets[c]
    fill = offsets[:-1].copy()
    order = np.empty(n, dtype=np.int64)
    for p in range(n):
        c = key[p]
        order[fill[c]] = p
        fill[c] += 1
    return order, offsets


@njit(cache=True)
def top_k_jaccard(qh, hb, start, end, rows, k):
    """The ``k`` largest exact Jaccard of the query's sorted distinct hashes ``qh`` with the sets
    ``hb[start[r]:end[r]]`` of ``rows``, as (rows, J) sorted by (−J, row). Rows are tried in the given
    order (best estimate first, so the k-th best τ rises early); once k are held, a set is dropped as
    soon as its intersection cannot reach τ(|Q| + |X|)/(1 + τ), the least giving J ≥ τ. The result
    is that of scoring every row and sorting."""
    nq = qh.shape[0]
    best_r = np.empty(k, dtype=np.int64)
    best_j = np.empty(k, dtype=np.float64)
    cnt = 0
    for p in range(rows.shape[0]):
        r = rows[p]
        s = start[r]
        e = end[r]
        nb = e - s
        j = 0.0
        if nq > 0 and nb > 0:
            need = 0
            if cnt == k and best_j[k - 1] > 0.0:
                tau = best_j[k - 1]
                x = tau * (nq + nb) / (1.0 + tau)
                need = np.int64(np.ceil(x - 1e-9 * max(1.0, x)))    # a relative slack: never above the least
            if nq <= nb:
                c = intersect_bounded(qh, 0, nq, hb, s, e, need)
            else:
                c = intersect_bounded(hb, s, e, qh, 0, nq, need)
            if c < 0:
                continue
            j = c / (nq + nb - c)
        if cnt == k and (j < best_j[k - 1] or (j == best_j[k - 1] and r > best_r[k - 1])):
            continue
        pos = cnt if cnt < k else k - 1
        while pos > 0 and (best_j[pos - 1] < j or (best_j[pos - 1] == j and best_r[pos - 1] > r)):
            if pos < k:
                best_j[pos] = best_j[pos - 1]
                best_r[pos] = best_r[pos - 1]
            pos -= 1
        best_j[pos] = j
        best_r[pos] = r
        if cnt < k:
            cnt += 1
    return best_r[:cnt].copy(), best_j[:cnt].copy()
