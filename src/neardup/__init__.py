"""neardup — find near-duplicate documents in large text collections.

Data flow: text (normalise, tokenise) → features (hashed shingles) → sketches (MinHash,
SimHash, sentence signatures) → similarity (exact Jaccard / containment for verification).
"""
from . import _cache  # noqa: F401  (first: where numba caches kernels, before any compiles)
from ._lazy import lazy_names

# The public names are loaded on first use (PEP 562), so that ``import neardup`` costs a few
# milliseconds, not numba's import (0.2–0.4 s): code that uses no compiled kernel does not pay for
# them.

_WHERE = {
    **dict.fromkeys(('__version__',), '._version'),
    **dict.fromkeys((
        'DedupConfig', 'ExactParams', 'LinesParams', 'MinHashParams', 'ResolvedConfig', 'SentencesParams',
        'SimHashParams', 'SubstringsParams',
    ), '.config'),
    **dict.fromkeys((
        'DuplicateResult', 'find_equal_duplicates', 'find_minhash_duplicates', 'find_simhash_duplicates',
        'join_pairs',
    ), '.dedup.find'),
    **dict.fromkeys(('run_dedup',), '.engines.local'),
    **dict.fromkeys(('run_pairs',), '.engines.local.pairs'),
    **dict.fromkeys((
        'ConfigError', 'InputChangedError', 'InputFormatError', 'NeardupError', 'OutputError', 'WorkerError',
    ), '.errors'),
    **dict.fromkeys(('Features', 'IdfTable', 'Shingler'), '.features'),
    **dict.fromkeys(('ContainmentIndex', 'containment_candidates', 'containment_params'), '.index.containment'),
    **dict.fromkeys((
        'ContainmentDiskIndex', 'DiskIndex', 'IndexConfigError', 'SimHashDiskIndex', 'open_index',
    ), '.index.disk'),
    **dict.fromkeys(('LSHParams', 'choose_params'), '.index.lsh'),
    **dict.fromkeys(('MinHashLSH',), '.index.memory'),
    **dict.fromkeys(('SimHashIndex', 'all_pairs'), '.index.simhash_index'),
    **dict.fromkeys(('DuplicateKeyError', 'IndexStoreError', 'NotAnIndexError', 'ReadOnlyError'), '.index.store'),
    **dict.fromkeys(('InputSpec', 'expand_inputs', 'iter_documents'), '.io'),
    **dict.fromkeys(('containment_pairs', 'exact_jaccard', 'exact_jaccard_pairs', 'set_jaccard'), '.similarity'),
    **dict.fromkeys((
        'SCHEMES', 'MinHash', 'MinHasher', 'SentenceSigner', 'Signatures', 'SimHasher', 'exact_hash', 'hamming',
        'hamming_array', 'is_near', 'sign_sets',
    ), '.sketches'),
    **dict.fromkeys(('Normalizer',), '.text'),
}

__all__ = [
    "__version__", "Features", "IdfTable", "Shingler", "containment_pairs", "exact_jaccard",
    "exact_jaccard_pairs", "set_jaccard", "SCHEMES", "MinHash", "MinHasher", "SentenceSigner",
    "Signatures", "SimHasher", "exact_hash", "hamming", "hamming_array", "is_near", "Normalizer", "sign_sets",
    # running a deduplication
    "DedupConfig", "ResolvedConfig", "MinHashParams", "SimHashParams", "SentencesParams", "ExactParams",
    "LinesParams", "SubstringsParams", "run_dedup", "DuplicateResult", "find_minhash_duplicates",
    "find_simhash_duplicates", "find_equal_duplicates", "join_pairs", "run_pairs", "LSHParams", "choose_params",
    "InputSpec", "expand_inputs", "iter_documents",
    # indexes
    "DiskIndex", "SimHashDiskIndex", "ContainmentDiskIndex", "open_index", "SimHashIndex", "MinHashLSH", "all_pairs",
    "ContainmentIndex", "containment_candidates", "containment_params",
    # errors: every error about the user's input, output or parameters is a NeardupError
    "NeardupError", "ConfigError", "InputFormatError", "InputChangedError", "OutputError", "WorkerError",
    "IndexConfigError",
    "IndexStoreError", "NotAnIndexError", "DuplicateKeyError", "ReadOnlyError",
]


__getattr__, __dir__ = lazy_names(__name__, _WHERE, __all__)
