"""Clusters of near-duplicates: connected components of the verified-pair graph.

Linkage (``linkage=``):

* ``"components"`` — connected components (union–find): transitive, so a chain A ~ B ~ C puts A
  and C together however far apart they are;
* ``"bounded"`` — verified pairs are merged most-similar first, and two groups join only when all
  pairs between their samples (the ``sample`` earliest members of each) are ≥ t − δ
  (``max_drift=δ``): a group stops growing where a chain would bring in a document unlike it.

Each cluster keeps one representative by a policy — ``first`` (smallest input position),
``longest`` (most characters; ties: first) or ``key`` (largest user-given key; ties: first) —
and every member records its similarity to that representative, so chaining is visible. With
``max_drift=δ`` a member whose similarity to its representative is still below t − δ is split
off; split-off members form clusters among themselves from the verified pairs they share,
repeatedly, until every member is within t − δ of its representative.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numba
import numpy as np

from .._checks import as_int
from ..errors import ConfigError
from ..kernels.clusters import bounded_components, bounded_components_parts, components, pick_representatives

KEEP_POLICIES = ("first", "longest", "key")
LINKAGES = ("components", "bounded")


@dataclass
class SimilarityOracle:
    """What the bounded linkage compares: MinHash rows, exact shingle sets, SimHash fingerprints,
    or nothing (equal-signature groups, similarity 1)."""

    kind: int
    sig: np.ndarray = field(default_factory=lambda: np.zeros((1, 1), np.uint32))
    empty: int = 0
    h: np.ndarray = field(default_factory=lambda: np.zeros(1, np.uint64))
    off: np.ndarray = field(default_factory=lambda: np.zeros(2, np.int64))
    fps: np.ndarray = field(default_factory=lambda: np.zeros(1, np.uint64))

    @classmethod
    def minhash(cls, values: np.ndarray, empty: int) -> SimilarityOracle:
        return cls(0, sig=values, empty=empty)

    @classmethod
    def exact(cls, hashes: np.ndarray, offsets: np.ndarray) -> SimilarityOracle:
        return cls(1, h=hashes, off=offsets)

    @classmethod
    def simhash(cls, fps: np.ndarray) -> SimilarityOracle:
        return cls(2, fps=np.ascontiguousarray(fps, dtype=np.uint64))

    @classmethod
    def equal(cls) -> SimilarityOracle:
        return cls(3)

    @classmethod
    def exact_or_sketch(cls, hashes: np.ndarray, offsets: np.ndarray, sketches: np.ndarray,
                        empty: int) -> SimilarityOracle:
        """Exact Jaccard where both rows have their sets, else their sketches' estimate."""
        return cls(4, sig=sketches, empty=empty, h=hashes, off=offsets)


@dataclass
class Clusters:
    """Per document: ``cluster`` (index of the kept representative), ``kept`` and ``similarity``;
    ``decided``, when known, how each removed row was decided (codes into
    :data:`neardup.dedup.finish.ROW_HOW`, 255 for a kept row)."""

    cluster: np.ndarray
    similarity: np.ndarray
    decided: np.ndarray | None = None

    @property
    def kept(self) -> np.ndarray:
        return self.cluster == np.arange(self.cluster.shape[0])

    def __len__(self) -> int:
        return self.cluster.shape[0]

    def __repr__(self) -> str:
        kept = int(np.count_nonzero(self.kept))
        return f"Clusters(rows={len(self)}, clusters={kept}, removed={len(self) - kept})"

    def sizes(self) -> np.ndarray:
        """Size of each cluster, indexed by representative (0 for non-representatives)."""
        return np.bincount(self.cluster, minlength=len(self))

    def groups(self) -> list[np.ndarray]:
        """Members of every cluster with more than one document, representative first."""
        order = np.lexsort((np.arange(len(self)) != self.cluster[np.arange(len(self))], self.cluster))
        c = self.cluster[order]
        cuts = np.flatnonzero(np.diff(c)) + 1
        return [g for g in np.split(order, cuts) if g.shape[0] > 1]


def keep_score(policy: str, n: int, lengths, keys) -> np.ndarray:
    """Per document its keep-policy score (the largest is kept; ties: the first row), both engines."""
    if policy == "first":
        return np.zeros(n, dtype=np.float64)
    if policy == "longest":
        if lengths is None:
            raise ConfigError("keep='longest' needs document lengths")
        return np.asarray(lengths, dtype=np.float64)
    if policy == "key":
        if keys is None:
            raise ConfigError("keep='key' needs a key per document (largest is kept)")
        return np.asarray(keys, dtype=np.float64)
    raise ConfigError(f"keep must be one of {', '.join(KEEP_POLICIES)}, got {policy!r}")


