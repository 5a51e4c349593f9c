"""Progress on stderr, stage by stage: tqdm bars on a terminal, or JSON events (``--progress json``).

A command installs a :class:`Reporter` for its duration (:func:`reporting`); the stages it runs call
:func:`begin` wherever they are (a library call outside a command reports nothing). Each stage says
when it starts, how far it got (``update``: units done, and rows where the unit is not rows) and when
it ends, with its counts. ``--progress json`` writes one object per line per event::

    {"event": "start", "stage": "read+sign", "unit": "B", "total": 52340, "elapsed": 0.01}
    {"event": "advance", "stage": "read+sign", "unit": "B", "done": 26170, "total": 52340, "rows": 2000,
     "elapsed": 0.4, "eta": 0.39}
    {"event": "end", "stage": "read+sign", "unit": "B", "done": 52340, "total": 52340, "rows": 4000,
     "elapsed": 0.8, "seconds": 0.79}

``elapsed``: seconds since the command started; ``seconds``: the stage's own; ``eta``: seconds left
at the stage's pace, where its total is known. Nothing of it goes to stdout or into the outputs.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import os
import sys
import threading
import time

from ..config import DedupConfig, ResolvedConfig

_SCALED = ("B",)     # units shown as 1.2M; counts of rows, files or pairs as integers


def mode_of(progress: str, quiet: bool = False) -> str:
    """``bar``, ``json`` or ``none``: ``auto`` is bars when stderr is a terminal; ``-q`` silences bars
    (asked for or not), never the JSON events a caller asked for."""
    if progress == "json":
        return "json"
    if quiet or progress == "none":
        return "none"
    if progress == "bar":
        return "bar"
    return "bar" if sys.stderr is not None and sys.stderr.isatty() else "none"


def plain_size(specs) -> int | None:
    """The inputs' bytes, the total a stage reading them counts against: None (no ETA) when one is
    compressed or binary (what is read then is not the file's bytes)."""
    if all(s.fmt in ("jsonl", "lines", "csv") and s.compression is None and os.path.isfile(s.path) for s in specs):
        return sum(os.path.getsize(s.path) for s in specs)
    return None


def shows_progress(cfg: DedupConfig) -> bool:
    """Whether a run draws bars (and prints the first-run message) on stderr."""
    return mode_of(cfg.progress, cfg.quiet) == "bar"


class Stage:
    """One stage's progress: :meth:`update` as work is done, :meth:`end` once."""

    def __init__(self, reporter: Reporter, name: str, total: int | None, unit: str, bar: bool):
        self.reporter, self.name, self.total, self.unit = reporter, name, total, unit
        self.done = 0
        self.rows = None
        self.t0 = time.perf_counter()
        self.closed = False
        self.lock = threading.Lock()      # (a stage may advance from a kernel's threads)
        self.bar = None
        if reporter.mode == "bar" and bar:
            from tqdm import tqdm  # noqa: PLC0415  (tqdm: 78 ms of start-up, measured; bars only)

            self.bar = tqdm(total=total, desc=name, unit=unit, unit_scale=unit in _SCALED, file=sys.stderr,
                            leave=False, dynamic_ncols=True)
        reporter.emit("start", self, {})

    def update(self, n: int = 1, rows: int | None = None) -> None:
        """``n`` more units done (``rows``: input rows among them, where the unit is not rows)."""
        with self.lock:
            self._update(int(n), rows)

    def _update(self, n: int, rows: int | None) -> None:
        self.done += n
        if rows is not None:
            self.rows = (self.rows or 0) + int(rows)
        if self.bar is not None:
            if self.rows is not None:      # (set first: the frame update draws shows it)
                self.bar.set_postfix_str(f"{self.rows:,} rows", refresh=False)
            self.bar.update(n)
        extra = {}
        if self.total:
            spent = time.perf_counter() - self.t0
            extra["eta"] = round(spent * (self.total - self.done) / self.done, 3) if self.done else None
        self.reporter.emit("advance", self, extra)

    def end(self, done: int | None = None, rows: int | None = None, **counts) -> None:
        """The stage is over: ``done`` its final count (else what :meth:`update` added up), ``rows``
        the input rows it covered (where the unit is not rows), ``counts`` what else it found."""
        if self.closed:
            return
        self.closed = True
        if rows is not None:
            self.rows = int(rows)
        if done is not None:
            if self.bar is not None:
                self.bar.update(int(done) - self.done)
            self.done = int(done)
        if self.bar is not None:
            self.bar.close()
        self.reporter.emit("end", self, {"seconds": round(time.perf_counter() - self.t0, 3), **counts})


class Reporter:
    """Where a command's stages report: ``mode`` bar, json or none."""

    def __init__(self, mode: str = "none", stream=None):
        self.mode = mode
        self.stream = stream
        self.t0 = time.perf_counter()

    def stage(self, name: str, total: int | None = None, unit: str = "row", bar: bool = True) -> Stage:
        """A stage begins (``bar=False``: reported as JSON events, never drawn)."""
        return Stage(self, name, None if total is None else int(total), unit, bar)

    def emit(self, event: str, st: Stage, extra: dict) -> None:
        if self.mode != "json":
            return
        record = {"event": event, "stage": st.name, "unit": st.unit}
        if event != "start":
            record["done"] = st.done
        if st.total is not None:
            record["total"] = st.total
        if st.rows is not None:
            record["rows"] = st.rows
        record["elapsed"] = round(time.perf_counter() - self.t0, 3)
        record.update(extra)
        stream = self.stream or sys.stderr
        stream.write(json.dumps(record) + "\n")
        stream.flush()


_NONE = Reporter()
_CURRENT: contextvars.ContextVar[Reporter] = contextvars.ContextVar("neardup_progress", default=_NONE)


@contextlib.contextmanager
def reporting(progress: str | DedupConfig = "auto", quiet: bool = False):
    """Install a :class:`Reporter` for the block (``progress``: auto, bar, json or none, or a run's
    config, whose ``progress`` and ``quiet`` decide)."""
    if isinstance(progress, (DedupConfig, ResolvedConfig)):
        progress, quiet = progress.progress, progress.quiet
    mode = mode_of(progress, quiet)
    current = _CURRENT.get()
    if current is not _NONE and current.mode == mode:    # inside a command's reporter: its stages go on
        yield current
        return
    token = _CURRENT.set(Reporter(mode))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


def begin(name: str, total: int | None = None, unit: str = "row", bar: bool = True) -> Stage:
    """A stage of the command running now (:func:`reporting`); silent outside one."""
    return _CURRENT.get().stage(name, total, unit, bar)
