"""Repeated lines or paragraphs (:class:`Lines`, ``--method lines``, ``--unit line|paragraph``):
found across the corpus and removed from the documents by the span step (:mod:`neardup.dedup.spans`),
which also signs them (each document's units: hash, place, tokens)."""
from __future__ import annotations

from .base import SpanMethod


class Lines(SpanMethod):
    name = "lines"


__all__ = ["Lines"]
