"""The command line: one module per command (``sign``, ``dedup``, ``pairs``, ``compare``, ``lsh``, ``eval``,
``index``, ``serve``, ``warmup``), all registered on the group :func:`main`; :func:`entry` is the console script.

What every command shares lives here: user errors (:class:`~neardup.errors.NeardupError` and the
operating system's) are one line and exit status 1, any other exception keeps its traceback, and
SIGTERM stops a run like Ctrl-C.
"""
from __future__ import annotations

from . import compare, dedup, evaluate, explain, idf, index, lsh, pairs, serve, sign, warmup  # noqa: F401  (each registers its command on main)
from .group import ParameterError, entry, main

main.add_command(evaluate.eval_cmd)

__all__ = ["ParameterError", "compare", "dedup", "entry", "evaluate", "lsh", "main", "sign"]
