"""Indexes for near-duplicate search: LSH banding parameters and candidates, and indexes on disk."""
from .containment import ContainmentIndex, containment_candidates, containment_params  # noqa: F401
from .disk import DiskIndex, SimHashDiskIndex  # noqa: F401
from .memory import MinHashLSH  # noqa: F401
from .simhash_index import SimHashIndex, all_pairs, plan_tables  # noqa: F401
