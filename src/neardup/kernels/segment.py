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

from .hashing import GOLDEN
from .jenkins import jenkins64
from .shingle import SEP, _finish, emit_shingles
from .shingle import _push as _push_byte
from .simhash import fold_one
from .swar import borrowed

MIN_DOUBLE = -3.14e100
MAX_WORD_LENGTH = 512
_B, _E, _M, _S = 0, 1, 2, 3


@njit(cache=True, inline="always")
def _utf8_at(buf, i):
    """(code point, byte length) of the character at ``buf[i]``, in well-formed UTF-8 (surrogates
    allowed): no checks, which a scanning loop pays for (``shingle.decode_at`` made the jieba
    kernel's normalising pass 4× slower)."""
    b = np.int64(buf[i])
    if b < 0x80:
        return b, 1
    if b < 0xE0:
        return ((b & 0x1F) << 6) | (np.int64(buf[i + 1]) & 0x3F), 2
    if b < 0xF0:
        return ((b & 0x0F) << 12) | ((np.int64(buf[i + 1]) & 0x3F) << 6) | (np.int64(buf[i + 2]) & 0x3F), 3
    return (((b & 0x07) << 18) | ((np.int64(buf[i + 1]) & 0x3F) << 12) | ((np.int64(buf[i + 2]) & 0x3F) << 6)
            | (np.int64(buf[i + 3]) & 0x3F)), 4


@njit(cache=True)
def decode_utf8(buf, start, end):
    """Code points of ``buf[start:end]`` (well-formed UTF-8, surrogates allowed) and the byte offset
    of each (one more at the end)."""
    cp = np.empty(end - start, dtype=np.int32)
    bo = np.empty(end - start + 1, dtype=np.int64)
    n = 0
    i = start
    while i < end:
        bo[n] = i
        c, ln = _utf8_at(buf, i)
        cp[n] = c
        i += ln
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


@njit(cache=True, inline="always")
def _viterbi_start(cp, a, hstart, hemit, weight):
    """Viterbi's first row: start probability + emission of cp[a], per state (cppjieba and jieba-rs
    alike)."""
    c = cp[a]
    for y in range(4):
        weight[0, y] = hstart[y] + _emit(hemit, c, y)


@njit(cache=True)
def _viterbi_cut(cp, a, b, hstart, htrans, hemit, ends, n_ends, weight, path, states):
    """HMMSegment::Viterbi over cp[a:b]; a word ends after every E or S state (``weight``, ``path``,
    ``states``: scratch of at least b − a rows)."""
    n = b - a
    _viterbi_start(cp, a, hstart, hemit, weight)
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
    # a tie between the last E and S goes to E here (cppjieba), to S in jieba-rs
    return _viterbi_ends(a, n, _E if weight[n - 1, _E] >= weight[n - 1, _S] else _S, path, states, ends, n_ends)


@njit(cache=True, inline="always")
def _viterbi_ends(a, n, last, path, states, ends, n_ends):
    """Viterbi's backtrack from state ``last`` (E or S) at the last of n characters from a, then a
    word end after every E or S state (a path ends in E or S, so the last character always ends
    one)."""
    state = last
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
    n_ends = _mix_cut_into(cp, rt, cs, ccp, cn, ww, solo, min_w, hstart, htrans, hemit, ends,
                           np.empty(n + 1, dtype=np.float64), np.empty(n, dtype=np.int64),
                           np.empty(n, dtype=np.int64), np.empty((n, 4), dtype=np.float64),
                           np.empty((n, 4), dtype=np.int8), np.empty(n, dtype=np.int8))
    return ends[:n_ends]


