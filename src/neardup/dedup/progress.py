"""Progress on stderr (tqdm bars, the first-run message): shown when stderr is a terminal, unless told."""
from __future__ import annotations

import sys

from ..config import DedupConfig


def shows_progress(cfg: DedupConfig) -> bool:
    """Progress (bars, the first-run message) goes to stderr: when it is a terminal, unless told."""
    return (sys.stderr.isatty() if cfg.progress is None else cfg.progress) and not cfg.quiet


def progress(cfg: DedupConfig, total: int | None, desc: str, unit: str = "B"):
    from tqdm import tqdm  # noqa: PLC0415  (tqdm: 78 ms of start-up, measured; --progress only)

    enabled = shows_progress(cfg)
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, disable=not enabled, file=sys.stderr,
                leave=False)
