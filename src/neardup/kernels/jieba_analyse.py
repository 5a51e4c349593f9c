"""The crawler's recipe ``simhash.Simhash(jieba.analyse.extract_tags(text, topK=N, withWeight=True)).value``
(PyPI ``jieba`` 0.42 and 1e0ng's PyPI ``simhash`` 2.1), compiled, over batches of UTF-8 documents.

Per document (code points ``cp``, byte offset of each in ``bo``), rule for rule:

1. the pieces of Python jieba's ``jieba.cut(text)`` (HMM on): :func:`neardup.kernels.segment.rs_cut_into`
   with ``py`` (jieba's dictionary and HMM from :mod:`neardup.text.jieba_dict`);
2. ``TFIDF.extract_tags``: a piece is a keyword unless ``len(piece.strip()) < 2`` or ``piece.lower()`` is
   one of jieba's ``STOP_WORDS`` (a piece of two or more characters is a run of the han class, which
   holds no white space, or ``\\r\\n``; the stop words are ASCII, and a piece with a non-ASCII character
   lowers to no ASCII word, so lowering A–Z is ``lower()`` here); distinct keywords in order of first
   occurrence with counts c_k; total T = Σ c_k; weight w_k = c_k · (idf_k / T) in that order of
   operations, idf_k from jieba's ``idf.txt`` or, when absent, its ``median_idf`` (sorted distinct values
   at index n // 2); Python's stable ``sorted(..., reverse=True)`` by weight, so equal weights keep their
   first-occurrence order; the first N;
3. ``Simhash(features).value``: h_k = the last 8 bytes of md5(UTF-8 keyword), big-endian
   (:func:`md5_tail64`); with float weights the library adds ``bits(h_k) · w_k`` row by row
   (``np.sum(rows, 0)``: left to right) and sets bit j iff S_j > W / 2, W = ((0 + w_1) + w_2) + …; the
   same sums in the same order here (:func:`fold_majority`), so the value is equal bit for bit.

Tested against the two packages themselves on 1,000 Chinese documents (tests/test_compat_jieba_analyse.py).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .segment import _distinct_words, _edge_node, decode_utf8, rs_cut_into, rs_scratch
from .sha1 import M32, _le32_of_be, _rotl32, md_pad

# MD5 (RFC 1321): per-step rotations and the constants K_i = floor(|sin(i + 1)| · 2^32)
_S = np.array([7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4, dtype=np.int64)
_K = np.array([int(abs(math.sin(i + 1)) * 2**32) & 0xFFFFFFFF for i in range(64)], dtype=np.uint64)


@njit(cache=True)
def md5_tail64(buf, start, end, msg):
    """``int.from_bytes(hashlib.md5(buf[start:end]).digest()[-8:], "big")`` (RFC 1321), as uint64.
    ``msg``: uint8 scratch of at least end − start + 72 bytes. 32-bit arithmetic in uint64, masked."""
    n = end - start
    for i in range(n):
        msg[i] = buf[start + i]
    total = md_pad(msg, n, False)
    a0 = np.uint64(0x67452301)
    b0 = np.uint64(0xEFCDAB89)
    c0 = np.uint64(0x98BADCFE)
    d0 = np.uint64(0x10325476)
    m = np.empty(16, dtype=np.uint64)
    for blk in range(0, total, 64):
        for t in range(16):
            p = blk + 4 * t
            m[t] = (np.uint64(msg[p]) | (np.uint64(msg[p + 1]) << np.uint64(8))
                    | (np.uint64(msg[p + 2]) << np.uint64(16)) | (np.uint64(msg[p + 3]) << np.uint64(24)))
        a, b, c, d = a0, b0, c0, d0
        for i in range(64):
            if i < 16:
                f = (b & c) | (~b & M32 & d)
                g = i
            elif i < 32:
                f = (d & b) | (~d & M32 & c)
                g = (5 * i + 1) % 16
            elif i < 48:
                f = b ^ c ^ d
                g = (3 * i + 5) % 16
            else:
                f = c ^ (b | (~d & M32))
                g = (7 * i) % 16
            f = (f + a + _K[i] + m[g]) & M32
            a = d
            d = c
            c = b
            b = (b + _rotl32(f, _S[i])) & M32
        a0 = (a0 + a) & M32
        b0 = (b0 + b) & M32
        c0 = (c0 + c) & M32
        d0 = (d0 + d) & M32
    # the digest is a0 b0 c0 d0, each little-endian: its last 8 bytes are c0 d0
    return (np.uint64(_le32_of_be(c0)) << np.uint64(32)) | np.uint64(_le32_of_be(d0))


@njit(cache=True)
def md5_tail64_batch(buf, offsets):
    """:func:`md5_tail64` of every ``buf[offsets[k]:offsets[k+1]]``."""
    n = offsets.shape[0] - 1
    longest = 0
    for k in range(n):
        longest = max(longest, offsets[k + 1] - offsets[k])
    msg = np.empty(longest + 72, dtype=np.uint8)
    out = np.empty(n, dtype=np.uint64)
    for k in range(n):
        out[k] = md5_tail64(buf, offsets[k], offsets[k + 1], msg)
    return out


@njit(cache=True)
def fold_majority(hashes, weights, k):
    """1e0ng/simhash's fold of float weights: S_j = Σ_i [bit j of h_i] · w_i left to right, W = Σ_i w_i
    left to right; bit j is 1 iff S_j > W / 2 (the library's ``np.sum(sums, 0) > count / 2``)."""
    acc = np.zeros(64, dtype=np.float64)
    count = 0.0
    for i in range(k):
        h = hashes[i]
        w = weights[i]
        count += w
        for j in range(64):
            if (h >> np.uint64(j)) & np.uint64(1):
                acc[j] += w
    half = count / 2.0
    out = np.uint64(0)
    for j in range(64):
        if acc[j] > half:
            out |= np.uint64(1) << np.uint64(j)
    return out


@njit(inline="always", cache=True)
def _stop(cp, a, b, stop_keys):
    """``cp[a:b].lower()`` is a stop word: each stop word is ASCII of at most 8 bytes, packed big-endian
    into a uint64 (``stop_keys``, sorted)."""
    if b - a > 8:
        return False
    key = np.uint64(0)
    for i in range(a, b):
        c = cp[i]
        if c >= 128:
            return False
        if 65 <= c <= 90:
            c += 32
        key = (key << np.uint64(8)) | np.uint64(c)
    p = np.searchsorted(stop_keys, key)
    return p < stop_keys.shape[0] and stop_keys[p] == key


@njit(cache=True)
def keywords_one(buf, start, end, top_n, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans, hemit,
                 idf, idf_median, stop_keys, stop, use_stop):
    """``jieba.analyse.extract_tags(text, topK=top_n, withWeight=True)`` of ``buf[start:end]``: (byte
    start, byte end, weight) of each keyword, heaviest first, and the number of distinct keywords
    before the top-N cut. ``idf``: per trie node (NaN: absent); ``use_stop``: the words of the trie's
    nodes marked in ``stop`` are stop words too (``set_stop_words``: a piece whose ASCII-lowered text is one)."""
    cp, bo = decode_utf8(buf, start, end)
    scratch = rs_scratch(cp.shape[0])
    n_ends = rs_cut_into(cp, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans, hemit, scratch,
                         True)
    ends = scratch[0]
    low = cp
    if use_stop:
        low = cp.copy()
        for i in range(low.shape[0]):
            if 65 <= low[i] <= 90:
                low[i] += 32
    ws = np.empty(n_ends, dtype=np.int64)
    we = np.empty(n_ends, dtype=np.int64)
    m = 0
    a = 0
    for q in range(n_ends):
        b = ends[q]
        keep = b - a >= 2 and not (b - a == 2 and cp[a] == 13 and cp[a + 1] == 10) and not _stop(cp, a, b, stop_keys)
        if keep and use_stop:
            v = _edge_node(low, a, b, rt, tab, shift, filt, fshift)
            keep = v < 0 or not stop[v]
        if keep:
            ws[m] = a
            we[m] = b
            m += 1
        a = b
    if m == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64), 0
    first, count = _distinct_words(cp, ws, we, m)          # in order of first occurrence
    nd = first.shape[0]
    total = 0.0
    for r in range(nd):
        total += float(count[r])
    dw = np.empty(nd, dtype=np.float64)
    for r in range(nd):
        v = _edge_node(cp, ws[first[r]], we[first[r]], rt, tab, shift, filt, fshift)
        f = idf_median if v < 0 or np.isnan(idf[v]) else idf[v]
        dw[r] = float(count[r]) * (f / total)
    order = np.argsort(-dw, kind="mergesort")               # stable: ties keep first occurrence
    k = min(top_n, nd)
    bs = np.empty(k, dtype=np.int64)
    be = np.empty(k, dtype=np.int64)
    wt = np.empty(k, dtype=np.float64)
    for t in range(k):
        i = first[order[t]]
        bs[t] = bo[ws[i]]
        be[t] = bo[we[i]]
        wt[t] = dw[order[t]]
    return bs, be, wt, nd


