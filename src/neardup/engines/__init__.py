"""Execution engines beyond the local one (:mod:`neardup.pipeline.dedup`).

* :mod:`neardup.engines.spark` — ``neardup dedup --engine spark``: the same clusters as the local
  engine, computed as Apache Spark DataFrame operations (needs ``pip install 'neardup[spark]'``).
  Imported on demand only, so ``neardup`` itself never needs PySpark.
"""
