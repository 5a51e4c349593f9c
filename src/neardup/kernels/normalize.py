"""Normalisation kernels over a UTF-8 batch (one buffer + document offsets)."""
from __future__ import annotations

import numpy as np
from numba import njit

from .shingle import decode_next
from .swar import HIGH, load_u64


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
    flagged (CJK ideographs, hangul syllables), so the table is not read for them; ASCII is skipped
    eight bytes at a time, and characters are decoded from a register (:func:`decode_word`)."""
    out = np.zeros(docs.shape[0], dtype=np.bool_)
    for k in range(docs.shape[0]):
        i = offsets[docs[k]]
        end = offsets[docs[k] + 1]
        while i < end:
            if i + 8 <= end and (load_u64(buf, i) & HIGH) == 0:
                i += 8
                continue
            b = buf[i]
            if b < 0x80:
                i += 1
                continue
            cp, ln = decode_next(buf, i, end)
            if not lead_clean[b] and unsafe[cp]:
                out[k] = True
                break
            i += ln
    return out
