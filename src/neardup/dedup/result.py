"""What finding duplicates gives back, whatever the method: :class:`DuplicateResult` (clusters and
the verified pairs they were cut from), the pairs as a table, and the two rules every finder applies
to an index's documents given as fixed rows (:func:`unfix`, :func:`fixed_first`)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ..clusters import Clusters
from .verify import HOW


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


def unfix(lo, hi, sim, fixed: int, how=None):
    """Drop the pairs between two fixed rows (lo < hi, so both are fixed when hi is)."""
    if fixed:
        ok = np.maximum(lo, hi) >= fixed
        lo, hi, sim, how = lo[ok], hi[ok], sim[ok], None if how is None else how[ok]
    return (lo, hi, sim) if how is None else (lo, hi, sim, how)


def fixed_first(keep: str, fixed: int, n: int, lengths, keys):
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



__all__ = ["DuplicateResult", "fixed_first", "pairs_table", "unfix"]
