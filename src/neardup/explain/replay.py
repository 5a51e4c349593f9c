"""A small run: the rules of ``dedup`` applied to a handful of documents — a pair alone (``compare``)
or the members of the clusters of two documents of a finished run (``explain``) — keeping every
fact the sentence of :mod:`neardup.explain.verdict` needs.

Per pair (:class:`PairFacts`): empty or identical signatures; for MinHash whether LSH made it a
candidate (the run's banding: b bands of r rows, or for containment per size ratio), its estimate,
whether the estimate lay in the borderline band (|ĵ − J_t| ≤ z·sqrt(J_t(1 − J_t)/k), the run's z)
and so was checked exactly, the value that decided and how; for SimHash the Hamming distance.
The clusters come from the run's own finish step (:func:`neardup.dedup.finish.finish`, or the
finders of SimHash and equal signatures) on these documents' verified pairs; bounded linkage is
replayed beside it (:func:`~neardup.clusters.cluster.merge_order`, samples of the
:data:`~neardup.clusters.cluster.LINKAGE_SAMPLE` smallest rows) to say which merge it refused and
which sampled pair refused it, and the merges it made give the chain that joined two members.

Replaying a finished run on the members of two of its clusters gives the run's result for them: a
merge bounded linkage makes puts both groups in one final cluster, so the groups the run held when
it came to an edge between them were made of these members, and the merges it refused with
documents outside changed nothing. Rows are local (0 … n − 1, in the run's row order, which is
what the samples' order follows).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..clusters.cluster import LINKAGE_SAMPLE, keep_score, merge_order
from ..clusters.containment import directions
from ..config import DedupConfig, simhash_verified
from ..dedup import find
from ..dedup.candidates import _containment_mode, containment_candidate_pairs
from ..dedup.find import find_equal_duplicates
from ..dedup.finish import KEPT_ROW, decision_name, finish
from ..dedup.methods import method_of
from ..dedup.signing import make_signer
from ..dedup.verify import (
    CANDIDATE,
    ESTIMATE,
    EXACT,
    HOW,
    borderline_mask,
    borderline_z,
    clustering_rule,
    exact_similarity,
    minhasher,
    simhash_drift_bits,
    verification_config,
)
from ..index.containment import containment_params
from ..index.lsh import candidate_pairs, choose_params, identical_rows
from ..similarity.estimates import containment_from_jaccard, minhash_similarity
from ..sketches.minhash import jaccard_rows


@dataclass
class PairFacts:
    """What a run knows of one pair (rows ``a`` < ``b``): see the module docstring. ``decided_by``:
    the rows whose pair the run decided — (a, b), or for rows with identical signatures the first
    row of each group (the run compares only those); ``value``/``how``: that pair's decision."""
    a: int
    b: int
    method: str
    empty: bool = False
    identical: bool = False
    candidate: bool = False
    verified: bool = False
    estimate: float | None = None       # MinHash: the Jaccard estimate; SimHash: 1 − d/64
    similarity: float | None = None     # the metric's value from the estimate (containment: the larger C)
    exact: float | None = None          # MinHash: the metric's exact value on the shingle sets
    exact_jaccard: float | None = None
    in_band: bool = False
    value: float | None = None          # what decided (the exact value where the pair was checked)
    how: str | None = None
    distance: int | None = None         # SimHash
    bands: tuple | None = None          # (b, r, colliding bands) of the banding the pair had
    decided_by: tuple = ()
    sizes: tuple = ()                   # MinHash: distinct shingles of a and b


@dataclass
class Refusal:
    """A merge bounded linkage refused: the edge, the two groups' samples, and the sampled pair of
    lowest similarity with its similarity (below ``floor`` = t − δ)."""
    edge: tuple
    samples: tuple
    worst: tuple
    similarity: float
    floor: float


