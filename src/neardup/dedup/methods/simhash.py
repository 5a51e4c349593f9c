"""SimHash (:class:`SimHash`): one 64-bit fingerprint of weighted features per document (for Chinese,
jieba segmentation and TF-IDF keywords). The classic rule (``--bits K`` or ``--compat``): pairs within
Hamming distance k, all found by permuted tables (exact). Verified SimHash (the default): pairs within
the candidate radius, each decided by the exact Jaccard of the two documents' shingle sets, clustered
as MinHash's. Indexes :class:`~neardup.index.disk.SimHashDiskIndex` and
:class:`~neardup.index.disk.VerifiedSimHashDiskIndex` (whose rows keep a 32-slot sketch).
"""
from __future__ import annotations

import time

import numpy as np

from ..._arrays import sorted_unique
from ...clusters import SimilarityOracle
from ...clusters.cluster import LINKAGE_SAMPLE
from ...config import DedupConfig, simhash_verified
from ...errors import ConfigError
from ...index.disk import SimHashDiskIndex, VerifiedSimHashDiskIndex
from ...index.disk_simhash import SKETCH_SLOTS, pack_sketches, sketch_jaccard, sketcher, unpack_sketches
from ...index.simhash_index import all_pairs
from ...sketches.simhash import feature_signer, hamming_array
from ...text.dictionaries import file_keys
from ..finish import FinishRule, finish
from ..progress import begin
from ..result import DuplicateResult, fixed_first, unfix
from ..step import Step
from ..verify import ESTIMATE, EXACT, IDENTICAL, band_features, clustering_rule, exact_similarity, simhash_drift_bits
from .base import Method
from .minhash import _clustering, minhash_linkage_oracle, minhash_pair_similarity


def _fingerprints(values) -> np.ndarray:
    """SimHash fingerprints, one per row, from a column or an (n, 1) matrix."""
    v = np.asarray(values)
    return v if v.ndim == 1 else v[:, 0]


def simhash_pair_similarity(values):
    """``similarity(a, b)`` of row pairs by classic SimHash's rule: 1 − d/64 (d: Hamming distance)."""
    fps = _fingerprints(values)
    return lambda a, b: 1.0 - hamming_array(fps[a], fps[b]) / 64.0


def simhash_linkage_oracle(values) -> SimilarityOracle:
    """What bounded linkage compares under classic SimHash: the fingerprints' distances."""
    return SimilarityOracle.simhash(_fingerprints(values))


def _radius_pairs(fps: np.ndarray, valid, k: int):
    """(valid rows, lo, hi, distance (int64), copies, pairs found): every pair of valid fingerprints
    within ``k`` bits (permuted tables, exact), lo < hi; identical fingerprints collapse to their first
    copy — ``copies`` links from it at distance 0, first (linear in the copies, like MinHash rows)."""
    idx = np.arange(fps.shape[0]) if valid is None else np.flatnonzero(valid)
    res = all_pairs(fps[idx], k=k, collapse_identical=True)
    same = idx[np.asarray(res.rep, dtype=np.int64)]
    copy = same != idx
    lo = np.concatenate([same[copy], idx[np.asarray(res.i, dtype=np.int64)]])
    hi = np.concatenate([idx[copy], idx[np.asarray(res.j, dtype=np.int64)]])
    dist = np.concatenate([np.zeros(int(copy.sum()), np.int64), np.asarray(res.dist, dtype=np.int64)])
    return idx, np.minimum(lo, hi), np.maximum(lo, hi), dist, int(copy.sum()), int(res.i.shape[0])


