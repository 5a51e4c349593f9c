"""Repeated lines or paragraphs (:class:`Lines`, ``--method lines``, ``--unit line|paragraph``):
found across the corpus and removed from the documents by the span step (:mod:`neardup.dedup.spans`),
which also signs them (each document's units: hash, place, tokens)."""
from __future__ import annotations

from .base import SpanMethod


class Lines(SpanMethod):
    name = "lines"

    def signs(self, cfg):
        return f"hash each {cfg.unit} of the text (normalised for comparison; the bytes are kept as they are)"

    def finds(self, cfg):
        where = "in any document, also within one" if cfg.min_docs == 1 else f"in {cfg.min_docs} or more documents"
        return f"remove each {cfg.unit} repeated {where}, after its first occurrence"


__all__ = ["Lines"]
