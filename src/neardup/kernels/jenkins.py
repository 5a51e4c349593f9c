"""Bob Jenkins' lookup3 ``hashlittle2`` (public domain, 2006) as a 64-bit hash (numba, cached).

yanyiwu/simhash (``include/simhash/jenkins.h``) hashes each keyword with ``hashlittle2``:
the 64-bit seed ``s`` gives the two 32-bit initial values ``pc = s >> 32`` and
``pb = s & 0xFFFFFFFF``; the result is ``(c << 32) | b`` where ``c`` and ``b`` are the final
primary and secondary outputs. Bytes are read as little-endian 32-bit words, 12 bytes per
block (lookup3 reads a short tail zero padded, which is what every alignment branch of the
reference computes on a little-endian machine). A zero-length key skips the final mix.

All state is kept in ``uint64`` and masked to 32 bits after each step, so the arithmetic
is exactly C's ``uint32_t`` arithmetic.
"""
from __future__ import annotations

import numpy as np
from numba import njit

M32 = np.uint64(0xFFFFFFFF)
GOLDEN = np.uint64(0xDEADBEEF)


@njit(inline="always", cache=True)
def _rot(x, k):
    return ((x << np.uint64(k)) | (x >> np.uint64(32 - k))) & M32


@njit(inline="always", cache=True)
def _word(buf, i, n):
    """Little-endian 32-bit word from ``buf[i:i+n]`` (``n`` <= 4, missing bytes are 0)."""
    v = np.uint64(0)
    for j in range(n):
        v |= np.uint64(buf[i + j]) << np.uint64(8 * j)
    return v


@njit(inline="always", cache=True)
def _mix(a, b, c):
    a = (a - c) & M32
    a ^= _rot(c, 4)
    c = (c + b) & M32
    b = (b - a) & M32
    b ^= _rot(a, 6)
    a = (a + c) & M32
    c = (c - b) & M32
    c ^= _rot(b, 8)
    b = (b + a) & M32
    a = (a - c) & M32
    a ^= _rot(c, 16)
    c = (c + b) & M32
    b = (b - a) & M32
    b ^= _rot(a, 19)
    a = (a + c) & M32
    c = (c - b) & M32
    c ^= _rot(b, 4)
    b = (b + a) & M32
    return a, b, c


@njit(inline="always", cache=True)
def _final(a, b, c):
    c ^= b
    c = (c - _rot(b, 14)) & M32
    a ^= c
    a = (a - _rot(c, 11)) & M32
    b ^= a
    b = (b - _rot(a, 25)) & M32
    c ^= b
    c = (c - _rot(b, 16)) & M32
    a ^= c
    a = (a - _rot(c, 4)) & M32
    b ^= a
    b = (b - _rot(a, 14)) & M32
    c ^= b
    c = (c - _rot(b, 24)) & M32
    return a, b, c


@njit(cache=True)
def hashlittle2(buf, start, end, pc, pb):
    """lookup3 ``hashlittle2`` of ``buf[start:end]`` (uint8) with initial values ``pc, pb``.

    Returns ``(c, b)``: the primary and secondary 32-bit hashes (as uint64)."""
    length = end - start
    a = (GOLDEN + np.uint64(length & 0xFFFFFFFF) + (np.uint64(pc) & M32)) & M32
    b = a
    c = (a + (np.uint64(pb) & M32)) & M32
    if length == 0:
        return c, b
    i = start
    while length > 12:
        a = (a + _word(buf, i, 4)) & M32
        b = (b + _word(buf, i + 4, 4)) & M32
        c = (c + _word(buf, i + 8, 4)) & M32
        a, b, c = _mix(a, b, c)
        length -= 12
        i += 12
    # last block: 1..12 bytes, read as zero-padded little-endian words
    a = (a + _word(buf, i, min(length, 4))) & M32
    if length > 4:
        b = (b + _word(buf, i + 4, min(length - 4, 4))) & M32
    if length > 8:
        c = (c + _word(buf, i + 8, length - 8)) & M32
    a, b, c = _final(a, b, c)
    return c, b


@njit(cache=True)
def jenkins64(buf, start, end, seed):
    """yanyiwu/simhash's 64-bit Jenkins hash of ``buf[start:end]``: ``(c << 32) | b``."""
    s = np.uint64(seed)
    c, b = hashlittle2(buf, start, end, s >> np.uint64(32), s & M32)
    return (c << np.uint64(32)) | b


@njit(cache=True)
def jenkins64_batch(buf, offsets, seed):
    """Hash of each CSR item ``buf[offsets[k]:offsets[k+1]]``."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for k in range(n):
        out[k] = jenkins64(buf, offsets[k], offsets[k + 1], seed)
    return out


def jenkins64_bytes(data: bytes, seed: int = 0) -> int:
    """64-bit Jenkins hash of a Python ``bytes`` (convenience wrapper)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    return int(jenkins64(arr, 0, arr.shape[0], np.uint64(seed & 0xFFFFFFFFFFFFFFFF)))
