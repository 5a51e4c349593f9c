"""An index on local disk that new documents are checked against: "have I seen this before?"

:class:`DiskIndex` keeps each document's MinHash signature and its b LSH band keys in an
:class:`~neardup.index.store.IndexStore` (a folder of memory-mapped segments,
:mod:`neardup.index.segments`; neardup 0.x's SQLite files are converted by ``neardup index
migrate``). A query signs the text, collects the stored documents that share at least one band key
with it (candidates), and keeps those whose Jaccard similarity, estimated from the two full
signatures, is at least the threshold — the answer of the batch engine's banding plus verification,
including its one limit: a band key shared by more than :data:`~neardup.index.lsh.MAX_BUCKET` (64)
stored documents is checked against the oldest of them only. That bounds the cost of boilerplate
buckets; a pair found only through such buckets can be missed (3 of 2,204 pairs in
``benchmarks/bench_index_peers.py``). :class:`SimHashDiskIndex` does the same with SimHash
fingerprints, Manku-style block keys and exact Hamming distances (no bucket limit: it is exact).

Guarantees:

* a batch (``add_batch``, ``add_signatures``) is one transaction: after a crash, all of it or
  none of it is in the index, and a document is never present without its band rows;
* a query reads one snapshot: concurrent writers (other processes) never show it half a batch;
* the file records how it was built (scheme, seed, k, b, r, tokenizer, n-gram, normaliser,
  neardup version) and the signature of a fixed probe text; opening checks both, so an index
  is never queried with signatures it cannot compare against (:class:`IndexConfigError`).

One :class:`DiskIndex` object belongs to one thread; open one per thread or process.
"""
from __future__ import annotations

import json
from pathlib import Path

from .disk_base import BULK_DOCS, INDEX_FORMAT, PROBE_TEXT, AtLeast, AtMost, BaseDiskIndex, IndexConfigError
from .disk_minhash import ContainmentDiskIndex, DiskIndex
from .disk_simhash import SimHashDiskIndex, VerifiedSimHashDiskIndex
from .segments import MANIFEST
from .store import DuplicateKeyError, NotAnIndexError, ReadOnlyError

__all__ = ["BULK_DOCS", "INDEX_FORMAT", "PROBE_TEXT", "AtLeast", "AtMost", "BaseDiskIndex", "ContainmentDiskIndex",
           "DiskIndex", "DuplicateKeyError", "IndexConfigError", "NotAnIndexError", "ReadOnlyError",
           "SimHashDiskIndex", "VerifiedSimHashDiskIndex", "open_index", "open_index_class", "stored_kind"]


def stored_kind(path) -> str | None:
    """The method an existing folder index was built for (None: no index there yet, or not a folder
    index — opening it then says what is wrong)."""
    try:
        m = json.loads((Path(path) / MANIFEST).read_bytes())
        return json.loads(m["meta"]["config"])["kind"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def open_index_class(kind_or_meta):
    """The index class of a kind (``"minhash"``, ``"simhash"``, ``"simhash-verified"``, ``"containment"``)
    or of a store's metadata (its ``config``); :class:`DiskIndex` for anything else."""
    kind = kind_or_meta
    if isinstance(kind_or_meta, dict):
        try:
            kind = json.loads(kind_or_meta["config"])["kind"]
        except (KeyError, TypeError, ValueError):
            kind = None
    return {"simhash": SimHashDiskIndex, "simhash-verified": VerifiedSimHashDiskIndex,
            "containment": ContainmentDiskIndex}.get(kind, DiskIndex)


def open_index(path, readonly: bool = False, **options):
    """Open the index at ``path`` with the class of its kind (MinHash, containment or SimHash)."""
    return open_index_class(stored_kind(path)).open(path, readonly=readonly, **options)