@njit(cache=True)
def _mix_cut_into(cp, rt, cs, ccp, cn, ww, solo, min_w, hstart, htrans, hemit, ends, best, choice, mp, weight, path,
                  states):
    """:func:`mix_cut` into ``ends`` with its scratch arrays (all held by the caller, so the helpers
    below get views without reference counting, :func:`~neardup.kernels.swar.borrowed`); returns
    the number of words."""
    n = cp.shape[0]
    cp, rt, cs, ccp, cn, ww, solo = borrowed(cp), borrowed(rt), borrowed(cs), borrowed(ccp), borrowed(cn), \
        borrowed(ww), borrowed(solo)
    hstart, htrans, hemit, ends = borrowed(hstart), borrowed(htrans), borrowed(hemit), borrowed(ends)
    best, choice, mp = borrowed(best), borrowed(choice), borrowed(mp)
    weight, path, states = borrowed(weight), borrowed(path), borrowed(states)
    n_ends = 0
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
    return n_ends


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


# -- jieba-rs's cut (rjieba's ``Jieba.cut(text, hmm=True)``), compiled ------------------------------
#
# The segmentation the ``jieba`` tokenizer uses (rjieba, jieba-rs 0.11) with its default dictionary,
# rule for rule:
#
# 1. the text is split into maximal runs of "han" characters (CJK ideograph blocks, ASCII letters and
#    digits, ``+#&._%-``) and runs of everything else; each character of the latter is a piece of its
#    own (``\r\n`` is one piece);
# 2. in a han run, route[k] = max over dictionary words text[k:m] of (ln freq − ln Σfreq + route[m], m)
#    (ties to the longer word), or (−ln Σfreq + route[k+1], k+1) when no word starts at k — jieba's
#    maximum-probability route, right to left;
# 3. the route's consecutive one-character steps are buffered: one character stays a piece; a buffer
#    that is a dictionary word is cut into its characters; any other goes to the HMM: its runs of
#    U+4E00–U+9FD5 are cut by Viterbi over B/E/M/S (a word ends at each E or S; ties go to the later
#    state in B < E < M < S order), the rest by the pattern ``[a-zA-Z0-9]+(?:[._-][a-zA-Z0-9]+)*%?``
#    (each match a piece, and the text between matches a piece). jieba-rs 0.11's rule, found by
#    comparing with rjieba (0.10 matches ``[a-zA-Z0-9]+(?:.\d+)?%?`` instead; Python jieba: see
#    :func:`rs_cut_into`'s ``py``).
#
# Every float is computed in jieba-rs's order of operations, so ties fall the same way; the
# differential tests compare the pieces with rjieba's on ../shared's Chinese pages and generated text.

_VAL_BITS = 22                  # a slot: key (node << 21 | code point, 41 bits) << 22 | child + 1


@njit(cache=True)
def edge_table(child_start, child_cp, child_node):
    """Every trie edge (v, c) → child in one open-addressing table of uint64 slots (0: empty), at a
    load of at most 1/4: a lookup reads one slot, or a few adjacent ones, where bisecting a
    common character's hundreds of children read about eight scattered cache lines (100 ns per
    character on the Chinese pages). A walk down the trie ends with a failed lookup at nearly every
    character; those are answered by a filter of one bit per edge in 16 (1 MB, in L2; about 6 % of
    absent edges pass it and read the table): 48 → 27 ns per character. Returns (table, shift,
    filter, filter shift) for :func:`_edge`."""
    n_edges = child_cp.shape[0]
    bits = 4
    while (1 << bits) < 4 * n_edges:
        bits += 1
    tab = np.zeros(1 << bits, dtype=np.uint64)
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    # the filter: 16 bits per edge (a power of two), one bit set per edge
    fbits = bits + 2
    filt = np.zeros(1 << (fbits - 6), dtype=np.uint64)
    fshift = np.uint64(64 - fbits)
    for v in range(child_start.shape[0] - 1):
        for i in range(child_start[v], child_start[v + 1]):
            key = (np.uint64(v) << np.uint64(21)) | np.uint64(child_cp[i])
            h = key * GOLDEN
            s = np.int64(h >> shift)
            while tab[s] != 0:
                s = (s + 1) & mask
            tab[s] = (key << np.uint64(_VAL_BITS)) | np.uint64(child_node[i] + 1)
            f = h >> fshift
            filt[f >> np.uint64(6)] |= np.uint64(1) << (f & np.uint64(63))
    return tab, shift, filt, fshift


