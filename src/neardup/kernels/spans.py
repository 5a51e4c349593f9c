"""Kernels for duplicates inside documents: repeated lines/paragraphs and repeated substrings.

Both work on one UTF-8 buffer with document offsets, as the shingle kernels do, and report byte
ranges relative to each document's start, so that a removal never needs the text decoded.

Units (:func:`unit_hashes_batch`). A *line* is the bytes up to and including a ``\\n`` (the last
one may lack it). A line is *blank* when every byte is ASCII white space (space, ``\\t``, ``\\r``,
``\\v``, ``\\f``). A *paragraph* is a maximal run of non-blank lines together with the blank lines
that follow it (so removing it leaves no gap of blank lines); blank lines before a document's first
paragraph belong to no unit. A unit's hash is a function of its word tokens only (the word kernel's
tokens: case folded, NFKC per character): H = Σ_j τ_j B^{m−1−j} mod 2^64 over its m token hashes
τ, then fmix64(H ⊕ seed ⊕ m·P5). Two units with the same tokens in the same order have equal
hashes whatever their spacing, case or punctuation; a unit without a word token (a rule of dashes,
a blank line) is never reported, so it is never removed. Equal hashes of different token sequences
need a 64-bit collision: with u distinct units the chance of any is below u²/2⁶⁵ (10⁻⁷ at 2·10⁶).

Substrings (:func:`mark_repeated_windows`, :func:`window_ranges`). With the documents joined by a
separator byte 0xFF (never part of UTF-8) into T and its suffix array SA, the *window* at p is
T[p:p+L]; it is valid when it holds no separator (it lies inside one document). Valid windows with
equal bytes are contiguous in SA, and adjacent entries SA[j−1], SA[j] start with the same L bytes
iff their longest common prefix, cut at the first separator, reaches L: :func:`capped_plcp` gets
it for all positions at once in linear time, capped at L. In each run of equal windows, the one at the smallest p is
the first occurrence; every other one is marked. A document's removed bytes are the union of its
marked windows, trimmed inwards to character boundaries — every byte removed lies in a window that
occurs earlier in the corpus, and every repeated string of ≥ L bytes is removed except its first
occurrence (each of its windows, at a later occurrence, is marked).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .hashing import P1, P5, fmix64, xxh64
from .shingle import scan_scratch, word_scan
from .swar import LITTLE_ENDIAN, cttz64, load_u64

SEPARATOR = 0xFF


@njit(inline="always", cache=True)
def _blank(buf, i, j):
    for p in range(i, j):
        b = buf[p]
        if b != 32 and b != 9 and b != 13 and b != 11 and b != 12 and b != 10:
            return False
    return True


NEWLINES = np.uint64(0x0A0A0A0A0A0A0A0A)
ONES = np.uint64(0x0101010101010101)
HIGHS = np.uint64(0x8080808080808080)


@njit(inline="always", cache=True)
def _next_newline(buf, j, e):
    """The first ``\\n`` at or after j (e when none), 8 bytes at a time: in w = word ⊕ 0x0A…0A a zero
    byte is a newline, and (w − 0x01…01) & ~w & 0x80…80 sets the high bit of every zero byte (and
    possibly of bytes above one), so its lowest set bit marks the first newline exactly."""
    if LITTLE_ENDIAN:
        while j + 8 <= e:
            w = load_u64(buf, j) ^ NEWLINES
            z = (w - ONES) & ~w & HIGHS
            if z != 0:
                return j + (np.int64(cttz64(z)) >> 3)
            j += 8
    while j < e and buf[j] != 10:
        j += 1
    return j


LOWS7 = np.uint64(0x7F7F7F7F7F7F7F7F)


@njit(cache=True)
def _count_newlines(buf, lo, hi):
    """Newlines in buf[lo:hi], 8 bytes at a time: with w = word ⊕ 0x0A…0A, ((w & 0x7F…) + 0x7F…) | w
    has the high bit of exactly the non-zero bytes, so its complement's high bits count the newlines."""
    c = 0
    p = lo
    if LITTLE_ENDIAN:
        while p + 8 <= hi:
            w = load_u64(buf, p) ^ NEWLINES
            nz = (((w & LOWS7) + LOWS7) | w) & HIGHS
            z = ~nz & HIGHS
            while z != 0:
                c += 1
                z &= z - np.uint64(1)
            p += 8
    while p < hi:
        if buf[p] == 10:
            c += 1
        p += 1
    return c


@njit(inline="always", cache=True)
def _emit(out, u, h, k, seed, d, start, end):
    """Unit ``u`` of ``out`` = (hashes, docs, starts, ends, tokens): its k tokens folded into h."""
    uh, ud, us, ue, un = out
    uh[u] = fmix64(h ^ seed ^ (np.uint64(k) * P5))
    ud[u] = d
    us[u] = start
    ue[u] = end
    un[u] = k
    return u + 1


