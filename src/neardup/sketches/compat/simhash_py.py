"""seomoz/simhash-py-compatible helpers (``simhash.compute``, ``num_differing_bits``, ``shingle``).

Reference: github.com/seomoz/simhash-py and its C++ core seomoz/simhash-cpp
(``Simhash::compute``). ``compute`` is the unweighted Charikar fold: bit j is 1 iff more of
the 64-bit input hashes have bit j set than clear (a tie gives 0; no hashes give 0), i.e.
:func:`neardup.kernels.simhash.fold_one` with every weight 1. ``unsigned_hash`` is the
library's feature hash: the first 8 bytes of md5, big-endian.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import numpy as np

from neardup.kernels.simhash import fold_one

from ...errors import ConfigError

__all__ = ["compute", "num_differing_bits", "shingle", "unsigned_hash"]


def compute(hashes: Iterable[int]) -> int:
    """Majority vote per bit over unsigned 64-bit ``hashes`` (``simhash.compute``)."""
    values = [int(h) for h in hashes]
    for h in values:
        if not 0 <= h <= 0xFFFFFFFFFFFFFFFF:
            raise OverflowError(f"{h} is not an unsigned 64-bit integer")
    arr = np.array(values, dtype=np.uint64)
    return int(fold_one(arr, np.ones(arr.shape[0], dtype=np.float64), 0, arr.shape[0]))


def num_differing_bits(a: int, b: int) -> int:
    """Hamming distance of two 64-bit values."""
    return ((int(a) ^ int(b)) & 0xFFFFFFFFFFFFFFFF).bit_count()


def shingle(tokens: Iterable, window: int = 4) -> list[tuple]:
    """All ``window``-long runs of consecutive ``tokens`` ([] when there are fewer tokens)."""
    if window <= 0:
        raise ConfigError("window must be positive")
    seq: Sequence = tokens if isinstance(tokens, Sequence) else list(tokens)
    return [tuple(seq[i:i + window]) for i in range(len(seq) - window + 1)]


def unsigned_hash(data: bytes | str) -> int:
    """``simhash.unsigned_hash``: first 8 bytes of md5(data) as a big-endian integer
    (a ``str`` is hashed as UTF-8)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return int.from_bytes(hashlib.md5(data).digest()[:8], "big")
