"""SHA-1 (FIPS 180-4) of short byte strings inside compiled kernels, for the datasketch-compatible
schemes, whose token hash is the first bytes of SHA-1 of each shingle's UTF-8 form
(datasketch ``sha1_hash32``: the first 4 digest bytes read as a little-endian uint32).

:func:`datasketch_shingle_hashes` builds every word shingle of a normalised batch — its tokens
joined by one space, exactly the strings :meth:`neardup.Shingler.shingles` makes — in a scratch
buffer and hashes it, so no Python string is made per shingle. Tested against ``hashlib``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .shingle import _max_doc_len, scan_scratch, word_scan

M32 = np.uint64(0xFFFFFFFF)


@njit(inline="always", cache=True)
def _rotl32(x, r):
    """32-bit rotation of ``x`` (held in a uint64, < 2^32)."""
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & M32


@njit(inline="always", cache=True)
def md_pad(msg, n, big_endian):
    """Merkle–Damgård padding of ``msg[:n]`` in place: 0x80, zeros, the length in bits as 8 bytes (big-endian
    for SHA-1, little-endian for MD5); returns the padded length, a multiple of 64."""
    total = ((n + 8) // 64 + 1) * 64
    msg[n] = 0x80
    for i in range(n + 1, total - 8):
        msg[i] = 0
    bits = np.uint64(n) * np.uint64(8)
    for i in range(8):
        msg[total - 1 - i if big_endian else total - 8 + i] = np.uint8((bits >> np.uint64(8 * i)) & np.uint64(0xFF))
    return total


@njit(cache=True)
def sha1_h0(msg, n, w):
    """The first 32-bit word H0 of SHA-1(msg[:n]) (as uint64). ``msg`` must have room for the
    padding (n + 72 bytes); ``w`` is an 80-word uint64 scratch array. 32-bit arithmetic is done
    in uint64 with explicit masks (numba widens uint32 sums)."""
    total = md_pad(msg, n, True)
    h0 = np.uint64(0x67452301)
    h1 = np.uint64(0xEFCDAB89)
    h2 = np.uint64(0x98BADCFE)
    h3 = np.uint64(0x10325476)
    h4 = np.uint64(0xC3D2E1F0)
    for blk in range(0, total, 64):
        for t in range(16):
            p = blk + 4 * t
            w[t] = ((np.uint64(msg[p]) << np.uint64(24)) | (np.uint64(msg[p + 1]) << np.uint64(16))
                    | (np.uint64(msg[p + 2]) << np.uint64(8)) | np.uint64(msg[p + 3]))
        for t in range(16, 80):
            w[t] = _rotl32(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1)
        a, b, c, d, e = h0, h1, h2, h3, h4
        for t in range(0, 20):
            tmp = (_rotl32(a, 5) + ((b & c) | (~b & M32 & d)) + e + np.uint64(0x5A827999) + w[t]) & M32
            e, d, c, b, a = d, c, _rotl32(b, 30), a, tmp
        for t in range(20, 40):
            tmp = (_rotl32(a, 5) + (b ^ c ^ d) + e + np.uint64(0x6ED9EBA1) + w[t]) & M32
            e, d, c, b, a = d, c, _rotl32(b, 30), a, tmp
        for t in range(40, 60):
            tmp = (_rotl32(a, 5) + ((b & c) | (b & d) | (c & d)) + e + np.uint64(0x8F1BBCDC) + w[t]) & M32
            e, d, c, b, a = d, c, _rotl32(b, 30), a, tmp
        for t in range(60, 80):
            tmp = (_rotl32(a, 5) + (b ^ c ^ d) + e + np.uint64(0xCA62C1D6) + w[t]) & M32
            e, d, c, b, a = d, c, _rotl32(b, 30), a, tmp
        h0 = (h0 + a) & M32
        h1 = (h1 + b) & M32
        h2 = (h2 + c) & M32
        h3 = (h3 + d) & M32
        h4 = (h4 + e) & M32
    return h0


@njit(inline="always", cache=True)
def _le32_of_be(h):
    """The 4 big-endian digest bytes of ``h`` read as a little-endian uint32."""
    return np.uint32(((h & np.uint64(0xFF)) << np.uint64(24)) | ((h & np.uint64(0xFF00)) << np.uint64(8))
                     | ((h >> np.uint64(8)) & np.uint64(0xFF00)) | (h >> np.uint64(24)))


@njit(cache=True)
def sha1_hash32_batch(buf, offsets):
    """datasketch ``sha1_hash32`` of each ``buf[offsets[i]:offsets[i+1]]`` (for tests and items)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint32)
    msg = np.empty(_max_doc_len(offsets) + 72, dtype=np.uint8)
    w = np.empty(80, dtype=np.uint64)
    for i in range(n):
        ln = offsets[i + 1] - offsets[i]
        msg[:ln] = buf[offsets[i]:offsets[i + 1]]
        out[i] = _le32_of_be(sha1_h0(msg, ln, w))
    return out


@njit(cache=True)
def datasketch_shingle_hashes(buf, offsets, table, map_slot, map_utf8, n):
    """``sha1_hash32`` of every word n-gram (tokens joined by one space; a document of 1 ≤ m < n
    tokens gives the one shingle of all of them) of a batch whose text is already normalised.
    Returns (hashes uint32, per-document offsets), in shingle order, repeats included."""
    nd = offsets.shape[0] - 1
    tok_start, tok_end, tokh = scan_scratch(offsets)
    msg = np.empty(tok_start.shape[0] + n + 72, dtype=np.uint8)
    w = np.empty(80, dtype=np.uint64)
    out = np.empty(offsets[nd] - offsets[0] + 1, dtype=np.uint32)
    doc_off = np.empty(nd + 1, dtype=np.int64)
    doc_off[0] = 0
    o = 0
    for d in range(nd):
        m = word_scan(buf, offsets[d], offsets[d + 1], table, map_slot, map_utf8, tok_start, tok_end, tokh,
                      np.uint64(0))
        if m > 0:
            width = min(m, n)
            for s in range(m - width + 1):
                ln = 0
                for t in range(s, s + width):
                    if t > s:
                        msg[ln] = 32
                        ln += 1
                    for q in range(tok_start[t], tok_end[t]):
                        msg[ln] = buf[q]
                        ln += 1
                out[o] = _le32_of_be(sha1_h0(msg, ln, w))
                o += 1
        doc_off[d + 1] = o
    return out[:o].copy(), doc_off