@njit(cache=True)
def unit_hashes_batch(buf, offsets, table, map_slot, map_utf8, seed, paragraph):
    """Units of every document of a batch: (hash uint64, document int64, start int64, end int64,
    tokens int64, digest uint64), the byte range [start, end) relative to the document's first byte,
    in document order then text order; ``digest`` is XXH64 (seed 0) of the unit's own bytes.
    ``paragraph``: paragraphs, else lines (see the module docstring)."""
    nd = offsets.shape[0] - 1
    cap = _count_newlines(buf, offsets[0], offsets[nd]) + nd + 1
    uh = np.empty(cap, dtype=np.uint64)
    ud = np.empty(cap, dtype=np.int64)
    us = np.empty(cap, dtype=np.int64)
    ue = np.empty(cap, dtype=np.int64)
    un = np.empty(cap, dtype=np.int64)
    out = (uh, ud, us, ue, un)
    tok_start, tok_end, tokh = scan_scratch(offsets)
    seed = np.uint64(seed)
    u = 0
    for d in range(nd):
        s = offsets[d]
        e = offsets[d + 1]
        m = word_scan(buf, s, e, table, map_slot, map_utf8, tok_start, tok_end, tokh, seed)
        t = 0
        i = s
        h = np.uint64(0)
        k = 0
        ps = -1          # paragraph: start of the open paragraph (-1: none)
        pe = -1          # its end so far (after its last line and the blank lines that followed)
        seen_blank = False
        while i < e:
            j = _next_newline(buf, i, e)
            le = j + 1 if j < e else e
            if not paragraph:
                while t < m and tok_start[t] < le:
                    h = h * P1 + tokh[t]
                    k += 1
                    t += 1
                if k > 0:
                    u = _emit(out, u, h, k, seed, d, i - s, le - s)
                h = np.uint64(0)
                k = 0
            elif _blank(buf, i, j):
                if ps >= 0:
                    pe = le
                    seen_blank = True
            else:
                if ps >= 0 and seen_blank:   # a new paragraph begins: the open one ends here
                    if k > 0:
                        u = _emit(out, u, h, k, seed, d, ps - s, pe - s)
                    ps = -1
                    h = np.uint64(0)
                    k = 0
                if ps < 0:
                    ps = i
                    seen_blank = False
                pe = le
                while t < m and tok_start[t] < le:
                    h = h * P1 + tokh[t]
                    k += 1
                    t += 1
            i = le
        if paragraph and ps >= 0 and k > 0:
            u = _emit(out, u, h, k, seed, d, ps - s, pe - s)
    dg = np.empty(u, dtype=np.uint64)
    for q in range(u):
        base = offsets[ud[q]]
        dg[q] = xxh64(buf, base + us[q], base + ue[q], np.uint64(0))
    return uh[:u].copy(), ud[:u].copy(), us[:u].copy(), ue[:u].copy(), un[:u].copy(), dg


@njit(cache=True)
def range_digests(text, starts, docs, rs, re):
    """XXH64 (seed 0) of each range: bytes ``rs[i]:re[i]`` of document ``docs[i]`` (``starts``: each
    document's first byte in ``text``)."""
    out = np.empty(docs.shape[0], dtype=np.uint64)
    for i in range(docs.shape[0]):
        base = starts[docs[i]]
        out[i] = xxh64(text, base + rs[i], base + re[i], np.uint64(0))
    return out


@njit(cache=True)
def first_occurrences(hashes, docs, order, min_docs):
    """Which units are repeats to remove: ``removed[u]`` is True when an earlier unit (in the given
    order) has the same hash and that hash occurs in at least ``min_docs`` distinct documents;
    ``first[u]`` is the index of the first unit with u's hash. Units arrive in corpus order
    (``docs`` non-decreasing). ``order``, a stable sort of the hashes, groups equal hashes keeping
    that order, so the first of a group is the first occurrence and its distinct documents are
    counted by doc changes."""
    n = hashes.shape[0]
    removed = np.zeros(n, dtype=np.bool_)
    first = np.empty(n, dtype=np.int64)
    g = 0
    while g < n:
        h = hashes[order[g]]
        q = g + 1
        distinct = 1
        while q < n and hashes[order[q]] == h:
            if docs[order[q]] != docs[order[q - 1]]:
                distinct += 1
            q += 1
        f = order[g]
        for r in range(g, q):
            first[order[r]] = f
        if distinct >= min_docs:
            for r in range(g + 1, q):
                removed[order[r]] = True
        g = q
    return removed, first


