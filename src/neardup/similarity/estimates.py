"""Similarities estimated from a MinHash Jaccard estimate and the set sizes: one rule for the batch
finder, both engines and the indexes.

With |A ∩ B| = J (|A| + |B|) / (1 + J): C(A ⊆ B) = |A ∩ B| / |A| = J (|A| + |B|) / ((1 + J) |A|).
"""
from __future__ import annotations

import numpy as np


def containment_from_jaccard(j, size_a, size_b):
    """C(A ⊆ B) estimated from J and the set sizes (0 where |A| = 0)."""
    j = np.asarray(j, dtype=np.float64)
    a = np.asarray(size_a, dtype=np.float64)
    b = np.asarray(size_b, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = j * (a + b) / ((1.0 + j) * a)
    return np.clip(np.nan_to_num(c), 0.0, 1.0)


def minhash_similarity(j, size_a, size_b, metric: str):
    """A pair's similarity from its MinHash Jaccard estimate ``j``: ``j`` itself, or for containment
    the larger of the two containments (a copied passage may sit in either document). The one rule
    both engines use."""
    if metric == "jaccard":
        return j
    return np.maximum(containment_from_jaccard(j, size_a, size_b), containment_from_jaccard(j, size_b, size_a))


__all__ = ["containment_from_jaccard", "minhash_similarity"]
