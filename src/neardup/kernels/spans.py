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

Substrings (:func:`mark_and_keep`, :func:`mark_seen_in`, :func:`window_ranges`). With the documents joined by a
separator byte 0xFF (never part of UTF-8) into T and its suffix array SA, the *window* at p is
T[p:p+L]; it is valid when it holds no separator (it lies inside one document). Valid windows with
equal bytes are contiguous in SA, and adjacent entries SA[j−1], SA[j] start with the same L bytes
iff their longest common prefix, cut at the first separator, reaches L: :func:`capped_plcp` gets
it for all positions at once in linear time, capped at L. In each run of equal windows, the one at the smallest p is
the first occurrence; every other one is marked. A document's removed bytes are the union of its
marked windows, trimmed inwards to character boundaries — every byte removed lies in a window that
occurs earlier in the corpus, and every repeated string of ≥ L bytes is removed except its first
occurrence (each of its windows, at a later occurrence, is marked).

Several stretches (:func:`mark_seen_in`). T cut at document boundaries into stretches with their
own suffix arrays: inside each, the marks above; a window of stretch k left unmarked is the first
occurrence of its bytes in k, and it repeats an earlier stretch j iff its bytes are those of one of
j's first occurrences. Both lists come out of :func:`mark_and_keep` sorted by their L bytes and
without repeats, so one merge of the two finds every such window: the marks are those of one
suffix array over T.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .hashing import P1, P5, fmix64, xxh64
from .shingle import scan_scratch, word_scan
from .swar import AHEAD, LITTLE_ENDIAN, cttz64, load_u64, prefetch

SEPARATOR = 0xFF
#: how far ahead the suffix-array passes prefetch what they will read at a random place
RANDOM_AHEAD = 32


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
    lcp' is the common prefix length up to the first separator, or −2 where the window at p is not
    valid (a separator in its first L bytes: its length is below L anyway, as lcp' stops at the
    separator, so runs are found the same).

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
        if j + RANDOM_AHEAD < n:
            prefetch(plcp, sa[j + RANDOM_AHEAD])
        plcp[sa[j]] = sa[j - 1]
    m = text.shape[0]
    step = (n + nt - 1) // nt
    for c in prange(nt):
        l = 0
        sep = c * step - 1          # the separator at or after i (found when i passes it)
        end = min(n, (c + 1) * step)
        for i in range(c * step, end):
            if i + RANDOM_AHEAD < end:
                f = plcp[i + RANDOM_AHEAD]
                if f >= 0:
                    prefetch(text, f)
            if sep < i:
                sep = i
                while sep < m and text[sep] != SEPARATOR:
                    sep += 1
            k = plcp[i]
            if k < 0:
                l = 0
            else:
                while l < L and i + l < m and k + l < m:
                    x = text[i + l]
                    if x != text[k + l] or x == SEPARATOR:
                        break
                    l += 1
            plcp[i] = -2 if sep - i < L else (l if k >= 0 else 0)
            if l > 0:
                l -= 1
    return plcp


@njit(parallel=True, cache=True)
def mark_and_keep(text, sa, L, nt, marks):
    """Marks every valid window T[p:p+L] equal to a window starting earlier, in ``marks`` (int8 per
    position: −1 marked, else 0), and returns (kept, marked windows). *kept*
    is the first occurrence of every distinct valid window — the smallest p of each run of equal
    windows, and every valid window that occurs once — in SA order, hence in strictly increasing
    order of their L bytes. A run of equal windows in SA order is sa[g..q) with plcp[sa[r]] ≥ L for
    g < r < q. Parallel over stretches of the suffix array cut at run starts (found before any mark
    is written, so no thread reads another's marks); each stretch writes its first occurrences over
    the front of its own part of ``sa``, which is spent afterwards."""
    plcp = capped_plcp(text, sa, L, nt)
    n = sa.shape[0]
    step = (n + nt - 1) // nt
    bounds = np.empty(nt + 1, dtype=np.int64)
    for c in range(nt + 1):
        b = min(n, max(1, c * step))
        while 0 < b < n and plcp[sa[b]] >= L:    # inside a run: it belongs to the stretch before
            b += 1
        bounds[c] = b
    bounds[0] = 0
    marked = np.zeros(nt, dtype=np.int64)
    kept = np.zeros(nt, dtype=np.int64)
    for c in prange(nt):
        j = bounds[c]
        w = j
        hi = bounds[c + 1]
        while j < hi:
            q = j + 1
            while q < hi:          # (runs end at the bound; past it sa is rewritten)
                if q + RANDOM_AHEAD < hi:
                    prefetch(plcp, sa[q + RANDOM_AHEAD])
                if plcp[sa[q]] < L:
                    break
                q += 1
            first = sa[j]
            if q == j + 1:
                if plcp[first] >= 0:       # a valid window that occurs once
                    sa[w] = first
                    w += 1
            else:
                for r in range(j + 1, q):
                    if sa[r] < first:
                        first = sa[r]
                for r in range(j, q):
                    if sa[r] != first:
                        plcp[sa[r]] = -1
                        marked[c] += 1
                sa[w] = first
                w += 1
            j = q
        kept[c] = w - bounds[c]
    total = kept.sum()
    keep = np.empty(total, dtype=sa.dtype)
    o = 0
    for c in range(nt):
        keep[o:o + kept[c]] = sa[bounds[c]:bounds[c] + kept[c]]
        o += kept[c]
    for i in prange(n):
        marks[i] = -1 if plcp[i] == -1 else 0
    return keep, marked.sum()


