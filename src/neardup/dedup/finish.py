"""Stage 5, finish: verified pairs → clusters, the document each keeps, and how every removed row was
decided. Written once: the local engine runs it on the whole graph of a run, the Spark engine on
each partition of whole connected components (components are independent, so the result is the
same).

* the rule of a run (:class:`FinishRule`: threshold, drift, linkage, which similarity a pair has
  and what bounded linkage compares), written by each method;
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

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..clusters import Clusters, SimilarityOracle, build_clusters
from ..clusters.cluster import LINKAGE_SAMPLE
from ..clusters.containment import CONTAINED, containment_clusters
from .verify import HOW, known_similarity

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


@dataclass(frozen=True)
class FinishRule:
    """How a run's verified pairs become clusters — the settings of :func:`finish` as the run's
    method applies them (:meth:`~neardup.dedup.methods.base.Method.finish_rule`). The Spark engine
    finishes each connected component by it, and ``explain`` replays by it; the local finders, public
    functions with their own arguments, build the same pieces from the same functions of the method's
    module (``tests/test_methods.py`` checks that both give the same clusters).
    ``sets``: pairs are compared on their exact shingle sets (the ``features`` given to
    ``similarity`` and ``oracle``); ``similarity(values, sizes, features)`` gives any pair's
    similarity (``similarity(a, b)``); ``oracle(values, features)`` what bounded linkage compares."""

    threshold: float
    max_drift: float | None
    linkage: str
    similarity: Callable
    oracle: Callable
    containment: bool = False
    sets: bool = False


def equal_similarity(values=None, sizes=None, features=None):
    """Equal signatures: every verified pair has similarity 1."""
    return lambda a, b: np.ones(np.asarray(a).shape[0])


def equal_oracle(values=None, features=None) -> SimilarityOracle:
    """Equal signatures (and containment, whose merges follow the verified pairs): no comparison."""
    return SimilarityOracle.equal()


#: the rule of equal signatures (``--method sentences`` and ``exact``): transitive closure, nothing compared
EQUAL_RULE = FinishRule(1.0, None, "components", equal_similarity, equal_oracle)


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


def finish(n: int, lo, hi, sim, how, similarity, *, threshold: float, max_drift=None, linkage: str = "components",
           keep: str = "first", lengths=None, keys=None, oracle=None, containment: bool = False, sizes=None,
           fixed: int = 0, sample: int = LINKAGE_SAMPLE) -> Finished:
    """The clusters of ``n`` rows from their verified pairs (``lo``, ``hi``, similarity ``sim``,
    decision codes ``how``) by the run's rule (module docstring). ``similarity(a, b)``: any pair's
    similarity (:attr:`FinishRule.similarity`); a pair checked exactly keeps its exact value.
    ``containment``: the directed rule (``sizes``: the set sizes). The first ``fixed`` rows (an
    index's) are never removed by containment; the caller's ``lengths``/``keys`` already make them
    win the keep policy."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    sim = np.asarray(sim, dtype=np.float64)
    how = np.asarray(how, dtype=np.uint8)
    known = known_similarity(similarity, lo, hi, sim, n, how)
    if containment:
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


__all__ = ["EQUAL_RULE", "KEPT_ROW", "ROW_CONTAINED", "ROW_HOW", "FinishRule", "Finished", "decision_name",
           "equal_oracle", "equal_similarity", "finish", "row_decisions"]
