"""The errors neardup raises for what a user can fix: one base class, so that the command line
prints these as one line and exits non-zero, while any other exception (a bug) keeps its
traceback.

    NeardupError
    ├── ConfigError          a parameter or a combination of them (checked before any input is read)
    ├── InputFormatError     a row, a file or a stream that cannot be read, named by file and line/record
    │   └── InputChangedError   an input changed between the two passes of a run
    ├── OutputError          an output folder neardup may not or cannot write
    ├── WorkerError          a worker process died (a signal, the system out of memory)
    └── IndexError_          (in :mod:`neardup.index`) a persistent index that cannot be used
"""
from __future__ import annotations


class NeardupError(Exception):
    """Base of every error about the user's input, output or parameters."""


class ConfigError(NeardupError, ValueError):
    """A parameter value, or a combination, that neardup refuses (named in the message)."""


class InputFormatError(NeardupError, ValueError):
    """A row or file that cannot be read, with its location (``file:line`` or ``file: row N``)."""


class InputChangedError(InputFormatError):
    """An input file changed while the run was reading it (pass 1 and pass 2 disagree)."""


class OutputError(NeardupError, OSError):
    """An output folder that neardup refuses to write into, or cannot."""


class WorkerError(NeardupError, RuntimeError):
    """A worker process died before finishing its batch (killed by a signal or by the system for
    lack of memory); the run stops and writes nothing."""


def stop_cause(exc: BaseException) -> BaseException | None:
    """The Ctrl-C or SIGTERM (``KeyboardInterrupt``, ``SystemExit``) that ``exc`` was raised from
    (``raise … from``), if any: numba turns a stop that lands while it loads a kernel from its cache
    into a ``SystemError`` caused by it."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            return exc
        exc = exc.__cause__
    return None


def user_message(exc: BaseException) -> str | None:
    """The one line a user error is reported with — a :class:`NeardupError`, or the operating
    system's (a full disk, a permission) — or None for any other exception (a bug, which keeps its
    traceback). ``BrokenPipeError`` (the reader of our output left) is the caller's to handle."""
    if isinstance(exc, NeardupError):
        return str(exc)
    if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    return None
