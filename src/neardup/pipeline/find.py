"""Finding near-duplicates in a batch of signatures, end to end in memory.

MinHash: identical signature rows are linked first (similarity 1.0), so n copies of a document
cost O(n), not O(n²); LSH banding proposes candidate pairs among the distinct rows; each
candidate is verified — estimated Jaccard from the full signatures ≥ t (default), or exact
Jaccard / containment on the shingles when ``features`` are given — and the verified graph is
cut into clusters (:mod:`neardup.clusters`). Empty documents are never duplicates.

Containment from Jaccard: with |A ∩ B| = J (|A| + |B|) / (1 + J),  C(A ⊆ B) = |A ∩ B| / |A|.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..clusters import Clusters, SimilarityOracle, build_clusters
from ..features.shingles import Features
from ..index.lsh import MAX_BUCKET, LSHParams, candidate_pairs, choose_params, identical_rows
from ..similarity.jaccard import exact_jaccard_pairs, max_containment_pairs
from ..sketches.minhash import Signatures, empty_value, jaccard_rows

METRICS = ("jaccard", "containment")
VERIFY = ("minhash", "exact", "none", "borderline")
#: How a verified pair was decided (``DuplicateResult.pairs_how`` holds the index into this tuple):
#: equal signatures (or keys, or fingerprints), the sketch's estimate (MinHash Jaccard / containment,
#: SimHash Hamming distance), exact similarity on the shingle sets, or an unverified LSH candidate
#: (``verify="none"``).
HOW = ("identical", "estimate", "exact", "candidate")
IDENTICAL, ESTIMATE, EXACT, CANDIDATE = range(4)


def borderline_z(n_candidates: int) -> float:
    """The band's width in standard errors: z with n · P(|Z| > z) = 1 (normal approximation), so that
    among the n candidate pairs decided by their estimate alone, at most about one is expected to lie
    on the other side of t. A pair outside the band is misdecided only when its estimate errs by more
    than z standard errors (more still when its true J is farther from t). At least 3."""
    from statistics import NormalDist  # noqa: PLC0415

    n = max(int(n_candidates), 1)
    return max(3.0, NormalDist().inv_cdf(1.0 - 0.5 / n))


def borderline_band(n_candidates: int, threshold: float, num_perm: int) -> dict:
    """What a report says of the band: z (:func:`borderline_z`) and its half-width at J = t."""
    z = borderline_z(n_candidates)
    t = float(threshold)
    return {"z": round(z, 3), "delta_at_t": round(z * (t * (1 - t) / num_perm) ** 0.5, 4)}


def borderline_mask(j, size_a, size_b, threshold: float, num_perm: int, metric: str, z: float) -> np.ndarray:
    """Which pairs a MinHash estimate cannot decide: |ĵ − J_t| ≤ z · sqrt(J_t(1 − J_t)/k), where J_t is
    the Jaccard at which the pair reaches the threshold — t itself, or for containment of A in B
    (or B in A, whichever needs less) J_t = t|A| / (|A| + |B| − t|A|). The variance is the estimator's,
    J(1 − J)/k, taken at J_t: the pairs in question are those near it. The one rule both engines use."""
    j = np.asarray(j, dtype=np.float64)
    if metric == "jaccard":
        jt = np.full(j.shape[0], float(threshold))
    else:
        a = np.asarray(size_a, dtype=np.float64)
        b = np.asarray(size_b, dtype=np.float64)
        t = float(threshold)
        with np.errstate(divide="ignore", invalid="ignore"):
            ja = t * a / (a + b - t * a)
            jb = t * b / (a + b - t * b)
        jt = np.clip(np.nan_to_num(np.minimum(ja, jb), nan=1.0), 0.0, 1.0)
    return np.abs(j - jt) <= z * np.sqrt(jt * (1.0 - jt) / num_perm)


def containment_candidate_pairs(values, sizes, threshold: float, lsh_mode: str, recall: float, rows=None):
    """Candidate pairs (lo < hi) for ``metric="containment"``: either document may hold the other to
    ≥ t, each pair banded for its own size ratio (:func:`neardup.index.containment.containment_candidates`,
    after LSH Ensemble) — not as a Jaccard threshold, which a passage in a long document never reaches.
    ``lsh_mode`` ``recall…`` targets ``recall`` at C = t per pair; ``datasketch`` uses Zhu et al.'s
    equal-weight error criterion. The one rule both engines use."""
    from .._arrays import sorted_unique  # noqa: PLC0415
    from ..index.containment import containment_candidates  # noqa: PLC0415

    ci, cj = containment_candidates(values, np.asarray(sizes, dtype=np.int64), threshold,
                                    mode=_containment_mode(lsh_mode), recall=recall, rows=rows, sort=False)
    if ci.shape[0] == 0:
        return ci, cj
    n = np.int64(values.shape[0])
    code = np.minimum(ci, cj) * n + np.maximum(ci, cj)
    del ci, cj
    code = sorted_unique(code)
    return code // n, code % n


def _containment_mode(lsh_mode: str) -> str:
    """The containment banding rule for an ``--lsh`` mode: datasketch's criterion, else recall."""
    return "ensemble" if lsh_mode == "datasketch" else "recall"


