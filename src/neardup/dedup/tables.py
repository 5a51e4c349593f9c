"""The tables that pass between the stages of a run, as the local engine holds them.

* **Corpus** — one entry per input row read (pass 1): which rows are documents, their ids, lengths,
  keep keys and places; the skipped rows with their reasons. Every later stage that names a row
  (records, report, index, resume) reads it from here, so no row can fall out of the accounting:
  ``n_rows = len(ids) + len(skipped)``.
* **Signed** — per document: the sketch values (``n×k`` uint32 MinHash slots, or uint64
  fingerprints / hashes), ``empty`` (no features: never a duplicate), the distinct-shingle set
  sizes (containment, or None) and the shingle sets themselves (``verify="exact"``, or None).
* **DuplicateResult** (:mod:`.find`) — the verified pairs and the clusters cut from them.

The Spark engine carries the same columns as DataFrames (``row``, ``sig``, ``empty``, ``size``;
``lo``, ``hi``, ``sim``, ``how``; ``row``, ``rep``, ``sim``) and turns them into the same records.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..features.shingles import Features


@dataclass
class Corpus:
    """Pass 1's bookkeeping of every input row (see the module's docstring)."""

    ids: array | list = field(default_factory=lambda: array("q"))   # the row while every id is; else a list
    lengths: array = field(default_factory=lambda: array("q"))
    keys: list = field(default_factory=list)
    doc_row: array = field(default_factory=lambda: array("q"))      # global row index of each document
    doc_line: array = field(default_factory=lambda: array("q"))   # its line / record number in its input
    row_source: list = field(default_factory=list)    # per input: number of rows read
    skipped: list = field(default_factory=list)       # (global row, file, line, reason)
    spans: list = field(default_factory=list)         # span step: what the workers gave per batch
    span_text: object = None                          # substrings: their bytes (dedup.spans.TextSpool)
    blocks: dict = field(default_factory=dict)        # input → its blocks (first line, offset, length, lines)
    payload_of_doc: np.ndarray | None = None          # its index there per document (after id checks)
    replaced: int = 0
    n_rows: int = 0
    n_chars: int = 0


class Signed(NamedTuple):
    """Pass 1's output per document (see the module's docstring)."""

    values: np.ndarray
    empty: np.ndarray
    sizes: np.ndarray | None
    features: Features | None
