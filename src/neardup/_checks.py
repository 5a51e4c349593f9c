"""Checks of scalar parameters shared by the public classes: NumPy integers are integers too."""
from __future__ import annotations

import operator

from .errors import ConfigError


def as_int(value, name: str, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as a Python int (``int`` or any NumPy integer; ``bool`` refused), within [lo, hi]."""
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise ConfigError(f"{name} must be an integer, got {value!r}") from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        if lo is not None and hi is not None:
            bounds = f"in [{lo}, {hi}]"
        else:
            bounds = f">= {lo}" if lo is not None else f"<= {hi}"
        raise ConfigError(f"{name} must be an integer {bounds}, got {value!r}")
    return v
