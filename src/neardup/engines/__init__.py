"""Executors: they schedule the stages of :mod:`neardup.dedup` and never define a rule of their own.

* :mod:`neardup.engines.local` — one machine: a process pool for signing, the stages in memory;
* :mod:`neardup.engines.spark` — ``neardup dedup --engine spark``: the same stages as Apache Spark
  DataFrame operations (needs ``pip install 'neardup[spark]'``), imported on demand only, so
  ``neardup`` itself never needs PySpark;
* :mod:`neardup.engines.spark_submit` — the file given to ``spark-submit`` (imports only the CLI).
"""


def __getattr__(name: str):
    """``neardup.engines.local`` without importing it first, as when ``import neardup`` loaded it."""
    import importlib  # noqa: PLC0415

    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
