"""Evaluation: pairwise precision / recall / F1, adjusted Rand index, exact-Jaccard ground truth.

Everything here works on integer document ids ``0 .. n-1`` (the CLI maps string ids to those)
and is vectorised with numpy; nothing materialises the O(n²) pairs of a big cluster.

Pairs
-----
A *pair* is an unordered pair of distinct documents {a, b}; (a, b) and (b, a) are the same pair
and (a, a) is never a pair (it is ignored). With P the predicted pairs and T the true pairs:

    TP = |P ∩ T|,  FP = |P \\ T|,  FN = |T \\ P|
    precision = TP / (TP + FP),   recall = TP / (TP + FN),   F1 = 2 P R / (P + R)

Conventions for empty denominators: precision is 1.0 when nothing is predicted (no wrong
prediction was made), recall is 1.0 when there is nothing to find, and F1 is 0.0 when
P + R = 0. So "predict nothing, find nothing" scores P = R = F1 = 1, and "predict nothing,
miss something" scores P = 1, R = 0, F1 = 0.

Clusters
--------
A clustering is a label per document; it implies the pairs of documents with equal labels.
With the contingency table n_ij = |{d : pred(d) = i, true(d) = j}|, row sums a_i and column
sums b_j:

    predicted pairs = Σ_i C(a_i, 2),  true pairs = Σ_j C(b_j, 2),  TP = Σ_ij C(n_ij, 2)

which only needs the non-empty cells (one sort of n labels), not the pairs.

Adjusted Rand index (Hubert & Arabie 1985), with index = Σ_ij C(n_ij, 2), A = Σ_i C(a_i, 2),
B = Σ_j C(b_j, 2) and N = C(n, 2):

    ARI = (index − A·B/N) / ((A + B)/2 − A·B/N) = 2 (N·index − A·B) / (N (A + B) − 2 A·B)

computed with exact integers. ARI is 1 for identical partitions (up to renaming), about 0 in
expectation for independent random partitions with fixed cluster sizes, and can be negative.
When the denominator is 0 — which happens only when both partitions are all singletons or both
one cluster, i.e. identical — ARI is 1.0 (the convention of scikit-learn).

Exact-Jaccard ground truth
--------------------------
:func:`exact_jaccard_truth` returns every pair with J(A, B) = |A ∩ B| / |A ∪ B| ≥ t over the
documents' distinct shingles, exactly (no sketch, no missed pair), without comparing all
C(n, 2) pairs. See its docstring for why it filters on rare shingles rather than dropping the
frequent ones.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ._arrays import sorted_unique, unique_pairs
from .errors import ConfigError
from .features.shingles import Features
from .kernels.clusters import components
from .similarity.jaccard import exact_jaccard_pairs

__all__ = [
    "PairScores", "scores_from_counts", "canonical_pairs", "pair_scores", "decision_scores",
    "contingency", "cluster_pair_counts", "cluster_pair_scores", "clusters_vs_pairs_scores",
    "pairs_vs_clusters_scores", "adjusted_rand_index", "labels_from_pairs", "exact_jaccard_truth",
    "threshold_sweep", "best_threshold",
]


# -- scores -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PairScores:
    """Confusion counts of a pair decision and the scores derived from them."""

    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float

    def to_dict(self) -> dict:
        return asdict(self)


def scores_from_counts(tp: int, fp: int, fn: int) -> PairScores:
    """P = TP/(TP+FP) (1.0 if nothing predicted), R = TP/(TP+FN) (1.0 if nothing to find),
    F1 = 2PR/(P+R) (0.0 if P + R = 0)."""
    tp, fp, fn = int(tp), int(fp), int(fn)
    if min(tp, fp, fn) < 0:
        raise ConfigError(f"negative confusion count: tp={tp} fp={fp} fn={fn}")
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return PairScores(tp, fp, fn, p, r, f1)


# -- pairs --------------------------------------------------------------------------------------
def _as_pair_columns(pairs) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) integer columns from a (lo, hi) tuple of arrays, an (m, 2) array or an iterable of
    2-tuples of non-negative integers."""
    if isinstance(pairs, tuple) and len(pairs) == 2 and all(isinstance(x, np.ndarray) for x in pairs):
        a, b = pairs
    else:
        if isinstance(pairs, (set, frozenset)) or not isinstance(pairs, np.ndarray):
            pairs = list(pairs)
        arr = np.asarray(pairs)
        if arr.size == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise ConfigError(f"pairs must be an (m, 2) array or 2-tuples, got shape {arr.shape}")
        a, b = arr[:, 0], arr[:, 1]
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.ndim != 1:
        raise ConfigError("pair columns must be 1-d arrays of the same length")
    if a.size and not (np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer)):
        raise TypeError("pair ids must be integers (map other ids to 0..n-1 first)")
    a = a.astype(np.int64, copy=False)
    b = b.astype(np.int64, copy=False)
    if a.size and min(a.min(), b.min()) < 0:
        raise ConfigError("pair ids must be >= 0")
    return a, b


