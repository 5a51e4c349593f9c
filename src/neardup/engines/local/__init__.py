"""The local engine: the stages of :mod:`neardup.dedup` scheduled on one machine.

* :mod:`.workers` — pass 1: rows read, documents signed in a process pool;
* :mod:`.run` — ``run_dedup``: parameters, inputs and OUTDIR checked, pass 1 (or a checkpoint),
  the stages in memory, pass 2 (kept rows), records, report, the staged commit;
* :mod:`.sign` — ``neardup sign``: signatures out (JSON lines, Parquet, ``.npy``);
* :mod:`.pairs` — ``neardup pairs``: the similarity join;
* :mod:`.warmup` — the one-time compile of a method's kernels.
"""
from __future__ import annotations

from ...config import DedupConfig
from . import run
from .warmup import warm_up


def run_dedup(inputs: list[str], outdir: str, config: DedupConfig | None = None, command: str = "",
              stdout=None) -> dict:
    # the one-time compile injected here: the warm-up runs small dedups through run.run_dedup itself
    return run.run_dedup(inputs, outdir, config, command, stdout, warm=warm_up)


run_dedup.__doc__ = run.run_dedup.__doc__


__all__ = ["run_dedup"]