def find_simhash_duplicates(fps: np.ndarray, k: int = 3, valid: np.ndarray | None = None, keep: str = "first",
                            lengths=None, keys=None, linkage: str = "bounded", max_drift_bits: int | None = 2,
                            sample: int = LINKAGE_SAMPLE, fixed: int = 0) -> DuplicateResult:
    """Clusters of fingerprints within Hamming distance ``k`` (all pairs by permuted tables, exact).
    Similarity reported is 1 − d/64. ``linkage="bounded"`` joins groups only while all sampled
    members stay within k + ``max_drift_bits`` bits of each other."""
    fps = np.ascontiguousarray(fps, dtype=np.uint64)
    n = fps.shape[0]
    t0 = time.perf_counter()
    step = begin("candidates", n, unit="doc")
    idx, lo, hi, dist, copies, found = _radius_pairs(fps, valid, k)
    dist = dist.astype(np.float64)
    how = np.concatenate([np.full(copies, IDENTICAL, dtype=np.uint8), np.full(found, ESTIMATE, dtype=np.uint8)])
    lo, hi, dist, how = unfix(lo, hi, dist, fixed, how)
    lengths, keys = fixed_first(keep, fixed, n, lengths, keys)
    timings = {"candidates": time.perf_counter() - t0}
    step.end(n, pairs=int(lo.shape[0]))
    t0 = time.perf_counter()
    step = begin("clusters", n, unit="doc")

    drift = None if max_drift_bits is None else max_drift_bits / 64.0
    oracle = simhash_linkage_oracle(fps) if linkage == "bounded" else None
    done = finish(n, lo, hi, 1.0 - dist / 64.0, how, simhash_pair_similarity(fps), threshold=1.0 - k / 64.0,
                  max_drift=drift, linkage=linkage, keep=keep, lengths=lengths, keys=keys, oracle=oracle,
                  sample=sample)
    step.end(n, pairs=int(lo.shape[0]))
    timings["clusters"] = time.perf_counter() - t0
    return DuplicateResult(done.clusters, lo, hi, 1.0 - dist / 64.0, found,
                           {"method": "simhash", "bits": k, "keep": keep, "linkage": linkage,
                            "max_drift_bits": max_drift_bits, "fingerprints": int(sorted_unique(fps[idx]).size)},
                           timings, how)