def canonical_pairs(pairs) -> tuple[np.ndarray, np.ndarray]:
    """Distinct unordered pairs as sorted columns (lo, hi) with lo < hi; self-pairs dropped."""
    a, b = _as_pair_columns(pairs)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    lo, hi = lo[keep], hi[keep]
    return unique_pairs(lo, hi)


def _pair_keys(lo: np.ndarray, hi: np.ndarray, width: int) -> np.ndarray:
    return lo * np.int64(width) + hi


def pair_scores(predicted, truth) -> PairScores:
    """Precision / recall / F1 of predicted pairs against true pairs (both unordered, any
    order, duplicates and self-pairs ignored), by one sorted intersection."""
    plo, phi = canonical_pairs(predicted)
    tlo, thi = canonical_pairs(truth)
    ids = np.concatenate([plo, phi, tlo, thi])
    if ids.size == 0:
        return scores_from_counts(0, 0, 0)
    # dense renumbering keeps lo * width + hi inside int64 whatever the ids are
    uniq, inv = np.unique(ids, return_inverse=True)
    m, k = plo.shape[0], tlo.shape[0]
    width = uniq.shape[0]
    pk = _pair_keys(inv[:m], inv[m:2 * m], width)
    tk = _pair_keys(inv[2 * m:2 * m + k], inv[2 * m + k:], width)
    tp = np.intersect1d(pk, tk, assume_unique=True).shape[0]
    return scores_from_counts(tp, m - tp, k - tp)


def decision_scores(predicted, actual) -> PairScores:
    """Scores of per-item boolean decisions against boolean labels (e.g. judged pairs: predicted
    duplicate or not, labelled duplicate or not)."""
    p = np.asarray(predicted, dtype=bool)
    y = np.asarray(actual, dtype=bool)
    if p.shape != y.shape:
        raise ConfigError(f"predicted and actual differ in shape: {p.shape} vs {y.shape}")
    tp = int(np.count_nonzero(p & y))
    return scores_from_counts(tp, int(np.count_nonzero(p & ~y)), int(np.count_nonzero(~p & y)))


