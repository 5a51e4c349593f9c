"""Normalisation kernels over a UTF-8 batch (one buffer + document offsets)."""
from __future__ import annotations

import numpy as np
from numba import njit

from .shingle import decode_next
from .swar import HIGH, any_non_ascii, load_u64


@njit(cache=True)
def ascii_lower_inplace(buf):
    """A–Z → a–z over a UTF-8 buffer (bytes < 0x80 are always whole ASCII characters)."""
    for i in range(buf.shape[0]):
        b = buf[i]
        if b >= 65 and b <= 90:
            buf[i] = b + 32


@njit(cache=True, nogil=True)
def nfkc_unsafe_batch(buf, offsets, docs, unsafe, lead_clean):
    """For each document index in ``docs``: whether ``buf[offsets[d]:offsets[d+1]]`` holds a code
    point flagged in ``unsafe`` (:func:`neardup.text.unicode.nfkc_unsafe`: NFKC is then not exact
    character by character). ``lead_clean[b]``: no code point whose UTF-8 starts with byte b is
    flagged (CJK ideographs, hangul syllables), so a well-formed sequence under such a lead is stepped
    over undecoded (an ill-formed one is decoded, to U+FFFD, which is not flagged); ASCII is skipped
    eight bytes at a time after an ASCII byte."""
    out = np.zeros(docs.shape[0], dtype=np.bool_)
    for k in range(docs.shape[0]):
        i = offsets[docs[k]]
        end = offsets[docs[k] + 1]
        while i < end:
            b = buf[i]
            if b < 0x80:
                i += 1
                while i + 8 <= end and (load_u64(buf, i) & HIGH) == 0:    # (tried after ASCII only)
                    i += 8
                continue
            if lead_clean[b]:       # a whole sequence under a clean lead: stepped over, not decoded
                ln = 2 if b < 0xE0 else (3 if b < 0xF0 else 4)
                if i + ln <= end and (buf[i + 1] & 0xC0) == 0x80 and (ln < 3 or (buf[i + 2] & 0xC0) == 0x80) \
                        and (ln < 4 or (buf[i + 3] & 0xC0) == 0x80):
                    i += ln
                    continue
            cp, ln = decode_next(buf, i, end)
            if not lead_clean[b] and unsafe[cp]:
                out[k] = True
                break
            i += ln
    return out


@njit(cache=True, nogil=True)
def non_ascii_docs(buf, offsets):
    """For each document of the batch: whether it holds a byte >= 0x80 (eight bytes at a time)."""
    n = offsets.shape[0] - 1
    out = np.zeros(n, dtype=np.bool_)
    for d in range(n):
        out[d] = any_non_ascii(buf, offsets[d], offsets[d + 1])
    return out


@njit(cache=True, nogil=True)
def splice_docs(buf, offsets, docs, new_buf, new_offsets):
    """The batch with documents ``docs`` (ascending) replaced by the documents of ``(new_buf,
    new_offsets)``, in that order: ``(buf, offsets)`` of the result, one copy."""
    n = offsets.shape[0] - 1
    out_off = np.empty(n + 1, dtype=np.int64)
    out_off[0] = 0
    k = 0
    for d in range(n):
        if k < docs.shape[0] and docs[k] == d:
            ln = new_offsets[k + 1] - new_offsets[k]
            k += 1
        else:
            ln = offsets[d + 1] - offsets[d]
        out_off[d + 1] = out_off[d] + ln
    out = np.zeros(max(out_off[n], 1), dtype=np.uint8)
    k = 0
    for d in range(n):
        o = out_off[d]
        if k < docs.shape[0] and docs[k] == d:
            a, b = new_offsets[k], new_offsets[k + 1]
            out[o:o + b - a] = new_buf[a:b]
            k += 1
        else:
            a, b = offsets[d], offsets[d + 1]
            out[o:o + b - a] = buf[a:b]
    return out, out_off


@njit(cache=True, nogil=True)
def take_docs(buf, offsets, docs):
    """Documents ``docs`` of the batch, in that order: ``(buf, offsets)`` of a new batch."""
    out_off = np.empty(docs.shape[0] + 1, dtype=np.int64)
    out_off[0] = 0
    for k in range(docs.shape[0]):
        out_off[k + 1] = out_off[k] + offsets[docs[k] + 1] - offsets[docs[k]]
    out = np.zeros(max(out_off[-1], 1), dtype=np.uint8)
    for k in range(docs.shape[0]):
        a = offsets[docs[k]]
        out[out_off[k]:out_off[k + 1]] = buf[a:a + out_off[k + 1] - out_off[k]]
    return out, out_off


@njit(cache=True, nogil=True)
def char_counts(buf, offsets):
    """Characters of each document of a well-formed UTF-8 batch: its bytes that are not
    continuation bytes (10xxxxxx); ASCII eight bytes at a time."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.int64)
    for d in range(n):
        i = offsets[d]
        end = offsets[d + 1]
        c = 0
        while i < end:
            if i + 8 <= end and (load_u64(buf, i) & HIGH) == 0:
                c += 8
                i += 8
                continue
            if (buf[i] & 0xC0) != 0x80:
                c += 1
            i += 1
        out[d] = c
    return out
