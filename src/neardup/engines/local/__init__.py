"""The local engine: the stages of :mod:`neardup.dedup` scheduled on one machine.

* :mod:`.workers` — pass 1: rows read, documents signed in a process pool;
* :mod:`.run` — ``run_dedup``: parameters, inputs and OUTDIR checked, pass 1 (or a checkpoint),
  the stages in memory, pass 2 (kept rows), records, report, the staged commit;
* :mod:`.sign` — ``neardup sign``: signatures out (JSON lines, Parquet, ``.npy``);
* :mod:`.pairs` — ``neardup pairs``: the similarity join;
* :mod:`.warmup` — the one-time compile of a method's kernels.
"""
from .run import run_dedup

__all__ = ["run_dedup"]
