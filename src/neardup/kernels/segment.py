"""cppjieba's MixSegment and yanyiwu/simhash's keyword SimHash, compiled, over batches of UTF-8
documents (the tables of :mod:`neardup.text.jieba_dict`).

Per document (code points ``cp``, byte offset of each in ``bo``):

1. split at cppjieba's separators (space, tab, LF, '，', '。'; each its own piece);
2. MPSegment on each piece: best[k] = max over dictionary words text[k:m] of w(word) + best[m]
   (a character that is no word costs the smallest weight; ties keep the shorter word, the first
   strictly better), computed right to left by walking the trie;
   (an ASCII piece in which no word of two or more characters starts is one run of step 3 at once,
   as the route would cut it into characters: most English pieces of a Chinese page);
3. runs of one-character words re-cut by HMMSegment: ASCII by rule (letter[alnum]*, digit[digit.]*,
   else one character), every other run by Viterbi over B/E/M/S, a word ending at each E or S;
4. keywords (``Simhasher::make``): words of more than one character that are no stop word, counted
   in a hash table, the distinct ones in std::map order (code points compare as UTF-8 bytes do; an
   integer sort on the first three, the text where those tie), weight = count × idf (the mean idf
   when absent); the top N by libstdc++'s ``std::partial_sort`` (heap select + heap sort, which fixes the
   order of ties), each hashed by Jenkins lookup3 (:func:`neardup.kernels.jenkins.jenkins64`) and
   folded in that order (:func:`neardup.kernels.simhash.fold_one`).

Every step gives exactly the results of :mod:`neardup.sketches.compat.yanyiwu`, the Python port it
was written from, which the differential tests compare against on every document of ../shared's
Chinese pages, on generated text, and on ASCII user words and shared keyword prefixes.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .jenkins import jenkins64
from .simhash import fold_one

MIN_DOUBLE = -3.14e100
MAX_WORD_LENGTH = 512
_B, _E, _M, _S = 0, 1, 2, 3


@njit(cache=True)
def decode_utf8(buf, start, end):
    """Code points of ``buf[start:end]`` (well-formed UTF-8, surrogates allowed) and the byte offset
    of each (one more at the end)."""
    cp = np.empty(end - start, dtype=np.int32)
    bo = np.empty(end - start + 1, dtype=np.int64)
    n = 0
    i = start
    while i < end:
        b = buf[i]
        bo[n] = i
        if b < 0x80:
            cp[n] = b
            i += 1
        elif b < 0xE0:
            cp[n] = ((b & 0x1F) << 6) | (buf[i + 1] & 0x3F)
            i += 2
        elif b < 0xF0:
            cp[n] = ((b & 0x0F) << 12) | ((buf[i + 1] & 0x3F) << 6) | (buf[i + 2] & 0x3F)
            i += 3
        else:
            cp[n] = (((b & 0x07) << 18) | ((buf[i + 1] & 0x3F) << 12) | ((buf[i + 2] & 0x3F) << 6)
                     | (buf[i + 3] & 0x3F))
            i += 4
        n += 1
    bo[n] = end
    return cp[:n], bo[:n + 1]


@njit(cache=True, inline="always")
def _root(rt, cs, ccp, cn, c):
    """The child of the root for code point c: a direct table over the BMP (the root has ~20,000
    children; bisecting them at every position was the segmenter's largest cost)."""
    if c < 65536:
        return rt[c]
    return _child(cs, ccp, cn, 0, c)


@njit(cache=True, inline="always")
def _child(child_start, child_cp, child_node, v, c):
    lo = child_start[v]
    hi = child_start[v + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        x = child_cp[mid]
        if x < c:
            lo = mid + 1
        elif x > c:
            hi = mid
        else:
            return child_node[mid]
    return -1


@njit(cache=True)
def _mp_cut(cp, lo, hi, rt, cs, ccp, cn, ww, min_w, best, choice, out, n_out):
    """MPSegment of cp[lo:hi]: word ends appended to ``out`` from ``n_out``; returns the new count
    (``best``, ``choice``: scratch indexed from ``lo``)."""
    n = hi - lo
    if n == 1:                   # one character: one word
        out[n_out] = hi
        return n_out + 1
    best[lo + n] = 0.0
    for k in range(n - 1, -1, -1):
        v = _root(rt, cs, ccp, cn, cp[lo + k])
        if v < 0 or np.isnan(ww[v]):
            bw = best[lo + k + 1] + min_w
        else:
            bw = best[lo + k + 1] + ww[v]
        bj = k + 1
        if v >= 0:
            top = min(n, k + MAX_WORD_LENGTH)
            for m in range(k + 2, top + 1):
                v = _child(cs, ccp, cn, v, cp[lo + m - 1])
                if v < 0:
                    break
                if not np.isnan(ww[v]):
                    val = best[lo + m] + ww[v]
                    if val > bw:
                        bw = val
                        bj = m
        best[lo + k] = bw
        choice[lo + k] = bj
    k = 0
    while k < n:
        out[n_out] = lo + choice[lo + k]
        n_out += 1
        k = choice[lo + k]
    return n_out


@njit(cache=True, inline="always")
def _emit(emit, c, y):
    if c < 65536:
        return emit[c, y]
    return MIN_DOUBLE


@njit(cache=True)
def _viterbi_cut(cp, a, b, hstart, htrans, hemit, ends, n_ends, weight, path, states):
    """HMMSegment::Viterbi over cp[a:b]; a word ends after every E or S state (``weight``, ``path``,
    ``states``: scratch of at least b − a rows)."""
    n = b - a
    c = cp[a]
    for y in range(4):
        weight[0, y] = hstart[y] + _emit(hemit, c, y)
    for x in range(1, n):
        c = cp[a + x]
        for y in range(4):
            e = _emit(hemit, c, y)
            best = MIN_DOUBLE
            arg = _E
            for py in range(4):
                t = weight[x - 1, py] + htrans[py, y] + e
                if t > best:
                    best = t
                    arg = py
            weight[x, y] = best
            path[x, y] = arg
    state = _E if weight[n - 1, _E] >= weight[n - 1, _S] else _S
    for x in range(n - 1, -1, -1):
        states[x] = state
        state = path[x, state]
    for x in range(n):
        if states[x] == _E or states[x] == _S:
            ends[n_ends] = a + x + 1
            n_ends += 1
    return n_ends


@njit(cache=True, inline="always")
def _letter(c):
    return (97 <= c <= 122) or (65 <= c <= 90)


@njit(cache=True, inline="always")
def _digit(c):
    return 48 <= c <= 57


@njit(cache=True)
def _hmm_cut(cp, lo, hi, hstart, htrans, hemit, ends, n_ends, weight, path, states):
    left = lo
    i = lo
    while i < hi:
        c = cp[i]
        if c < 0x80:
            if left != i:
                n_ends = _viterbi_cut(cp, left, i, hstart, htrans, hemit, ends, n_ends, weight, path, states)
            j = i + 1
            if _letter(c):
                while j < hi and (_letter(cp[j]) or _digit(cp[j])):
                    j += 1
            elif _digit(c):
                while j < hi and (_digit(cp[j]) or cp[j] == 46):
                    j += 1
            ends[n_ends] = j
            n_ends += 1
            left = j
            i = j
        else:
            i += 1
    if left != hi:
        n_ends = _viterbi_cut(cp, left, hi, hstart, htrans, hemit, ends, n_ends, weight, path, states)
    return n_ends


@njit(cache=True, inline="always")
def _separator(c):
    return c == 32 or c == 9 or c == 10 or c == 0xFF0C or c == 0x3002


@njit(cache=True, inline="always")
def _solo(cp, i, rt, cs, ccp, cn, solo):
    v = _root(rt, cs, ccp, cn, cp[i])
    return v >= 0 and solo[v]


@njit(cache=True, inline="always")
def _ascii_singles(cp, lo, hi, rt, cs, ccp, cn, ww, solo):
    """cp[lo:hi] is ASCII, no dictionary word of two or more characters starts in it, and none of its
    characters is a one-character user word: then MPSegment cuts it into single characters (the only
    route), and MixSegment hands the whole piece to the HMM as one run. Most pieces of English text
    inside Chinese pages are such pieces; this check walks the trie as MPSegment would, without its
    route arithmetic."""
    for k in range(lo, hi):
        c = cp[k]
        if c >= 0x80:
            return False
        v = rt[c]
        if v < 0:
            continue
        if solo[v]:
            return False
        for m in range(k + 1, hi):
            v = _child(cs, ccp, cn, v, cp[m])
            if v < 0:
                break
            if not np.isnan(ww[v]):
                return False
    return True


@njit(cache=True)
def mix_cut(cp, rt, cs, ccp, cn, ww, solo, min_w, hstart, htrans, hemit):
    """cppjieba ``MixSegment::Cut`` (HMM on): the end of each word, in order (words are
    cp[ends[k-1]:ends[k]], the first from 0). ``solo[v]``: node v is a one-character word of the
    user dictionary, which stays a word instead of joining a run the HMM re-cuts."""
    n = cp.shape[0]
    ends = np.empty(n, dtype=np.int64)
    n_ends = 0
    best = np.empty(n + 1, dtype=np.float64)
    choice = np.empty(n, dtype=np.int64)
    mp = np.empty(n, dtype=np.int64)
    weight = np.empty((n, 4), dtype=np.float64)
    path = np.empty((n, 4), dtype=np.int8)
    states = np.empty(n, dtype=np.int8)
    lo = 0
    while lo < n:
        hi = lo
        while hi < n and not _separator(cp[hi]):
            hi += 1
        if hi == lo:
            hi = lo + 1
        if _ascii_singles(cp, lo, hi, rt, cs, ccp, cn, ww, solo):
            # MPSegment would give one-character words, one run, which the HMM cuts by its ASCII rules
            n_ends = _hmm_cut(cp, lo, hi, hstart, htrans, hemit, ends, n_ends, weight, path, states)
            lo = hi
            continue
        # MixSegment on cp[lo:hi]: MP words; runs of one-character words re-cut by the HMM
        n_mp = _mp_cut(cp, lo, hi, rt, cs, ccp, cn, ww, min_w, best, choice, mp, 0)
        k = 0
        start = lo
        while k < n_mp:
            if mp[k] - start > 1 or _solo(cp, start, rt, cs, ccp, cn, solo):
                ends[n_ends] = mp[k]
                n_ends += 1
                start = mp[k]
                k += 1
                continue
            run_start = start
            while k < n_mp and mp[k] - start == 1 and not _solo(cp, start, rt, cs, ccp, cn, solo):
                start = mp[k]
                k += 1
            n_ends = _hmm_cut(cp, run_start, start, hstart, htrans, hemit, ends, n_ends, weight, path, states)
        lo = hi
    return ends[:n_ends]


@njit(cache=True, inline="always")
def _less(cp, a0, a1, b0, b1):
    """cp[a0:a1] < cp[b0:b1] lexicographically (a prefix first): UTF-8 byte order."""
    la = a1 - a0
    lb = b1 - b0
    m = min(la, lb)
    for i in range(m):
        x = cp[a0 + i]
        y = cp[b0 + i]
        if x != y:
            return x < y
    return la < lb


@njit(cache=True)
def _sort_words(cp, ws, we, idx):
    """Merge sort of word indices ``idx`` by their text (stable)."""
    n = idx.shape[0]
    tmp = np.empty(n, dtype=np.int64)
    width = 1
    src = idx
    dst = tmp
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                a = src[i]
                b = src[j]
                if _less(cp, ws[b], we[b], ws[a], we[a]):
                    dst[k] = b
                    j += 1
                else:
                    dst[k] = a
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst = dst, src
        width *= 2
    return src


@njit(cache=True, inline="always")
def _prefix_key(cp, a, b):
    """The first three code points of cp[a:b] as one integer (each + 1 in 21 bits, 0 past the end):
    integer order is the text's order on those three, a prefix first."""
    key = np.int64(0)
    for i in range(3):
        key <<= 21
        if a + i < b:
            key |= np.int64(cp[a + i]) + 1
    return key


@njit(cache=True)
def _word_order(cp, ws, we, m):
    """Indices of words 0..m−1 in text order (equal words in any order): sorted by
    :func:`_prefix_key`, then each run of one key holding a word of more than three characters sorted
    by the whole text (:func:`_sort_words`). The order of a merge sort over the texts, at the cost of
    an integer sort."""
    keys = np.empty(m, dtype=np.int64)
    for i in range(m):
        keys[i] = _prefix_key(cp, ws[i], we[i])
    order = np.argsort(keys)
    k = 0
    while k < m:
        key = keys[order[k]]
        j = k + 1
        longer = we[order[k]] - ws[order[k]] > 3
        while j < m and keys[order[j]] == key:
            longer = longer or we[order[j]] - ws[order[j]] > 3
            j += 1
        if longer and j - k > 1:
            order[k:j] = _sort_words(cp, ws, we, order[k:j].copy())
        k = j
    return order


@njit(cache=True, inline="always")
def _same_word(cp, ws, we, a, b):
    """Words a and b have the same text."""
    la = we[a] - ws[a]
    if la != we[b] - ws[b]:
        return False
    for i in range(la):
        if cp[ws[a] + i] != cp[ws[b] + i]:
            return False
    return True


@njit(cache=True)
def _distinct_words(cp, ws, we, m):
    """(index of one occurrence, number of occurrences) of each distinct text among words 0..m−1, in
    order of first occurrence: an open-addressing table on a 64-bit FNV-1a hash of the code points,
    texts compared on equal hashes."""
    cap = 16
    while cap < 2 * m:
        cap *= 2
    table = np.full(cap, -1, dtype=np.int64)
    first = np.empty(m, dtype=np.int64)
    count = np.empty(m, dtype=np.int64)
    hashes = np.empty(m, dtype=np.uint64)
    nd = 0
    for i in range(m):
        h = np.uint64(0xCBF29CE484222325)
        for j in range(ws[i], we[i]):
            h = (h ^ np.uint64(cp[j])) * np.uint64(0x100000001B3)
        slot = np.int64(h & np.uint64(cap - 1))
        while True:
            d = table[slot]
            if d < 0:
                table[slot] = nd
                first[nd] = i
                count[nd] = 1
                hashes[nd] = h
                nd += 1
                break
            if hashes[d] == h and _same_word(cp, ws, we, first[d], i):
                count[d] += 1
                break
            slot = (slot + 1) & (cap - 1)
    return first[:nd], count[:nd]


@njit(cache=True, inline="always")
def _greater(w, a, b):
    return w[a] > w[b]


@njit(cache=True)
def _push(a, w, hole, top, value):
    parent = (hole - 1) // 2
    while hole > top and _greater(w, a[parent], value):
        a[hole] = a[parent]
        hole = parent
        parent = (hole - 1) // 2
    a[hole] = value


@njit(cache=True)
def _adjust(a, w, hole, length, value):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _greater(w, a[child], a[child - 1]):
            child -= 1
        a[hole] = a[child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[hole] = a[child - 1]
        hole = child - 1
    _push(a, w, hole, top, value)


@njit(cache=True)
def partial_sort(w, k):
    """libstdc++ ``std::partial_sort(first, first + k, last, heavier)`` over items 0..len(w)−1:
    the indices of the k heaviest in the order the C++ library leaves them."""
    a = np.arange(w.shape[0])
    if k <= 0:
        return a[:0]
    if k >= 2:
        parent = (k - 2) // 2
        while True:
            _adjust(a, w, parent, k, a[parent])
            if parent == 0:
                break
            parent -= 1
    for i in range(k, a.shape[0]):
        if _greater(w, a[i], a[0]):
            value = a[i]
            a[i] = a[0]
            _adjust(a, w, 0, k, value)
    last = k
    while last > 1:
        last -= 1
        value = a[last]
        a[last] = a[0]
        _adjust(a, w, 0, last, value)
    return a[:k]


@njit(cache=True)
def _word_node(cp, a, b, rt, cs, ccp, cn):
    v = _root(rt, cs, ccp, cn, cp[a])
    for i in range(a + 1, b):
        if v < 0:
            return -1
        v = _child(cs, ccp, cn, v, cp[i])
    return v


@njit(cache=True)
def yanyiwu_one(buf, start, end, top_n, rt, cs, ccp, cn, ww, solo, idf, stop, min_w, idf_avg, hstart, htrans, hemit):
    """yanyiwu/simhash ``Simhasher::make`` of ``buf[start:end]`` (``top_n`` ≤ 0: the library's rule
    max(5, min(200, bytes // 120))): (fingerprint, number of distinct keywords before the top-N cut)."""
    if top_n <= 0:
        top_n = max(5, min(200, (end - start) // 120))
    cp, bo = decode_utf8(buf, start, end)
    ends = mix_cut(cp, rt, cs, ccp, cn, ww, solo, min_w, hstart, htrans, hemit)
    nw = ends.shape[0]
    ws = np.empty(nw, dtype=np.int64)
    we = np.empty(nw, dtype=np.int64)
    node = np.empty(nw, dtype=np.int64)
    m = 0
    a = 0
    for k in range(nw):
        b = ends[k]
        if b - a != 1:
            v = _word_node(cp, a, b, rt, cs, ccp, cn)
            if v < 0 or not stop[v]:
                ws[m] = a
                we[m] = b
                node[m] = v
                m += 1
        a = b
    if m == 0:
        return np.uint64(0), 0
    # distinct words in std::map order, weight = count × idf
    first, count = _distinct_words(cp, ws, we, m)
    nd = first.shape[0]
    order = _word_order(cp, ws[first], we[first], nd)
    dw = np.empty(nd, dtype=np.float64)
    first = first[order]
    count = count[order]
    for r in range(nd):
        v = node[first[r]]
        f = idf_avg if v < 0 or np.isnan(idf[v]) else idf[v]
        dw[r] = float(count[r]) * f
    top = partial_sort(dw[:nd], min(top_n, nd))
    hashes = np.empty(top.shape[0], dtype=np.uint64)
    weights = np.empty(top.shape[0], dtype=np.float64)
    for t in range(top.shape[0]):
        i = first[top[t]]
        hashes[t] = jenkins64(buf, bo[ws[i]], bo[we[i]], np.uint64(0))
        weights[t] = dw[top[t]]
    return fold_one(hashes, weights, 0, top.shape[0]), nd


@njit(cache=True, parallel=True)
def yanyiwu_batch(buf, offsets, top_n, rt, cs, ccp, cn, ww, solo, idf, stop, min_w, idf_avg, hstart, htrans, hemit):
    """:func:`yanyiwu_one` of every document ``buf[offsets[d]:offsets[d+1]]``, on all cores:
    (fingerprints, keyword counts)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    kws = np.empty(n, dtype=np.int64)
    for d in prange(n):
        out[d], kws[d] = yanyiwu_one(buf, offsets[d], offsets[d + 1], top_n, rt, cs, ccp, cn, ww, solo, idf, stop,
                                     min_w, idf_avg, hstart, htrans, hemit)
    return out, kws


@njit(cache=True)
def yanyiwu_batch_serial(buf, offsets, top_n, rt, cs, ccp, cn, ww, solo, idf, stop, min_w, idf_avg, hstart, htrans,
                         hemit):
    """:func:`yanyiwu_batch` on the calling thread, for a few documents in a process that forks later
    (a run's index probe before its signing workers start: numba's OpenMP pool, once started, makes
    a later fork abort). About half the speed of the prange kernel, even on one thread."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    kws = np.empty(n, dtype=np.int64)
    for d in range(n):
        out[d], kws[d] = yanyiwu_one(buf, offsets[d], offsets[d + 1], top_n, rt, cs, ccp, cn, ww, solo, idf, stop,
                                     min_w, idf_avg, hstart, htrans, hemit)
    return out, kws


@njit(cache=True)
def cut_batch(buf, offsets, rt, cs, ccp, cn, ww, solo, min_w, hstart, htrans, hemit):
    """Word boundaries of each document as byte offsets into ``buf`` (CSR: document d's words end at
    ``ends[woff[d]:woff[d+1]]``)."""
    n = offsets.shape[0] - 1
    parts = []
    total = 0
    for d in range(n):
        cp, bo = decode_utf8(buf, offsets[d], offsets[d + 1])
        e = mix_cut(cp, rt, cs, ccp, cn, ww, solo, min_w, hstart, htrans, hemit)
        be = np.empty(e.shape[0], dtype=np.int64)
        for k in range(e.shape[0]):
            be[k] = bo[e[k]]
        parts.append(be)
        total += be.shape[0]
    woff = np.zeros(n + 1, dtype=np.int64)
    ends = np.empty(total, dtype=np.int64)
    at = 0
    for d in range(n):
        p = parts[d]
        ends[at:at + p.shape[0]] = p
        at += p.shape[0]
        woff[d + 1] = at
    return ends, woff