def containment_lsh(threshold: float, num_perm: int, lsh_mode: str, recall: float) -> LSHParams:
    """What a report shows of containment banding: the (b, r) of two documents of one size (every
    other size ratio has its own), and the rule."""
    from ..index.containment import containment_params  # noqa: PLC0415

    mode = _containment_mode(lsh_mode)
    b, r = containment_params(threshold, num_perm, 1000, 1000, mode=mode, recall=recall)
    label = f"recall≥{recall}" if mode == "recall" else "datasketch"
    return LSHParams(b, r, threshold, f"containment per size ratio ({label})")


def known_similarity(similarity, lo, hi, sim, n: int, how=None):
    """``similarity_to`` for :func:`~neardup.clusters.build_clusters`: the exact similarity of a pair
    that was checked exactly (``how`` = EXACT; ``--verify borderline``: the estimate of a passage in a
    long document can be far off), ``similarity(a, b)`` for any other pair. Rows are 0 … n − 1."""
    if how is not None:
        exact = np.asarray(how) == EXACT
        lo, hi, sim = np.asarray(lo)[exact], np.asarray(hi)[exact], np.asarray(sim)[exact]
    lo = np.asarray(lo, dtype=np.int64)
    if lo.shape[0] == 0:
        return similarity
    hi = np.asarray(hi, dtype=np.int64)
    n = np.int64(max(int(n), 1))
    code = np.minimum(lo, hi) * n + np.maximum(lo, hi)
    order = np.argsort(code, kind="stable")
    code, known = code[order], np.asarray(sim, dtype=np.float64)[order]

    def similarity_to(a, b):
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        out = np.array(similarity(a, b), dtype=np.float64)
        c = np.minimum(a, b) * n + np.maximum(a, b)
        pos = np.minimum(np.searchsorted(code, c), code.shape[0] - 1)
        hit = code[pos] == c
        out[hit] = known[pos[hit]]
        return out

    return similarity_to


