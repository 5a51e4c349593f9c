"""Exact duplicates (:class:`Exact`): one 64-bit hash of each document's normalised text; documents
with equal hashes are one cluster (:func:`find_equal_duplicates`, also the finder of sentence
signatures). Empty documents (nothing left after normalising) stay alone."""
from __future__ import annotations

import time

import numpy as np

from ...config import DedupConfig
from ...sketches.sentences import exact_hash
from ...text.normalize import Normalizer
from ..finish import EQUAL_RULE, finish
from ..progress import begin
from ..result import DuplicateResult
from ..step import Step
from ..verify import IDENTICAL
from .base import Method


def find_equal_duplicates(keys: np.ndarray, valid: np.ndarray | None = None, keep: str = "first",
                          lengths=None, user_keys=None) -> DuplicateResult:
    """Clusters of documents with equal signatures (sentence signatures, exact hashes).
    Rows where ``valid`` is False (e.g. empty documents) stay alone."""
    keys = np.asarray(keys, dtype=np.uint64)
    n = keys.shape[0]
    t0 = time.perf_counter()
    step = begin("clusters", n, unit="doc")
    idx = np.arange(n) if valid is None else np.flatnonzero(valid)
    order = idx[np.lexsort((idx, keys[idx]))]
    k = keys[order]
    start = np.ones(order.shape[0], dtype=bool)
    start[1:] = k[1:] != k[:-1]
    first = order[np.maximum.accumulate(np.where(start, np.arange(order.shape[0]), 0))]
    link = first != order
    lo, hi = first[link], order[link]
    how = np.full(lo.shape[0], IDENTICAL, dtype=np.uint8)
    rule = EQUAL_RULE
    done = finish(n, lo, hi, np.ones(lo.shape[0]), how, rule.similarity(keys), threshold=rule.threshold,
                  linkage=rule.linkage, keep=keep, lengths=lengths, keys=user_keys)
    step.end(n, pairs=int(lo.shape[0]))
    return DuplicateResult(done.clusters, lo, hi, np.ones(lo.shape[0]), int(lo.shape[0]),
                           {"method": "equal", "keep": keep}, {"group": time.perf_counter() - t0}, how)


class Exact(Method):
    name = "exact"
    column = "sentences"        # (the uint64 column of `neardup sign`, shared with the sentence signatures)

    def signs(self, cfg):
        return "normalise the text" + (f" ({cfg.convert})" if cfg.convert else "") + "; hash it to 64 bits"

    def steps(self, cfg):
        return (Step("group", "documents", "signature", f"documents with equal signatures are one cluster; keep "
                                                        f"{cfg.keep}"),)

    def signer(self, cfg: DedupConfig):
        def sign(texts):
            norm = Normalizer(convert=cfg.convert)
            empty = np.array([not norm(t) for t in texts], dtype=bool)
            return np.array([exact_hash(t, norm) for t in texts], dtype=np.uint64), empty, None
        return sign

    def find(self, values, empty, sizes, features, cfg, lengths, keys, fixed, exact_pairs=None, sets_of=None):
        return find_equal_duplicates(values, valid=~empty, keep=cfg.keep, lengths=lengths, user_keys=keys)

    def sig_params(self, cfg):
        return {"sentences": cfg.sentences, "convert": cfg.convert}


__all__ = ["Exact", "find_equal_duplicates"]