def find_simhash_verified(fps: np.ndarray, sets_of, threshold: float, k_c: int, valid: np.ndarray | None = None,
                          keep: str = "first", lengths=None, keys=None, linkage: str = "bounded",
                          max_drift: float | None = 0.05, sample: int = LINKAGE_SAMPLE, fixed: int = 0,
                          fixed_similarity=None, sketches=None) -> DuplicateResult:
    """Verified SimHash: candidates are the pairs of fingerprints within ``k_c`` bits (permuted tables,
    exact), each decided by the exact Jaccard of the two documents' shingle sets ≥ ``threshold``; the
    clusters are MinHash's with an exact check (bounded linkage on the exact sets). ``sets_of(rows)``:
    a :class:`Features` over all the rows, holding (at least) the sets of ``rows``. The first ``fixed``
    rows (an index's documents) have no text: their pairs with a new row are decided by
    ``fixed_similarity(lo, hi)`` (the index's stored sketch: an estimate), and bounded linkage compares
    a fixed row by ``sketches`` (every row's, the (n, slots) sketch matrix)."""
    fps = np.ascontiguousarray(fps, dtype=np.uint64)
    n = fps.shape[0]
    t0 = time.perf_counter()
    step = begin("candidates", n, unit="doc")
    idx, lo, hi, dist, _, _ = _radius_pairs(fps, valid, k_c)
    lo, hi, dist = unfix(lo, hi, dist, fixed)
    timings = {"candidates": time.perf_counter() - t0}
    step.end(n, pairs=int(lo.shape[0]))
    t0 = time.perf_counter()
    step = begin("verify", int(lo.shape[0]), unit="pair")
    ours = lo >= fixed
    feats = sets_of(sorted_unique(np.concatenate([lo[ours], hi])))
    sim = np.zeros(lo.shape[0], dtype=np.float64)
    how = np.full(lo.shape[0], EXACT, dtype=np.uint8)
    if ours.any():
        sim[ours] = exact_similarity(feats, lo[ours], hi[ours], "jaccard")
    if (~ours).any():
        sim[~ours] = fixed_similarity(lo[~ours], hi[~ours])
        how[~ours] = ESTIMATE
    ok = sim >= threshold
    n_candidates = int(lo.shape[0])
    lo, hi, sim, how, dist = lo[ok], hi[ok], sim[ok], how[ok], dist[ok]
    lengths, keys = fixed_first(keep, fixed, n, lengths, keys)
    step.end(n_candidates, accepted=int(lo.shape[0]), exact=int((how == EXACT).sum()))
    timings["verify"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    step = begin("clusters", n, unit="doc")
    exact = minhash_pair_similarity("jaccard", None, None, features=feats, exact=True)
    if fixed:           # a fixed row's similarity to anything: its sketch's estimate (no text)
        def similarity(a, b, _exact=exact):
            a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
            out = np.zeros(a.shape[0])
            f = (np.minimum(a, b) < fixed)
            if (~f).any():
                out[~f] = _exact(a[~f], b[~f])
            if f.any():
                out[f] = fixed_similarity(np.minimum(a, b)[f], np.maximum(a, b)[f])
            return out
    else:
        similarity = exact
    oracle = None
    if linkage == "bounded":
        oracle = (SimilarityOracle.exact_or_sketch(feats.hashes, feats.offsets, sketches, 0) if fixed
                  else minhash_linkage_oracle("jaccard", None, None, feats, exact=True))
    done = finish(n, lo, hi, sim, how, similarity, threshold=threshold, max_drift=max_drift,
                  linkage=linkage, keep=keep, lengths=lengths, keys=keys, oracle=oracle, sample=sample)
    step.end(n, pairs=int(lo.shape[0]))
    timings["clusters"] = time.perf_counter() - t0
    counts = np.bincount(dist, minlength=k_c + 1)[:k_c + 1]
    return DuplicateResult(done.clusters, lo, hi, sim, n_candidates,
                           {"method": "simhash", "verified": True, "candidate_bits": k_c, "threshold": threshold,
                            "keep": keep, "linkage": linkage, "max_drift": max_drift,
                            "fingerprints": int(sorted_unique(fps[idx]).size),
                            "accepted_distances": counts.tolist()},
                           timings, how)


class SimHash(Method):
    name = "simhash"
    column = "simhash"

    def row_bytes(self, cfg):
        """A verified index's rows hold the fingerprint and its sketch (1 + 16 words); else one word."""
        return 8 * (1 + SKETCH_SLOTS) if cfg.index is not None and simhash_verified(cfg) else 8

    def signer(self, cfg: DedupConfig):
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

    def text_checks(self, cfg, texts_of, n, fixed, sets_of=None, spill=None):
        """Verified SimHash: the shingle sets its candidates are decided on, from their texts."""
        if not simhash_verified(cfg):
            return None, None
        if texts_of is None:
            raise ConfigError("verified SimHash checks its candidates on their texts: give texts_of")
        return None, band_features(cfg, texts_of, n, fixed)

    def find(self, values, empty, sizes, features, cfg, lengths, keys, fixed, exact_pairs=None, sets_of=None):
        if simhash_verified(cfg):
            fps, sketches, fixed_similarity = values, None, None
            if values.ndim == 2:           # --index: each row holds its sketch (the fixed rows' only evidence)
                fps = values[:, 0]

                def fixed_similarity(a, b):
                    return sketch_jaccard(values, a, values, b, SKETCH_SLOTS)
                sketches = unpack_sketches(values, SKETCH_SLOTS)
            return find_simhash_verified(fps, sets_of, cfg.threshold, cfg.candidate_bits, valid=~empty,
                                         keep=cfg.keep, lengths=lengths, keys=keys, linkage=cfg.linkage,
                                         max_drift=cfg.max_drift, fixed=fixed, fixed_similarity=fixed_similarity,
                                         sketches=sketches)
        drift_bits = simhash_drift_bits(cfg.max_drift)
        return find_simhash_duplicates(values, cfg.bits, valid=~empty, keep=cfg.keep, lengths=lengths, keys=keys,
                                       linkage=cfg.linkage, max_drift_bits=drift_bits, fixed=fixed)

    def finish_rule(self, cfg):
        """Verified SimHash: MinHash's rule on the exact shingle sets (Jaccard); classic SimHash: within
        k bits (1 − k/64), the drift in whole bits, on the fingerprints."""
        if simhash_verified(cfg):
            return FinishRule(cfg.threshold, cfg.max_drift, cfg.linkage,
                              lambda values, sizes, features: minhash_pair_similarity("jaccard", None, None, None,
                                                                                      features, True),
                              lambda values, features: minhash_linkage_oracle("jaccard", None, None, features, True),
                              sets=True)
        threshold, drift = clustering_rule(cfg)
        return FinishRule(threshold, drift, cfg.linkage,
                          lambda values, sizes, features: simhash_pair_similarity(values),
                          lambda values, features: simhash_linkage_oracle(values))

    def index_kind(self, cfg):
        """``simhash-verified`` (the default rule) or ``simhash`` (the classic: ``--bits`` or ``--compat``)."""
        return "simhash-verified" if simhash_verified(cfg) else "simhash"

    def create_index(self, path, cfg, exist_ok):
        if simhash_verified(cfg):
            return VerifiedSimHashDiskIndex.create(path, candidate_bits=cfg.candidate_bits, threshold=cfg.threshold,
                                                   tokenizer=cfg.tokenizer, ngram=cfg.ngram,
                                                   weighting=cfg.weighting or "tf", top_n=cfg.top_n, idf=cfg.idf,
                                                   user_dict=cfg.user_dict, stop_words=cfg.stop_words,
                                                   exist_ok=exist_ok)
        return SimHashDiskIndex.create(path, max_distance=cfg.bits, tokenizer=cfg.tokenizer, ngram=cfg.ngram,
                                       weighting=cfg.weighting or "tf", top_n=cfg.top_n, idf=cfg.idf,
                                       compat=cfg.compat, user_dict=cfg.user_dict, stop_words=cfg.stop_words,
                                       exist_ok=exist_ok)

    def signs(self, cfg):
        if cfg.compat is not None:
            return f"{cfg.compat}'s features and 64-bit fingerprint, exactly"
        return (f"normalise; {cfg.tokenizer} {cfg.ngram}-gram features, {cfg.weighting or 'tf'} weights; folded into "
                "a 64-bit SimHash")

    def steps(self, cfg):
        if simhash_verified(cfg):
            return (Step("candidates", "documents", "table key", f"permuted tables: every pair of fingerprints "
                                                                 f"within {cfg.candidate_bits} bits (exact)"),
                    Step("verify", "candidate pairs", None, f"each pair's exact Jaccard of word 5-gram shingles >= "
                                                            f"{cfg.threshold}, on texts re-read"),
                    Step("clusters", "verified pairs", "component",
                         _clustering(cfg, f">= {cfg.threshold:g} - {cfg.max_drift:g}")))
        drift = simhash_drift_bits(cfg.max_drift) or 0
        return (Step("candidates", "documents", "table key", f"permuted tables: every pair of fingerprints within "
                                                             f"{cfg.bits} bits, accepted unchecked"),
                Step("clusters", "verified pairs", "component", _clustering(cfg, f"within {cfg.bits} + {drift} bits")))

    def warm_ups(self, cfg, explicit):
        return ("linkage", *(("index",) if explicit else ()))

    def sig_params(self, cfg):
        return {"tokenizer": cfg.tokenizer, "ngram": cfg.ngram, "weighting": cfg.weighting, "idf": cfg.idf,
                "user_dict": cfg.user_dict, "stop_words": cfg.stop_words, "top_n": cfg.top_n, "compat": cfg.compat,
                "convert": cfg.convert, **file_keys(cfg.idf, cfg.user_dict, cfg.stop_words)}


__all__ = ["SimHash", "find_simhash_duplicates", "find_simhash_verified", "simhash_linkage_oracle",
           "simhash_pair_similarity"]
