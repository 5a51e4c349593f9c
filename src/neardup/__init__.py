"""neardup — find near-duplicate documents in large text collections.

Data flow: text (normalise, tokenise) → features (hashed shingles) → sketches (MinHash,
SimHash, sentence signatures) → similarity (exact Jaccard / containment for verification).
"""
from ._version import __version__
from .features import Features, IdfTable, Shingler
from .similarity import containment_pairs, exact_jaccard, exact_jaccard_pairs, set_jaccard
from .sketches import (
    SCHEMES,
    MinHash,
    MinHasher,
    SentenceSigner,
    Signatures,
    SimHasher,
    exact_hash,
    hamming,
    hamming_array,
    is_near,
)
from .text import Normalizer

__all__ = [
    "__version__", "Features", "IdfTable", "Shingler", "containment_pairs", "exact_jaccard",
    "exact_jaccard_pairs", "set_jaccard", "SCHEMES", "MinHash", "MinHasher", "SentenceSigner",
    "Signatures", "SimHasher", "exact_hash", "hamming", "hamming_array", "is_near", "Normalizer",
]
