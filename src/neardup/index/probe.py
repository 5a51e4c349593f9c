"""The one query path of every index on disk: a batch of query rows probed against each live segment
of a store (:meth:`~neardup.index.store.IndexStore.views`) by one compiled pass per segment, the
store giving arrays and the index scoring them.

:func:`probe` — band keys binary-searched in each segment's sorted band columns, the rows found
visited once each and scored on the full signature (:func:`neardup.kernels.index_probe.probe_segment`:
``kind`` 0 the fraction of equal slots, ``kind`` 1 the Hamming distance of one 64-bit word).
:func:`probe_containment` — a sized store's (key, size)-sorted columns probed by the containment
classes (:func:`neardup.kernels.containment.probe`), giving candidates the index then scores.
"""
from __future__ import annotations

import numba
import numpy as np

from ..errors import ConfigError
from ..kernels.containment import probe as containment_probe
from .segment import fold32
from .store import IndexStore

PARALLEL_QUERIES = 2048         # query batches at least this large are probed on all cores


def _threads() -> int:
    return max(1, int(numba.get_num_threads()))


def _rows(sigs: np.ndarray, n: int, dtype: np.dtype) -> np.ndarray:
    """A segment's little-endian signature bytes as (n, width) values of ``dtype`` (a copy only on a
    big-endian machine)."""
    le = sigs.view(np.dtype(dtype).newbyteorder("<")).reshape(n, -1)
    return le if le.dtype.isnative else le.astype(np.dtype(dtype))


def probe(st: IndexStore, values: np.ndarray, rows: np.ndarray, band_keys, kind: int, limit: float,
          empty, max_bucket: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query row, document id, score) of every match of the query rows ``rows`` of ``values``
    (their band keys ``band_keys``) in the store ``st``: per segment one compiled pass
    (:func:`~neardup.kernels.index_probe.probe_segment`, ``kind``/``limit``/``max_bucket`` as
    there; ``limit`` −∞ gives every document sharing a band, scored). Segments in id order."""
    from ..kernels.index_probe import probe_segment, probe_segment_parallel  # noqa: PLC0415  (numba kernels, 3 ms of import for every command: only a query runs them)

    rows = np.asarray(rows, dtype=np.int64)
    qs, ds, ss = [], [], []
    # (no query rows: nothing to fold — a (0, b) array has no shape (0, -1) — and nothing to probe)
    folded = np.ascontiguousarray(fold32(np.asarray(band_keys, dtype=np.uint64).reshape(rows.shape[0], -1))) \
        if rows.shape[0] else None
    with st.snapshot():
        for v in st.views() if folded is not None else ():
            sig = _rows(v.sigs, v.n, values.dtype)
            chunks = _threads() if rows.shape[0] >= PARALLEL_QUERIES else 1
            cap = max(1024, 2 * rows.shape[0] // chunks)
            while True:     # per slice of queries a stretch of `cap` outputs; larger if one overflowed
                n = cap * chunks
                oq, orow, osc = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.float64)
                if chunks == 1:
                    counts = np.array([probe_segment(values, rows, folded, v.bands, v.band_row, sig, v.dead, empty,
                                                     kind, limit, max_bucket, oq, orow, osc)])
                else:
                    counts = np.zeros(chunks, np.int64)
                    probe_segment_parallel(values, rows, folded, v.bands, v.band_row, sig, v.dead, empty, kind,
                                           limit, max_bucket, chunks, oq, orow, osc, counts)
                if counts.max() <= cap:
                    break
                cap = int(counts.max())
            take = np.concatenate([np.arange(c * cap, c * cap + counts[c]) for c in range(chunks)])
            qs.append(oq[take])
            ds.append(orow[take] + v.first_id)
            ss.append(osc[take])
    if not qs:
        z = np.zeros(0, np.int64)
        return z, z, np.zeros(0)
    return np.concatenate(qs), np.concatenate(ds), np.concatenate(ss)


def probe_containment(st: IndexStore, qkeys: np.ndarray, qsizes: np.ndarray, layouts, num_perm: int, tab,
                      threshold: float, grid: int, reverse: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(query row, document id) containment candidates in a sized store (:attr:`IndexStore.sized`):
    each segment probed by :func:`neardup.kernels.containment.probe` with its (key, size)-sorted band
    columns; ``qkeys``: the queries' layout band keys (unfolded), ``tab``: the class table (m_lo, r
    per class, b per class) of ``layouts`` at ``num_perm`` slots; ``reverse`` as there."""
    if not st.sized:
        raise ConfigError(f"{getattr(st, 'path', '')}: not a containment index (its band columns are not "
                          "sorted by size)")
    m_lo, tab_r, tab_b = tab
    lay_r = np.asarray(layouts, dtype=np.int64)
    lay_start = np.concatenate([[0], np.cumsum(num_perm // lay_r)]).astype(np.int64)
    folded = np.ascontiguousarray(fold32(np.asarray(qkeys, dtype=np.uint64)))
    qsizes = np.ascontiguousarray(qsizes, dtype=np.int64)
    qrows = np.full(qsizes.shape[0], -1, dtype=np.int64)
    qs, ds = [], []
    with st.snapshot():
        for v in st.views():
            if qsizes.shape[0] == 0 or v.bands.shape[1] == 0:
                continue
            sizes, max_size = v.sizes
            live = ~v.dead if v.dead.shape[0] else np.ones(v.n, dtype=np.bool_)
            seen = np.zeros(v.n, dtype=np.bool_)
            qi, row = containment_probe(folded, qsizes, qrows, v.bands, v.band_row, sizes, live, lay_r, lay_start,
                                        tab_r, tab_b, m_lo, float(grid), float(threshold), max_size, seen, reverse)
            qs.append(qi)
            ds.append(row + v.first_id)
    if not qs:
        z = np.zeros(0, np.int64)
        return z, z
    return np.concatenate(qs), np.concatenate(ds)


__all__ = ["PARALLEL_QUERIES", "probe", "probe_containment"]
