"""The longest-n-sentences signature (:class:`Sentences`): one 64-bit hash of each document's n
longest sentences; documents with equal signatures are one cluster (the finder of :mod:`.exact`).
A document with no sentence signs 0 and stays alone."""
from __future__ import annotations

from ...config import DedupConfig
from ...sketches.sentences import SentenceSigner
from .exact import Exact


class Sentences(Exact):
    name = "sentences"

    def signs(self, cfg):
        return (f"split the normalised text into sentences; hash the {cfg.sentences} longest into one 64-bit "
                "signature")

    def signer(self, cfg: DedupConfig):
        ss = SentenceSigner(n=cfg.sentences, convert=cfg.convert)

        def sign(texts):
            sig = ss.sign_batch(texts)
            return sig, sig == 0, None
        return sign


__all__ = ["Sentences"]
