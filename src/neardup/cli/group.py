"""The command group every command registers on (:func:`main`), the console script (:func:`entry`)
and what every command shares: user errors (:class:`~neardup.errors.NeardupError` and the operating
system's) are one line and exit status 1, any other exception keeps its traceback, and SIGTERM
stops a run like Ctrl-C. Commands import it; the package imports the commands (no cycle).
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
import time

import click

from .._arrays import prefer_small_pages
from .._version import __version__
from ..config import inapplicable
from ..errors import NeardupError, stop_cause, user_message
from ..index.sqlite_legacy import is_sqlite_file, legacy_refusal
from ..index.store import NotAnIndexError


class ParameterError(click.ClickException):
    """A refused parameter value, or a file a parameter names (an IDF table too large, a dictionary
    that cannot be read): one line ``Error: …`` and exit status 2, as for a usage error, without
    click's usage block (the message names the parameter or the file already)."""
    exit_code = 2


class _Group(click.Group):
    """The command group: SIGTERM ends a run like Ctrl-C (outputs staged so far are removed, signing
    workers are stopped), and user errors — :class:`~neardup.errors.NeardupError` and the
    operating system's (a full disk, a permission) — are one line on stderr and exit status 1.
    Any other exception is a bug and keeps its traceback."""

    def invoke(self, ctx):
        def on_term(signum, frame):
            global _INTERRUPTED
            _INTERRUPTED = signum
            raise SystemExit(128 + signum)

        global _INTERRUPTED
        with _signal(signal.SIGTERM, on_term), _stops_not_swallowed():
            try:
                return super().invoke(ctx)
            except KeyboardInterrupt:
                _INTERRUPTED = signal.SIGINT
                raise
            except SystemError as exc:     # a stop inside a compiled kernel's dispatch (numba loading it
                stop = _stop_in(exc)       # from its cache) comes back as a SystemError caused by it
                if stop is None:
                    raise
                if isinstance(stop, KeyboardInterrupt):
                    _INTERRUPTED = signal.SIGINT
                    raise KeyboardInterrupt from None
                raise SystemExit(stop.code) from None
            except BrokenPipeError:        # `neardup … | head`: the reader left, not an error of ours
                _silence_stdout()
                raise SystemExit(141) from None
            except (NeardupError, OSError) as exc:
                raise click.ClickException(_served(user_message(exc))) from None


_INTERRUPTED = 0     # the signal that stopped the run (SIGINT, SIGTERM), if one did


def typed(ctx, names) -> list[str]:
    """The options among ``names`` that the user gave on the command line (also with their default value)."""
    return [n for n in names if ctx.get_parameter_source(n) is not click.core.ParameterSource.DEFAULT]


def refuse_unused(ctx, method: str, names, spans: str | None = None) -> None:
    """One usage line when an option among ``names`` that the user gave (:func:`typed`) is not used by
    ``method`` (with ``--spans``): the rule of every command that takes the table's options."""
    wrong = inapplicable(method, typed(ctx, names), spans)
    if wrong:
        raise click.UsageError(f"not used by --method {method}: {'; '.join(wrong)}")


def index_folder(ctx, param, value):
    """PATH of a command that reads an index folder's files: an SQLite index of neardup 0.x is refused
    naming ``neardup index migrate``, another file as not an index folder."""
    if os.path.isfile(value):
        if is_sqlite_file(value):
            try:
                refusal = legacy_refusal(value)
            except NotAnIndexError as exc:      # (an SQLite database that is not a neardup index)
                refusal = exc
            raise click.ClickException(str(refusal))
        raise click.BadParameter(f"{value} is a file, not an index folder", ctx=ctx, param=param)
    return value


def _served(message: str) -> str:
    """A refusal to write an index that ``neardup serve`` holds (its ``LOCK`` names the service, so
    the message does), with the ways to write through the service instead; any other message as it is."""
    served = re.search(r"neardup serve at (\S+?)\)", message)
    if served is None:
        return message
    url = served.group(1)
    return (f"{message}. While it serves, write through it (with its bearer token, if it has one): POST "
            f"{url}/v1/admin/add (NDJSON, as `index add` reads), DELETE {url}/v1/docs/ID, POST "
            f"{url}/v1/admin/compact, POST {url}/v1/admin/backup; or stop it first")


def _stop_in(exc: BaseException) -> BaseException | None:
    """The Ctrl-C or SIGTERM (KeyboardInterrupt, or the SystemExit of :meth:`_Group.invoke`'s handler)
    that ``exc`` was raised from, if any (:func:`~neardup.errors.stop_cause`)."""
    stop = stop_cause(exc)
    if isinstance(stop, SystemExit) and not _INTERRUPTED:
        return None
    return stop


def entry() -> None:
    """The console script (and ``python -m neardup``): :func:`main`; after Ctrl-C or SIGTERM, once
    the run has cleaned up (work folder removed, workers stopped), the process ends at once with
    128 + the signal's number, never waiting on a thread of an abandoned worker pool. Large arrays
    get ordinary pages (:func:`~neardup._arrays.prefer_small_pages`)."""
    prefer_small_pages()
    try:
        main(prog_name="neardup")
    except SystemExit:
        if not _INTERRUPTED:
            raise
        _end_now(128 + int(_INTERRUPTED))


def _end_now(code: int) -> None:
    """The process ends at once with ``code``, its output flushed (after a stop: :func:`entry`)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):      # (a closed stream: nothing more to say)
            stream.flush()
    os._exit(code)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


@contextlib.contextmanager
def _stops_not_swallowed():
    """A stop that lands in Python code called back from C is not lost. Python runs a signal's
    handler between bytecodes, so Ctrl-C or SIGTERM can arrive inside a callback such as the one
    llvmlite makes while numba compiles (``_raw_object_cache_notify``); the KeyboardInterrupt or
    SystemExit raised there cannot cross the C frames, is printed as "Exception ignored" with a
    traceback, and the run would go on to its end. Here such a stop is said nowhere and the same
    signal is delivered again 10 ms later, when the callback has returned (and again, should that
    one land in a callback too)."""
    previous = sys.unraisablehook

    def hook(unraisable):
        exc = unraisable.exc_value
        signum = (signal.SIGINT if isinstance(exc, KeyboardInterrupt)
                  else _INTERRUPTED if isinstance(exc, SystemExit) else 0)
        if not signum:
            previous(unraisable)
            return
        threading.Thread(target=_deliver_again, args=(signum,), name="neardup-stop", daemon=True).start()

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def _deliver_again(signum: int) -> None:
    time.sleep(0.01)
    os.kill(os.getpid(), signum)


class _signal:
    """Install a signal handler for a block (only in the main thread; elsewhere a no-op)."""

    def __init__(self, sig, handler):
        self.sig, self.handler, self.old = sig, handler, None

    def __enter__(self):
        try:
            self.old = signal.signal(self.sig, self.handler)
        except ValueError:          # not the main thread
            self.old = None

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(self.sig, self.old)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="neardup")
def main() -> None:
    """Find near-duplicate documents: MinHash, SimHash and sentence signatures.

    \b
    Examples:
      neardup dedup docs.jsonl --id-field id -o out     # then open out/report.html
      neardup dedup -h                                  # each command's options and examples
    """
