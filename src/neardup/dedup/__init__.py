"""The stages of a dedup run, defined once and called by both engines (:mod:`neardup.engines`).

::

    texts ─► signing ─► candidates ─► verify ─► clusters ─► keep ─► records ─► report
             (batch →   (LSH bands,   (estimate, (neardup.   (policy) (clusters.  (report.json)
              sketches)  tables)       exact,     clusters)            jsonl /
                                       borderline)                     parquet)

* :mod:`.signing` — a batch of texts → signatures, empties, set sizes (``make_signer``);
* :mod:`.candidates` — signatures → candidate pairs (banding, bucket limit, containment per size ratio);
* :mod:`.verify` — pairs → similarities and how each was decided (estimate / exact / borderline);
* :mod:`.find` — the stages in memory, end to end (``find_*_duplicates``, ``find_run``);
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
_FROM_FIND = ("DuplicateResult", "containment_from_jaccard", "find_equal_duplicates", "find_minhash_duplicates",
              "find_simhash_duplicates")
__all__ = list(_FROM_FIND)


def __getattr__(name: str):
    import importlib  # noqa: PLC0415

    if name not in _FROM_FIND:        # a submodule, as when the package imported them all
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    from . import find  # noqa: PLC0415

    value = getattr(find, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
