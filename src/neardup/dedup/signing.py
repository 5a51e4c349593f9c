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

import numpy as np

from ..config import DedupConfig, simhash_verified
from ..errors import ConfigError
from ..index.disk_simhash import SKETCH_SLOTS, pack_sketches, sketcher
from ..sketches.sentences import SentenceSigner, exact_hash
from ..sketches.simhash import feature_signer
from ..text.normalize import Normalizer
from .spans import SPAN_METHODS, stage_config
from .spans import make_signer as span_signer
from .verify import minhasher


class Both(NamedTuple):
    """A batch's result with ``--spans``: the documents' signing result and the span step's payload."""

    doc: tuple
    span: tuple


def make_signer(cfg: DedupConfig):
    if cfg.method in SPAN_METHODS:
        return span_signer(cfg)
    if cfg.spans is not None:    # --spans after: one read gives both the signatures and the units
        doc_sign, span_sign = make_signer(replace(cfg, spans=None)), span_signer(stage_config(cfg))
        return lambda texts: Both(doc_sign(texts), span_sign(texts)[0])
    if cfg.method == "minhash":
        hasher = minhasher(cfg)
        need_sizes = cfg.metric == "containment"
        exact = cfg.verify == "exact"

        def sign(texts):
            if hasher.scheme.startswith("datasketch"):
                if exact:
                    raise ConfigError("verify='exact' works with the native schemes (oph, permutation)")
                sig = hasher.sign_batch(texts).values
                sizes = np.array([len(set(hasher.shingler.shingles(t))) for t in texts], dtype=np.int64)
                return sig, sizes == 0, sizes
            if not (exact or need_sizes):
                sigs, sizes = hasher.sign_batch_sizes(texts)
                return sigs.values, sizes == 0, sizes
            feats = hasher.shingler.features(texts)
            sig = hasher.sign_features(feats).values
            if exact:  # distinct shingle hashes travel along: 8 bytes per distinct shingle
                u = feats.unique()
                return sig, feats.sizes() == 0, u.sizes(), u.hashes
            return sig, feats.sizes() == 0, feats.unique().sizes()
        return sign
    if cfg.method == "simhash":
        features = feature_signer(cfg.tokenizer, cfg.ngram, cfg.weighting, cfg.idf, cfg.top_n, cfg.compat,
                                  cfg.convert, user_dict=cfg.user_dict, stop_words=cfg.stop_words)
        sketches = None
        if simhash_verified(cfg) and cfg.index is not None:   # the sketches a verified index stores with each
            sketches = sketcher(SKETCH_SLOTS, cfg.convert)

        def sign(texts):
            fps, sizes = features(texts)
            fps = np.asarray(fps, dtype=np.uint64)
            if sketches is not None:       # (n, 1 + 16) words: the fingerprint, then the sketch
                fps = pack_sketches(fps, sketches.sign_batch(list(texts)).values, SKETCH_SLOTS)
            return fps, np.asarray(sizes) == 0, None
        return sign
    if cfg.method == "sentences":
        ss = SentenceSigner(n=cfg.sentences, convert=cfg.convert)

        def sign(texts):
            sig = ss.sign_batch(texts)
            return sig, sig == 0, None
        return sign

    def sign(texts):
        norm = Normalizer(convert=cfg.convert)
        empty = np.array([not norm(t) for t in texts], dtype=bool)
        return np.array([exact_hash(t, norm) for t in texts], dtype=np.uint64), empty, None
    return sign
