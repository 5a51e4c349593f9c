"""Where numba keeps the compiled kernels (``cache=True``).

By default beside the sources, in ``neardup/kernels/__pycache__``. A read-only installation (a
system package, a container image, another user's environment) cannot write there, and numba
then fails at the first compile ("no locator available"). In that case, unless the user set
``NUMBA_CACHE_DIR``, the cache goes to a per-user folder in the system's temporary directory.
Importing this module (``neardup/__init__`` does it first) applies the rule.

A kernel that is not in the cache yet is compiled at its first call (seconds each; 15–25 s for a
method's set): the first such compile in a process logs one WARNING on the ``neardup.compile``
logger (on stderr unless logging is configured otherwise), so that a first use does not look hung.
"""
from __future__ import annotations

import logging
import os
import sys

from numba.core import config, event

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")


def cache_dir_for(kernels: str = KERNELS) -> str | None:
    """The cache folder to use instead of numba's default, or None when the default is writable."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    pycache = os.path.join(kernels, "__pycache__")
    target = pycache if os.path.isdir(pycache) else kernels
    if os.access(target, os.W_OK):
        return None
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    import tempfile  # noqa: PLC0415  (here: 5 ms that `import neardup` need not pay)

    return os.path.join(tempfile.gettempdir(), f"neardup-numba-{uid}")


def use_writable_numba_cache() -> None:
    path = cache_dir_for()
    if path is None:
        return
    os.environ["NUMBA_CACHE_DIR"] = path
    if "numba" in sys.modules:         # numba already imported (and its configuration read)
        config.CACHE_DIR = path


use_writable_numba_cache()


COMPILE_LOG = logging.getLogger("neardup.compile")
COMPILE_NOTICE = ("compiling neardup's kernels for their first use on this machine (once: they are cached for "
                  "later runs; up to about 30 s; `neardup warmup` does it ahead)…")
_noticed = False


def compile_noticed() -> None:
    """Say nothing of later compiles in this process: the notice was given (or a caller, such as
    a command's warm-up step, gives its own)."""
    global _noticed
    _noticed = True


class _CompileNotice(event.Listener):
    """Numba's ``numba:compile`` event (fired only when a kernel is not in the cache): the first of
    one of neardup's kernels logs :data:`COMPILE_NOTICE` once per process."""

    def on_start(self, ev) -> None:
        if _noticed:
            return
        func = getattr(ev.data.get("dispatcher") if isinstance(ev.data, dict) else None, "py_func", None)
        if str(getattr(func, "__module__", "")).startswith("neardup."):
            compile_noticed()
            COMPILE_LOG.warning(COMPILE_NOTICE)

    def on_end(self, ev) -> None:
        pass


event.register("numba:compile", _CompileNotice())