@njit(cache=True)
def ascii_pairs(child_start, child_cp, child_node, lf):
    """pairs[c1 · 128 + c2]: some dictionary word (ln freq not NaN) of two or more characters starts
    with the ASCII characters c1 c2. Where no pair of an ASCII run is marked, jieba's route through
    the run is one character at a time, whatever the probabilities (:func:`rs_cut`'s fast path)."""
    pairs = np.zeros(128 * 128, dtype=np.bool_)
    stack = np.empty(child_node.shape[0] + 1, dtype=np.int64)
    for i in range(child_start[0], child_start[1]):
        c1 = child_cp[i]
        if c1 >= 128:
            continue
        v1 = child_node[i]
        for j in range(child_start[v1], child_start[v1 + 1]):
            c2 = child_cp[j]
            if c2 >= 128:
                continue
            top = 0
            stack[0] = child_node[j]
            found = False
            while top >= 0 and not found:
                v = stack[top]
                top -= 1
                if not np.isnan(lf[v]):
                    found = True
                for q in range(child_start[v], child_start[v + 1]):
                    top += 1
                    stack[top] = child_node[q]
            pairs[c1 * 128 + c2] = found
    return pairs


@njit(cache=True, inline="always")
def _edge(tab, shift, filt, fshift, v, c):
    """The child of node v for code point c (−1: none), from :func:`edge_table`."""
    key = (np.uint64(v) << np.uint64(21)) | np.uint64(c)
    h = key * GOLDEN
    f = h >> fshift
    if (filt[f >> np.uint64(6)] >> (f & np.uint64(63))) & np.uint64(1) == 0:
        return -1
    mask = tab.shape[0] - 1
    s = np.int64(h >> shift)
    while True:
        x = tab[s]
        if x == 0:
            return -1
        if (x >> np.uint64(_VAL_BITS)) == key:
            return np.int64(x & np.uint64((1 << _VAL_BITS) - 1)) - 1
        s = (s + 1) & mask


@njit(cache=True, inline="always")
def _is_cjk(c):
    return ((0x3400 <= c <= 0x4DBF) or (0x4E00 <= c <= 0x9FFF) or (0xF900 <= c <= 0xFAFF)
            or (0x20000 <= c <= 0x2A6DF) or (0x2A700 <= c <= 0x2EBEF) or (0x2F800 <= c <= 0x2FA1F))


@njit(cache=True, inline="always")
def _alnum(c):
    return _letter(c) or _digit(c)


@njit(cache=True, inline="always")
def _han_default(c, py):
    """In jieba's ``re_han_default``: ASCII letters and digits, ``+#&._%-`` and the CJK blocks (jieba-rs),
    or of those only U+4E00–U+9FD5 (``py``: Python jieba's class)."""
    if py:
        cjk = 0x4E00 <= c <= 0x9FD5
    else:
        cjk = _is_cjk(c)
    return _alnum(c) or cjk or c == 43 or c == 35 or c == 38 or c == 46 or c == 95 or c == 37 or c == 45


@njit(cache=True, inline="always")
def _rs_viterbi(cp, a, b, hstart, htrans, hemit, ends, n_ends, weight, path, states):
    """jieba-rs ``hmm::viterbi`` + ``cut_internal`` over cp[a:b] (b − a ≥ 2)."""
    n = b - a
    _viterbi_start(cp, a, hstart, hemit, weight)
    for x in range(1, n):
        c = cp[a + x]
        for y in range(4):
            e = _emit(hemit, c, y)
            # the two states allowed before y, the later in B < E < M < S order second: it wins ties
            if y == _B:
                p0, p1 = _E, _S
            elif y == _E:
                p0, p1 = _B, _M
            elif y == _M:
                p0, p1 = _B, _M
            else:
                p0, p1 = _E, _S
            t0 = weight[x - 1, p0] + htrans[p0, y] + e
            t1 = weight[x - 1, p1] + htrans[p1, y] + e
            if t0 > t1:
                weight[x, y] = t0
                path[x, y] = p0
            else:
                weight[x, y] = t1
                path[x, y] = p1
    # a piece ends at each E (it began at the last B: always the previous piece's end, as B follows
    # only E or S) and at each S; jieba-rs's trailing piece after the last E or S never occurs, as
    # the path's last state is one of them
    return _viterbi_ends(a, n, _E if weight[n - 1, _E] > weight[n - 1, _S] else _S, path, states, ends, n_ends)


