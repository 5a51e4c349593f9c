"""Executors: they schedule the stages of :mod:`neardup.dedup` and never define a rule of their own.

* :mod:`neardup.engines.local` — one machine: a process pool for signing, the stages in memory;
* :mod:`neardup.engines.spark` — ``neardup dedup --engine spark``: the same stages as Apache Spark
  DataFrame operations (needs ``pip install 'neardup[spark]'``), imported on demand only, so
  ``neardup`` itself never needs PySpark (``spark-submit`` is given :mod:`neardup.cli.spark_submit`).
"""

from .._lazy import lazy_names

# ``neardup.engines.local`` without importing it first, as when ``import neardup`` loaded it
__getattr__, __dir__ = lazy_names(__name__, {}, [])