# -- clusters -----------------------------------------------------------------------------------
def _labels(x, name: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 1:
        raise ConfigError(f"{name} must be a 1-d array of labels")
    return x


def _comb2(x) -> int:
    """Σ C(x_i, 2) as a Python integer (exact while the sum fits int64: n below ~4·10⁹)."""
    x = np.asarray(x, dtype=np.int64)
    return int(np.sum(x * (x - 1) // 2, dtype=np.int64)) if x.size else 0


def contingency(pred, true) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sizes of the non-empty cells of the contingency table of two labelings of the same
    documents, and its row sums (predicted cluster sizes) and column sums (true cluster sizes).

    Labels can be any sortable values (ints, strings); returns (cells, rows, cols) as int64
    arrays, each in no particular order. Cost: O(n log n), memory O(n).
    """
    pred = _labels(pred, "pred")
    true = _labels(true, "true")
    if pred.shape != true.shape:
        raise ConfigError(f"labelings differ in length: {pred.shape[0]} vs {true.shape[0]}")
    if pred.size == 0:
        e = np.empty(0, np.int64)
        return e, e, e
    _, pi, rows = np.unique(pred, return_inverse=True, return_counts=True)
    _, ti, cols = np.unique(true, return_inverse=True, return_counts=True)
    cell = pi.astype(np.int64).ravel() * np.int64(cols.shape[0]) + ti.astype(np.int64).ravel()
    _, cells = np.unique(cell, return_counts=True)
    return cells.astype(np.int64), rows.astype(np.int64), cols.astype(np.int64)


def cluster_pair_counts(pred, true) -> tuple[int, int, int]:
    """(predicted pairs, true pairs, pairs in both) implied by two labelings, as
    (Σ_i C(a_i,2), Σ_j C(b_j,2), Σ_ij C(n_ij,2)) from the contingency table."""
    cells, rows, cols = contingency(pred, true)
    return _comb2(rows), _comb2(cols), _comb2(cells)


def cluster_pair_scores(pred, true) -> PairScores:
    """Pairwise precision / recall / F1 of a predicted clustering against a true clustering."""
    n_pred, n_true, both = cluster_pair_counts(pred, true)
    return scores_from_counts(both, n_pred - both, n_true - both)


def clusters_vs_pairs_scores(pred_labels, true_pairs) -> PairScores:
    """Predicted clustering (label per document 0..n-1) against an exhaustive set of true pairs
    (every other pair is negative): TP = true pairs inside one predicted cluster,
    FP = Σ_i C(a_i, 2) − TP, FN = |T| − TP. True pairs must use ids < n."""
    labels = _labels(pred_labels, "pred_labels")
    lo, hi = canonical_pairs(true_pairs)
    if hi.size and hi.max() >= labels.shape[0]:
        raise IndexError(f"true pair id {int(hi.max())} out of range for {labels.shape[0]} documents")
    _, rows = np.unique(labels, return_counts=True)
    tp = int(np.count_nonzero(labels[lo] == labels[hi]))
    return scores_from_counts(tp, _comb2(rows) - tp, lo.shape[0] - tp)


def pairs_vs_clusters_scores(pred_pairs, true_labels) -> PairScores:
    """Predicted pairs against a true clustering (label per document 0..n-1; every pair within a
    true cluster is positive, every other pair negative)."""
    labels = _labels(true_labels, "true_labels")
    lo, hi = canonical_pairs(pred_pairs)
    if hi.size and hi.max() >= labels.shape[0]:
        raise IndexError(f"predicted pair id {int(hi.max())} out of range for {labels.shape[0]} documents")
    _, cols = np.unique(labels, return_counts=True)
    tp = int(np.count_nonzero(labels[lo] == labels[hi]))
    return scores_from_counts(tp, lo.shape[0] - tp, _comb2(cols) - tp)


def adjusted_rand_index(pred, true) -> float:
    """Adjusted Rand index (Hubert & Arabie 1985) of two labelings of the same documents:
    ARI = 2 (N·index − A·B) / (N (A + B) − 2 A·B) with index = Σ C(n_ij,2), A = Σ C(a_i,2),
    B = Σ C(b_j,2), N = C(n,2); 1.0 when the denominator is 0 (both trivial and identical)."""
    cells, rows, cols = contingency(pred, true)
    n = int(rows.sum()) if rows.size else 0
    index, a, b = _comb2(cells), _comb2(rows), _comb2(cols)
    total = n * (n - 1) // 2
    num = 2 * (total * index - a * b)
    den = total * (a + b) - 2 * a * b
    if den == 0:
        return 1.0
    return num / den


def labels_from_pairs(n: int, pairs) -> np.ndarray:
    """Connected components of the pair graph over documents 0..n-1 (label = smallest member):
    the transitive closure of a pair relation, as a clustering."""
    lo, hi = canonical_pairs(pairs)
    if hi.size and hi.max() >= n:
        raise IndexError(f"pair id {int(hi.max())} out of range for {n} documents")
    return components(int(n), lo, hi)


# -- exact-Jaccard ground truth -----------------------------------------------------------------
def _prefix_lengths(sizes: np.ndarray, t: float) -> np.ndarray:
    """|x| − ⌈t|x|⌉ + 1, with ⌈·⌉ taken on the low side of rounding error (longer prefix = safe)."""
    need = np.ceil(sizes * t - 1e-9 * np.maximum(sizes, 1)).astype(np.int64)
    need = np.clip(need, 1, None)
    return np.where(sizes > 0, sizes - need + 1, 0).clip(0, sizes)


def exact_jaccard_truth(features: Features, threshold: float, *, chunk_pairs: int = 1 << 22,
                        return_stats: bool = False):
    """Every document pair with exact Jaccard J ≥ ``threshold`` over distinct shingles.

    Returns ``(lo, hi, sim)``: int64 columns with lo < hi sorted by (lo, hi), and J. Decisions
    use the very expression of :func:`neardup.exact_jaccard_pairs` (``inter / union >= t``), so
    the result equals comparing all C(n, 2) pairs. Empty documents are never in a pair.

    Method — a sparse product restricted by prefix filtering (AllPairs, Bayardo et al. 2007):

    1. Order all shingles globally by document frequency (rarest first; ties by hash) and sort
       each document's distinct shingles in that order.
    2. If J(x, y) ≥ t then |x ∩ y| ≥ t·|x ∪ y| ≥ t·max(|x|, |y|) =: α. Any two sorted sets
       sharing at least α elements share one among the first |x| − α + 1 elements of x and
       the first |y| − α + 1 of y. So each document x only indexes its *prefix*: its
       |x| − ⌈t|x|⌉ + 1 rarest shingles (a superset of the needed prefix, since α ≥ ⌈t|x|⌉).
    3. Inverted index over prefix entries (one numpy sort by shingle rank); every shingle
       with k prefix postings yields its C(k, 2) document pairs. Pairs are generated in chunks
       of about ``chunk_pairs`` pairs, each chunk a range of the pairs' smaller document (so a
       pair met through several shared shingles is always in one chunk), filtered by size
       (J ≤ min/max, so min(|x|, |y|) ≥ t·max), made unique, and verified with the exact
       merge-based intersection. Memory: O(entries + chunk) — a chunk holds at least one
       document, whose pairs number at most its prefix length × n.

    Why not simply skip shingles shared by more than some cap of documents: dropping them
    under-counts intersections and loses every pair whose overlap is mostly common shingles
    (e.g. 500 copies of one licence text have only common shingles) — not exact. Prefix
    filtering is the exact form of that idea: a frequent shingle is skipped for every
    document whose prefix does not reach it, i.e. every document that has at least
    |x| − ⌈t|x|⌉ + 1 rarer shingles; it is indexed only for documents made mostly of
    frequent shingles, and those produce their pairs honestly (such pairs are often true
    duplicates and in the output anyway). Lower thresholds give longer prefixes and more
    candidates: at t → 0 this degenerates to the full sparse product.

    With ``return_stats=True`` also returns a dict of counts (prefix entries, candidate pairs
    generated, verified pairs).
    """
    t = float(threshold)
    if not 0.0 < t <= 1.0:
        raise ConfigError(f"threshold must be in (0, 1], got {threshold!r}")
    if chunk_pairs < 1:
        raise ConfigError("chunk_pairs must be >= 1")
    u = features.unique()
    n = len(u)
    sizes = u.sizes().astype(np.int64)
    stats = {"documents": n, "shingle_entries": int(u.hashes.shape[0]), "prefix_entries": 0,
             "candidate_pairs": 0, "verified_pairs": 0}
    empty = np.empty(0, np.int64)
    if n < 2 or u.hashes.shape[0] == 0:
        out = (empty, empty, np.empty(0, np.float64))
        return (*out, stats) if return_stats else out

    doc_of = np.repeat(np.arange(n, dtype=np.int64), sizes)
    uniq_h, inv, df = np.unique(u.hashes, return_inverse=True, return_counts=True)
    rank = np.empty(uniq_h.shape[0], dtype=np.int64)
    rank[np.lexsort((uniq_h, df))] = np.arange(uniq_h.shape[0], dtype=np.int64)
    tok = rank[inv.ravel()]
    # each document's shingles rarest first; position within the document
    order = np.lexsort((tok, doc_of))
    tok, doc = tok[order], doc_of[order]
    pos = np.arange(tok.shape[0], dtype=np.int64) - u.offsets[:-1][doc]
    in_prefix = pos < _prefix_lengths(sizes, t)[doc]
    tok, doc = tok[in_prefix], doc[in_prefix]
    stats["prefix_entries"] = int(tok.shape[0])
    # inverted index: prefix postings grouped by shingle, documents ascending within a group
    order = np.lexsort((doc, tok))
    tok, doc = tok[order], doc[order]
    m = tok.shape[0]
    start = np.ones(m, dtype=bool)
    start[1:] = tok[1:] != tok[:-1]
    starts = np.flatnonzero(start)
    ends = np.append(starts[1:], m)
    group_end = np.repeat(ends, ends - starts)  # exclusive end of each entry's group
    partners = group_end - np.arange(m) - 1  # later entries of the same group: larger doc ids
    # Chunks are ranges of the *smaller* document of a pair, so every pair comes up in exactly
    # one chunk (once per shared prefix shingle) and a per-chunk unique suffices.
    by_doc = np.argsort(doc, kind="stable")
    doc_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc, minlength=n), out=doc_start[1:])
    per_doc = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc, weights=partners, minlength=n).astype(np.int64), out=per_doc[1:])

    found_lo, found_hi, found_sim = [], [], []
    d0 = 0
    while d0 < n:
        # documents d0..d1-1 own about chunk_pairs pairs (at least one document per chunk)
        d1 = int(np.searchsorted(per_doc, per_doc[d0] + chunk_pairs, side="right")) - 1
        d1 = min(max(d1, d0 + 1), n)
        ent = by_doc[doc_start[d0]:doc_start[d1]]
        cnt = partners[ent]
        total = int(per_doc[d1] - per_doc[d0])
        d0 = d1
        if not total:
            continue
        left = np.repeat(ent, cnt)
        first = np.cumsum(cnt) - cnt
        right = left + 1 + (np.arange(total, dtype=np.int64) - np.repeat(first, cnt))
        a, b = doc[left], doc[right]
        del left, right
        sa, sb = sizes[a], sizes[b]
        ok = np.minimum(sa, sb) >= t * np.maximum(sa, sb) * (1 - 1e-12) - 1e-9
        keys = sorted_unique(a[ok] * np.int64(n) + b[ok])
        del a, b, sa, sb, ok
        stats["candidate_pairs"] += total
        stats["verified_pairs"] += int(keys.shape[0])
        if keys.size:
            lo, hi = keys // n, keys % n
            sim = exact_jaccard_pairs(u, lo, hi)
            hit = sim >= t
            found_lo.append(lo[hit])
            found_hi.append(hi[hit])
            found_sim.append(sim[hit])

    if not found_lo:
        out = (empty, empty, np.empty(0, np.float64))
        return (*out, stats) if return_stats else out
    lo = np.concatenate(found_lo)
    hi = np.concatenate(found_hi)
    sim = np.concatenate(found_sim)
    order = np.lexsort((hi, lo))
    out = (lo[order], hi[order], sim[order])
    return (*out, stats) if return_stats else out


# -- threshold sweeps ---------------------------------------------------------------------------
def threshold_sweep(scores, actual, *, higher_is_similar: bool = True):
    """Scores of the decision ``score >= θ`` (or ``score <= θ`` when ``higher_is_similar`` is
    False, e.g. Hamming distances) for every distinct score θ.

    Returns (thresholds, precision, recall, f1) arrays, thresholds from the strictest to the
    loosest decision. Vectorised: one sort, cumulative true-positive counts.
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(actual, dtype=bool)
    if s.shape != y.shape or s.ndim != 1:
        raise ConfigError("scores and actual must be 1-d arrays of the same length")
    key = s if higher_is_similar else -s
    order = np.argsort(-key, kind="stable")
    ks, ys = key[order], y[order]
    last = np.ones(ks.shape[0], dtype=bool)
    last[:-1] = ks[:-1] != ks[1:]  # decision θ = ks[i] accepts everything up to the last tie
    tp = np.cumsum(ys)[last]
    pos = (np.arange(ks.shape[0]) + 1)[last]
    fn = int(y.sum()) - tp
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(pos > 0, tp / np.maximum(pos, 1), 1.0)
        r = np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1), 1.0)
        f1 = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1), 0.0)
    th = ks[last] if higher_is_similar else -ks[last]
    return th, p, r, f1


def best_threshold(scores, actual, *, higher_is_similar: bool = True) -> tuple[float, PairScores]:
    """The threshold with the highest F1 (ties: the strictest) and its scores. Tuned on the data
    it is scored on: an optimistic figure, not a held-out one."""
    y = np.asarray(actual, dtype=bool)
    th, _, _, f1 = threshold_sweep(scores, y, higher_is_similar=higher_is_similar)
    if th.size == 0:
        return math.nan, scores_from_counts(0, 0, 0)
    k = int(np.argmax(f1))
    s = np.asarray(scores, dtype=np.float64)
    pred = s >= th[k] if higher_is_similar else s <= th[k]
    return float(th[k]), decision_scores(pred, y)