@njit(cache=True, inline="always")
def _rs_hmm_cut(cp, lo, hi, hstart, htrans, hemit, ends, n_ends, weight, path, states, py):
    """jieba-rs ``hmm::cut_with_allocated_memory`` over cp[lo:hi]; ``py``: Python jieba's ``finalseg.cut``,
    whose pattern for the text outside U+4E00–U+9FD5 is ``[a-zA-Z0-9]+(?:\\.\\d+)?%?``."""
    i = lo
    while i < hi:
        c = cp[i]
        if 0x4E00 <= c <= 0x9FD5:
            j = i + 1
            while j < hi and 0x4E00 <= cp[j] <= 0x9FD5:
                j += 1
            if j - i == 1:
                ends[n_ends] = j
                n_ends += 1
            else:
                n_ends = _rs_viterbi(cp, i, j, hstart, htrans, hemit, ends, n_ends, weight, path, states)
            i = j
            continue
        j = i + 1
        while j < hi and not (0x4E00 <= cp[j] <= 0x9FD5):
            j += 1
        # cp[i:j]: matches of the pattern and the text between them, each a piece
        k = i
        gap = i
        while k < j:
            if not _alnum(cp[k]):
                k += 1
                continue
            m = k + 1
            while m < j and _alnum(cp[m]):
                m += 1
            if py:
                if m + 1 < j and cp[m] == 46 and _digit(cp[m + 1]):
                    m += 2
                    while m < j and _digit(cp[m]):
                        m += 1
            else:
                while m + 1 < j and (cp[m] == 46 or cp[m] == 95 or cp[m] == 45) and _alnum(cp[m + 1]):
                    m += 2
                    while m < j and _alnum(cp[m]):
                        m += 1
            if m < j and cp[m] == 37:
                m += 1
            if gap < k:
                ends[n_ends] = k
                n_ends += 1
            ends[n_ends] = m
            n_ends += 1
            gap = m
            k = m
        if gap < j:
            ends[n_ends] = j
            n_ends += 1
        i = j
    return n_ends


@njit(cache=True, inline="always")
def _root_edge(rt, tab, shift, filt, fshift, c):
    if c < 65536:
        return rt[c]
    return _edge(tab, shift, filt, fshift, 0, c)


@njit(cache=True, inline="always")
def _edge_node(cp, a, b, rt, tab, shift, filt, fshift):
    """The trie node of the text cp[a:b] (−1: none), by the edge table."""
    v = _root_edge(rt, tab, shift, filt, fshift, cp[a])
    k = a + 1
    while v >= 0 and k < b:
        v = _edge(tab, shift, filt, fshift, v, cp[k])
        k += 1
    return v


@njit(cache=True, inline="always")
def _is_word(cp, a, b, tr):
    rt, tab, shift, filt, fshift, lf = tr
    v = _edge_node(cp, a, b, rt, tab, shift, filt, fshift)
    return v >= 0 and not np.isnan(lf[v])


@njit(cache=True, inline="always")
def _rs_flush(cp, a, b, tr, hm, ends, n_ends, sc, py):
    """A run cp[a:b] of one-character route steps: one character, the characters of a dictionary
    word, or the HMM's pieces."""
    if b - a == 1:
        ends[n_ends] = b
        return n_ends + 1
    if _is_word(cp, a, b, tr):
        for k in range(a + 1, b + 1):
            ends[n_ends] = k
            n_ends += 1
        return n_ends
    hstart, htrans, hemit = hm
    weight, path, states = sc
    return _rs_hmm_cut(cp, a, b, hstart, htrans, hemit, ends, n_ends, weight, path, states, py)


