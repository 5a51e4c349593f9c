"""The stages of a run in memory, end to end: signatures → candidates (:mod:`.candidates`) → verified
pairs (:mod:`.verify`) → clusters and the kept document of each (:mod:`neardup.clusters`).

MinHash: identical signature rows are linked first (similarity 1.0), so n copies of a document
cost O(n), not O(n²); LSH banding proposes candidate pairs among the distinct rows; each
candidate is verified — estimated Jaccard from the full signatures ≥ t, exact Jaccard / containment
on the shingles when ``features`` are given, or exactly only near t (``verify="borderline"``) — and
the verified graph is cut into clusters. Empty documents are never duplicates. SimHash: pairs within
Hamming distance k from permuted tables. Sentence signatures and exact hashes: equal values.

:func:`find_run` is the local engine's call: a run's signatures (and an index's matched documents as
fixed rows) → its :class:`DuplicateResult`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .._arrays import sorted_unique
from ..clusters import Clusters, SimilarityOracle
from ..clusters.cluster import LINKAGE_SAMPLE
from ..config import DedupConfig, simhash_verified
from ..errors import ConfigError
from ..features.shingles import Features
from ..index.disk_simhash import SKETCH_SLOTS, sketch_jaccard, unpack_sketches
from ..index.simhash_index import all_pairs
from ..kernels.clusters import components, expand_groups, group_pair_count
from ..similarity.estimates import containment_from_jaccard
from ..sketches.minhash import Signatures, empty_value
from .candidates import (
    MAX_BUCKET,
    LSHParams,
    candidate_pairs,
    choose_params,
    containment_candidate_pairs,
    containment_lsh,
    identical_rows,
)
from .finish import ROW_CONTAINED, finish, linkage_oracle, pair_similarity
from .progress import begin
from .tables import Corpus
from .verify import (
    CANDIDATE,
    ESTIMATE,
    EXACT,
    HOW,
    IDENTICAL,
    METRICS,
    VERIFY,
    band_features,
    borderline_mask,
    borderline_z,
    decide_borderline,
    exact_pairs_from_texts,
    exact_similarity,
    fixed_aliases,
    known_similarity,
    simhash_drift_bits,
)

__all__ = ["CANDIDATE", "ESTIMATE", "EXACT", "HOW", "IDENTICAL", "METRICS", "VERIFY", "DuplicateResult",
           "TooManyPairsError", "borderline_mask", "borderline_z", "containment_from_jaccard", "decide_borderline",
           "find_equal_duplicates", "find_minhash_duplicates", "find_run", "find_simhash_duplicates",
           "fixed_aliases", "join_pairs", "known_similarity", "pairs_table"]

VERIFY_CHUNK = 1 << 21      # candidate pairs estimated per call: a progress step, long enough for the threads


@dataclass
class DuplicateResult:
    """Clusters, and the verified pairs they were cut from: ``pairs_lo[p] < pairs_hi[p]`` (rows),
    their similarity and how each was decided (``pairs_how``, codes into :data:`HOW`). A group of
    rows with identical signatures appears as links from its first row to each other one."""
    clusters: Clusters
    pairs_lo: np.ndarray           # verified pairs (including identical-signature links)
    pairs_hi: np.ndarray
    pairs_sim: np.ndarray
    candidates: int                # LSH candidate pairs among distinct signatures
    params: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    pairs_how: np.ndarray | None = None

    def __repr__(self) -> str:
        c = self.clusters
        kept = int(np.count_nonzero(c.kept))
        return (f"DuplicateResult(rows={len(c)}, clusters={kept}, removed={len(c) - kept}, "
                f"pairs={self.pairs_lo.shape[0]}, candidates={self.candidates})")

    def how(self) -> np.ndarray:
        """Per verified pair how it was decided (codes into :data:`HOW`; identical when unrecorded)."""
        if self.pairs_how is None:
            return np.zeros(self.pairs_lo.shape[0], dtype=np.uint8)
        return self.pairs_how

    def pairs(self, ids=None):
        """The verified pairs as a pyarrow Table: ``a``, ``b`` (rows, a < b; or ``ids[row]`` as
        ``id_a``/``id_b`` when ``ids`` is given), ``similarity``, ``decided`` (:data:`HOW`) and
        ``same_cluster`` (False where bounded linkage refused to merge the pair's clusters), sorted
        by (a, b)."""
        return pairs_table(self, ids)


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
    similarity = pair_similarity("minhash", metric, sigs.scheme, values, sizes, features, exact)
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
    lo, hi, sim, how = _unfix(lo, hi, sim, fixed, how)
    lengths, keys = _fixed_first(keep, fixed, n, lengths, keys)
    timings["verify"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    step = begin("clusters", n, unit="doc")
    oracle = linkage_oracle("minhash", metric, sigs.scheme, values, features, exact) if linkage == "bounded" else None
    done = finish(n, lo, hi, sim, how, similarity, method="minhash", threshold=threshold, max_drift=max_drift,
                  linkage=linkage, keep=keep, lengths=lengths, keys=keys, oracle=oracle, metric=metric, sizes=sizes,
                  fixed=fixed, sample=sample)
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


def _unfix(lo, hi, sim, fixed: int, how=None):
    """Drop the pairs between two fixed rows (lo < hi, so both are fixed when hi is)."""
    if fixed:
        ok = np.maximum(lo, hi) >= fixed
        lo, hi, sim, how = lo[ok], hi[ok], sim[ok], None if how is None else how[ok]
    return (lo, hi, sim) if how is None else (lo, hi, sim, how)


def _fixed_first(keep: str, fixed: int, n: int, lengths, keys):
    """Keep-policy inputs under which the fixed rows win their clusters (``first``: they come first)."""
    if not fixed or keep == "first":
        return lengths, keys
    if keep == "longest":
        lengths = np.asarray(lengths if lengths is not None else np.zeros(n), dtype=np.float64).copy()
        lengths[:fixed] = np.inf
    else:
        keys = np.asarray(keys if keys is not None else np.zeros(n), dtype=np.float64).copy()
        keys[:fixed] = np.inf
    return lengths, keys


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
    done = finish(n, lo, hi, np.ones(lo.shape[0]), how, pair_similarity("equal", "jaccard", None, keys), method="equal",
                  threshold=1.0, keep=keep, lengths=lengths, keys=user_keys)
    step.end(n, pairs=int(lo.shape[0]))
    return DuplicateResult(done.clusters, lo, hi, np.ones(lo.shape[0]), int(lo.shape[0]),
                           {"method": "equal", "keep": keep}, {"group": time.perf_counter() - t0}, how)


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
    idx = np.arange(n) if valid is None else np.flatnonzero(valid)
    # identical fingerprints collapse to their first copy (linear in the copies, like MinHash rows)
    res = all_pairs(fps[idx], k=k, collapse_identical=True)
    same = idx[np.asarray(res.rep, dtype=np.int64)]
    copy = same != idx
    lo = np.concatenate([same[copy], idx[np.asarray(res.i, dtype=np.int64)]])
    hi = np.concatenate([idx[copy], idx[np.asarray(res.j, dtype=np.int64)]])
    dist = np.concatenate([np.zeros(int(copy.sum())), np.asarray(res.dist, dtype=np.float64)])
    how = np.concatenate([np.full(int(copy.sum()), IDENTICAL, dtype=np.uint8),
                          np.full(res.i.shape[0], ESTIMATE, dtype=np.uint8)])
    swap = lo > hi
    lo, hi = np.where(swap, hi, lo), np.where(swap, lo, hi)
    lo, hi, dist, how = _unfix(lo, hi, dist, fixed, how)
    lengths, keys = _fixed_first(keep, fixed, n, lengths, keys)
    timings = {"candidates": time.perf_counter() - t0}
    step.end(n, pairs=int(lo.shape[0]))
    t0 = time.perf_counter()
    step = begin("clusters", n, unit="doc")

    drift = None if max_drift_bits is None else max_drift_bits / 64.0
    oracle = linkage_oracle("simhash", "jaccard", None, fps) if linkage == "bounded" else None
    done = finish(n, lo, hi, 1.0 - dist / 64.0, how, pair_similarity("simhash", "jaccard", None, fps),
                  method="simhash", threshold=1.0 - k / 64.0, max_drift=drift, linkage=linkage, keep=keep,
                  lengths=lengths, keys=keys, oracle=oracle, sample=sample)
    step.end(n, pairs=int(lo.shape[0]))
    timings["clusters"] = time.perf_counter() - t0
    return DuplicateResult(done.clusters, lo, hi, 1.0 - dist / 64.0, int(res.i.shape[0]),
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
    idx = np.arange(n) if valid is None else np.flatnonzero(valid)
    res = all_pairs(fps[idx], k=k_c, collapse_identical=True)
    same = idx[np.asarray(res.rep, dtype=np.int64)]
    copy = same != idx
    lo = np.concatenate([same[copy], idx[np.asarray(res.i, dtype=np.int64)]])
    hi = np.concatenate([idx[copy], idx[np.asarray(res.j, dtype=np.int64)]])
    dist = np.concatenate([np.zeros(int(copy.sum()), np.int64), np.asarray(res.dist, dtype=np.int64)])
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    lo, hi, dist = _unfix(lo, hi, dist, fixed)
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
    lengths, keys = _fixed_first(keep, fixed, n, lengths, keys)
    step.end(n_candidates, accepted=int(lo.shape[0]), exact=int((how == EXACT).sum()))
    timings["verify"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    step = begin("clusters", n, unit="doc")
    exact = pair_similarity("minhash", "jaccard", None, None, features=feats, exact=True)
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
                  else linkage_oracle("minhash", "jaccard", None, None, feats, exact=True))
    done = finish(n, lo, hi, sim, how, similarity, method="minhash", threshold=threshold, max_drift=max_drift,
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


def pairs_table(result: DuplicateResult, ids=None):
    """:meth:`DuplicateResult.pairs`: the verified pairs as a pyarrow Table, one row per pair with
    a < b, sorted by (a, b)."""
    lo = np.asarray(result.pairs_lo, dtype=np.int64)
    hi = np.asarray(result.pairs_hi, dtype=np.int64)
    a, b = np.minimum(lo, hi), np.maximum(lo, hi)
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    rep = np.asarray(result.clusters.cluster, dtype=np.int64)
    n = rep.shape[0]

    def rep_of(x):   # rows from n on (an index's documents, after dedup's remapping) are their own
        return np.where(x < n, rep[np.minimum(x, max(n - 1, 0))] if n else x, x)

    cols = {"a": a, "b": b} if ids is None else {"id_a": [ids[i] for i in a.tolist()],
                                                 "id_b": [ids[i] for i in b.tolist()]}
    how = result.how()[order]
    cols.update(similarity=np.asarray(result.pairs_sim, dtype=np.float64)[order],
                decided=pa.DictionaryArray.from_arrays(pa.array(how.astype(np.int8)), pa.array(list(HOW))),
                same_cluster=rep_of(a) == rep_of(b))
    return pa.table(cols)


class TooManyPairsError(ConfigError):
    """A similarity join would write more pairs than allowed (``max_pairs``)."""


def join_pairs(result: DuplicateResult, n: int, max_pairs: int | None = None):
    """Every pair of the ``n`` rows at or above the threshold (a similarity join), from a result's
    verified pairs: those link groups of rows with identical signatures (keys, fingerprints) to
    their first row, and pairs between the groups' first rows — so the join is each group's c(c − 1)/2
    pairs (similarity 1, ``identical``) plus, per verified pair of groups, their product, with the
    pair's similarity and decision (identical signatures have identical shingle sets but for a
    2⁻³²ᵏ-scale accident, so each such pair's similarity is the groups' pair's). Returns (a, b,
    similarity, decided codes) with a < b, sorted by (a, b); :class:`TooManyPairsError` (before
    allocating them) when there would be more than ``max_pairs``."""
    lo = np.asarray(result.pairs_lo, dtype=np.int64)
    hi = np.asarray(result.pairs_hi, dtype=np.int64)
    sim = np.asarray(result.pairs_sim, dtype=np.float64)
    how = result.how()
    ident = how == IDENTICAL
    labels = components(n, lo[ident], hi[ident])
    groups, gid = np.unique(labels, return_inverse=True)
    members = np.argsort(gid, kind="stable").astype(np.int64)
    count = np.bincount(gid, minlength=groups.shape[0]).astype(np.int64)
    start = np.cumsum(count) - count          # one per group (none for no rows: the kernels read count[g])
    ga, gb = gid[lo[~ident]], gid[hi[~ident]]
    gs, gh = sim[~ident], how[~ident]
    keep = ga != gb
    ga, gb, gs, gh = np.minimum(ga, gb)[keep], np.maximum(ga, gb)[keep], gs[keep], gh[keep]
    ga, first = np.unique(ga * np.int64(groups.shape[0]) + gb, return_index=True)   # one pair per two groups
    gb, gs, gh = ga % groups.shape[0], gs[first], gh[first]
    ga //= groups.shape[0]
    total = int(group_pair_count(start, count, ga, gb))
    if max_pairs is not None and total > max_pairs:
        raise TooManyPairsError(f"the join has {total:,} pairs, more than the {max_pairs:,} allowed (groups of "
                                f"identical documents give every pair among their members; the largest has "
                                f"{int(count.max()):,} members)")
    a = np.empty(total, dtype=np.int64)
    b = np.empty(total, dtype=np.int64)
    s = np.empty(total, dtype=np.float64)
    h = np.empty(total, dtype=np.uint8)
    expand_groups(members, start, count, ga, gb, gs, gh.astype(np.uint8), np.uint8(IDENTICAL), a, b, s, h)
    order = np.lexsort((b, a))
    return a[order], b[order], s[order], h[order]


def find_run(values, empty, sizes, features, cfg: DedupConfig, corpus: Corpus, part=None,
          texts_of=None, sets_of=None, spill: str | None = None) -> DuplicateResult:
    """Clusters of the documents; with ``part`` (indexed documents the new rows matched) those come
    first as fixed rows, and the result is given back over the new documents only, an indexed
    representative p appearing as document n + p. ``texts_of(docs)``: (document, text) of documents,
    for ``--verify borderline``; ``sets_of`` and ``spill`` (a folder for the band's sets): see
    :func:`~neardup.dedup.verify.exact_pairs_from_texts`."""
    lengths = np.asarray(corpus.lengths, dtype=np.int64)
    keys = None
    if cfg.keep == "key":   # numbers already (the readers refuse a row whose key is not one)
        keys = np.asarray(corpus.keys, dtype=np.float64)
    m = 0 if part is None else len(part.keys)
    if m:
        values = np.concatenate([part.values.astype(values.dtype), values])
        empty = np.concatenate([np.zeros(m, dtype=bool), empty])
        lengths = np.concatenate([np.zeros(m, dtype=np.int64), lengths])
        keys = None if keys is None else np.concatenate([np.zeros(m), keys])
        if sizes is not None:     # containment: the index keeps each document's set size (else unused)
            fixed_sizes = np.zeros(m, np.int64) if part.sizes is None else np.asarray(part.sizes, dtype=np.int64)
            sizes = np.concatenate([fixed_sizes, sizes])
    exact = (exact_pairs_from_texts(cfg, texts_of, m, sets_of, spill)
             if cfg.method == "minhash" and cfg.verify == "borderline" and texts_of is not None else None)
    band = None
    if simhash_verified(cfg):
        if texts_of is None:
            raise ConfigError("verified SimHash checks its candidates on their texts: give texts_of")
        band = band_features(cfg, texts_of, values.shape[0], m)
    result = _find_all(values, empty, sizes, features, cfg, lengths, keys, m, exact, band)
    return _without_fixed(result, m) if m else result


def _without_fixed(result: DuplicateResult, m: int) -> DuplicateResult:
    n = result.clusters.cluster.shape[0] - m

    def move(x):
        x = np.asarray(x, dtype=np.int64)
        return np.where(x >= m, x - m, n + x)

    d = result.clusters.decided
    c = Clusters(move(result.clusters.cluster[m:]), result.clusters.similarity[m:], None if d is None else d[m:])
    return DuplicateResult(c, move(result.pairs_lo), move(result.pairs_hi), result.pairs_sim, result.candidates,
                           result.params, result.timings, result.pairs_how)


def _find_all(values, empty, sizes, features, cfg: DedupConfig, lengths, keys, fixed: int,
              exact_pairs=None, sets_of=None, fixed_similarity=None) -> DuplicateResult:
    if cfg.method == "minhash":
        sigs = Signatures(values, cfg.scheme, cfg.seed)
        lsh = choose_params(cfg.threshold, cfg.num_perm, cfg.lsh_mode, cfg.recall, cfg.bands, cfg.rows)
        return find_minhash_duplicates(sigs, cfg.threshold, lsh=lsh, metric=cfg.metric, sizes=sizes,
                                       verify=cfg.verify, features=features, keep=cfg.keep, lengths=lengths, keys=keys,
                                       linkage=cfg.linkage, max_drift=cfg.max_drift, fixed=fixed,
                                       exact_pairs=exact_pairs)
    if cfg.method == "simhash" and simhash_verified(cfg):
        fps, sketches = values, None
        if values.ndim == 2:           # --index: each row holds its sketch (the fixed rows' only evidence)
            fps = values[:, 0]
            def fixed_similarity(a, b):
                return sketch_jaccard(values, a, values, b, SKETCH_SLOTS)
            sketches = unpack_sketches(values, SKETCH_SLOTS)
        return find_simhash_verified(fps, sets_of, cfg.threshold, cfg.candidate_bits, valid=~empty, keep=cfg.keep,
                                     lengths=lengths, keys=keys, linkage=cfg.linkage, max_drift=cfg.max_drift,
                                     fixed=fixed, fixed_similarity=fixed_similarity, sketches=sketches)
    if cfg.method == "simhash":
        drift_bits = simhash_drift_bits(cfg.max_drift)
        return find_simhash_duplicates(values, cfg.bits, valid=~empty, keep=cfg.keep, lengths=lengths, keys=keys,
                                       linkage=cfg.linkage, max_drift_bits=drift_bits, fixed=fixed)
    return find_equal_duplicates(values, valid=~empty, keep=cfg.keep, lengths=lengths, user_keys=keys)
