"""Hashing of arbitrary set items (not only text): ``str`` (UTF-8), ``bytes``, integers.

Every item maps to XXH64(bytes, seed 0): a ``str`` hashes its UTF-8 encoding, ``bytes`` itself,
an integer in [-2^63, 2^64) its 8-byte little-endian two's-complement form. So ``"42"`` and ``42``
are different items, while the int 42 and numpy's uint64 42 are the same.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable

import numpy as np
from numba import njit

from .._arrays import utf8_buffer
from ..errors import ConfigError
from ..kernels.hashing import xxh64


@njit(cache=True)
def _hash_u64_words(words):
    raw = words.view(np.uint8)
    out = np.empty(words.shape[0], dtype=np.uint64)
    for i in range(words.shape[0]):
        out[i] = xxh64(raw, 8 * i, 8 * i + 8, np.uint64(0))
    return out


@njit(cache=True)
def _hash_spans(buf, offsets):
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = xxh64(buf, offsets[i], offsets[i + 1], np.uint64(0))
    return out


def hash_items(items: Iterable) -> np.ndarray:
    """64-bit hashes of items, vectorised for numpy integer arrays."""
    if isinstance(items, np.ndarray) and items.dtype.kind in "iu":
        wide = items.astype(np.int64 if items.dtype.kind == "i" else np.uint64, copy=False).view(np.uint64)
        words = np.ascontiguousarray(wide if sys.byteorder == "little" else wide.astype("<u8"))
        return _hash_u64_words(words)
    parts = item_bytes(items)
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    buf = utf8_buffer(parts)
    return _hash_spans(buf, offsets)


def item_bytes(items: Iterable) -> list[bytes]:
    """The bytes that stand for each item (see the module docstring); TypeError / ValueError for an
    item of another type or an integer outside 64 bits."""
    if isinstance(items, np.ndarray) and items.dtype.kind in "iu":
        items = items.tolist()
    parts: list[bytes] = []
    for it in items:
        if isinstance(it, str):
            parts.append(it.encode("utf-8", errors="surrogatepass"))
        elif isinstance(it, (bytes, bytearray, memoryview)):
            parts.append(bytes(it))
        elif isinstance(it, (int, np.integer)) and not isinstance(it, bool):
            v = int(it)
            if not -(2**63) <= v < 2**64:
                raise ConfigError(f"integer item {v} does not fit in 64 bits")
            parts.append((v & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little"))
        else:
            raise TypeError(f"set items must be str, bytes or int, got {type(it).__name__}")
    return parts
