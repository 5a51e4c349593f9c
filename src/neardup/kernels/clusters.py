"""Union–find (disjoint sets) over edge lists: connected components in near-linear time.

Union by smaller root index and path halving: every component's label is its smallest member,
independent of edge order — so clusters are deterministic across runs, engines and partitions.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .jaccard import intersect_size
from .swar import borrowed, prefetch, prefetch_row


@njit(inline="always", cache=True)
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(cache=True)
def components(n, lo, hi):
    """Label of every node 0..n-1: the smallest node of its connected component."""
    parent = np.arange(n, dtype=np.int64)
    for e in range(lo.shape[0]):
        a = _find(parent, lo[e])
        b = _find(parent, hi[e])
        if a < b:
            parent[b] = a
        elif b < a:
            parent[a] = b
    for x in range(n):
        parent[x] = _find(parent, x)
    return parent


@njit(cache=True)
def pick_representatives(labels, score):
    """Per component: the member with the largest ``score`` (ties: smallest index)."""
    n = labels.shape[0]
    best = np.full(n, -1, dtype=np.int64)
    for x in range(n):
        c = labels[x]
        cur = best[c]
        if cur < 0 or score[x] > score[cur] or (score[x] == score[cur] and x < cur):
            best[c] = x
    rep = np.empty(n, dtype=np.int64)
    for x in range(n):
        rep[x] = best[labels[x]]
    return rep


# -- bounded linkage ---------------------------------------------------------------------------------
# Similarity oracles (``kind``): 0 MinHash rows (fraction of equal slots; an empty row scores 0),
# 1 exact Jaccard of sorted distinct shingle sets (CSR h/off), 2 SimHash 1 − hamming/64, 3 always 1,
# 4 exact where both rows have their sets, else kind 0 on the rows' sketches (verified SimHash with an
# index: its documents keep a sketch, not their text).
@njit(cache=True, inline="always")
def _slots_sim(a, b, sig, empty):
    """MinHash rows a and b: the fraction of equal slots (two empty rows: 0)."""
    k = sig.shape[1]
    eq = 0
    for j in range(k):          # (a count of equal slots: vectorised)
        eq += sig[a, j] == sig[b, j]
    if eq < k:                  # a slot differs, so one of the rows is not empty
        return eq / k
    for j in range(k):          # equal rows: 1, unless both are the empty row
        if sig[a, j] != empty:
            return 1.0
    return 0.0


@njit(cache=True)
def _sim(kind, a, b, sig, empty, h, off, fps):
    if kind == 0:
        return _slots_sim(a, b, sig, empty)
    if kind == 1 or kind == 4:
        na = off[a + 1] - off[a]
        nb = off[b + 1] - off[b]
        if na == 0 or nb == 0:
            if kind == 4:           # a row without its set (an index's document): the sketches' estimate
                return _slots_sim(a, b, sig, empty)
            return 0.0
        c = intersect_size(h, off[a], off[a + 1], off[b], off[b + 1])
        return c / (na + nb - c)
    if kind == 2:
        x = fps[a] ^ fps[b]
        d = 0
        while x:
            x &= x - np.uint64(1)
            d += 1
        return 1.0 - d / 64.0
    return 1.0


#: edges ahead at which :func:`bounded_components` fetches the samples' signatures (their roots' samples
#: twice as far, their parents three times): 10.9 → 7.7–8.3 s on the 9.6 M verified pairs of the 10 M corpus
_SAMPLES_AHEAD = 4


@njit(cache=True)
def bounded_components(n, lo, hi, order, kind, sig, empty, h, off, fps, floor, sample, samp_dtype=np.int64):
    """Merge verified edges in ``order`` (most similar first, like single linkage), but join two
    groups only when every pair between their samples — the ``sample`` smallest members of each —
    has similarity ≥ ``floor``. Chains of pairwise-similar documents whose ends are far apart stop
    growing where the next merge would bring in a document unlike the group. Labels: smallest member.
    ``samp_dtype``: of the n × sample member table (int32 below 2^31 documents: 640 MB at 10 M).
    The rows of the edges ahead are prefetched, and two samples merge without a sort (the 623 k
    verified pairs of the 1 M corpus: 1.17 → 0.75 s; the samples' members too: 10.9 → 7.7–8.3 s at 10 M)."""
    parent, samp, cnt = _bounded_state(n, sample, samp_dtype)
    _bounded_run(parent, samp, cnt, lo, hi, order, kind, sig, empty, h, off, fps, floor, sample)
    return _labels(parent)


@njit(cache=True, parallel=True)
def bounded_components_parts(n, lo, hi, order, offsets, kind, sig, empty, h, off, fps, floor, sample,
                             samp_dtype=np.int64):
    """:func:`bounded_components` with the edges in parts, ``order[offsets[t]:offsets[t + 1]]``, run
    on all threads: each part holds the edges of whole connected components (of all the edges), in
    their order. A merge reads and writes only the two groups' members, all in one component, so
    components never touch each other's state, and each component sees its edges in the same order
    as in one pass: the labels are those of :func:`bounded_components` (tested equal)."""
    parent, samp, cnt = _bounded_state(n, sample, samp_dtype)
    for t in prange(offsets.shape[0] - 1):
        _bounded_run(parent, samp, cnt, lo, hi, order[offsets[t]:offsets[t + 1]], kind, sig, empty, h, off, fps,
                     floor, sample)
    return _labels(parent)


@njit(cache=True)
def _bounded_state(n, sample, samp_dtype):
    parent = np.arange(n, dtype=np.int64)
    samp = np.full((n, sample), -1, dtype=samp_dtype)
    cnt = np.ones(n, dtype=np.int64)
    for x in range(n):
        samp[x, 0] = x
    return parent, samp, cnt


@njit(cache=True)
def _labels(parent):
    out = np.empty(parent.shape[0], dtype=np.int64)
    for x in range(parent.shape[0]):
        out[x] = _find(parent, x)
    return out


@njit(cache=True)
def _bounded_run(parent, samp, cnt, lo, hi, order, kind, sig, empty, h, off, fps, floor, sample):
    """The merges of :func:`bounded_components` for the edges ``order``, on the state (parents,
    samples, member counts) given."""
    # views without reference counting (:func:`~neardup.kernels.swar.borrowed`): ``_sim`` takes the
    # oracle's arrays at every pair of sample members
    lo, hi, order, sig, h, off, fps = borrowed(lo), borrowed(hi), borrowed(order), borrowed(sig), borrowed(h), \
        borrowed(off), borrowed(fps)
    tmp = np.empty(sample, dtype=np.int64)
    ne = order.shape[0]
    d = _SAMPLES_AHEAD
    for q in range(ne):
        # the rows the edges ahead will read, fetched while this one is decided (the edges come in
        # similarity order, their rows from anywhere): their parents; then their roots' samples and
        # counts; then, for an edge between two groups, the signatures of both samples' members
        if q + 3 * d < ne:
            f = order[q + 3 * d]
            prefetch(parent, lo[f])
            prefetch(parent, hi[f])
        if q + 2 * d < ne:
            f = order[q + 2 * d]
            for x in (parent[lo[f]], parent[hi[f]]):
                prefetch_row(samp, x)
                prefetch(cnt, x)
        if q + d < ne:
            f = order[q + d]
            x = _find(parent, lo[f])          # (halving paths early changes no root)
            y = _find(parent, hi[f])
            if x != y and kind == 0:
                for z in (x, y):
                    for t in range(min(cnt[z], sample)):
                        prefetch_row(sig, samp[z, t])
        e = order[q]
        a = _find(parent, lo[e])
        b = _find(parent, hi[e])
        if a == b:
            continue
        sa = min(cnt[a], sample)
        sb = min(cnt[b], sample)
        ok = True
        for i in range(sa):
            for j in range(sb):
                if _sim(kind, samp[a, i], samp[b, j], sig, empty, h, off, fps) < floor:
                    ok = False
                    break
            if not ok:
                break
        if not ok:
            continue
        # the merged group's sample: the smallest of both samples (each sorted, members distinct)
        i = 0
        j = 0
        m = min(sa + sb, sample)
        for t in range(m):
            if j >= sb or (i < sa and samp[a, i] < samp[b, j]):
                tmp[t] = samp[a, i]
                i += 1
            else:
                tmp[t] = samp[b, j]
                j += 1
        root = min(a, b)
        parent[max(a, b)] = root
        for t in range(m):
            samp[root, t] = tmp[t]
        cnt[root] = cnt[a] + cnt[b]


@njit(cache=True)
def group_pair_count(start, count, lo, hi):
    """How many pairs :func:`expand_groups` writes: Σ_groups c(c − 1)/2 + Σ_pairs c_lo · c_hi."""
    total = 0
    for g in range(start.shape[0]):
        total += count[g] * (count[g] - 1) // 2
    for p in range(lo.shape[0]):
        total += count[lo[p]] * count[hi[p]]
    return total


@njit(cache=True)
def expand_groups(members, start, count, lo, hi, sim, how, ident, out_a, out_b, out_sim, out_how):
    """All pairs of a similarity join from pairs between groups of identical members.

    ``members[start[g]:start[g] + count[g]]`` are group g's rows (ascending); every two rows of one
    group form a pair (similarity 1, decided ``ident``), and each pair (lo[p], hi[p]) of groups
    gives every row of one with every row of the other (its similarity and decision). Rows come out
    as (smaller, larger)."""
    w = 0
    for g in range(start.shape[0]):
        s, c = start[g], count[g]
        for i in range(c):
            for j in range(i + 1, c):
                out_a[w] = members[s + i]
                out_b[w] = members[s + j]
                out_sim[w] = 1.0
                out_how[w] = ident
                w += 1
    for p in range(lo.shape[0]):
        sa, ca, sb, cb = start[lo[p]], count[lo[p]], start[hi[p]], count[hi[p]]
        for i in range(ca):
            x = members[sa + i]
            for j in range(cb):
                y = members[sb + j]
                out_a[w] = min(x, y)
                out_b[w] = max(x, y)
                out_sim[w] = sim[p]
                out_how[w] = how[p]
                w += 1
    return w


@njit(cache=True)
def directed_containers(todo, start, dst, share, score, fixed, kept, target, tsim):
    """Directed containment (:mod:`neardup.clusters.containment`): for each row r of ``todo`` (larger
    sets first, so each container is settled before r), its pairs ``dst[start[r]:start[r+1]]``
    (containers, with C(r ⊆ container) in ``share``): when one is kept, r is removed for the kept
    one of largest share (ties: larger ``score``, then smaller row) — ``kept[r]`` cleared,
    ``target[r]``/``tsim[r]`` set. Rows below ``fixed`` are never removed."""
    for i in range(todo.shape[0]):
        r = todo[i]
        if r < fixed or not kept[r]:
            continue
        best = -1
        best_c = 0.0
        for e in range(start[r], start[r + 1]):
            c = dst[e]
            if not kept[c]:
                continue
            s = share[e]
            if best < 0 or s > best_c or (s == best_c and (score[c] > score[best]
                                                          or (score[c] == score[best] and c < best))):
                best = c
                best_c = s
        if best >= 0:
            kept[r] = False
            target[r] = best
            tsim[r] = best_c
