"""1e0ng/simhash-compatible SimHash (PyPI ``simhash`` 2.1.x, ``Simhash(value).value``).

Reference: github.com/1e0ng/simhash, ``simhash/__init__.py``. Features and weights:

* a ``str``: lowercase it, keep the concatenated matches of ``[\\w\\u4e00-\\u9fcc]+`` and take
  every ``width``-character window (one window, possibly empty, when the text is shorter);
  weight = number of occurrences;
* an iterable of ``str``: weight 1 per item; of ``(str, weight)`` pairs; or a ``dict``.

Feature hash h = the last f/8 bytes of md5(UTF-8 feature), read big-endian. Bit j is 1 iff
the weight of the features with bit j set exceeds half the total weight, i.e.
Σ_i w_i·(+1 if bit j of h_i else -1) > 0 — the rule of
:func:`neardup.kernels.simhash.fold_one`, used here with float64 weights. The library sums
integer weights ≤ 50 by repeating bytes and larger ones in a numpy uint8 array, which
overflows under numpy 2; the float64 fold has no such limit and gives the value older numpy
gave (exact for integer weights up to 2**53).
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np

from neardup.kernels.simhash import fold_one

from ...errors import ConfigError

__all__ = ["simhash", "features", "feature_hashes", "has_content", "distance", "DEFAULT_PATTERN"]

DEFAULT_PATTERN = r"[\w\u4e00-\u9fcc]+"
_MASK64 = (1 << 64) - 1


def features(text: str, width: int = 4, pattern: str = DEFAULT_PATTERN) -> list[str]:
    """The library's text features: ``width``-character windows over the cleaned text."""
    if width <= 0:
        raise ConfigError("width must be positive")
    content = "".join(re.findall(pattern, text.lower()))
    return [content[i:i + width] for i in range(max(len(content) - width + 1, 1))]


def has_content(text: str, pattern: str = DEFAULT_PATTERN) -> bool:
    """Whether the text has any character the library keeps (else its one feature is the empty window)."""
    return re.search(pattern, text.lower()) is not None


def _weighted(value) -> tuple[list[str], list[float]]:
    if isinstance(value, str):
        counts = Counter(features(value))
        return list(counts), [float(c) for c in counts.values()]
    if isinstance(value, (bytes, bytearray)):
        raise TypeError("pass text as str (the reference hashes UTF-8 of str features)")
    if isinstance(value, Mapping):
        value = value.items()
    if not isinstance(value, Iterable):
        raise TypeError(f"expected str, iterable or dict, got {type(value).__name__}")
    names: list[str] = []
    weights: list[float] = []
    for item in value:
        if isinstance(item, str):
            name, w = item, 1
        else:
            name, w = item
        if isinstance(w, (int, np.integer)) and w < 0:
            # the reference repeats the hash bytes w times (nothing for w < 0) yet adds w to
            # the total: that is no weighting rule, so refuse it rather than guess
            raise ConfigError(f"negative integer weight {w!r} for feature {name!r}")
        names.append(name)
        weights.append(float(w))
    return names, weights


def simhash(value, f: int = 64) -> int:
    """``Simhash(value, f).value`` of 1e0ng/simhash (md5 features, weighted majority per bit)."""
    if f % 8 or not 8 <= f <= 128:
        raise ConfigError("f must be a multiple of 8 between 8 and 128 (md5 has 128 bits)")
    names, weights = _weighted(value)
    full = _md5_tails(names, f // 8)
    w = np.asarray(weights, dtype=np.float64)
    out = 0
    for shift in range(0, f, 64):  # 64-bit lanes, low lane first
        lane = np.fromiter(((h >> shift) & _MASK64 for h in full), dtype=np.uint64, count=len(full))
        out |= int(fold_one(lane, w, 0, lane.shape[0])) << shift
    return out & ((1 << f) - 1)


def _md5_tails(names, nbytes: int) -> list[int]:
    return [int.from_bytes(hashlib.md5(s.encode("utf-8")).digest()[-nbytes:], "big") for s in names]


def feature_hashes(names, f: int = 64) -> np.ndarray:
    """The 64-bit hash of each feature as the library folds it (the last 8 bytes of md5, big-endian)."""
    if f != 64:
        raise ConfigError("feature_hashes gives the 64-bit lane; f must be 64")
    return np.array(_md5_tails(names, 8), dtype=np.uint64)


def distance(a: int, b: int, f: int = 64) -> int:
    """Hamming distance of two ``f``-bit fingerprints (``Simhash.distance``)."""
    return ((int(a) ^ int(b)) & ((1 << f) - 1)).bit_count()
