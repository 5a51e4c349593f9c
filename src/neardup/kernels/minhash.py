"""MinHash kernels: CSR shingle hashes → signature matrix, and estimators over row pairs.

Schemes (x is a 64-bit shingle hash, k the signature length):

* permutation — k hash functions h_j(x) = ((a_j x + b_j) mod 2^64) >> 32 (multiply-shift,
  Dietzfelbinger et al. 1997; a_j odd), sig_j = min_x h_j(x). O(n k). uint32 values.
* oph — one permutation hashing (Li, Owen, Zhang 2012) with optimal densification
  (Shrivastava 2017): h = fmix64(x ^ s); bin = floor(hi32(h) k / 2^32); value = lo32(h);
  sig_j = min value in bin j; an empty bin i copies the value of the first non-empty bin among
  probes p_1(i), p_2(i), ... drawn from a data-independent seeded hash, so for two sets
  P[sig_A,i = sig_B,i] = J. O(n + k) expected. uint32 values.
* bottomk — one hash h = fmix64(x ^ s) (a bijection); keep the k smallest distinct values
  (Broder 1997; Cohen & Kaplan 2007). uint64 values, padded with 2^64-1 when |A| < k.

Empty documents: every slot holds the maximum value of the dtype.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .hashing import fmix64, splitmix64_array
from .shingle import doc_word_shingles, scan_scratch
from .swar import AHEAD, prefetch_row

U32_MAX = np.uint64(0xFFFFFFFF)
U64_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
EMPTY_BIN = np.uint64(1) << np.uint64(32)


def permutation_params(seed: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients (a odd, b) of the k multiply-shift hash functions, from SplitMix64(seed)."""
    stream = splitmix64_array(np.uint64(seed), 2 * k)
    a = stream[0::2] | np.uint64(1)
    b = stream[1::2].copy()
    return a, b




@njit(cache=True)
def permutation_batch(hashes, offsets, a, b):
    nd = offsets.shape[0] - 1
    k = a.shape[0]
    out = np.empty((nd, k), dtype=np.uint32)
    row = np.empty(k, dtype=np.uint64)
    sh = np.uint64(32)
    for d in range(nd):
        row[:] = U32_MAX
        for i in range(offsets[d], offsets[d + 1]):
            x = hashes[i]
            for j in range(k):
                v = (a[j] * x + b[j]) >> sh
                if v < row[j]:
                    row[j] = v
        for j in range(k):
            out[d, j] = row[j]
    return out


@njit(cache=True)
def oph_bins(hashes, start, end, k, salt, bins):
    """Raw OPH bins of one document (EMPTY_BIN where no shingle fell)."""
    bins[:] = EMPTY_BIN
    kk = np.uint64(k)
    for i in range(start, end):
        h = fmix64(hashes[i] ^ salt)
        j = ((h >> np.uint64(32)) * kk) >> np.uint64(32)
        v = h & U32_MAX
        if v < bins[j]:
            bins[j] = v


@njit(cache=True)
def oph_densify(bins, salt, out_row):
    """Optimal densification of raw bins into ``out_row`` (uint32)."""
    k = bins.shape[0]
    kk = np.uint64(k)
    nonempty = 0
    for j in range(k):
        if bins[j] != EMPTY_BIN:
            nonempty += 1
    if nonempty == 0:
        for j in range(k):
            out_row[j] = U32_MAX
        return
    for i in range(k):
        if bins[i] != EMPTY_BIN:
            out_row[i] = bins[i]
            continue
        attempt = np.uint64(1)
        while True:
            p = fmix64(salt + np.uint64(i) * np.uint64(0x9E3779B97F4A7C15) + attempt * np.uint64(0xD6E8FEB86659FD93))
            j = ((p >> np.uint64(32)) * kk) >> np.uint64(32)
            if bins[j] != EMPTY_BIN:
                out_row[i] = bins[j]
                break
            attempt += np.uint64(1)


@njit(cache=True, nogil=True)
def oph_batch(hashes, offsets, k, salt):
    nd = offsets.shape[0] - 1
    out = np.empty((nd, k), dtype=np.uint32)
    bins = np.empty(k, dtype=np.uint64)
    for d in range(nd):
        oph_bins(hashes, offsets[d], offsets[d + 1], k, salt, bins)
        oph_densify(bins, salt, out[d])
    return out


@njit(cache=True)
def bottomk_batch(hashes, offsets, k, salt):
    nd = offsets.shape[0] - 1
    out = np.full((nd, k), U64_MAX, dtype=np.uint64)
    for d in range(nd):
        s = offsets[d]
        e = offsets[d + 1]
        if e == s:
            continue
        vals = np.empty(e - s, dtype=np.uint64)
        for i in range(s, e):
            vals[i - s] = fmix64(hashes[i] ^ salt)
        vals.sort()
        m = 0
        last = U64_MAX
        for i in range(vals.shape[0]):
            v = vals[i]
            if m > 0 and v == last:
                continue
            out[d, m] = v
            last = v
            m += 1
            if m == k:
                break
    return out