@dataclass
class SmallRun:
    """The documents ``texts`` run under ``cfg`` (a resolved :class:`~neardup.config.DedupConfig`): see
    the module docstring. ``z``: the borderline band's width in standard errors (default: the one a
    run of these documents alone has); ``lengths``/``keys``: the keep policy's inputs (default: the
    texts' lengths)."""
    texts: list
    cfg: DedupConfig
    z: float | None = None
    lengths: np.ndarray | None = None
    keys: np.ndarray | None = None
    lsh: object = None
    refusals: dict = field(default_factory=dict)
    merges: list = field(default_factory=list)

    def __post_init__(self):
        self.n = len(self.texts)
        if self.lengths is None:
            self.lengths = np.array([len(t) for t in self.texts], dtype=np.int64)
        self.threshold, self.drift = clustering_rule(self.cfg)
        self.features = self.sizes = None
        self.verified_simhash = False
        self.candidates: dict = {}
        if self.cfg.method == "minhash":
            self._minhash()
        elif self.cfg.method == "simhash":
            self._simhash()
        else:
            self._equal()
        self._replay_linkage()

    # -- the run --------------------------------------------------------------------------------------
    def _minhash(self) -> None:
        c, n, t = self.cfg, self.n, self.threshold
        got = make_signer(c)(self.texts) if n else (np.zeros((0, c.num_perm), np.uint32), np.zeros(0, bool),
                                                    np.zeros(0, np.int64))
        self.values, self.empty, self.sizes = got[0], np.asarray(got[1], dtype=bool), np.asarray(got[2], np.int64)
        self.features = minhasher(c).shingler.features(self.texts)
        same = identical_rows(self.values) if n else np.zeros(0, np.int64)
        same[self.empty] = np.flatnonzero(self.empty)
        self.same = same
        dup = np.flatnonzero(same != np.arange(n))
        distinct = np.flatnonzero((same == np.arange(n)) & ~self.empty)
        if self.lsh is None:
            self.lsh = choose_params(t, c.num_perm, c.lsh_mode, c.recall, c.bands, c.rows)
        self.per_ratio = c.metric == "containment" and self.lsh.mode != "explicit"
        if self.per_ratio:
            lo, hi = containment_candidate_pairs(self.values, self.sizes, t, c.lsh_mode, c.recall, distinct)
        else:
            lo, hi = candidate_pairs(self.values, self.lsh.b, self.lsh.r, rows=distinct)
        rule = method_of(c).finish_rule(c)     # (the run's: its similarity, linkage and containment rule)
        self.similarity = rule.similarity(self.values, self.sizes, self.features)
        sim = np.asarray(self.similarity(lo, hi), dtype=np.float64).copy()
        how = np.full(lo.shape[0], {"none": CANDIDATE, "exact": EXACT}.get(c.verify, ESTIMATE), dtype=np.uint8)
        if self.z is None:
            self.z = borderline_z(lo.shape[0])
        if c.verify == "borderline":
            j = jaccard_rows(self.values, lo, hi, c.scheme)
            mask = borderline_mask(j, self.sizes[lo], self.sizes[hi], t, c.num_perm, c.metric, self.z)
            if mask.any():
                sim[mask] = exact_similarity(self.features, lo[mask], hi[mask], c.metric)
                how[mask] = EXACT
        self.candidates = {(int(x), int(y)): (float(s), HOW[h]) for x, y, s, h in zip(lo, hi, sim, how)}
        ok = np.ones(lo.shape[0], dtype=bool) if c.verify == "none" else sim >= t
        elo = np.concatenate([same[dup], lo[ok]])
        ehi = np.concatenate([dup, hi[ok]])
        esim = np.concatenate([np.ones(dup.shape[0]), sim[ok]])
        ehow = np.concatenate([np.zeros(dup.shape[0], np.uint8), how[ok]])
        self.edges = (elo, ehi, esim, ehow)
        self.oracle = rule.oracle(self.values, self.features) if rule.linkage == "bounded" else None
        self.linkage_similarity = None if rule.containment else self.similarity
        done = finish(n, elo, ehi, esim, ehow, self.similarity, threshold=rule.threshold, max_drift=rule.max_drift,
                      linkage=rule.linkage, keep=c.keep, lengths=self.lengths, keys=self.keys, oracle=self.oracle,
                      containment=rule.containment, sizes=self.sizes)
        self.clusters, self.overridden = done.clusters, done.overridden

    def _simhash(self) -> None:
        """Classic SimHash (pairs within ``bits`` accepted unchecked) or verified SimHash (pairs within
        ``candidate_bits`` decided by the exact Jaccard of word 5-gram shingles ≥ t): the run's finders."""

        c = self.cfg
        values, empty, _ = make_signer(c)(self.texts)
        self.values, self.empty = np.asarray(values, dtype=np.uint64), np.asarray(empty, dtype=bool)
        self.same = np.arange(self.n)
        common = {"valid": ~self.empty, "keep": c.keep, "lengths": self.lengths, "keys": self.keys,
                  "linkage": c.linkage}
        self.verified_simhash = simhash_verified(c)
        if self.verified_simhash:
            self.features = minhasher(verification_config(c)).shingler.features(self.texts)
            res = find.find_simhash_verified(self.values, lambda rows: self.features, c.threshold, c.candidate_bits,
                                             max_drift=c.max_drift, **common)
        else:
            res = find.find_simhash_duplicates(self.values, c.bits, max_drift_bits=simhash_drift_bits(c.max_drift),
                                               **common)
        # what bounded linkage compared: the exact sets (verified) or the fingerprints (the method's rule)
        self.linkage_similarity = method_of(c).finish_rule(c).similarity(self.values, None, self.features)
        self.edges = (res.pairs_lo, res.pairs_hi, res.pairs_sim, res.how())
        self.clusters, self.overridden = res.clusters, None
        self.oracle = True if c.linkage == "bounded" else None

    def _equal(self) -> None:
        c = self.cfg
        values, empty, _ = make_signer(c)(self.texts)
        self.values, self.empty = np.asarray(values, dtype=np.uint64), np.asarray(empty, dtype=bool)
        self.same = np.arange(self.n)
        res = find_equal_duplicates(self.values, valid=~self.empty, keep=c.keep, lengths=self.lengths,
                                    user_keys=self.keys)
        self.edges = (res.pairs_lo, res.pairs_hi, res.pairs_sim, res.how())
        self.clusters, self.overridden, self.oracle, self.linkage_similarity = res.clusters, None, None, None

    # -- bounded linkage, replayed ----------------------------------------------------------------------
    def _replay_linkage(self) -> None:
        """The merges of the clustering in its order (most similar first), each accepted one kept in
        ``merges`` and each refused one in ``refusals`` (bounded linkage: the sampled pair that
        refused it). Containment merges only its mutual pairs, which bounded linkage never refuses."""
        lo, hi, sim, how = (np.asarray(x) for x in self.edges)
        if self.cfg.method == "minhash" and self.cfg.metric == "containment":
            keep = self._mutual(lo, hi, sim)
            lo, hi, sim, how = lo[keep], hi[keep], sim[keep], how[keep]
        n = self.n
        order = merge_order(n, lo.astype(np.int64), hi.astype(np.int64), sim) if lo.shape[0] else []
        bounded = self.oracle is not None and self.linkage_similarity is not None
        floor = self.threshold - (self.drift or 0.0) if bounded else 0.0
        if bounded and n > 1:
            ii, jj = np.triu_indices(n, 1)
            m = np.ones((n, n))
            m[ii, jj] = m[jj, ii] = np.asarray(self.linkage_similarity(ii, jj), dtype=np.float64)
        parent = list(range(n))
        samp = [[x] for x in range(n)]

        def root(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x
        for e in order:
            a, b = int(lo[e]), int(hi[e])
            x, y = root(a), root(b)
            if x == y:
                continue
            if bounded:
                sub = m[np.ix_(samp[x], samp[y])]
                w = np.unravel_index(int(np.argmin(sub)), sub.shape)
                if sub[w] < floor:
                    self.refusals[(a, b)] = Refusal((a, b), (list(samp[x]), list(samp[y])),
                                                    (samp[x][w[0]], samp[y][w[1]]), float(sub[w]), floor)
                    continue
            self.merges.append((a, b, float(sim[e]), HOW[int(how[e])]))
            r = min(x, y)
            parent[max(x, y)] = r
            samp[r] = sorted(samp[x] + samp[y])[:LINKAGE_SAMPLE]
        self.groups = np.array([root(x) for x in range(n)], dtype=np.int64)
        rep = self.clusters.cluster
        # the final clusters refine the groups (a drift split only cuts): else the replay is not the run's
        self.consistent = bool(np.all(self.groups[rep] == self.groups)) or (
            self.cfg.method == "minhash" and self.cfg.metric == "containment")

    def _mutual(self, lo, hi, sim) -> np.ndarray:
        if not lo.shape[0]:
            return np.zeros(0, dtype=bool)
        _, _, back = directions(lo, hi, sim, self.sizes)
        return back >= self.threshold

    # -- what the sentence asks ----------------------------------------------------------------------------
    def rep(self, x: int) -> int:
        return int(self.clusters.cluster[x])

    def decided(self, x: int) -> str | None:
        d = self.clusters.decided
        if d is None:
            return None if self.rep(x) == x else "estimate"
        code = int(d[x])
        return None if code == KEPT_ROW or self.rep(x) == x else decision_name(code)

    def kept_similarity(self, x: int) -> float:
        return float(self.clusters.similarity[x])

    def pair(self, i: int, j: int) -> PairFacts:
        """The facts of the pair of rows ``i`` and ``j`` (module docstring)."""
        a, b = min(i, j), max(i, j)
        f = PairFacts(a, b, self.cfg.method, empty=bool(self.empty[a] or self.empty[b]))
        if self.cfg.method == "minhash":
            self._minhash_pair(f)
        elif self.cfg.method == "simhash":
            d = int(self.values[a] ^ self.values[b]).bit_count()
            f.distance, f.estimate = d, 1.0 - d / 64.0
            f.identical = not f.empty and d == 0
            f.similarity = f.estimate
            if self.verified_simhash:
                f.exact = f.exact_jaccard = float(exact_similarity(self.features, [a], [b], "jaccard")[0])
                f.candidate = not f.empty and d <= self.cfg.candidate_bits
                f.value, f.how = (f.exact, "exact") if f.candidate else (None, None)
                f.verified = f.candidate and f.value >= self.threshold
            else:
                f.candidate = f.verified = not f.empty and d <= self.cfg.bits
                f.value = f.estimate
                f.how = None if not f.verified else "identical" if f.identical else "estimate"
        else:
            f.identical = f.candidate = f.verified = not f.empty and int(self.values[a]) == int(self.values[b])
            f.value = 1.0 if f.verified else 0.0
            f.how = "identical" if f.verified else None
        f.decided_by = f.decided_by or (a, b)
        return f

    def _minhash_pair(self, f: PairFacts) -> None:
        c, a, b = self.cfg, f.a, f.b
        f.sizes = (int(self.sizes[a]), int(self.sizes[b]))
        f.estimate = float(jaccard_rows(self.values, [a], [b], c.scheme)[0])
        f.similarity = float(np.asarray(minhash_similarity(np.array([f.estimate]), self.sizes[[a]], self.sizes[[b]],
                                                           c.metric))[0])
        f.exact = float(exact_similarity(self.features, [a], [b], c.metric)[0])
        f.exact_jaccard = float(exact_similarity(self.features, [a], [b], "jaccard")[0])
        f.bands = self._bands(a, b)
        ra, rb = int(self.same[a]), int(self.same[b])
        f.decided_by = (min(ra, rb), max(ra, rb))
        if f.empty:
            return
        if ra == rb:
            f.identical = f.candidate = f.verified = True
            f.value, f.how = 1.0, "identical"
            return
        got = self.candidates.get(f.decided_by)
        if got is None:
            return
        f.candidate = True
        f.value, f.how = got
        f.in_band = f.how == "exact" and c.verify == "borderline"
        f.verified = c.verify == "none" or f.value >= self.threshold

    def _bands(self, a: int, b: int) -> tuple | None:
        """(b, r, colliding bands) of the banding the pair had: the run's, or for containment that of
        its size ratio (:func:`~neardup.index.containment.containment_params`); None for an empty side."""
        if self.empty[a] or self.empty[b]:
            return None
        nb, r = self.lsh.b, self.lsh.r
        if self.per_ratio:
            small, large = sorted((int(self.sizes[a]), int(self.sizes[b])))
            nb, r = containment_params(self.threshold, self.cfg.num_perm, small, large,
                                       mode=_containment_mode(self.cfg.lsh_mode), recall=self.cfg.recall)
        eq = self.values[a] == self.values[b]
        return nb, r, [i for i in range(nb) if (i + 1) * r <= eq.shape[0] and bool(eq[i * r:(i + 1) * r].all())]

    def band_delta(self, f: PairFacts) -> tuple[float, float]:
        """(J_t, half-width) of the borderline band the pair's Jaccard estimate was held to (:func:`borderline_mask`):
        J_t = t for Jaccard; for containment the Jaccard at which the easier direction reaches t."""
        t, k = self.threshold, self.cfg.num_perm
        jt = t
        if self.cfg.metric == "containment" and f.sizes and min(f.sizes) > 0:
            x, y = f.sizes
            jt = min(t * x / (x + y - t * x), t * y / (x + y - t * y))
        return jt, float(self.z) * (jt * (1 - jt) / k) ** 0.5

    def chain(self, a: int, b: int) -> list[tuple[int, int, float, str]] | None:
        """The merges that joined ``a`` and ``b`` (the path between them in the tree of accepted merges,
        edges as (from, to, similarity, how)), or None when no merge path joins them."""
        adj: dict[int, list] = {}
        for x, y, s, h in self.merges:
            adj.setdefault(x, []).append((y, s, h))
            adj.setdefault(y, []).append((x, s, h))
        prev: dict[int, tuple] = {a: None}
        todo = [a]
        while todo:
            x = todo.pop()
            for y, s, h in adj.get(x, ()):
                if y not in prev:
                    prev[y] = (x, s, h)
                    todo.append(y)
        if b not in prev:
            return None
        path = []
        x = b
        while prev[x] is not None:
            p, s, h = prev[x]
            path.append((p, x, s, h))
            x = p
        return path[::-1]

    def deciding_pair(self, x: int) -> tuple[int, float, str] | None:
        """The verified pair that decided removed row ``x`` (:func:`~neardup.dedup.finish.row_decisions`:
        its pair with its kept document, else its most similar verified pair inside its cluster):
        (the other row, similarity, how); None for a kept row."""
        rep = self.rep(x)
        if rep == x:
            return None
        best = None
        for lo, hi, s, h in zip(*(np.asarray(e).tolist() for e in self.edges)):
            if x not in (lo, hi):
                continue
            o = hi if lo == x else lo
            if self.rep(o) != rep:
                continue
            score = (o == rep, s)
            if best is None or score > best[0]:
                best = (score, (o, float(s), HOW[int(h)]))
        return None if best is None else best[1]

    def rule_similarity(self, x: int, y: int) -> float:
        """The similarity the clustering gives rows x and y (:func:`~neardup.dedup.verify.known_similarity`):
        the exact value of a pair checked exactly, else the run's pair similarity (the estimate, or the
        exact value under ``--verify exact`` and verified SimHash; SimHash 1 − d/64)."""
        if self.cfg.method == "minhash":
            got = self.candidates.get((min(x, y), max(x, y)))
            if got is not None and got[1] == "exact":
                return got[0]
            return float(np.asarray(self.similarity(np.array([x]), np.array([y])))[0])
        if self.linkage_similarity is not None:
            return float(np.asarray(self.linkage_similarity(np.array([x]), np.array([y])))[0])
        return 1.0 if int(self.values[x]) == int(self.values[y]) else 0.0

    def group_kept(self, x: int) -> int:
        """The document the keep policy picks in ``x``'s group before the drift split (ties: the first)."""
        members = np.flatnonzero(self.groups == self.groups[x])
        score = keep_score(self.cfg.keep, self.n, self.lengths, self.keys)[members]
        return int(members[np.flatnonzero(score == score.max())[0]])

    def refusal(self, a: int, b: int) -> Refusal | None:
        """The refusal of the merge of the edge the run had for rows a, b (their identity groups' first rows)."""
        ra, rb = int(self.same[a]), int(self.same[b])
        return self.refusals.get((min(ra, rb), max(ra, rb)))

    def contained(self, small: int, large: int) -> tuple[float, str]:
        """C(small ⊆ large) as the run would have it for the pair (the exact value where the pair was
        checked exactly, else from the estimate) and how ('exact' or 'estimate')."""
        f = self.pair(small, large)
        za, zb = self.sizes[small], self.sizes[large]
        if f.how == "exact":
            return (float(f.value * min(za, zb) / za) if za else 0.0), "exact"

        return float(containment_from_jaccard(f.estimate, za, zb)), "estimate"


__all__ = ["PairFacts", "Refusal", "SmallRun"]
