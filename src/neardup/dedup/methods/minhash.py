"""MinHash (:class:`MinHash`): k-slot signatures of the shingle sets, LSH banding for candidates,
each candidate verified by its estimate (exactly near the threshold with ``--verify borderline``),
clusters by bounded linkage; Jaccard or containment; indexes :class:`~neardup.index.disk.DiskIndex`
and :class:`~neardup.index.disk.ContainmentDiskIndex`.

:func:`find_minhash_duplicates`: identical signature rows are linked first (similarity 1.0), so n
copies of a document cost O(n), not O(n²); LSH banding proposes candidate pairs among the distinct
rows; each candidate is verified — estimated Jaccard from the full signatures ≥ t, exact Jaccard /
containment on the shingles when ``features`` are given, or exactly only near t
(``verify="borderline"``) — and the verified graph is cut into clusters. Empty documents are never
duplicates.
"""
from __future__ import annotations

import time

import numpy as np

from ...clusters import SimilarityOracle
from ...clusters.cluster import LINKAGE_SAMPLE
from ...config import DedupConfig
from ...errors import ConfigError
from ...features.shingles import Features
from ...index.disk import ContainmentDiskIndex, DiskIndex, IndexConfigError
from ...similarity.estimates import minhash_similarity
from ...sketches.minhash import _DTYPES, Signatures, empty_value, jaccard_rows
from ..candidates import (
    MAX_BUCKET,
    LSHParams,
    candidate_pairs,
    choose_params,
    containment_candidate_pairs,
    containment_lsh,
    identical_rows,
)
from ..finish import ROW_CONTAINED, FinishRule, finish
from ..progress import begin
from ..result import DuplicateResult, fixed_first, unfix
from ..step import Step
from ..verify import (
    CANDIDATE,
    ESTIMATE,
    EXACT,
    IDENTICAL,
    METRICS,
    VERIFY,
    decide_borderline,
    exact_pairs_from_texts,
    exact_similarity,
    minhasher,
)
from .base import Method

VERIFY_CHUNK = 1 << 21      # candidate pairs estimated per call: a progress step, long enough for the threads


def _empty_rows(sigs: Signatures) -> np.ndarray:
    """Rows that are the empty signature (every slot the empty value): the rows whose first slot is,
    checked whole (no n × k temporary: 1.28 GB and 4 s at 10 M documents)."""
    values = sigs.values
    e = values.dtype.type(empty_value(sigs.scheme))
    out = np.zeros(values.shape[0], dtype=bool)
    if values.ndim != 2 or values.shape[1] == 0:
        return np.all(values == e, axis=-1) if values.ndim == 2 else out
    maybe = np.flatnonzero(values[:, 0] == e)
    out[maybe] = np.all(values[maybe] == e, axis=1)
    return out


def minhash_pair_similarity(metric: str, scheme: str | None, values, sizes=None, features=None,
                            exact: bool = False):
    """``similarity(a, b)`` of row pairs by MinHash's rule: the Jaccard estimate of their signatures
    (containment: the larger containment derived from it and the set sizes); with ``exact``, the exact
    value on the shingle sets ``features``."""
    if exact:
        return lambda a, b: exact_similarity(features, a, b, metric)

    def similarity(a, b):
        j = jaccard_rows(values, a, b, scheme)
        return j if metric == "jaccard" else minhash_similarity(j, sizes[a], sizes[b], metric)
    return similarity


def minhash_linkage_oracle(metric: str, scheme: str | None, values, features=None,
                           exact: bool = False) -> SimilarityOracle:
    """What bounded linkage compares: the signatures, or the exact shingle sets; nothing for
    containment (not symmetric: its merges follow the verified pairs)."""
    if metric != "jaccard":
        return SimilarityOracle.equal()
    if exact:
        u = features.unique()
        return SimilarityOracle.exact(u.hashes, u.offsets)
    return SimilarityOracle.minhash(values, empty_value(scheme))


def _clustering(cfg, members: str, containment: bool = False) -> str:
    """The plan's words for the clustering of ``cfg`` (MinHash's and SimHash's); ``members``: how close
    bounded linkage keeps a cluster's members."""
    if containment:
        rule = "a document is removed only for a kept document that holds it"
    elif cfg.linkage == "bounded":
        rule = f"bounded linkage (most similar pairs first; members stay {members})"
    else:
        rule = "connected components"
    return f"{rule}; keep {cfg.keep}"