@njit(cache=True, inline="always")
def _rs_dag_hmm(cp, lo, hi, tr, log_total, hm, ends, n_ends, best, choice, sc, py):
    """jieba-rs ``cut_dag_hmm`` over the han run cp[lo:hi] (``tr``: the trie, :func:`rs_cut`'s arguments;
    ``hm``: the HMM; ``sc``: Viterbi's scratch)."""
    rt, tab, shift, filt, fshift, lf = tr
    best[hi] = 0.0
    log1 = 0.0 - log_total
    for k in range(hi - 1, lo - 1, -1):
        bw = 0.0
        bj = -1
        v = _root_edge(rt, tab, shift, filt, fshift, cp[k])
        m = k + 1
        while v >= 0:
            w = lf[v]
            if not np.isnan(w):
                val = w - log_total + best[m]
                if bj < 0 or val >= bw:          # (value, end) compared as a pair: a tie goes to the longer
                    bw = val
                    bj = m
            if m >= hi:
                break
            v = _edge(tab, shift, filt, fshift, v, cp[m])
            m += 1
        if bj < 0:
            bw = log1 + best[k + 1]
            bj = k + 1
        best[k] = bw
        choice[k] = bj
    x = lo
    left = -1
    while x < hi:
        y = choice[x]
        if y - x == 1:
            if left < 0:
                left = x
        else:
            if left >= 0:
                n_ends = _rs_flush(cp, left, x, tr, hm, ends, n_ends, sc, py)
                left = -1
            ends[n_ends] = y
            n_ends += 1
        x = y
    if left >= 0:
        n_ends = _rs_flush(cp, left, hi, tr, hm, ends, n_ends, sc, py)
    return n_ends


@njit(cache=True)
def rs_cut(cp, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans, hemit, py=False):
    """jieba-rs ``Jieba::cut(text, true)`` of the code points ``cp``: the end of each piece, in order
    (pieces are cp[ends[k−1]:ends[k]], the first from 0). ``lf``: ln(freq) per trie node (NaN: not
    a dictionary word); ``pairs``: :func:`ascii_pairs`; ``hemit``: the unrounded emissions. ``py``:
    Python jieba's ``jieba.cut(text)`` instead (see :func:`rs_cut_into`)."""
    scratch = rs_scratch(cp.shape[0])
    n_ends = rs_cut_into(cp, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans, hemit, scratch, py)
    return scratch[0][:n_ends].copy()


@njit(cache=True)
def rs_scratch(n):
    """Scratch arrays for :func:`rs_cut_into` over up to n code points: (ends, best, choice, weight,
    path, states). Reused across the documents of a batch: a fresh 200 KB array per page of text
    is fresh pages for the system to fault in."""
    m = max(n, 1)
    return (np.empty(m, dtype=np.int64), np.empty(m + 1, dtype=np.float64), np.empty(m, dtype=np.int64),
            np.empty((m, 4), dtype=np.float64), np.empty((m, 4), dtype=np.int8), np.empty(m, dtype=np.int8))


