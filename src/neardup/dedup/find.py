"""The stages of a run in memory, end to end: signatures → candidates (:mod:`.candidates`) → verified
pairs (:mod:`.verify`) → clusters and the kept document of each (:mod:`neardup.clusters`), each
method's way (its module in :mod:`.methods`: ``find_minhash_duplicates``, ``find_simhash_duplicates``,
``find_simhash_verified``, ``find_equal_duplicates``).

:func:`find_run` is the local engine's call: a run's signatures (and an index's matched documents as
fixed rows) → its :class:`DuplicateResult`, found by the run's method. :func:`join_pairs`: every
pair at or above the threshold from a result (``neardup pairs``).
"""
from __future__ import annotations

import numpy as np

from ..clusters import Clusters
from ..config import DedupConfig
from ..errors import ConfigError
from ..kernels.clusters import components, expand_groups, group_pair_count
from ..similarity.estimates import containment_from_jaccard
from .methods import method_of
from .methods.exact import find_equal_duplicates
from .methods.minhash import find_minhash_duplicates
from .methods.simhash import find_simhash_duplicates, find_simhash_verified
from .result import DuplicateResult, pairs_table
from .tables import Corpus
from .verify import (
    CANDIDATE,
    ESTIMATE,
    EXACT,
    HOW,
    IDENTICAL,
    METRICS,
    VERIFY,
    borderline_mask,
    borderline_z,
    decide_borderline,
    fixed_aliases,
    known_similarity,
)

__all__ = ["CANDIDATE", "ESTIMATE", "EXACT", "HOW", "IDENTICAL", "METRICS", "VERIFY", "DuplicateResult",
           "TooManyPairsError", "borderline_mask", "borderline_z", "containment_from_jaccard", "decide_borderline",
           "find_equal_duplicates", "find_minhash_duplicates", "find_run", "find_simhash_duplicates",
           "find_simhash_verified",
           "fixed_aliases", "join_pairs", "known_similarity", "pairs_table"]

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
    method = method_of(cfg)
    exact, band = method.text_checks(cfg, texts_of, values.shape[0], m, sets_of, spill)
    result = method.find(values, empty, sizes, features, cfg, lengths, keys, m, exact, band)
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