@njit(parallel=True, cache=True)
def capped_plcp(text, sa, L, nt):
    """min(L, lcp'(p, pred(p))) for every position p, where pred(p) precedes p in the suffix array and
    lcp' is the common prefix length up to the first separator (−1 marks the first suffix).

    Kärkkäinen, Manzini and Puglisi's Φ method (CPM 2009): Φ[sa[j]] = sa[j−1], then the lengths in
    text order, each at least the previous one minus 1 (the usual lemma; it holds for lcp' too, as
    lcp' = min(lcp, distance to the separator) is monotone in lcp), computed in place over Φ. With
    the cap, a step compares at most L bytes beyond the carried length, and the total work is
    O(n + n) compares: linear, with no full LCP array. Memory: one int32/int64 per position.
    Parallel: Φ is filled in parallel, and the text is cut into one stretch per thread, each
    starting with a carried length of 0 (always a valid lower bound); ``nt`` stretches (the threads:
    a kernel that asks numba for them cannot be cached)."""
    n = sa.shape[0]
    plcp = np.empty(n, dtype=sa.dtype)
    if n == 0:
        return plcp
    plcp[sa[0]] = -1
    for j in prange(1, n):
        plcp[sa[j]] = sa[j - 1]
    m = text.shape[0]
    step = (n + nt - 1) // nt
    for c in prange(nt):
        l = 0
        for i in range(c * step, min(n, (c + 1) * step)):
            k = plcp[i]
            if k < 0:
                plcp[i] = 0
                l = 0
                continue
            while l < L and i + l < m and k + l < m:
                x = text[i + l]
                if x != text[k + l] or x == SEPARATOR:
                    break
                l += 1
            plcp[i] = l
            if l > 0:
                l -= 1
    return plcp


@njit(parallel=True, cache=True)
def mark_repeated_windows(text, sa, L, nt):
    """Marks every valid window T[p:p+L] equal to a window starting earlier, by setting
    ``plcp[p] = -1`` in the array :func:`capped_plcp` returns (one array does both jobs); returns
    (that array, marked windows, runs of equal windows). A run of equal windows in SA order is
    sa[g..q) with plcp[sa[r]] ≥ L for g < r < q. Parallel over stretches of the suffix array cut
    at run starts (found before any mark is written, so no thread reads another's marks)."""
    plcp = capped_plcp(text, sa, L, nt)
    n = sa.shape[0]
    step = (n + nt - 1) // nt
    bounds = np.empty(nt + 1, dtype=np.int64)
    for c in range(nt + 1):
        b = min(n, max(1, c * step))
        while 0 < b < n and plcp[sa[b]] >= L:    # inside a run: it belongs to the stretch before
            b += 1
        bounds[c] = b
    bounds[0] = 1
    marked = np.zeros(nt, dtype=np.int64)
    runs = np.zeros(nt, dtype=np.int64)
    for c in prange(nt):
        j = bounds[c]
        while j < bounds[c + 1]:
            if plcp[sa[j]] < L:
                j += 1
                continue
            g = j - 1
            q = j + 1
            while q < n and plcp[sa[q]] >= L:
                q += 1
            first = sa[g]
            for r in range(g + 1, q):
                if sa[r] < first:
                    first = sa[r]
            for r in range(g, q):
                if sa[r] != first:
                    plcp[sa[r]] = -1
                    marked[c] += 1
            runs[c] += 1
            j = q + 1
    return plcp, marked.sum(), runs.sum()


@njit(inline="always", cache=True)
def _continuation(b):
    return (b & 0xC0) == 0x80


@njit(cache=True)
def window_ranges(text, marks, starts, L):
    """The removed byte ranges of every document: the union of the marked windows [p, p+L)
    (``marks[p] < 0``, see :func:`mark_repeated_windows`) inside
    document d (bytes ``starts[d]`` to ``starts[d+1]-2``; every document is followed by a separator),
    trimmed inwards
    to UTF-8 character boundaries. Returns (document, start, end) with start/end relative to the
    document, in document then text order."""
    nd = starts.shape[0] - 1
    cap = 16
    rd = np.empty(cap, dtype=np.int64)
    rs = np.empty(cap, dtype=np.int64)
    re = np.empty(cap, dtype=np.int64)
    r = 0
    for d in range(nd):
        s = starts[d]
        e = starts[d + 1] - 1     # the separator after the document
        p = s
        while p < e:
            if marks[p] >= 0:
                p += 1
                continue
            a = p
            b = p + L
            p += 1
            while p < e and p <= b:      # a window starting inside or right after the range extends it
                if marks[p] < 0:
                    b = p + L
                p += 1
            if b > e:
                b = e
            while a < b and _continuation(text[a]):
                a += 1
            while b > a and b < e and _continuation(text[b]):
                b -= 1
            if b > a:
                if r == cap:
                    cap *= 2
                    rd2 = np.empty(cap, dtype=np.int64)
                    rs2 = np.empty(cap, dtype=np.int64)
                    re2 = np.empty(cap, dtype=np.int64)
                    rd2[:r] = rd[:r]
                    rs2[:r] = rs[:r]
                    re2[:r] = re[:r]
                    rd, rs, re = rd2, rs2, re2
                rd[r] = d
                rs[r] = a - s
                re[r] = b - s
                r += 1
    return rd[:r].copy(), rs[:r].copy(), re[:r].copy()
