"""Stage 5, finish: verified pairs → clusters, the document each keeps, and how every removed row was
decided. Written once: the local engine runs it on the whole graph of a run, the Spark engine on
each partition of whole connected components (components are independent, so the result is the
same).

* which similarity a pair has (:func:`pair_similarity`) and what bounded linkage compares
  (:func:`linkage_oracle`), per method and metric;
* the clustering rule: the symmetric one (:func:`~neardup.clusters.build_clusters`: linkage, keep
  policy, drift split) for Jaccard, SimHash and equal signatures; for containment the directed one
  (:mod:`neardup.clusters.containment`): a document is removed only for a kept document that holds
  it;
* per removed row its decision (:data:`ROW_HOW`): ``contained`` when the directed rule removed it,
  else how the pair that put it in its cluster was decided — its pair with its kept document when
  it was verified, otherwise its most similar verified pair inside the cluster (the link bounded or
  transitive linkage merged it by) — ``identical``, ``estimate``, ``exact`` or ``candidate``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..clusters import Clusters, SimilarityOracle, build_clusters
from ..clusters.cluster import LINKAGE_SAMPLE
from ..clusters.containment import CONTAINED, containment_clusters
from ..similarity.estimates import minhash_similarity
from ..sketches.minhash import empty_value, jaccard_rows
from ..sketches.simhash import hamming_array
from .verify import HOW, exact_similarity, known_similarity

#: how a removed row was decided: the pair decisions (:data:`~neardup.dedup.verify.HOW`), and the
#: directed containment rule
ROW_HOW = (*HOW, "contained")
ROW_CONTAINED = len(HOW)
#: the decision code of a kept row (none)
KEPT_ROW = 255


@dataclass
class Finished:
    """Clusters (with each row's decision code, ``clusters.decided``: :data:`ROW_HOW`, or
    :data:`KEPT_ROW` for a kept row), and for containment per row whether the keep policy would have
    kept it over the container it was removed for (``overridden``; None otherwise)."""
    clusters: Clusters
    overridden: np.ndarray | None = None

    @property
    def decided(self) -> np.ndarray:
        return self.clusters.decided


def pair_similarity(method: str, metric: str, scheme: str | None, values, sizes=None, features=None,
                    exact: bool = False):
    """``similarity(a, b)`` of row pairs by the run's rule: SimHash 1 − d/64; MinHash the Jaccard
    estimate (containment: the larger containment derived from it and the set sizes); with
    ``exact``, the exact value on the shingle sets (``features``); equal signatures: 1."""
    if method == "simhash":
        fps = _fingerprints(values)
        return lambda a, b: 1.0 - hamming_array(fps[a], fps[b]) / 64.0
    if method != "minhash":
        return lambda a, b: np.ones(np.asarray(a).shape[0])
    if exact:
        return lambda a, b: exact_similarity(features, a, b, metric)

    def similarity(a, b):
        j = jaccard_rows(values, a, b, scheme)
        return j if metric == "jaccard" else minhash_similarity(j, sizes[a], sizes[b], metric)
    return similarity


def _fingerprints(values) -> np.ndarray:
    """SimHash fingerprints, one per row, from a column or an (n, 1) matrix (no rows: none)."""
    v = np.asarray(values)
    return v if v.ndim == 1 else v[:, 0]


def linkage_oracle(method: str, metric: str, scheme: str | None, values, features=None,
                   exact: bool = False) -> SimilarityOracle:
    """What bounded linkage compares: MinHash rows, exact shingle sets, SimHash fingerprints, or
    nothing (containment — not symmetric: merges follow the verified pairs — and equal signatures)."""
    if method == "simhash":
        return SimilarityOracle.simhash(_fingerprints(values))
    if method != "minhash" or metric != "jaccard":
        return SimilarityOracle.equal()
    if exact:
        u = features.unique()
        return SimilarityOracle.exact(u.hashes, u.offsets)

    return SimilarityOracle.minhash(values, empty_value(scheme))


def row_decisions(n: int, lo, hi, how, sim, rep) -> np.ndarray:
    """Per row the decision code of the pair that put it in its cluster (module docstring);
    :data:`KEPT_ROW` for a kept row (its own representative)."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    rep = np.asarray(rep, dtype=np.int64)
    out = np.full(n, KEPT_ROW, dtype=np.uint8)
    inside = (lo < n) & (hi < n)
    lo, hi = lo[inside], hi[inside]
    how = np.asarray(how, dtype=np.uint8)[inside]
    sim = np.asarray(sim, dtype=np.float64)[inside]
    same = rep[lo] == rep[hi]
    row = np.concatenate([lo[same], hi[same]])
    other = np.concatenate([hi[same], lo[same]])
    h = np.concatenate([how[same], how[same]])
    s = np.concatenate([sim[same], sim[same]])
    removed = rep[row] != row
    row, other, h, s = row[removed], other[removed], h[removed], s[removed]
    to_rep = other == rep[row]
    order = np.lexsort((-s, ~to_rep, row))      # per row: its pair with the kept one first, then the most similar
    row, h = row[order], h[order]
    first = np.ones(row.shape[0], dtype=bool)
    first[1:] = row[1:] != row[:-1]
    out[row[first]] = h[first]
    gone = np.flatnonzero((rep != np.arange(n)) & (out == KEPT_ROW))
    out[gone] = 1       # (a removed row always has a verified pair in its cluster; this is only a guard)
    return out


def finish(n: int, lo, hi, sim, how, similarity, *, method: str, threshold: float, max_drift=None,
           linkage: str = "components", keep: str = "first", lengths=None, keys=None, oracle=None,
           metric: str = "jaccard", sizes=None, fixed: int = 0, sample: int = LINKAGE_SAMPLE) -> Finished:
    """The clusters of ``n`` rows from their verified pairs (``lo``, ``hi``, similarity ``sim``,
    decision codes ``how``) by the run's rule (module docstring). ``similarity(a, b)``: any pair's
    similarity (:func:`pair_similarity`); a pair checked exactly keeps its exact value. The first
    ``fixed`` rows (an index's) are never removed by containment; the caller's ``lengths``/``keys``
    already make them win the keep policy."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    sim = np.asarray(sim, dtype=np.float64)
    how = np.asarray(how, dtype=np.uint8)
    known = known_similarity(similarity, lo, hi, sim, n, how)
    if method == "minhash" and metric == "containment":
        clusters, rule, overridden = containment_clusters(
            n, lo, hi, sim, sizes, threshold, known, keep=keep, lengths=lengths, keys=keys, linkage=linkage,
            max_drift=max_drift, oracle=oracle or SimilarityOracle.equal(), sample=sample, fixed=fixed)
        clusters.decided = row_decisions(n, lo, hi, how, sim, clusters.cluster)
        clusters.decided[rule == CONTAINED] = ROW_CONTAINED
        return Finished(clusters, overridden)
    clusters = build_clusters(n, lo, hi, known, keep=keep, lengths=lengths, keys=keys, threshold=threshold,
                              max_drift=max_drift, linkage=linkage, edge_sim=sim, oracle=oracle, sample=sample)
    clusters.decided = row_decisions(n, lo, hi, how, sim, clusters.cluster)
    return Finished(clusters)


def decision_name(code) -> str | None:
    """The word of a row's decision code (None for a kept row)."""
    code = int(code)
    return None if code == KEPT_ROW else ROW_HOW[code]


__all__ = ["KEPT_ROW", "ROW_CONTAINED", "ROW_HOW", "Finished", "decision_name", "finish", "linkage_oracle",
           "pair_similarity", "row_decisions"]
