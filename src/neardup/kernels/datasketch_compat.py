"""Numba kernels that reproduce datasketch 2.0.0 MinHash signatures bit for bit.

Input is a batch of documents in CSR form: ``h[offsets[d]:offsets[d + 1]]`` are the token
hashes of document ``d`` (SHA-1 based, see :mod:`neardup.sketches.compat.datasketch`), and
``a``, ``b`` are datasketch's permutation parameters. Each kernel returns the
``(ndocs, num_perm)`` matrix ``sig[d, k] = min over tokens t of d of pi_k(h_t)``, an empty
document keeping datasketch's empty value in every slot. Schemes (reference:
``datasketch/minhash.py``, ``MinHash.update`` / ``update_batch``):

* ``legacy``   pi_k(h) = ((a_k * h + b_k  mod 2^64) mod (2^61 - 1)) & (2^32 - 1), stored as
  uint64, empty value 2^32 - 1. The ``mod 2^64`` is numpy's uint64 wrap-around, which datasketch
  incurs before reducing by the Mersenne prime; we keep it.
* ``affine32`` pi_k(h) = (a_k * fmix32(h) + b_k) mod 2^32, stored as uint32, empty 2^32 - 1.
* ``affine64`` pi_k(h) = (a_k * fmix64(h) + b_k) mod 2^64 on 64-bit token hashes, stored as
  uint64, empty 2^64 - 1.

fmix32 / fmix64 are MurmurHash3's finalisers. Loops run document by document, token by
token, and the inner loop runs over permutations so it streams through one contiguous
output row and vectorises. All arithmetic is explicit uint64 (uint32 for storage only).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .hashing import fmix64

MERSENNE61 = np.uint64((1 << 61) - 1)
MASK32 = np.uint64(0xFFFFFFFF)
EMPTY32 = np.uint64(0xFFFFFFFF)
EMPTY64 = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(inline="always", cache=True)
def fmix32(x):
    """MurmurHash3 32-bit finaliser of ``x`` (< 2^32), returned as uint64 in [0, 2^32)."""
    x = np.uint64(x) & MASK32
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x85EBCA6B)) & MASK32
    x ^= x >> np.uint64(13)
    x = (x * np.uint64(0xC2B2AE35)) & MASK32
    x ^= x >> np.uint64(16)
    return x


@njit(inline="always", cache=True)
def mod_mersenne61(x):
    """``x mod (2^61 - 1)`` for any uint64 ``x`` without a division.

    With p = 2^61 - 1, 2^61 = 1 (mod p), so x = (x >> 61) * 2^61 + (x & p) = (x >> 61) + (x & p);
    that sum is at most p + 7, so one conditional subtraction finishes the reduction.
    """
    r = (x & MERSENNE61) + (x >> np.uint64(61))
    if r >= MERSENNE61:
        r -= MERSENNE61
    return r


@njit(cache=True)
def minhash_legacy(h, offsets, a, b):
    """datasketch ``legacy`` signatures: min_t ((a*h_t + b wrapped mod 2^64) mod (2^61-1)) & (2^32-1).

    ``h``: 32-bit token hashes (any unsigned dtype), ``offsets``: int64, length ndocs + 1,
    ``a``/``b``: uint64 of length num_perm. Returns uint64 ``(ndocs, num_perm)``.
    """
    ndocs = offsets.shape[0] - 1
    k = a.shape[0]
    out = np.empty((ndocs, k), dtype=np.uint64)
    for d in range(ndocs):
        row = out[d]
        for j in range(k):
            row[j] = EMPTY32
        for t in range(offsets[d], offsets[d + 1]):
            hv = np.uint64(h[t])
            for j in range(k):
                v = mod_mersenne61(a[j] * hv + b[j]) & MASK32
                if v < row[j]:
                    row[j] = v
    return out


@njit(cache=True)
def minhash_affine32(h, offsets, a, b):
    """datasketch ``affine32`` signatures: min_t (a * fmix32(h_t) + b) mod 2^32.

    ``h``: 32-bit token hashes, ``a`` (odd) / ``b``: uint32 or uint64 values below 2^32.
    Returns uint32 ``(ndocs, num_perm)`` (datasketch's storage dtype for this scheme).
    """
    ndocs = offsets.shape[0] - 1
    k = a.shape[0]
    a64 = np.empty(k, dtype=np.uint64)
    b64 = np.empty(k, dtype=np.uint64)
    for j in range(k):
        a64[j] = np.uint64(a[j])
        b64[j] = np.uint64(b[j])
    out = np.empty((ndocs, k), dtype=np.uint32)
    row = np.empty(k, dtype=np.uint64)
    for d in range(ndocs):
        for j in range(k):
            row[j] = EMPTY32
        for t in range(offsets[d], offsets[d + 1]):
            hv = fmix32(h[t])
            for j in range(k):
                v = (a64[j] * hv + b64[j]) & MASK32
                if v < row[j]:
                    row[j] = v
        for j in range(k):
            out[d, j] = np.uint32(row[j])
    return out


@njit(cache=True)
def minhash_affine64(h, offsets, a, b):
    """datasketch ``affine64`` signatures: min_t (a * fmix64(h_t) + b) mod 2^64.

    ``h``: 64-bit token hashes (uint64), ``a`` (odd) / ``b``: uint64. Returns uint64
    ``(ndocs, num_perm)``; empty documents hold 2^64 - 1.
    """
    ndocs = offsets.shape[0] - 1
    k = a.shape[0]
    out = np.empty((ndocs, k), dtype=np.uint64)
    for d in range(ndocs):
        row = out[d]
        for j in range(k):
            row[j] = EMPTY64
        for t in range(offsets[d], offsets[d + 1]):
            hv = fmix64(h[t])
            for j in range(k):
                v = a[j] * hv + b[j]
                if v < row[j]:
                    row[j] = v
    return out