@njit(cache=True)
def rs_cut_into(cp, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans, hemit, scratch, py):
    """:func:`rs_cut` with scratch from :func:`rs_scratch` (of at least ``len(cp)``); the piece ends
    are ``scratch[0][:returned count]``.

    ``py``: Python jieba 0.42's ``Tokenizer.cut(text, HMM=True)`` (what ``jieba.analyse.extract_tags``
    cuts with), which differs from jieba-rs 0.11 in two rules only: its han runs hold U+4E00–U+9FD5 alone
    of the CJK blocks, and its HMM cuts the text outside U+4E00–U+9FD5 by ``[a-zA-Z0-9]+(?:\\.\\d+)?%?``
    (``2003-04-29`` → ``2003 - 04 - 29``, ``1.47.3`` → ``1.47 . 3``). ``log_total`` must then be
    ln Σ freq over every line of dict.txt (Python jieba's ``total``; jieba-rs sums a repeated word once)."""
    n = cp.shape[0]
    ends, best, choice, weight, path, states = scratch
    # views without reference counting (:func:`~neardup.kernels.swar.borrowed`): the helpers below
    # take these arrays at every run and trie step, each costing an atomic add and subtract per array
    # otherwise (the cut 0.31 -> 0.15 s on the Chinese pages)
    cp, rt, tab, filt = borrowed(cp), borrowed(rt), borrowed(tab), borrowed(filt)
    pairs, lf = borrowed(pairs), borrowed(lf)
    hstart, htrans, hemit = borrowed(hstart), borrowed(htrans), borrowed(hemit)
    ends, best, choice = borrowed(ends), borrowed(best), borrowed(choice)
    weight, path, states = borrowed(weight), borrowed(path), borrowed(states)
    tr = (rt, tab, shift, filt, fshift, lf)
    hm = (hstart, htrans, hemit)
    sc = (weight, path, states)
    n_ends = 0
    i = 0
    while i < n:
        if _han_default(cp[i], py):
            j = i + 1
            plain = cp[i] < 128
            while j < n and _han_default(cp[j], py):
                if plain and (cp[j] >= 128 or pairs[cp[j - 1] * 128 + cp[j]]):
                    plain = False
                j += 1
            if plain:       # ASCII, no word of two or more characters in it: the route steps one character
                n_ends = _rs_hmm_cut(cp, i, j, hstart, htrans, hemit, ends, n_ends, weight, path, states, py)
                i = j
                continue
            n_ends = _rs_dag_hmm(cp, i, j, tr, log_total, hm, ends, n_ends, best, choice, sc, py)
            i = j
        elif cp[i] == 13 and i + 1 < n and cp[i + 1] == 10:
            ends[n_ends] = i + 2
            n_ends += 1
            i += 2
        else:
            ends[n_ends] = i + 1
            n_ends += 1
            i += 1
    return n_ends


@njit(cache=True)
def rs_pieces_batch(buf, offsets, docs, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans, hemit):
    """The pieces of documents ``docs`` (UTF-8 ``buf[offsets[d]:offsets[d+1]]``) joined by U+001F,
    as ``"\\x1f".join(rjieba.cut(text, True))`` of each, packed: (bytes, offsets per document)."""
    nd = docs.shape[0]
    total = 0
    for k in range(nd):
        total += 2 * (offsets[docs[k] + 1] - offsets[docs[k]])     # a separator at most per byte
    out = np.empty(total, dtype=np.uint8)
    off = np.zeros(nd + 1, dtype=np.int64)
    longest = 0
    for k in range(nd):
        longest = max(longest, offsets[docs[k] + 1] - offsets[docs[k]])     # (characters ≤ bytes)
    scratch = rs_scratch(longest)
    e = scratch[0]
    at = 0
    for k in range(nd):
        d = docs[k]
        cp, bo = decode_utf8(buf, offsets[d], offsets[d + 1])
        n_ends = rs_cut_into(cp, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans, hemit, scratch,
                             False)
        prev = 0
        for q in range(n_ends):
            if q:
                out[at] = 31
                at += 1
            for i in range(bo[prev], bo[e[q]]):
                out[at] = buf[i]
                at += 1
            prev = e[q]
        off[k + 1] = at
    return out[:at], off


@njit(cache=True)
def _mapped_code_points(buf, start, end, map_slot, map_utf8):
    """The code points of ``buf[start:end]`` with the per-character map applied (the word kernel's
    :func:`~neardup.text.unicode.char_map`: case folding, and NFKC where it is exact per
    character), i.e. of the normalised text."""
    nslot = map_slot.shape[0]
    cap = end - start
    for i in range(start, end):                  # room for expansions (one character → several)
        b = buf[i]
        if b >= 0xC0:
            cap += 16
    cps = np.empty(cap + 1, dtype=np.int32)
    n = 0
    i = start
    while i < end:
        c, ln = _utf8_at(buf, i)
        i += ln
        if c < nslot and map_slot[c] != 0:
            r = np.int64(map_slot[c]) - 1
            m = np.int64(map_utf8[r, 0])
            if m == 1:                            # (ASCII case folding: most replacements)
                cps[n] = map_utf8[r, 1]
                n += 1
                continue
            row = map_utf8[r]
            q = 1
            while q <= m:                         # the replacement's UTF-8, decoded
                x, ln = _utf8_at(row, q)
                cps[n] = x
                n += 1
                q += ln
        else:
            cps[n] = c
            n += 1
    return cps[:n].copy()            # (a view would keep the whole allocation, 16 more per character)


