"""SimHash kernels: fold weighted 64-bit feature hashes into 64-bit fingerprints.

Charikar's rule: bit j of the fingerprint is 1 iff  sum_i w_i * (+1 if bit j of h_i else -1) > 0.
(Equivalently: the weight of features with bit j set exceeds half the total weight; a tie gives 0.)
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .hashing import GOLDEN
from .shingle import doc_word_shingles, scan_scratch


@njit(cache=True)
def fold_one(hashes, weights, start, end):
    """Fingerprint of the features ``hashes[start:end]`` with ``weights[start:end]`` (float64)."""
    acc = np.zeros(64, dtype=np.float64)
    for i in range(start, end):
        h = hashes[i]
        w = weights[i]
        for j in range(64):
            if (h >> np.uint64(j)) & np.uint64(1):
                acc[j] += w
            else:
                acc[j] -= w
    out = np.uint64(0)
    for j in range(64):
        if acc[j] > 0.0:
            out |= np.uint64(1) << np.uint64(j)
    return out


@njit(cache=True, nogil=True)
def fold_batch(hashes, weights, offsets):
    """Fingerprints of a CSR batch: document d owns ``hashes[offsets[d]:offsets[d+1]]``."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for d in range(n):
        out[d] = fold_one(hashes, weights, offsets[d], offsets[d + 1])
    return out


