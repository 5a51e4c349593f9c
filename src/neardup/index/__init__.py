"""Indexes for near-duplicate search: LSH banding parameters and candidates, and indexes on disk."""
from .disk import DiskIndex  # noqa: F401
from .simhash_index import SimHashIndex, all_pairs, plan_tables  # noqa: F401
