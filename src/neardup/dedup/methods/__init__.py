"""The dedup methods as strategies, one module each — :mod:`.minhash`, :mod:`.simhash`,
:mod:`.sentences`, :mod:`.exact`, :mod:`.lines`, :mod:`.substrings` — each a
:class:`~.base.Method`: its signer, signature layout, finder, index and signature parameters. The
steps of a run ask :func:`method_of` for the run's method instead of branching on its name."""
from __future__ import annotations

from ...config import ResolvedConfig
from .base import Method
from .exact import Exact
from .lines import Lines
from .minhash import MinHash
from .sentences import Sentences
from .simhash import SimHash
from .substrings import Substrings

METHODS: dict[str, Method] = {m.name: m for m in (MinHash(), SimHash(), Sentences(), Exact(), Lines(), Substrings())}


def method_of(cfg) -> Method:
    """The :class:`Method` of a resolved configuration (the steps take no other) or of a method's name."""
    if isinstance(cfg, str):
        return METHODS[cfg]
    if not isinstance(cfg, ResolvedConfig):
        raise TypeError(f"the dedup's steps take a resolved configuration (DedupConfig(...).resolved()); got "
                        f"{type(cfg).__name__}")
    return METHODS[cfg.method]


__all__ = ["METHODS", "Method", "method_of"]