def merge_order(n: int, lo: np.ndarray, hi: np.ndarray, edge_sim) -> np.ndarray:
    """The order in which bounded linkage merges edges: similarity descending, then (lo, hi) — that of
    ``np.lexsort((hi, lo, -sim))``, by two stable sorts: of the codes lo·n + hi (the pairs arrive in
    a few sorted runs, which a merge sort takes in linear time), then of −sim in that order. 3.6 →
    1.6 s for the 9.6 M verified pairs of the 10 M corpus."""
    neg = -np.asarray(edge_sim, dtype=np.float64)
    if n >= 1 << 31:                                   # (lo·n + hi would not fit 63 bits)
        return np.lexsort((hi, lo, neg))
    first = np.argsort(lo * n + hi, kind="stable")
    return first[np.argsort(neg[first], kind="stable")]


#: from this many edges on, bounded linkage runs its components on all threads
PARALLEL_LINKAGE_EDGES = 100_000


def _linkage_threads(edges: int) -> int:
    """Threads for bounded linkage: numba's, from :data:`PARALLEL_LINKAGE_EDGES` edges on and on the
    main thread only (numba's default thread pool must not be entered from two Python threads)."""
    if edges < PARALLEL_LINKAGE_EDGES or threading.current_thread() is not threading.main_thread():
        return 1

    return numba.get_num_threads()


def component_parts(n: int, lo: np.ndarray, hi: np.ndarray, order: np.ndarray, parts: int):
    """``order`` cut into ``parts`` parts by connected component (of all the edges; a component's
    label modulo ``parts``), each keeping ``order``'s order: returns (the parts one after another,
    offsets). What :func:`~neardup.kernels.clusters.bounded_components_parts` runs side by side; at
    10 M documents the largest component holds 2.6 % of the 9.6 M verified pairs."""
    label = components(n, lo, hi)
    part = (label[lo[order]] % parts).astype(np.uint16)
    by = np.argsort(part, kind="stable")
    offsets = np.zeros(parts + 1, dtype=np.int64)
    np.cumsum(np.bincount(part, minlength=parts), out=offsets[1:])
    return order[by], offsets


#: Members sampled per side when bounded linkage checks a merge (both engines).
LINKAGE_SAMPLE = 16


def build_clusters(n: int, lo: np.ndarray, hi: np.ndarray,
                   similarity_to: Callable[[np.ndarray, np.ndarray], np.ndarray], keep: str = "first", lengths=None,
                   keys=None, threshold: float | None = None,
                   max_drift: float | None = None, linkage: str = "components", edge_sim=None,
                   oracle: SimilarityOracle | None = None, sample: int = LINKAGE_SAMPLE) -> Clusters:
    """Clusters from verified pairs (lo[e], hi[e]) with similarities ``edge_sim``.

    ``similarity_to(members, reps)`` returns the similarity of each member to its representative.
    ``linkage="bounded"`` needs ``threshold``, ``max_drift``, ``edge_sim`` and an ``oracle``.
    """
    if linkage not in LINKAGES:
        raise ConfigError(f"linkage must be one of {', '.join(LINKAGES)}, got {linkage!r}")
    score = keep_score(keep, n, lengths, keys)
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    if linkage == "bounded":
        if threshold is None or max_drift is None or edge_sim is None or oracle is None:
            raise ConfigError("linkage='bounded' needs threshold, max_drift, edge_sim and a similarity oracle")
        sample = as_int(sample, "sample", 1)
        order = merge_order(n, lo, hi, edge_sim)
        o = oracle
        args = (o.kind, o.sig, o.sig.dtype.type(o.empty), o.h, o.off, o.fps, float(threshold - max_drift), sample,
                np.int32 if n < 2**31 else np.int64)
        threads = _linkage_threads(order.shape[0])
        if threads > 1:
            order, offsets = component_parts(n, lo, hi, order, 8 * threads)
            labels = bounded_components_parts(n, lo, hi, order, offsets, *args)
        else:
            labels = bounded_components(n, lo, hi, order, *args)
    else:
        labels = components(n, lo, hi)
    rep = pick_representatives(labels, score)
    sim = np.ones(n, dtype=np.float64)
    members = np.flatnonzero(rep != np.arange(n))
    if members.shape[0]:
        sim[members] = similarity_to(members, rep[members])
    if max_drift is not None:
        if threshold is None:
            raise ConfigError("max_drift needs the threshold t")
        floor = threshold - max_drift
        for _ in range(n):
            bad = np.zeros(n, dtype=bool)
            bad[members[sim[members] < floor]] = True
            if not bad.any():
                break
            # re-cluster the split-off members among themselves (by components: every group
            # shrinks by at least its representative per round, so this ends)
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
