"""Repeated exact substrings (:class:`Substrings`, ``--method substrings``): found by suffix arrays
over the corpus and removed from the documents by the span step (:mod:`neardup.dedup.spans`), whose
payload is each document's UTF-8 bytes."""
from __future__ import annotations

from .base import SpanMethod


class Substrings(SpanMethod):
    name = "substrings"

    def signs(self, cfg):
        return "keep each text's UTF-8 bytes for the suffix array"

    def finds(self, cfg):
        return f"remove exact repeats of {cfg.min_length} bytes or more (suffix array), after their first occurrence"

    def warm_ups(self, cfg, explicit):
        return ("stretches",)


__all__ = ["Substrings"]
