"""Signatures → candidate pairs → verified pairs → clusters (one call per method)."""
from .find import (
    DuplicateResult,
    containment_from_jaccard,
    find_equal_duplicates,
    find_minhash_duplicates,
    find_simhash_duplicates,
)

__all__ = ["DuplicateResult", "containment_from_jaccard", "find_equal_duplicates", "find_minhash_duplicates",
           "find_simhash_duplicates"]
