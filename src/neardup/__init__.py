"""neardup — find near-duplicate documents in large text collections.

Data flow: text (normalise, tokenise) → features (hashed shingles) → sketches (MinHash,
SimHash, sentence signatures) → similarity (exact Jaccard / containment for verification).
"""
from . import _cache  # noqa: F401  (first: where numba caches kernels, before any compiles)

# isort: split
from ._version import __version__
from .config import DedupConfig
from .dedup.find import (
    DuplicateResult,
    find_equal_duplicates,
    find_minhash_duplicates,
    find_simhash_duplicates,
    join_pairs,
)
from .engines.local import run_dedup
from .engines.local.pairs import run_pairs
from .errors import ConfigError, InputChangedError, InputFormatError, NeardupError, OutputError, WorkerError
from .features import Features, IdfTable, Shingler
from .index.containment import ContainmentIndex, containment_candidates, containment_params
from .index.disk import ContainmentDiskIndex, DiskIndex, IndexConfigError, SimHashDiskIndex, open_index
from .index.lsh import LSHParams, choose_params
from .index.memory import MinHashLSH
from .index.simhash_index import SimHashIndex, all_pairs
from .index.store import DuplicateKeyError, IndexStoreError, NotAnIndexError, ReadOnlyError
from .io import InputSpec, expand_inputs, iter_documents
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
    sign_sets,
)
from .text import Normalizer

__all__ = [
    "__version__", "Features", "IdfTable", "Shingler", "containment_pairs", "exact_jaccard",
    "exact_jaccard_pairs", "set_jaccard", "SCHEMES", "MinHash", "MinHasher", "SentenceSigner",
    "Signatures", "SimHasher", "exact_hash", "hamming", "hamming_array", "is_near", "Normalizer", "sign_sets",
    # running a deduplication
    "DedupConfig", "run_dedup", "DuplicateResult", "find_minhash_duplicates", "find_simhash_duplicates",
    "find_equal_duplicates", "join_pairs", "run_pairs", "LSHParams", "choose_params", "InputSpec",
    "expand_inputs", "iter_documents",
    # indexes
    "DiskIndex", "SimHashDiskIndex", "ContainmentDiskIndex", "open_index", "SimHashIndex", "MinHashLSH", "all_pairs",
    "ContainmentIndex", "containment_candidates", "containment_params",
    # errors: every error about the user's input, output or parameters is a NeardupError
    "NeardupError", "ConfigError", "InputFormatError", "InputChangedError", "OutputError", "WorkerError",
    "IndexConfigError",
    "IndexStoreError", "NotAnIndexError", "DuplicateKeyError", "ReadOnlyError",
]
