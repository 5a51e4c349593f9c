"""What the signing worker pool (:mod:`neardup.engines.local.workers`) needs of its processes:
Ctrl-C and SIGTERM held back around forks and cleanup, and children that die with their parent;
and the CPUs this process may use. Plain Python, no kernel import."""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading

STOPS = (signal.SIGINT, signal.SIGTERM)


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@contextlib.contextmanager
def signals_held():
    """Ctrl-C and SIGTERM held back for the block and delivered as it ends: every process forked in
    it is known before a stop can unwind the parent, a cleanup in it is not cut short, and no stop
    is raised inside fork's at-fork handlers (there its SystemExit is printed as "Exception
    ignored" and lost). Forked children inherit the mask. A no-op outside the main thread or
    without ``pthread_sigmask``."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def kill_with_parent() -> None:
    """This process gets SIGKILL when its parent dies (Linux ``PR_SET_PDEATHSIG``; elsewhere nothing:
    the caller checks its parent itself). The parent may have died already: check after this."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # 1 = PR_SET_PDEATHSIG