@njit(cache=True)
def analyse_one(buf, start, end, top_n, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans, hemit,
                idf, idf_median, stop_keys, stop, use_stop):
    """(fingerprint, distinct keywords) of ``buf[start:end]``: :func:`keywords_one`, each keyword's
    :func:`md5_tail64`, :func:`fold_majority`. No keyword: 0 (the library's value of no features)."""
    bs, be, wt, nd = keywords_one(buf, start, end, top_n, rt, tab, shift, filt, fshift, pairs, lf, log_total,
                                  hstart, htrans, hemit, idf, idf_median, stop_keys, stop, use_stop)
    k = bs.shape[0]
    longest = 0
    for t in range(k):
        longest = max(longest, be[t] - bs[t])
    msg = np.empty(longest + 72, dtype=np.uint8)
    hashes = np.empty(k, dtype=np.uint64)
    for t in range(k):
        hashes[t] = md5_tail64(buf, bs[t], be[t], msg)
    return fold_majority(hashes, wt, k), nd


@njit(cache=True, parallel=True)
def analyse_batch(buf, offsets, top_n, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans, hemit,
                  idf, idf_median, stop_keys, stop, use_stop):
    """:func:`analyse_one` of every document ``buf[offsets[d]:offsets[d+1]]``, on all cores:
    (fingerprints, distinct keywords per document)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    kws = np.empty(n, dtype=np.int64)
    for d in prange(n):
        out[d], kws[d] = analyse_one(buf, offsets[d], offsets[d + 1], top_n, rt, tab, shift, filt, fshift, pairs, lf,
                                     log_total, hstart, htrans, hemit, idf, idf_median, stop_keys, stop, use_stop)
    return out, kws


@njit(cache=True)
def analyse_batch_serial(buf, offsets, top_n, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans,
                         hemit, idf, idf_median, stop_keys, stop, use_stop):
    """:func:`analyse_batch` on the calling thread (a few documents in a process that forks later: see
    :data:`neardup.sketches.compat.yanyiwu.SERIAL_DOCS`)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    kws = np.empty(n, dtype=np.int64)
    for d in range(n):
        out[d], kws[d] = analyse_one(buf, offsets[d], offsets[d + 1], top_n, rt, tab, shift, filt, fshift, pairs, lf,
                                     log_total, hstart, htrans, hemit, idf, idf_median, stop_keys, stop, use_stop)
    return out, kws


@njit(cache=True)
def keywords_batch(buf, offsets, rt, tab, shift, filt, fshift, pairs, lf, log_total, hstart, htrans, hemit, idf,
                   idf_median, stop_keys, stop, use_stop):
    """Every distinct keyword of each document (``extract_tags`` with no topK), as byte ranges: (starts,
    ends, offsets per document), CSR."""
    n = offsets.shape[0] - 1
    starts = []
    ends = []
    off = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):
        bs, be, _, _ = keywords_one(buf, offsets[d], offsets[d + 1], offsets[d + 1] - offsets[d], rt, tab, shift, filt,
                                    fshift, pairs, lf, log_total, hstart, htrans, hemit, idf, idf_median, stop_keys,
                                    stop, use_stop)
        starts.append(bs)
        ends.append(be)
        off[d + 1] = off[d] + bs.shape[0]
    s = np.empty(off[n], dtype=np.int64)
    e = np.empty(off[n], dtype=np.int64)
    for d in range(n):
        s[off[d]:off[d + 1]] = starts[d]
        e[off[d]:off[d + 1]] = ends[d]
    return s, e, off