@njit(cache=True, inline="always")
def _push_cp(h, w, pending, nw, c):
    """The UTF-8 bytes of code point c into a token hash (:func:`~neardup.kernels.shingle._push`)."""
    if c < 0x80:
        return _push_byte(h, w, pending, nw, c)
    if c < 0x800:
        h, w, pending, nw = _push_byte(h, w, pending, nw, 0xC0 | (c >> 6))
        return _push_byte(h, w, pending, nw, 0x80 | (c & 0x3F))
    if c < 0x10000:
        h, w, pending, nw = _push_byte(h, w, pending, nw, 0xE0 | (c >> 12))
        h, w, pending, nw = _push_byte(h, w, pending, nw, 0x80 | ((c >> 6) & 0x3F))
        return _push_byte(h, w, pending, nw, 0x80 | (c & 0x3F))
    h, w, pending, nw = _push_byte(h, w, pending, nw, 0xF0 | (c >> 18))
    h, w, pending, nw = _push_byte(h, w, pending, nw, 0x80 | ((c >> 12) & 0x3F))
    h, w, pending, nw = _push_byte(h, w, pending, nw, 0x80 | ((c >> 6) & 0x3F))
    return _push_byte(h, w, pending, nw, 0x80 | (c & 0x3F))


@njit(cache=True)
def jieba_shingles_batch(buf, offsets, docs, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans,
                         hemit, map_slot, map_utf8, table, n, seed):
    """The ``jieba`` tokenizer's shingles of documents ``docs``, fused: the per-character map
    (normalisation), :func:`rs_cut`, the pieces holding a word character (``table``) hashed as
    tokens (:func:`~neardup.kernels.shingle.token_hash` of their UTF-8 bytes), n-grams
    (:func:`~neardup.kernels.shingle.emit_shingles`). Returns (hashes, offsets per document), the
    same as :func:`~neardup.kernels.shingle.token_shingles_batch` in mode 2 over the pieces of the
    normalised text joined by U+001F."""
    nd = docs.shape[0]
    cps = []
    cap = 1
    for k in range(nd):
        d = docs[k]
        c = _mapped_code_points(buf, offsets[d], offsets[d + 1], map_slot, map_utf8)
        cps.append(c)
        cap += c.shape[0] + 1
    out = np.empty(cap, dtype=np.uint64)
    doc_off = np.zeros(nd + 1, dtype=np.int64)
    seed = np.uint64(seed)
    longest = 0
    for k in range(nd):
        longest = max(longest, cps[k].shape[0])
    scratch = rs_scratch(longest)
    tokh = np.empty(longest + 1, dtype=np.uint64)
    ends = scratch[0]
    o = 0
    for k in range(nd):
        cp = cps[k]
        n_ends = rs_cut_into(cp, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans, hemit, scratch,
                             False)
        m = 0
        a = 0
        for q in range(n_ends):
            b = ends[q]
            word = False
            for i in range(a, b):
                if table[cp[i]] != SEP:
                    word = True
                    break
            if word:
                h = seed
                w = np.uint64(0)
                pending = 0
                nw = 0
                for i in range(a, b):
                    h, w, pending, nw = _push_cp(h, w, pending, nw, np.int64(cp[i]))
                tokh[m] = _finish(h, w, pending, 8 * nw + pending)
                m += 1
            a = b
        o = emit_shingles(tokh, m, n, seed, out, o)
        doc_off[k + 1] = o
    return out[:o].copy(), doc_off
