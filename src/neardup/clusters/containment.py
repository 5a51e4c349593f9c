"""Containment as a directed relation: a document is removed only in favour of a kept document that
holds it.

For sets A, B with I = |A ∩ B|: C(A ⊆ B) = I / |A| and C(B ⊆ A) = I / |B|. A verified pair carries
the larger of the two, which is the smaller set's (I / min(|A|, |B|)); the other direction follows
from the sizes: C(large ⊆ small) = C(small ⊆ large) · min / max. Hence the rule's three cases:

* **mutual** — both directions ≥ t (near-equal sets): the symmetric rule, as for Jaccard — the
  pairs are clustered by the run's linkage and each cluster keeps one document by the keep policy;
* **directed** — only C(small ⊆ large) ≥ t: the smaller document is the copy. It is removed when a
  document that holds it is kept, pointing to the kept container that holds the largest share of
  it (ties: the keep policy's choice). A directed pair always goes from a smaller set to a strictly
  larger one (were |A| ≥ |B|, C(B ⊆ A) ≥ C(A ⊆ B) ≥ t would make it mutual), so deciding documents
  in decreasing size settles every container before what it may hold. The keep policy never keeps
  a contained document over its container: each time it would have, is counted (``overridden``);
* a document is **never removed for one it holds**, nor for a container that is itself removed
  (its content then went with the container's own container, which was not checked against it):
  such a document stays. Members of a mutual cluster whose kept document turns out to be contained
  in another are re-checked against that container (C ≥ t, the estimate or the exact value known
  for the pair); those that pass follow it, the others stay.

The first ``fixed`` rows (an index's documents) are kept whatever holds them.
"""
from __future__ import annotations

import numpy as np

from ..kernels.clusters import directed_containers
from .cluster import Clusters, build_clusters, keep_score

#: what :func:`containment_clusters` says of each row (``decided``): kept, or removed by the
#: symmetric rule (near-equal sets, as for Jaccard), or removed as contained in a kept document
KEPT, MUTUAL, CONTAINED = 0, 1, 2


def directions(lo, hi, sim, sizes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per verified pair: (the smaller set's row, the larger set's row, C(large ⊆ small)) from the
    larger containment ``sim`` and the set sizes; equal sizes: lo first, both directions equal."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    za = np.asarray(sizes, dtype=np.float64)[lo]
    zb = np.asarray(sizes, dtype=np.float64)[hi]
    swap = zb < za
    small = np.where(swap, hi, lo)
    large = np.where(swap, lo, hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        back = np.asarray(sim, dtype=np.float64) * np.minimum(za, zb) / np.maximum(za, zb)
    return small, large, np.nan_to_num(back, nan=1.0)


def containment_clusters(n: int, lo, hi, sim, sizes, threshold: float, similarity_to, *, keep: str = "first",
                         lengths=None, keys=None, linkage: str = "components", max_drift=None, oracle=None,
                         sample: int = 16, fixed: int = 0):
    """Clusters of the verified containment pairs (``sim``: the larger containment of each pair, ≥ t)
    by the directed rule of the module docstring. ``similarity_to(a, b)``: the larger containment
    of any pairs (estimate, or the exact value where it was checked). Returns (clusters — each row's
    kept document and its containment in it —, per row :data:`KEPT`/:data:`MUTUAL`/:data:`CONTAINED`,
    and per row whether the keep policy would have kept it over the container it was removed for)."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    sim = np.asarray(sim, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.int64)
    t = float(threshold)
    small, large, back = directions(lo, hi, sim, sizes)
    mutual = back >= t
    score = keep_score(keep, n, lengths, keys)
    first = build_clusters(n, lo[mutual], hi[mutual], similarity_to, keep=keep, lengths=lengths, keys=keys,
                           threshold=t, max_drift=max_drift, linkage=linkage, edge_sim=sim[mutual],
                           oracle=oracle, sample=sample)
    rep = first.cluster.copy()
    rsim = first.similarity.copy()
    decided = np.where(rep == np.arange(n), KEPT, MUTUAL).astype(np.uint8)
    # the directed pairs between kept documents of the symmetric step: contained → container
    d = ~mutual & (rep[small] == small) & (rep[large] == large)
    src, dst, share = small[d], large[d], sim[d]
    order = np.argsort(src, kind="stable")
    src, dst, share = src[order], dst[order], share[order]
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=start[1:])
    todo = np.unique(src)
    todo = todo[np.lexsort((todo, -sizes[todo]))]          # larger documents first: containers settle first
    kept = rep == np.arange(n)
    target = np.arange(n, dtype=np.int64)
    tsim = np.ones(n, dtype=np.float64)
    directed_containers(todo, start, dst, share, score, np.int64(fixed), kept, target, tsim)
    moved = np.flatnonzero(target != np.arange(n))
    overridden = np.zeros(n, dtype=bool)
    overridden[moved] = ((score[moved] > score[target[moved]])
                         | ((score[moved] == score[target[moved]]) & (moved < target[moved])))
    rep[moved], rsim[moved] = target[moved], tsim[moved]
    decided[moved] = CONTAINED
    # members of a symmetric cluster whose kept document went to a container: re-checked against it
    orphans = np.flatnonzero((decided == MUTUAL) & ~kept[rep])
    if orphans.shape[0]:
        c = target[rep[orphans]]
        est = np.asarray(similarity_to(orphans, c), dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            into = np.nan_to_num(est * np.minimum(sizes[orphans], sizes[c]) / sizes[orphans], nan=0.0)
        ok = (into >= t) & (orphans >= fixed)
        rep[orphans[ok]], rsim[orphans[ok]] = c[ok], into[ok]
        overridden[orphans[ok]] = (score[orphans[ok]] > score[c[ok]]) | (
            (score[orphans[ok]] == score[c[ok]]) & (orphans[ok] < c[ok]))
        decided[orphans[ok]] = CONTAINED
        stay = orphans[~ok]
        rep[stay], rsim[stay] = stay, 1.0
        decided[stay] = KEPT
    return Clusters(rep, rsim), decided, overridden


__all__ = ["CONTAINED", "KEPT", "MUTUAL", "containment_clusters", "directions"]
