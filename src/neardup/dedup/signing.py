"""Stage 1, signing: a batch of texts → one result per document, the same function on every executor
(the local engine's worker processes, Spark's ``mapInArrow`` tasks, ``neardup sign``).

``make_signer(cfg)(texts)`` returns ``(values, empty, sizes)`` — plus the distinct shingle hashes
concatenated when ``verify="exact"`` — where ``values`` is the n×k MinHash matrix (uint32 slots) or
the n SimHash fingerprints / sentence signatures / exact hashes (uint64), ``empty[i]`` says the
document has no features (it is never anyone's duplicate) and ``sizes`` the distinct-shingle set sizes
(containment; None where unused). With ``--spans`` it returns :class:`Both`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from ..config import DedupConfig
from .methods import method_of
from .spans import stage_config


class Both(NamedTuple):
    """A batch's result with ``--spans``: the documents' signing result and the span step's payload."""

    doc: tuple
    span: tuple


def make_signer(cfg: DedupConfig):
    method = method_of(cfg)
    if method.spans:
        return method.signer(cfg)
    if cfg.spans is not None:    # --spans after: one read gives both the signatures and the units
        span_cfg = stage_config(cfg)
        doc_sign, span_sign = make_signer(replace(cfg, spans=None)), method_of(span_cfg).signer(span_cfg)
        return lambda texts: Both(doc_sign(texts), span_sign(texts)[0])
    return method.signer(cfg)