@njit(cache=True)
def bottomk_merge(a, b, k):
    """k smallest distinct values of the union of two padded bottom-k rows."""
    out = np.full(k, U64_MAX, dtype=np.uint64)
    i = 0
    j = 0
    m = 0
    ka = a.shape[0]
    kb = b.shape[0]
    while m < k and (i < ka or j < kb):
        va = a[i] if i < ka else U64_MAX
        vb = b[j] if j < kb else U64_MAX
        if va == U64_MAX and vb == U64_MAX:
            break
        if va < vb:
            out[m] = va
            i += 1
        elif vb < va:
            out[m] = vb
            j += 1
        else:
            out[m] = va
            i += 1
            j += 1
        m += 1
    return out


@njit(cache=True)
def bottomk_jaccard(a, b, k):
    """Bottom-k estimate: among the k smallest distinct values of A ∪ B (from both sketches),
    the fraction present in both. When both sets have fewer than k elements this is exact."""
    i = 0
    j = 0
    seen = 0
    both = 0
    ka = a.shape[0]
    kb = b.shape[0]
    while seen < k:
        va = a[i] if i < ka else U64_MAX
        vb = b[j] if j < kb else U64_MAX
        if va == U64_MAX and vb == U64_MAX:
            break
        if va < vb:
            i += 1
        elif vb < va:
            j += 1
        else:
            both += 1
            i += 1
            j += 1
        seen += 1
    if seen == 0:
        return 0.0
    return both / seen


@njit(cache=True)
def is_empty_row(row, empty):
    for j in range(row.shape[0]):
        if row[j] != empty:
            return False
    return True


@njit(inline="always", cache=True)
def equal_fraction(a, b, empty):
    """Fraction of equal slots of two signature rows; 0 when either is empty."""
    if is_empty_row(a, empty) or is_empty_row(b, empty):
        return 0.0
    eq = 0
    for j in range(a.shape[0]):
        if a[j] == b[j]:
            eq += 1
    return eq / a.shape[0]


@njit(cache=True, nogil=True)
def equal_fraction_pairs(sig, ii, jj, empty):
    """Fraction of equal slots for each row pair (ii[p], jj[p]); an empty row scores 0. The rows of
    the pair :data:`AHEAD` places on are prefetched: pairs come sorted by their first row, the second
    is anywhere (10 M pairs over 10 M rows of k = 128 on one core: 6.2 s → 2.8 s)."""
    n = ii.shape[0]
    out = np.empty(n, dtype=np.float64)
    for p in range(n):
        if p + AHEAD < n:
            prefetch_row(sig, ii[p + AHEAD])
            prefetch_row(sig, jj[p + AHEAD])
        out[p] = equal_fraction(sig[ii[p]], sig[jj[p]], empty)
    return out


@njit(cache=True, nogil=True)
def bottomk_pairs(sig, ii, jj):
    k = sig.shape[1]
    n = ii.shape[0]
    out = np.empty(n, dtype=np.float64)
    for p in range(n):
        if p + AHEAD < n:                 # (as equal_fraction_pairs)
            prefetch_row(sig, ii[p + AHEAD])
            prefetch_row(sig, jj[p + AHEAD])
        out[p] = bottomk_jaccard(sig[ii[p]], sig[jj[p]], k)
    return out


@njit(cache=True, nogil=True)
def oph_word_batch(buf, offsets, table, map_slot, map_utf8, n, seed, k, salt, check, unsafe, lead_clean):
    """Fused text → OPH signatures for the ``word`` tokenizer: per document, the token scan, the
    shingle hashes (into a document-sized scratch buffer that stays in cache) and the OPH bins —
    the same kernels as the two-step path, so the signatures are identical, without building the
    batch's shingle array. With ``check`` a document whose NFKC is not exact per character gets
    size −1 and no signature (:func:`~neardup.kernels.shingle.word_scan_nfkc`; the caller
    normalises it and signs it again)."""
    nd = offsets.shape[0] - 1
    scratch = scan_scratch(offsets)
    shingles = np.empty_like(scratch[2])
    bins = np.empty(k, dtype=np.uint64)
    out = np.empty((nd, k), dtype=np.uint32)
    sizes = np.empty(nd, dtype=np.int64)
    for d in range(nd):
        c = doc_word_shingles(buf, offsets, d, table, map_slot, map_utf8, n, seed, scratch, shingles, check, unsafe,
                              lead_clean)
        sizes[d] = c
        if c < 0:
            continue
        oph_bins(shingles, 0, c, k, salt, bins)
        oph_densify(bins, salt, out[d])
    return out, sizes