@njit(inline="always", cache=True)
def _compare_windows(text, a, b, L):
    """The order of the L bytes at a and at b (−1, 0, 1); both lie inside ``text``."""
    k = 0
    while k + 8 <= L:
        x = load_u64(text, a + k)
        y = load_u64(text, b + k)
        if x != y:
            t = k + cttz64(x ^ y) // 8      # the first differing byte (little-endian loads)
            return -1 if text[a + t] < text[b + t] else 1
        k += 8
    while k < L:
        x = text[a + k]
        y = text[b + k]
        if x != y:
            return -1 if x < y else 1
        k += 1
    return 0


@njit(parallel=True, cache=True)
def mark_seen_in(text, earlier, oa, later, ob, L, marks, nt):
    """Marks (``marks[ob + p] = −1``) every window of ``later`` (first occurrences of a later part,
    positions relative to ``ob``) whose L bytes are those of a window in ``earlier`` (first
    occurrences of an earlier part, relative to ``oa``); both lists in increasing order of their L
    bytes, each without repeats, so one merge finds every equal pair. Parallel over stretches of
    ``later``, each starting in ``earlier`` at the first window not below its own first (binary
    search). Returns the number marked."""
    na = earlier.shape[0]
    nb = later.shape[0]
    step = (nb + nt - 1) // nt
    found = np.zeros(nt, dtype=np.int64)
    for c in prange(nt):
        j = c * step
        hi = min(nb, j + step)
        if j >= hi:
            continue
        lo, up = 0, na                       # first i with earlier[i] >= later[j]
        while lo < up:
            mid = (lo + up) // 2
            if _compare_windows(text, oa + earlier[mid], ob + later[j], L) < 0:
                lo = mid + 1
            else:
                up = mid
        i = lo
        while i < na and j < hi:
            if i + AHEAD < na:
                prefetch(text, oa + earlier[i + AHEAD])
            if j + AHEAD < hi:
                prefetch(text, ob + later[j + AHEAD])
            s = _compare_windows(text, oa + earlier[i], ob + later[j], L)
            if s < 0:
                i += 1
            elif s > 0:
                j += 1
            else:
                marks[ob + later[j]] = -1
                found[c] += 1
                i += 1
                j += 1
    return found.sum()


@njit(inline="always", cache=True)
def _continuation(b):
    return (b & 0xC0) == 0x80


@njit(inline="always", cache=True)
def _next_range(text, marks, p, e, L):
    """The next removed range [a, b) at or after p in a document ending at e, and where to go on
    from; a = −1 when there is none."""
    while p < e and marks[p] >= 0:
        p += 1
    if p >= e:
        return -1, -1, e
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
    return a, b, p


@njit(cache=True)
def window_ranges(text, marks, starts, L):
    """The removed byte ranges of every document: the union of the marked windows [p, p+L)
    (``marks[p] < 0``, see :func:`mark_and_keep`) inside document d (bytes ``starts[d]`` to
    ``starts[d+1]-2``; every document is followed by a separator), trimmed inwards to UTF-8
    character boundaries. Returns (document, start, end) with start/end relative to the document,
    in document then text order. Two passes, one counting and one filling, so that no array is
    grown inside the scan (an array reassigned in a loop costs reference counting at every step:
    30 ns per byte of text, measured)."""
    nd = starts.shape[0] - 1
    r = 0
    for d in range(nd):
        p, e = starts[d], starts[d + 1] - 1     # e: the separator after the document
        while p < e:
            a, b, p = _next_range(text, marks, p, e, L)
            if b > a:
                r += 1
    rd = np.empty(r, dtype=np.int64)
    rs = np.empty(r, dtype=np.int64)
    re = np.empty(r, dtype=np.int64)
    r = 0
    for d in range(nd):
        s, e = starts[d], starts[d + 1] - 1
        p = s
        while p < e:
            a, b, p = _next_range(text, marks, p, e, L)
            if b > a:
                rd[r] = d
                rs[r] = a - s
                re[r] = b - s
                r += 1
    return rd, rs, re


@njit(cache=True)
def gather_documents(buf, offsets, docs, starts, out):
    """T, or a stretch of it: document ``docs[i]`` (bytes ``offsets[d]:offsets[d+1]`` of ``buf``)
    copied to ``out[starts[i] - starts[0]:]`` and followed by :data:`SEPARATOR`
    (``starts[i+1] = starts[i] + its length + 1``)."""
    base = starts[0]
    for i in range(docs.shape[0]):
        d = docs[i]
        a = offsets[d]
        n = offsets[d + 1] - a
        p = starts[i] - base
        for k in range(n):
            out[p + k] = buf[a + k]
        out[p + n] = SEPARATOR


@njit(cache=True)
def equal_documents(buf, offsets, a, b):
    """``same[i]``: documents ``a[i]`` and ``b[i]`` of ``buf`` hold the same bytes."""
    same = np.zeros(a.shape[0], dtype=np.bool_)
    for i in range(a.shape[0]):
        x0, y0 = offsets[a[i]], offsets[b[i]]
        n = offsets[a[i] + 1] - x0
        if offsets[b[i] + 1] - y0 != n:
            continue
        k = 0
        while k + 8 <= n and load_u64(buf, x0 + k) == load_u64(buf, y0 + k):
            k += 8
        while k < n and buf[x0 + k] == buf[y0 + k]:
            k += 1
        same[i] = k == n
    return same
