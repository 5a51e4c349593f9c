"""Signatures → candidate pairs → verified pairs → clusters (one call per method)."""
from .find import DuplicateResult, find_equal_duplicates, find_minhash_duplicates, containment_from_jaccard

__all__ = ["DuplicateResult", "find_equal_duplicates", "find_minhash_duplicates", "containment_from_jaccard"]