@njit(cache=True)
def popcount64(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(cache=True)
def hamming_many(a, b):
    """Elementwise Hamming distance of two uint64 arrays."""
    out = np.empty(a.shape[0], dtype=np.int64)
    for i in range(a.shape[0]):
        out[i] = popcount64(a[i] ^ b[i])
    return out


def _expand_table() -> np.ndarray:
    """EXPAND[v]: a uint64 whose byte i is bit i of v (8 packed byte-wide counters)."""
    v = np.arange(256, dtype=np.uint64)
    out = np.zeros(256, dtype=np.uint64)
    for i in range(8):
        out |= ((v >> np.uint64(i)) & np.uint64(1)) << np.uint64(8 * i)
    return out


_EXPAND = _expand_table()


@njit(cache=True)
def fold_unit(hashes, start, end, expand, acc, ones):
    """Unit-weight fingerprint of ``hashes[start:end]`` (see :func:`fold_unit_batch`)."""
    mask = np.uint64(0xFF)
    ones[:] = 0
    acc[:] = 0
    pending = 0
    for i in range(start, end):
        h = hashes[i]
        for j in range(8):
            acc[j] += expand[(h >> np.uint64(8 * j)) & mask]
        pending += 1
        if pending == 255:
            for j in range(8):
                for b in range(8):
                    ones[8 * j + b] += np.int64((acc[j] >> np.uint64(8 * b)) & mask)
                acc[j] = 0
            pending = 0
    for j in range(8):
        for b in range(8):
            ones[8 * j + b] += np.int64((acc[j] >> np.uint64(8 * b)) & mask)
    total = end - start
    fp = np.uint64(0)
    for j in range(64):
        if 2 * ones[j] > total:
            fp |= np.uint64(1) << np.uint64(j)
    return fp


@njit(cache=True)
def fold_unit_batch(hashes, offsets):
    """Fingerprints with weight 1 per occurrence — equal to the term-frequency-weighted fold over
    the distinct features (Σ_f count_f·s(h_f) = Σ_occurrences s(h)), without sorting: bit j is set
    iff more than half of the document's feature occurrences have bit j set.

    Bit counts are kept SWAR-style: each byte of a feature hash indexes a table giving its 8 bits
    as 8 byte-wide counters packed in one uint64, so a feature costs 8 lookups and 8 additions
    instead of 64; the packed counters are flushed before any byte can overflow (every 255)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    ones = np.zeros(64, dtype=np.int64)
    acc = np.zeros(8, dtype=np.uint64)
    for d in range(n):
        out[d] = fold_unit(hashes, offsets[d], offsets[d + 1], _EXPAND, acc, ones)
    return out


@njit(cache=True)
def simhash_word_batch(buf, offsets, table, map_slot, map_utf8, n, seed, check, unsafe, lead_clean):
    """Fused text → unit-weight (tf) SimHash for the ``word`` tokenizer, per document through a
    cache-sized scratch buffer; identical to the two-step path. Also returns shingles per document
    (−1, and no fingerprint, for a document that ``check`` flags: see
    :func:`~neardup.kernels.minhash.oph_word_batch`)."""
    nd = offsets.shape[0] - 1
    scratch = scan_scratch(offsets)
    shingles = np.empty_like(scratch[2])
    ones = np.zeros(64, dtype=np.int64)
    acc = np.zeros(8, dtype=np.uint64)
    out = np.empty(nd, dtype=np.uint64)
    sizes = np.empty(nd, dtype=np.int64)
    for d in range(nd):
        c = doc_word_shingles(buf, offsets, d, table, map_slot, map_utf8, n, seed, scratch, shingles, check, unsafe,
                              lead_clean)
        sizes[d] = c
        out[d] = fold_unit(shingles, 0, c, _EXPAND, acc, ones) if c >= 0 else np.uint64(0)
    return out, sizes


@njit(cache=True)
def key_slots(keys):
    """An open-addressing table over ``keys`` (uint64, distinct): slot → index into ``keys`` (−1:
    empty), at a load of at most 1/2. Returns (slots, shift) for :func:`_slot_value`."""
    bits = 4
    while (1 << bits) < 2 * keys.shape[0]:
        bits += 1
    slots = np.full(1 << bits, -1, dtype=np.int64)
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    for i in range(keys.shape[0]):
        s = np.int64((keys[i] * GOLDEN) >> shift)
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = i
    return slots, shift


@njit(cache=True, inline="always")
def _slot_value(slots, shift, keys, values, default, key):
    mask = slots.shape[0] - 1
    s = np.int64((key * GOLDEN) >> shift)
    while slots[s] >= 0:
        i = slots[s]
        if keys[i] == key:
            return values[i]
        s = (s + 1) & mask
    return default


@njit(cache=True, inline="always")
def _heavier(x, y):
    """x ranks before y in a sort by descending weight: larger, or a number against NaN (NumPy
    sorts NaN last)."""
    return x > y or (y != y and x == x)


@njit(cache=True, inline="always")
def _top_positions(w, k, top_n, sel_w, sel_t):
    """The ``top_n`` positions of w[:k] with the largest weights, a tie going to the smaller
    position (the first ``top_n`` of a stable sort by descending weight), into ``sel_t`` (returns how
    many). One pass keeping them ordered by (weight descending, position): a later position enters
    only with a weight strictly above the last kept one, so the work is O(k) plus top_n per entry,
    against O(k log k) for the sort (per document of 500 distinct words, about twice as fast)."""
    m = 0
    for t in range(k):
        x = w[t]
        if m == top_n:
            if not _heavier(x, sel_w[m - 1]):
                continue
            m -= 1                     # the last one leaves
        i = m
        while i > 0 and _heavier(x, sel_w[i - 1]):      # equal weights keep their (smaller) positions first
            sel_w[i] = sel_w[i - 1]
            sel_t[i] = sel_t[i - 1]
            i -= 1
        sel_w[i] = x
        sel_t[i] = t
        m += 1
    return m


@njit(cache=True)
def weighted_fold_batch(hashes, counts, offsets, weighting, slots, shift, keys, values, default, top_n):
    """SimHash of each document of a CSR batch of distinct feature hashes (sorted per document, as
    :meth:`~neardup.features.shingles.Features.unique` gives them, with their ``counts``): weights 1
    (``weighting`` 0), the count (1) or count × IDF (2: the table ``keys``/``values`` through
    ``slots``, ``default`` for an unknown feature), the ``top_n`` heaviest kept (0: all; ties keep
    the smaller feature), folded in feature order — the steps of
    :meth:`neardup.sketches.simhash.SimHasher.weights` and :func:`fold_batch`, with the same floats,
    in one pass per document and no batch-wide weight or mask array."""
    nd = offsets.shape[0] - 1
    out = np.empty(nd, dtype=np.uint64)
    longest = 1
    for d in range(nd):
        longest = max(longest, offsets[d + 1] - offsets[d])
    w = np.empty(longest, dtype=np.float64)
    ku = np.empty(longest, dtype=np.uint64)
    kw = np.empty(longest, dtype=np.float64)
    sel_w = np.empty(max(top_n, 1), dtype=np.float64)
    sel_t = np.empty(max(top_n, 1), dtype=np.int64)
    for d in range(nd):
        s = offsets[d]
        k = offsets[d + 1] - s
        for t in range(k):
            if weighting == 0:
                w[t] = 1.0
            elif weighting == 1:
                w[t] = np.float64(counts[s + t])
            else:
                w[t] = np.float64(counts[s + t]) * _slot_value(slots, shift, keys, values, default, hashes[s + t])
        if top_n > 0 and k > top_n:
            m = _top_positions(w, k, top_n, sel_w, sel_t)
            sel_t[:m].sort()              # back to feature order for the fold
            for i in range(m):
                ku[i] = hashes[s + sel_t[i]]
                kw[i] = w[sel_t[i]]
            out[d] = fold_one(ku, kw, 0, m)
        else:
            out[d] = fold_one(hashes[s:s + k], w, 0, k)
    return out