def containment_from_jaccard(j, size_a, size_b):
    """C(A ⊆ B) estimated from J and the set sizes (0 where |A| = 0)."""
    j = np.asarray(j, dtype=np.float64)
    a = np.asarray(size_a, dtype=np.float64)
    b = np.asarray(size_b, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = j * (a + b) / ((1.0 + j) * a)
    return np.clip(np.nan_to_num(c), 0.0, 1.0)


def minhash_similarity(j, size_a, size_b, metric: str):
    """A pair's similarity from its MinHash Jaccard estimate ``j``: ``j`` itself, or for containment
    the larger of the two containments (a copied passage may sit in either document). The one rule
    both engines use."""
    if metric == "jaccard":
        return j
    return np.maximum(containment_from_jaccard(j, size_a, size_b), containment_from_jaccard(j, size_b, size_a))


def exact_similarity(features: Features, a, b, metric: str) -> np.ndarray:
    """A pair's exact similarity on its shingle sets (``verify="exact"``): Jaccard, or for containment
    the larger of the two containments. The one rule both engines use."""
    if metric == "jaccard":
        return exact_jaccard_pairs(features, a, b)
    return max_containment_pairs(features, a, b)


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
    return np.all(sigs.values == sigs.values.dtype.type(empty_value(sigs.scheme)), axis=1)


def find_minhash_duplicates(sigs: Signatures, threshold: float = 0.8, *, lsh: LSHParams | None = None,
                            lsh_mode: str = "recall", recall: float = 0.99, metric: str = "jaccard",
                            verify: str = "minhash", features: Features | None = None,
                            sizes: np.ndarray | None = None, keep: str = "first", lengths=None, keys=None,
                            linkage: str = "bounded", max_drift: float | None = 0.05, sample: int = 16,
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
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if sigs.scheme == "bottomk":
        raise ValueError("bottom-k sketches hold the k smallest hashes in sorted order, so slot j of two "
                         "sketches is not the same event and LSH banding does not apply; use scheme "
                         "'oph' or 'permutation' to find duplicates (bottom-k is for estimation)")
    if verify not in VERIFY:
        raise ValueError(f"verify must be one of {VERIFY}, got {verify!r}")
    if verify == "exact" and features is None:
        raise ValueError("verify='exact' needs the documents' features")
    if verify == "borderline" and exact_pairs is None and features is None:
        raise ValueError("verify='borderline' needs exact_pairs (exact similarity of given pairs) or features")
    if metric == "containment" and sizes is None:
        if features is None:
            raise ValueError("metric='containment' needs sizes (distinct shingles per document) or features")
        sizes = features.unique().sizes()
    timings = {}
    t0 = time.perf_counter()
    n = len(sigs)
    values = sigs.values
    params = lsh or choose_params(threshold, sigs.num_perm, lsh_mode, recall)
    empty = _empty_rows(sigs)
    same = identical_rows(values)
    same[empty] = np.flatnonzero(empty)
    dup = np.flatnonzero(same != np.arange(n))
    distinct = np.flatnonzero((same == np.arange(n)) & ~empty)
    timings["identical"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    if metric == "containment" and params.mode != "explicit":
        lo, hi = containment_candidate_pairs(values, sizes, threshold, params.mode, recall, distinct)
        params = containment_lsh(threshold, sigs.num_perm, params.mode, recall)
    else:
        lo, hi = candidate_pairs(values, params.b, params.r, max_bucket=max_bucket, rows=distinct)
    timings["candidates"] = time.perf_counter() - t0
    n_candidates = int(lo.shape[0])

    t0 = time.perf_counter()

    def similarity(a, b):
        if verify == "exact" and features is not None:
            return exact_similarity(features, a, b, metric)
        j = jaccard_rows(values, a, b, sigs.scheme)
        return j if metric == "jaccard" else minhash_similarity(j, sizes[a], sizes[b], metric)

    border = {}
    sim = similarity(lo, hi)
    how = np.full(lo.shape[0], {"none": CANDIDATE, "exact": EXACT}.get(verify, ESTIMATE), dtype=np.uint8)
    if verify == "none":
        ok = np.ones(lo.shape[0], dtype=bool)
    else:
        if verify == "borderline":
            sim, border, checked = _decide_borderline(sim, values, lo, hi, sizes, sigs, threshold, metric, fixed,
                                                      features, exact_pairs, same,
                                                      j=sim if metric == "jaccard" else None)
            how[checked] = EXACT
        ok = sim >= threshold
    lo, hi, sim, how = lo[ok], hi[ok], sim[ok], how[ok]
    # identical signatures: linked to the first row with the same values
    lo = np.concatenate([same[dup], lo])
    hi = np.concatenate([dup, hi])
    sim = np.concatenate([np.ones(dup.shape[0]), sim])
    how = np.concatenate([np.full(dup.shape[0], IDENTICAL, dtype=np.uint8), how])
    lo, hi, sim, how = _unfix(lo, hi, sim, fixed, how)
    lengths, keys = _fixed_first(keep, fixed, n, lengths, keys)
    timings["verify"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    oracle = None
    if linkage == "bounded":
        if verify == "exact" and metric == "jaccard":
            u = features.unique()
            oracle = SimilarityOracle.exact(u.hashes, u.offsets)
        elif metric == "jaccard":
            oracle = SimilarityOracle.minhash(values, empty_value(sigs.scheme))
        else:
            oracle = SimilarityOracle.equal()  # containment is not symmetric: merges follow the verified pairs
    clusters = build_clusters(n, lo, hi, known_similarity(similarity, lo, hi, sim, n, how), keep=keep, lengths=lengths,
                              keys=keys, threshold=threshold, max_drift=max_drift, linkage=linkage, edge_sim=sim,
                              oracle=oracle, sample=sample)
    timings["clusters"] = time.perf_counter() - t0
    if border:
        timings["borderline"] = border.pop("seconds")
    info = {"method": "minhash", "threshold": threshold, "b": params.b, "r": params.r, "lsh_mode": params.mode,
            "metric": metric, "verify": verify, "keep": keep, "linkage": linkage, "max_drift": max_drift,
            "num_perm": sigs.num_perm,
            "scheme": sigs.scheme, "seed": sigs.seed, "empty_documents": int(empty.sum())}
    if border:
        info["borderline"] = border
    return DuplicateResult(clusters, lo, hi, sim, n_candidates, info, timings, how)


def fixed_aliases(same: np.ndarray, fixed: int) -> np.ndarray:
    """Per row the row whose text stands for it in an exact check: itself, or for a fixed row (an
    index's document, whose text is not at hand) the first new row with an identical signature
    (−1: none). Identical k-slot signatures are identical shingle sets but for a 2⁻³²ᵏ-scale
    accident, so the new row's set is the fixed row's."""
    n = same.shape[0]
    out = np.arange(n, dtype=np.int64)
    if fixed:
        out[:fixed] = -1
        r = np.arange(fixed, n, dtype=np.int64)
        f = same[fixed:]
        m = f < fixed
        firsts, at = np.unique(f[m], return_index=True)
        out[firsts] = r[m][at]
    return out


def _decide_borderline(sim, values, lo, hi, sizes, sigs, threshold, metric, fixed, features, exact_pairs,
                       same=None, j=None):
    """``verify="borderline"``: the pairs within the band get their exact similarity. Returns the
    similarities and what was done (z, band width at t, pairs, documents re-read, decisions changed).
    A fixed row is checked through the new row identical to it (:func:`fixed_aliases`); without one
    its pairs keep the estimate. Third value: the indices of the pairs checked exactly. ``j``: the
    pairs' Jaccard estimates when the caller has them (``sim`` itself for the Jaccard metric)."""
    t0 = time.perf_counter()
    if j is None:
        j = jaccard_rows(values, lo, hi, sigs.scheme)
    z = borderline_z(lo.shape[0])
    za = sizes[lo] if metric != "jaccard" else None       # (set sizes matter to containment only)
    zb = sizes[hi] if metric != "jaccard" else None
    mask = borderline_mask(j, za, zb, threshold, sigs.num_perm, metric, z)
    ea, eb = lo, hi
    if fixed:                                        # an index's documents have no text here
        alias = fixed_aliases(same if same is not None else np.arange(values.shape[0]), fixed)
        ea, eb = alias[lo], alias[hi]
        mask &= (ea >= 0) & (eb >= 0) & (hi >= fixed)
    idx = np.flatnonzero(mask)
    sim = sim.copy()
    if idx.shape[0]:
        ex = (exact_similarity(features, ea[idx], eb[idx], metric) if exact_pairs is None
              else np.asarray(exact_pairs(ea[idx], eb[idx]), dtype=np.float64))
        flipped = int(((ex >= threshold) != (sim[idx] >= threshold)).sum())
        sim[idx] = ex
    else:
        flipped = 0
    docs = int(np.unique(np.concatenate([ea[idx], eb[idx]])).shape[0]) if idx.shape[0] else 0
    return sim, {**borderline_band(lo.shape[0], threshold, sigs.num_perm), "pairs": int(idx.shape[0]),
                 "documents": docs, "flipped": flipped, "seconds": time.perf_counter() - t0}, idx


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
    idx = np.arange(n) if valid is None else np.flatnonzero(valid)
    order = idx[np.lexsort((idx, keys[idx]))]
    k = keys[order]
    start = np.ones(order.shape[0], dtype=bool)
    start[1:] = k[1:] != k[:-1]
    first = order[np.maximum.accumulate(np.where(start, np.arange(order.shape[0]), 0))]
    link = first != order
    lo, hi = first[link], order[link]
    clusters = build_clusters(n, lo, hi, lambda a, b: np.ones(a.shape[0]), keep=keep, lengths=lengths, keys=user_keys)
    return DuplicateResult(clusters, lo, hi, np.ones(lo.shape[0]), int(lo.shape[0]),
                           {"method": "equal", "keep": keep}, {"group": time.perf_counter() - t0},
                           np.full(lo.shape[0], IDENTICAL, dtype=np.uint8))


def find_simhash_duplicates(fps: np.ndarray, k: int = 3, valid: np.ndarray | None = None, keep: str = "first",
                            lengths=None, keys=None, linkage: str = "bounded", max_drift_bits: int | None = 2,
                            sample: int = 16, fixed: int = 0) -> DuplicateResult:
    """Clusters of fingerprints within Hamming distance ``k`` (all pairs by permuted tables, exact).
    Similarity reported is 1 − d/64. ``linkage="bounded"`` joins groups only while all sampled
    members stay within k + ``max_drift_bits`` bits of each other."""
    from ..index.simhash_index import all_pairs  # noqa: PLC0415
    from ..sketches.simhash import hamming_array  # noqa: PLC0415

    fps = np.ascontiguousarray(fps, dtype=np.uint64)
    n = fps.shape[0]
    t0 = time.perf_counter()
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
    t0 = time.perf_counter()

    def similarity(a, b):
        return 1.0 - hamming_array(fps[a], fps[b]) / 64.0

    drift = None if max_drift_bits is None else max_drift_bits / 64.0
    clusters = build_clusters(n, lo, hi, similarity, keep=keep, lengths=lengths, keys=keys,
                              threshold=1.0 - k / 64.0, max_drift=drift, linkage=linkage, edge_sim=1.0 - dist / 64.0,
                              oracle=SimilarityOracle.simhash(fps), sample=sample)
    timings["clusters"] = time.perf_counter() - t0
    return DuplicateResult(clusters, lo, hi, 1.0 - dist / 64.0, int(res.i.shape[0]),
                           {"method": "simhash", "bits": k, "keep": keep, "linkage": linkage,
                            "max_drift_bits": max_drift_bits, "fingerprints": int(np.unique(fps[idx]).size)},
                           timings, how)


def pairs_table(result: DuplicateResult, ids=None):
    """:meth:`DuplicateResult.pairs`: the verified pairs as a pyarrow Table, one row per pair with
    a < b, sorted by (a, b)."""
    import pyarrow as pa  # noqa: PLC0415

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


class TooManyPairsError(ValueError):
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
    from ..kernels.clusters import components, expand_groups, group_pair_count  # noqa: PLC0415

    lo = np.asarray(result.pairs_lo, dtype=np.int64)
    hi = np.asarray(result.pairs_hi, dtype=np.int64)
    sim = np.asarray(result.pairs_sim, dtype=np.float64)
    how = result.how()
    ident = how == IDENTICAL
    labels = components(n, lo[ident], hi[ident])
    groups, gid = np.unique(labels, return_inverse=True)
    members = np.argsort(gid, kind="stable").astype(np.int64)
    count = np.bincount(gid, minlength=groups.shape[0]).astype(np.int64)
    start = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
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