def find_minhash_duplicates(sigs: Signatures, threshold: float = 0.8, *, lsh: LSHParams | None = None,
                            lsh_mode: str = "recall", recall: float = 0.99, metric: str = "jaccard",
                            verify: str = "minhash", features: Features | None = None,
                            sizes: np.ndarray | None = None, keep: str = "first", lengths=None, keys=None,
                            linkage: str = "bounded", max_drift: float | None = 0.05, sample: int = LINKAGE_SAMPLE,
                            max_bucket: int = MAX_BUCKET, fixed: int = 0, exact_pairs=None) -> DuplicateResult:
    """Clusters of near-duplicates among the rows of ``sigs``.

    ``metric="containment"`` accepts a pair when either document is at least ``threshold``
    contained in the other (needs ``sizes`` — distinct shingles per document — or ``features``).
    ``verify="exact"`` checks candidates on ``features``; ``"none"`` accepts every candidate;
    ``"borderline"`` decides a candidate by its estimate unless the estimate is within the band of
    :func:`borderline_mask` around the threshold, where ``exact_pairs(lo, hi)`` (the exact
    similarity of those pairs, from their texts) decides; a fixed row is checked through the new row
    identical to it (:func:`fixed_aliases`), and without one its pairs keep the estimate.
    ``linkage="bounded"`` (default) merges verified pairs most-similar first and refuses merges that
    would put documents below t − ``max_drift`` together (see :mod:`neardup.clusters`);
    ``"components"`` is plain union–find. The first ``fixed`` rows are documents decided before
    (an index's): never linked to each other, and kept over any other row of their cluster.
    """
    if metric not in METRICS:
        raise ConfigError(f"metric must be one of {METRICS}, got {metric!r}")
    if sigs.scheme == "bottomk":
        raise ConfigError("bottom-k sketches hold the k smallest hashes in sorted order, so slot j of two "
                          "sketches is not the same event and LSH banding does not apply; use scheme "
                          "'oph' or 'permutation' to find duplicates (bottom-k is for estimation)")
    if verify not in VERIFY:
        raise ConfigError(f"verify must be one of {VERIFY}, got {verify!r}")
    if verify == "exact" and features is None:
        raise ConfigError("verify='exact' needs the documents' features")
    if verify == "borderline" and exact_pairs is None and features is None:
        raise ConfigError("verify='borderline' needs exact_pairs (exact similarity of given pairs) or features")
    if metric == "containment" and sizes is None:
        if features is None:
            raise ConfigError("metric='containment' needs sizes (distinct shingles per document) or features")
        sizes = features.unique().sizes()
    timings = {}
    t0 = time.perf_counter()
    n = len(sigs)
    step = begin("identical", n, unit="doc")
    values = sigs.values
    params = lsh or choose_params(threshold, sigs.num_perm, lsh_mode, recall)
    empty = _empty_rows(sigs)
    same = identical_rows(values)
    same[empty] = np.flatnonzero(empty)
    dup = np.flatnonzero(same != np.arange(n))
    distinct = np.flatnonzero((same == np.arange(n)) & ~empty)
    step.end(n, copies=int(dup.shape[0]), distinct=int(distinct.shape[0]))
    timings["identical"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    if metric == "containment" and params.mode != "explicit":
        step = begin("candidates", int(distinct.shape[0]), unit="doc")
        lo, hi = containment_candidate_pairs(values, sizes, threshold, params.mode, recall, distinct)
        params = containment_lsh(threshold, sigs.num_perm, params.mode, recall)
        step.end(int(distinct.shape[0]), pairs=int(lo.shape[0]))
    else:       # progress band by band: the rows are the distinct documents bucketed
        step = begin("candidates", params.b, unit="band")
        step.rows = int(distinct.shape[0])
        lo, hi = candidate_pairs(values, params.b, params.r, max_bucket=max_bucket, rows=distinct, done=step.update)
        step.end(params.b, pairs=int(lo.shape[0]))
    timings["candidates"] = time.perf_counter() - t0
    n_candidates = int(lo.shape[0])

    t0 = time.perf_counter()
    step = begin("verify", n_candidates, unit="pair")
    exact = verify == "exact" and features is not None
    similarity = minhash_pair_similarity(metric, sigs.scheme, values, sizes, features, exact)
    border = {}
    parts = []
    for start in range(0, max(1, lo.shape[0]), VERIFY_CHUNK):   # in stretches: progress as pairs are estimated
        parts.append(similarity(lo[start:start + VERIFY_CHUNK], hi[start:start + VERIFY_CHUNK]))
        step.update(min(VERIFY_CHUNK, lo.shape[0] - start))
    sim = parts[0] if len(parts) == 1 else np.concatenate(parts)
    how = np.full(lo.shape[0], {"none": CANDIDATE, "exact": EXACT}.get(verify, ESTIMATE), dtype=np.uint8)
    if verify == "none":
        ok = np.ones(lo.shape[0], dtype=bool)
    else:
        if verify == "borderline":     # every candidate estimated: the band near t is decided next, exactly
            step.end(n_candidates)
            step = begin("borderline", n_candidates, unit="pair")
            sim, border, checked = decide_borderline(sim, values, lo, hi, sizes, sigs, threshold, metric, fixed,
                                                      features, exact_pairs, same,
                                                      j=sim if metric == "jaccard" else None, copy=False,
                                                      done=step.update)
            how[checked] = EXACT
        ok = sim >= threshold
    lo, hi, sim, how = lo[ok], hi[ok], sim[ok], how[ok]
    step.end(n_candidates, accepted=int(lo.shape[0]), exact=int((how == EXACT).sum()),
             **({"documents": border.get("documents")} if border.get("documents") is not None else {}))
    # identical signatures: linked to the first row with the same values
    lo = np.concatenate([same[dup], lo])
    hi = np.concatenate([dup, hi])
    sim = np.concatenate([np.ones(dup.shape[0]), sim])
    how = np.concatenate([np.full(dup.shape[0], IDENTICAL, dtype=np.uint8), how])
    lo, hi, sim, how = unfix(lo, hi, sim, fixed, how)
    lengths, keys = fixed_first(keep, fixed, n, lengths, keys)
    timings["verify"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    step = begin("clusters", n, unit="doc")
    oracle = minhash_linkage_oracle(metric, sigs.scheme, values, features, exact) if linkage == "bounded" else None
    done = finish(n, lo, hi, sim, how, similarity, threshold=threshold, max_drift=max_drift, linkage=linkage,
                  keep=keep, lengths=lengths, keys=keys, oracle=oracle, containment=metric == "containment",
                  sizes=sizes, fixed=fixed, sample=sample)
    step.end(n, pairs=int(lo.shape[0]))
    timings["clusters"] = time.perf_counter() - t0
    if border:
        timings["borderline"] = border.pop("seconds")
        for part in ("sets", "pairs"):     # the band's re-read and its pair merges, when the caller timed them
            if f"seconds_{part}" in border:
                timings[f"borderline_{part}"] = border.pop(f"seconds_{part}")
    info = {"method": "minhash", "threshold": threshold, "b": params.b, "r": params.r, "lsh_mode": params.mode,
            "metric": metric, "verify": verify, "keep": keep, "linkage": linkage, "max_drift": max_drift,
            "num_perm": sigs.num_perm,
            "scheme": sigs.scheme, "seed": sigs.seed, "empty_documents": int(empty.sum())}
    if border:
        info["borderline"] = border
    if metric == "containment":
        info["containment"] = {"removed_as_contained": int((done.decided == ROW_CONTAINED).sum()),
                               "keep_policy_overridden": int(done.overridden[fixed:].sum())}
    return DuplicateResult(done.clusters, lo, hi, sim, n_candidates, info, timings, how)


class MinHash(Method):
    name = "minhash"
    column = "minhash"
    sizes = True

    def dtype(self, cfg):
        return np.dtype(_DTYPES[cfg.scheme])

    def slots(self, cfg):
        return int(cfg.num_perm)

    def signer(self, cfg: DedupConfig):
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

    def value_signer(self, cfg):
        """The signatures without the set sizes (a datasketch scheme would count them in Python)."""
        hasher = minhasher(cfg)
        return lambda texts: hasher.sign_batch(texts).values

    def text_checks(self, cfg, texts_of, n, fixed, sets_of=None, spill=None):
        """``--verify borderline``: the exact similarity of the band's pairs, from their texts."""
        if cfg.verify == "borderline" and texts_of is not None:
            return exact_pairs_from_texts(cfg, texts_of, fixed, sets_of, spill), None
        return None, None

    def find(self, values, empty, sizes, features, cfg, lengths, keys, fixed, exact_pairs=None, sets_of=None):
        sigs = Signatures(values, cfg.scheme, cfg.seed)
        lsh = choose_params(cfg.threshold, cfg.num_perm, cfg.lsh_mode, cfg.recall, cfg.bands, cfg.rows)
        return find_minhash_duplicates(sigs, cfg.threshold, lsh=lsh, metric=cfg.metric, sizes=sizes,
                                       verify=cfg.verify, features=features, keep=cfg.keep, lengths=lengths, keys=keys,
                                       linkage=cfg.linkage, max_drift=cfg.max_drift, fixed=fixed,
                                       exact_pairs=exact_pairs)

    def index_kind(self, cfg):
        """``containment`` with ``--metric containment`` (set sizes kept, bands per size ratio), else ``minhash``."""
        return "containment" if cfg.metric == "containment" else "minhash"

    def create_index(self, path, cfg, exist_ok):
        if cfg.metric == "containment":
            if cfg.bands is not None or cfg.rows is not None:
                raise IndexConfigError(f"{path}: --bands/--rows are not used by a containment index (it bands each "
                                  "size ratio for itself); leave them unset")
            return ContainmentDiskIndex.create(path, threshold=cfg.threshold, num_perm=cfg.num_perm,
                                               scheme=cfg.scheme, seed=cfg.seed, tokenizer=cfg.tokenizer,
                                               ngram=cfg.ngram, mode="ensemble" if cfg.lsh_mode == "datasketch"
                                               else "recall", recall=cfg.recall, user_dict=cfg.user_dict,
                                               exist_ok=exist_ok)
        lsh = choose_params(cfg.threshold, cfg.num_perm, cfg.lsh_mode, cfg.recall, cfg.bands, cfg.rows)
        return DiskIndex.create(path, threshold=cfg.threshold, num_perm=cfg.num_perm, scheme=cfg.scheme,
                                seed=cfg.seed, tokenizer=cfg.tokenizer, ngram=cfg.ngram, b=lsh.b, r=lsh.r,
                                lsh_mode=cfg.lsh_mode, recall=cfg.recall, user_dict=cfg.user_dict,
                                exist_ok=exist_ok)

    def finish_rule(self, cfg):
        exact = cfg.verify == "exact"
        return FinishRule(cfg.threshold, cfg.max_drift, cfg.linkage,
                          lambda values, sizes, features: minhash_pair_similarity(cfg.metric, cfg.scheme, values,
                                                                                  sizes, features, exact),
                          lambda values, features: minhash_linkage_oracle(cfg.metric, cfg.scheme, values, features,
                                                                          exact),
                          containment=cfg.metric == "containment", sets=exact)

    def signs(self, cfg):
        return (f"normalise; {cfg.tokenizer} {cfg.ngram}-gram shingles; MinHash ({cfg.scheme}, k = {cfg.num_perm}, "
                f"seed {cfg.seed})")

    def steps(self, cfg):
        t, k = cfg.threshold, cfg.num_perm
        containment = cfg.metric == "containment"
        if containment and cfg.bands is None:
            lsh = containment_lsh(t, k, cfg.lsh_mode, cfg.recall)
            bands = f"LSH per size ratio (containment; up to {lsh.b} bands of {lsh.r} rows)"
        else:
            lsh = choose_params(t, k, cfg.lsh_mode, cfg.recall, cfg.bands, cfg.rows)
            bands = f"LSH, {lsh.b} bands of {lsh.r} rows"
        measure = "containment (from the Jaccard estimate and the set sizes)" if containment else "Jaccard estimate"
        verify = {"minhash": f"each pair's {measure} from the {k} slots >= {t}",
                  "borderline": f"each pair's {measure} from the {k} slots >= {t}; those within a few standard "
                                f"errors of {t} decided exactly, on shingles re-read from their texts",
                  "exact": f"each pair's exact {'containment' if containment else 'Jaccard'} of its shingle sets "
                           f">= {t}",
                  "none": "every candidate pair accepted unchecked"}[cfg.verify]
        return (Step("identical", "documents", "signature", "documents with equal signatures link to the first"),
                Step("candidates", "documents", "band key", f"{bands}: documents sharing a band's key are pairs"),
                Step("verify", "candidate pairs", None, verify),
                Step("clusters", "verified pairs", "component",
                     _clustering(cfg, f">= {t:g} - {cfg.max_drift:g}", containment)))

    def warm_ups(self, cfg, explicit):
        return ("linkage", *(("band",) if cfg.verify == "borderline" else ()), *(("index",) if explicit else ()))

    def sig_params(self, cfg):
        return {"num_perm": cfg.num_perm, "scheme": cfg.scheme, "seed": cfg.seed, "tokenizer": cfg.tokenizer,
                "ngram": cfg.ngram, "convert": cfg.convert}


__all__ = ["VERIFY_CHUNK", "MinHash", "find_minhash_duplicates", "minhash_linkage_oracle", "minhash_pair_similarity"]
