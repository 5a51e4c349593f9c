"""Exact Jaccard J(A, B) = |A ∩ B| / |A ∪ B| and containment C(A, B) = |A ∩ B| / |A| over shingle sets.

Convention: a pair involving an empty set scores 0.0 (empty documents are never near-duplicates
of anything, themselves included), matching the MinHash estimators.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable

import numba
import numpy as np

from ..errors import ConfigError
from ..features.shingles import Features, Shingler
from ..kernels.jaccard import pair_stats, pair_stats_parallel
from ..text.tokenize import signing_tokenizer

#: from this many pairs on, the main thread computes them on all cores
PARALLEL_PAIRS = 100_000


def _stats(features: Features, ii, jj):
    u = features.unique()
    return range_stats(u.hashes, u.offsets[:-1], u.offsets[1:], ii, jj)


def range_stats(h: np.ndarray, first: np.ndarray, stop: np.ndarray, ii, jj):
    """(|A ∩ B|, |A|, |B|) of each pair of rows (ii[p], jj[p]) whose sorted distinct sets are
    ``h[first[r]:stop[r]]``, on all cores for large batches."""
    ii = np.asarray(ii, dtype=np.int64)
    jj = np.asarray(jj, dtype=np.int64)
    n = first.shape[0]
    if ii.shape != jj.shape:
        raise ConfigError("row index arrays must have the same shape")
    if ii.size and (ii.min() < 0 or jj.min() < 0 or ii.max() >= n or jj.max() >= n):
        raise IndexError(f"row index out of range for {n} documents")
    if ii.shape[0] >= PARALLEL_PAIRS and threading.current_thread() is threading.main_thread():
        if numba.get_num_threads() > 1:
            return pair_stats_parallel(h, first, stop, ii, jj, 4 * numba.get_num_threads())
    return pair_stats(h, first, stop, ii, jj)


def jaccard_of(inter, na, nb) -> np.ndarray:
    """J = |A ∩ B| / |A ∪ B| from the counts (0 where a set is empty)."""
    union = na + nb - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((na > 0) & (nb > 0), inter / np.maximum(union, 1), 0.0)


def max_containment_of(inter, na, nb) -> np.ndarray:
    """The larger containment |A ∩ B| / min(|A|, |B|) from the counts (0 where a set is empty)."""
    return np.where((na > 0) & (nb > 0), inter / np.maximum(np.minimum(na, nb), 1), 0.0)


def exact_jaccard_pairs(features: Features, ii, jj) -> np.ndarray:
    """Exact Jaccard of each document pair (ii[p], jj[p]) of a feature batch."""
    return jaccard_of(*_stats(features, ii, jj))


def containment_pairs(features: Features, ii, jj) -> np.ndarray:
    """Exact containment |A ∩ B| / |A| of document ii[p] in document jj[p]."""
    inter, na, nb = _stats(features, ii, jj)
    return np.where((na > 0) & (nb > 0), inter / np.maximum(na, 1), 0.0)


def max_containment_pairs(features: Features, ii, jj) -> np.ndarray:
    """The larger containment of each pair, |A ∩ B| / min(|A|, |B|) (one intersection, not two)."""
    return max_containment_of(*_stats(features, ii, jj))


def exact_jaccard(a, b, tokenizer: str = "word", ngram: int = 5, **kwargs) -> float:
    """Exact Jaccard of two texts' shingle sets (same tokenizer and normalisation as MinHasher:
    ``auto`` shingles with ``word``, :func:`~neardup.text.tokenize.signing_tokenizer`)."""
    f = Shingler(tokenizer=signing_tokenizer(tokenizer), ngram=ngram, **kwargs).features([a, b])
    return float(exact_jaccard_pairs(f, [0], [1])[0])


def set_jaccard(a: Iterable, b: Iterable) -> float:
    """Exact Jaccard of two Python sets of items (0.0 if either is empty)."""
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)
