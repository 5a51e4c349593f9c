"""Where numba keeps the compiled kernels (``cache=True``).

By default beside the sources, in ``neardup/kernels/__pycache__``. A read-only installation (a
system package, a container image, another user's environment) cannot write there, and numba
then fails at the first compile ("no locator available"). In that case, unless the user set
``NUMBA_CACHE_DIR``, the cache goes to a per-user folder in the system's temporary directory.
Importing this module (``neardup/__init__`` does it first) applies the rule.
"""
from __future__ import annotations

import os
import sys

from numba.core import config

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
