"""The stages of a dedup run, defined once and called by both engines (:mod:`neardup.engines`).

::

    texts ─► signing ─► candidates ─► verify ─► clusters ─► keep ─► records ─► report
             (batch →   (LSH bands,   (estimate, (neardup.   (policy) (clusters.  (report.json)
              sketches)  tables)       exact,     clusters)            jsonl /
                                       borderline)                     parquet)

* :mod:`.signing` — a batch of texts → signatures, empties, set sizes (``make_signer``);
* :mod:`.candidates` — signatures → candidate pairs (banding, bucket limit, containment per size ratio);
* :mod:`.verify` — pairs → similarities and how each was decided (estimate / exact / borderline);
* :mod:`.methods` — one module per method (signer, layout, finder ``find_*_duplicates``, index);
* :mod:`.find` — the stages in memory, end to end (``find_run``: the run's method's finder);
* :mod:`.records` — each row's record and the local writers (kept rows, clusters, pairs.parquet);
* :mod:`.report` — report.json from a :class:`~.report.RunSummary`;
* :mod:`.tables` — the tables passed between stages (``Corpus``, ``Signed``);
* :mod:`.incremental` (``--index``), :mod:`.spans` (``--method lines|substrings``, ``--spans``),
  :mod:`.resume` (``--resume``) — what a run adds around them.

A stage never knows which engine runs it, nor reads an input format by name: rows come in through
:mod:`neardup.io.formats`, outputs go out through :class:`neardup.io.outdir.StagedOutput`. The writers
in :mod:`.records` work over the in-memory :class:`~.tables.Corpus` (the local engine's, also used by
:mod:`.spans`); the Spark engine formats the same records with the same functions on its executors.
"""
# loaded on first use (PEP 562): the light modules (:mod:`.ids`) are read without the stages' kernels
from .._lazy import lazy_names

__all__ = ["DuplicateResult", "containment_from_jaccard", "find_equal_duplicates", "find_minhash_duplicates",
           "find_simhash_duplicates"]
__getattr__, __dir__ = lazy_names(__name__, dict.fromkeys(__all__, ".find"), __all__)
