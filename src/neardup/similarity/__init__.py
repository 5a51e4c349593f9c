"""Exact similarities over shingle sets (verification and ground truth)."""
from .jaccard import containment_pairs, exact_jaccard, exact_jaccard_pairs, set_jaccard

__all__ = ["exact_jaccard", "exact_jaccard_pairs", "containment_pairs", "set_jaccard"]
