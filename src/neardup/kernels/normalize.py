"""Normalisation kernels over a UTF-8 batch (one buffer + document offsets)."""
from __future__ import annotations

from numba import njit

from .shingle import decode_at


@njit(cache=True)
def ascii_lower_inplace(buf):
    """A–Z → a–z over a UTF-8 buffer (bytes < 0x80 are always whole ASCII characters)."""
    for i in range(buf.shape[0]):
        b = buf[i]
        if b >= 65 and b <= 90:
            buf[i] = b + 32


@njit(cache=True)
def nfkc_unsafe_in(buf, unsafe):
    """Whether the UTF-8 text ``buf`` holds a code point flagged in ``unsafe``
    (:func:`neardup.text.unicode.nfkc_unsafe`), so that NFKC is not exact per character."""
    i = 0
    end = buf.shape[0]
    while i < end:
        if buf[i] < 0x80:
            i += 1
            continue
        cp, ln = decode_at(buf, i, end)
        if unsafe[cp]:
            return True
        i += ln
    return False
