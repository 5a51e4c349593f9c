"""Clusters of near-duplicates: connected components of the verified-pair graph.

Each cluster keeps one representative by a policy — ``first`` (smallest input position),
``longest`` (most shingles / characters; ties: first) or ``key`` (largest user-given key; ties:
first) — and every member records its similarity to that representative, so chaining
(A ~ B ~ C with A and C far apart) is visible. With ``max_drift=δ`` a member whose similarity to
its representative is below t − δ is split off; the split-off members form clusters among
themselves from the verified pairs they share, repeatedly, until every member is within t − δ.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..kernels.clusters import components, pick_representatives

KEEP_POLICIES = ("first", "longest", "key")


@dataclass
class Clusters:
    """Per document: ``cluster`` (index of the kept representative), ``kept`` and ``similarity``."""

    cluster: np.ndarray
    similarity: np.ndarray

    @property
    def kept(self) -> np.ndarray:
        return self.cluster == np.arange(self.cluster.shape[0])

    def __len__(self) -> int:
        return self.cluster.shape[0]

    def sizes(self) -> np.ndarray:
        """Size of each cluster, indexed by representative (0 for non-representatives)."""
        return np.bincount(self.cluster, minlength=len(self))

    def groups(self) -> list[np.ndarray]:
        """Members of every cluster with more than one document, representative first."""
        order = np.lexsort((np.arange(len(self)) != self.cluster[np.arange(len(self))], self.cluster))
        c = self.cluster[order]
        cuts = np.flatnonzero(np.diff(c)) + 1
        return [g for g in np.split(order, cuts) if g.shape[0] > 1]


def _score(policy: str, n: int, lengths, keys) -> np.ndarray:
    if policy == "first":
        return np.zeros(n, dtype=np.float64)
    if policy == "longest":
        if lengths is None:
            raise ValueError("keep='longest' needs document lengths")
        return np.asarray(lengths, dtype=np.float64)
    if policy == "key":
        if keys is None:
            raise ValueError("keep='key' needs a key per document (largest is kept)")
        return np.asarray(keys, dtype=np.float64)
    raise ValueError(f"keep must be one of {', '.join(KEEP_POLICIES)}, got {policy!r}")


def build_clusters(n: int, lo: np.ndarray, hi: np.ndarray, similarity_to: Callable[[np.ndarray, np.ndarray], np.ndarray],
                   keep: str = "first", lengths=None, keys=None, threshold: float | None = None,
                   max_drift: float | None = None) -> Clusters:
    """Clusters from verified pairs (lo[e], hi[e]).

    ``similarity_to(members, reps)`` returns the similarity of each member to its representative.
    """
    score = _score(keep, n, lengths, keys)
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    labels = components(n, lo, hi)
    rep = pick_representatives(labels, score)
    sim = np.ones(n, dtype=np.float64)
    members = np.flatnonzero(rep != np.arange(n))
    if members.shape[0]:
        sim[members] = similarity_to(members, rep[members])
    if max_drift is not None:
        if threshold is None:
            raise ValueError("max_drift needs the threshold t")
        floor = threshold - max_drift
        for _ in range(n):
            bad = np.zeros(n, dtype=bool)
            bad[members[sim[members] < floor]] = True
            if not bad.any():
                break
            # re-cluster the split-off members among themselves
            keep_edge = bad[lo] & bad[hi]
            sub = components(n, lo[keep_edge], hi[keep_edge])
            sub_rep = pick_representatives(sub, np.where(bad, score, -np.inf))
            rep = np.where(bad, sub_rep, rep)
            moved = np.flatnonzero(bad & (rep != np.arange(n)))
            sim[bad] = 1.0
            if moved.shape[0]:
                sim[moved] = similarity_to(moved, rep[moved])
            members = np.flatnonzero(rep != np.arange(n))
    return Clusters(rep, sim)
