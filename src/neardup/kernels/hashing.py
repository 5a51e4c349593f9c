"""64-bit hashing kernels (numba, cached).

* :func:`xxh64` — XXH64 (Yann Collet's xxHash, 64-bit variant) of a byte range, bit-for-bit
  the reference algorithm, so it can be checked against any xxHash implementation.
* :func:`fmix64` — MurmurHash3's 64-bit finaliser, a bijective avalanche mix.
* :func:`splitmix64` — the SplitMix64 generator step, used to derive every seeded parameter
  (hash coefficients, densification probes) from a user seed without depending on numpy's RNG.
* :func:`combine` — folds a sequence of 64-bit token hashes into one shingle hash; it is the
  XXH64 stripe round applied to the token hashes, so it is order sensitive and well mixed.

All arithmetic is on ``uint64`` and wraps modulo 2**64, exactly as in C.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .swar import LITTLE_ENDIAN, load_u64

U64 = np.uint64
P1 = np.uint64(11400714785074694791)
P2 = np.uint64(14029467366897019727)
P3 = np.uint64(1609587929392839161)
P4 = np.uint64(9650029242287828579)
P5 = np.uint64(2870177450012600261)
MASK32 = np.uint64(0xFFFFFFFF)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)   # 2^64 / φ: Fibonacci hashing (multiply, keep the top bits)


@njit(inline="always", cache=True)
def rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(inline="always", cache=True)
def _read64(buf, i):
    if LITTLE_ENDIAN:            # one unaligned load (XXH64 reads its lanes little-endian)
        return load_u64(buf, i)
    v = np.uint64(0)
    for j in range(8):
        v |= np.uint64(buf[i + j]) << np.uint64(8 * j)
    return v


@njit(inline="always", cache=True)
def _read32(buf, i):
    v = np.uint64(0)
    for j in range(4):
        v |= np.uint64(buf[i + j]) << np.uint64(8 * j)
    return v


@njit(inline="always", cache=True)
def _round(acc, lane):
    acc = acc + lane * P2
    acc = rotl(acc, 31)
    return acc * P1


@njit(inline="always", cache=True)
def _merge_round(acc, val):
    val = _round(np.uint64(0), val)
    acc ^= val
    return acc * P1 + P4


@njit(inline="always", cache=True)
def _avalanche(h):
    h ^= h >> np.uint64(33)
    h *= P2
    h ^= h >> np.uint64(29)
    h *= P3
    h ^= h >> np.uint64(32)
    return h


@njit(cache=True)
def xxh64(buf, start, end, seed):
    """XXH64 of ``buf[start:end]`` (a uint8 array) with a uint64 ``seed``."""
    seed = np.uint64(seed)
    n = end - start
    i = start
    if n >= 32:
        v1 = seed + P1 + P2
        v2 = seed + P2
        v3 = seed
        v4 = seed - P1
        limit = end - 32
        while i <= limit:
            v1 = _round(v1, _read64(buf, i))
            v2 = _round(v2, _read64(buf, i + 8))
            v3 = _round(v3, _read64(buf, i + 16))
            v4 = _round(v4, _read64(buf, i + 24))
            i += 32
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)
        h = _merge_round(h, v1)
        h = _merge_round(h, v2)
        h = _merge_round(h, v3)
        h = _merge_round(h, v4)
    else:
        h = seed + P5
    h += np.uint64(n)
    while i + 8 <= end:
        k1 = _round(np.uint64(0), _read64(buf, i))
        h ^= k1
        h = rotl(h, 27) * P1 + P4
        i += 8
    if i + 4 <= end:
        h ^= _read32(buf, i) * P1
        h = rotl(h, 23) * P2 + P3
        i += 4
    while i < end:
        h ^= np.uint64(buf[i]) * P5
        h = rotl(h, 11) * P1
        i += 1
    return _avalanche(h)


@njit(inline="always", cache=True)
def fmix64(k):
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xFF51AFD7ED558CCD)
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xC4CEB9FE1A85EC53)
    k ^= k >> np.uint64(33)
    return k


@njit(inline="always", cache=True)
def splitmix64(state):
    """One SplitMix64 step: returns (new_state, output)."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


@njit(cache=True)
def splitmix64_array(seed, n):
    """``n`` consecutive SplitMix64 outputs from ``seed``."""
    out = np.empty(n, dtype=np.uint64)
    s = np.uint64(seed)
    for i in range(n):
        s, out[i] = splitmix64(s)
    return out


@njit(inline="always", cache=True)
def combine(hashes, start, end, seed):
    """Order-sensitive fold of the 64-bit token hashes ``hashes[start:end]`` into one hash.

    A one-token shingle hashes to ``fmix64(token_hash ^ seed')`` so that n-gram and unigram
    hashes of the same text never coincide by construction."""
    h = np.uint64(seed) + P5 + np.uint64(end - start)
    for i in range(start, end):
        h ^= _round(np.uint64(0), hashes[i])
        h = rotl(h, 27) * P1 + P4
    return _avalanche(h)


@njit(cache=True, nogil=True)
def xxh64_batch(buf, offsets, seed):
    """xxh64 of each CSR item ``buf[offsets[k]:offsets[k+1]]``."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for k in range(n):
        out[k] = xxh64(buf, offsets[k], offsets[k + 1], seed)
    return out


def xxh64_bytes(data: bytes, seed: int = 0) -> int:
    """XXH64 of a Python ``bytes`` object (convenience wrapper over the kernel)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    return int(xxh64(arr, 0, arr.shape[0], np.uint64(seed & 0xFFFFFFFFFFFFFFFF)))
