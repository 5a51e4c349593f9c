"""Stage 4 on Spark, verification: each candidate pair's similarity by the rules of
:mod:`neardup.dedup.verify` — estimates in ``mapInArrow`` over the pairs joined to both signatures, or
on the driver when the values fit its budget — and ``--verify borderline``'s band decided exactly on
the texts of just its documents (:func:`_decide_borderline`)."""
from __future__ import annotations

import time
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..._arrays import sorted_unique
from ...config import DedupConfig
from ...dedup.methods import method_of
from ...dedup.verify import (
    ESTIMATE,
    EXACT,
    borderline_mask,
    exact_similarity,
    ranges_similarity,
)
from ...features.shingles import Features
from ...similarity.estimates import minhash_similarity
from ...sketches.minhash import jaccard_rows
from ...sketches.simhash import hamming_array
from .columns import _binary_rows, _column, _ragged_features
from .session import _arrow_frame, _checkpoint, _driver_memory, _phase, _shuffle_partitions, _task_threads


def _pair_similarity(batches, scheme, dtype, metric, method="minhash", exact=False, border=None):
    """mapInArrow: (lo, hi, sa, sb, za, zb) → (lo, hi, sim), the local estimate of each pair (SimHash:
    1 − Hamming distance / 64); with ``exact``, sa and sb are the shingle sets and sim is their exact
    Jaccard (or the larger containment). ``border`` = (threshold, k, z): a fourth column, whether the
    estimate lies in the band that ``--verify borderline`` decides exactly (the local
    :func:`~neardup.dedup.verify.borderline_mask`)."""
    _task_threads()
    for batch in batches:
        out = _similarity_batch(batch, scheme, dtype, metric, method, exact, border)
        if out is not None:
            yield out


def _similarity_batch(batch, scheme, dtype, metric, method="minhash", exact=False, border=None):
    """One batch of :func:`_pair_similarity` (None when it holds no pair)."""

    mask = None
    lo = _column(batch, "lo").to_numpy(zero_copy_only=False).astype(np.int64)
    hi = _column(batch, "hi").to_numpy(zero_copy_only=False).astype(np.int64)
    n = lo.shape[0]
    if n == 0:
        return None
    ii = np.arange(n, dtype=np.int64)
    if exact:
        fa, fb = _ragged_features(_column(batch, "sa")), _ragged_features(_column(batch, "sb"))
        both = Features.distinct(np.concatenate([fa.hashes, fb.hashes]),
                                 np.concatenate([fa.offsets, fb.offsets[1:] + fa.offsets[-1]]))
        j = exact_similarity(both, ii, ii + n, metric)
    else:
        a = _binary_rows(_column(batch, "sa"), dtype)
        b = _binary_rows(_column(batch, "sb"), dtype)
        if method == "simhash":
            j = 1.0 - hamming_array(a.ravel(), b.ravel()) / 64.0
        else:
            jj = j = jaccard_rows(np.concatenate([a, b]), ii, ii + n, scheme)
            za = _column(batch, "za").to_numpy(zero_copy_only=False)
            zb = _column(batch, "zb").to_numpy(zero_copy_only=False)
            if metric != "jaccard":
                j = minhash_similarity(j, za, zb, metric)
            if border is not None:
                mask = borderline_mask(jj, za, zb, border[0], border[1], metric, border[2])
    cols = [pa.array(lo, pa.int64()), pa.array(hi, pa.int64()), pa.array(np.asarray(j, dtype=np.float64),
                                                                          pa.float64())]
    if border is not None:
        cols.append(pa.array(np.zeros(n, bool) if mask is None else mask, pa.bool_()))
    return pa.RecordBatch.from_arrays(cols, names=["lo", "hi", "sim", "border"][:len(cols)])


def _how(code: int):
    """The column ``how`` of verified pairs: a code into :data:`neardup.dedup.verify.HOW`."""
    return F.lit(int(code)).cast("byte").alias("how")


def _sig_dtype(cfg: DedupConfig):
    return method_of(cfg).dtype(cfg).type


def _similarities(pairs: DataFrame, sigs: DataFrame, cfg: DedupConfig, border=None, exact=None,
                  driver: bool = False) -> DataFrame:
    """(lo, hi) → (lo, hi, sim): both signatures joined on (``sigs`` partitioned by row: only the pairs
    move), the estimate in mapInArrow; ``border`` adds the borderline flag (see
    :func:`_pair_similarity`); ``exact``: the exact similarity on ``sigs``'s shingle sets (``sh``);
    ``driver``: on the driver when the documents' values fit its budget (:func:`_similarities_on_driver`:
    for many pairs, not for a few)."""
    exact = _exact(cfg) if exact is None else exact
    col = "sh" if exact else "sig"
    if driver and _budget(sigs, col)[0]:
        return _similarities_on_driver(pairs, sigs, cfg, col, border, exact)
    a = sigs.select(F.col("row").alias("lo"), F.col(col).alias("sa"), F.col("size").alias("za"))
    b = sigs.select(F.col("row").alias("hi"), F.col(col).alias("sb"), F.col("size").alias("zb"))
    joined = pairs.join(a, "lo").join(b, "hi").select("lo", "hi", "sa", "sb", "za", "zb")
    schema = "lo long, hi long, sim double" + (", border boolean" if border is not None else "")
    return joined.mapInArrow(partial(_pair_similarity, scheme=cfg.scheme, dtype=_sig_dtype(cfg), metric=cfg.metric,
                                     method=cfg.method, exact=exact, border=border), schema)


def _decide_borderline(sims: DataFrame, exact_rows, cfg: DedupConfig, timings: dict, info: dict,
                       alias: DataFrame | None = None) -> DataFrame:
    """``--verify borderline`` on Spark (the local :func:`~neardup.dedup.verify.decide_borderline`):
    the pairs flagged ``border`` get the exact similarity of their shingle sets, recomputed from the
    texts of just their documents (``exact_rows``: rows → (row, sh, size)); the others keep the
    estimate. A fixed row (lo < 0) is checked through its ``alias`` (lo, alias): the first new row with
    an identical signature (the local :func:`~neardup.dedup.verify.fixed_aliases`); without one its
    pairs keep the estimate. Returns (lo, hi, sim, how) — ``how`` says which were decided exactly —
    checkpointed (:func:`_checkpoint`: its plan joins and unions persisted tables, and a query over it
    would carry all their plans and print them, as a tree, for the SQL listener).

    The flagged pairs go to the driver (32 bytes each), and so do their documents' sets when they fit
    its budget (:func:`_budget`): the exact values are computed there by the local kernel, the
    counts in NumPy, and only the decided pairs come back — four Spark actions. Past the budget the
    sets stay on the executors and both travel with each pair (:func:`_similarities`)."""
    t0 = time.perf_counter()
    spark = sims.sparkSession
    _phase(spark, "verify: estimates")
    sims = sims.persist(StorageLevel.MEMORY_AND_DISK)
    flagged = sims.filter(F.col("border") & (F.col("hi") >= 0))
    if alias is not None:
        flagged = flagged.join(alias, "lo", "left").withColumn(
            "ea", F.when(F.col("lo") < 0, F.col("alias")).otherwise(F.col("lo")))
    else:
        flagged = flagged.withColumn("ea", F.col("lo"))
    got = flagged.select("lo", "hi", "ea", "sim").toArrow()
    lo = got.column("lo").to_numpy().astype(np.int64)
    hi = got.column("hi").to_numpy().astype(np.int64)
    ea_col = got.column("ea")
    checkable = ~np.asarray(ea_col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    ea = ea_col.fill_null(0).to_numpy().astype(np.int64)
    est = got.column("sim").to_numpy().astype(np.float64)
    del got
    # kept with their estimates: unflagged pairs, an index's pairs, and fixed rows without an alias
    keep = sims.filter(~F.col("border") | (F.col("hi") < 0)).select("lo", "hi", "sim")
    unchecked = np.flatnonzero(~checkable)
    if unchecked.shape[0]:
        keep = keep.unionByName(_pairs_frame(spark, lo[unchecked], hi[unchecked], est[unchecked]))
    keep = keep.select("*", _how(ESTIMATE))
    lo, hi, ea, est = lo[checkable], hi[checkable], ea[checkable], est[checkable]
    rows = sorted_unique(np.concatenate([ea, hi]))
    _phase(spark, "verify: borderline texts")
    sh = exact_rows(_arrow_frame(spark, pa.table({"row": pa.array(rows, pa.int64())}))).persist(
        StorageLevel.MEMORY_AND_DISK)
    _phase(spark, "verify: borderline exact")
    fits, n_docs = _budget(sh, "sh")
    if fits:
        found, sim = _exact_on_driver(sh, ea, hi, cfg.metric)
        decided_lo, decided_hi, decided_sim, decided_est = lo[found], hi[found], sim, est[found]
        decided = _pairs_frame(spark, decided_lo, decided_hi, decided_sim)
        t = float(cfg.threshold)
        flipped = int(np.count_nonzero((decided_sim >= t) != (decided_est >= t)))
        n_pairs = int(decided_lo.shape[0])
    else:
        border = _arrow_frame(spark, pa.table({"lo": pa.array(lo), "hi": pa.array(hi), "ea": pa.array(ea),
                                                 "est": pa.array(est)}))
        ex = _similarities(border.select(F.col("ea").alias("lo"), "hi").distinct(), sh, cfg, exact=True)
        both = border.join(ex.select(F.col("lo").alias("ea"), "hi", "sim"), ["ea", "hi"]).persist(
            StorageLevel.MEMORY_AND_DISK)
        t = F.lit(float(cfg.threshold))
        counts = both.agg(F.count(F.lit(1)).alias("pairs"),
                          F.sum(F.when((F.col("sim") >= t) != (F.col("est") >= t), 1).otherwise(0)).alias("flipped")
                          ).first()
        n_pairs, flipped = int(counts["pairs"]), int(counts["flipped"] or 0)
        decided = both.select("lo", "hi", "sim")
    out = _checkpoint(keep.unionByName(decided.select("lo", "hi", "sim", _how(EXACT))))
    info.update(pairs=n_pairs, documents=n_docs, flipped=flipped)
    for df in (sh, sims):
        df.unpersist()
    timings["borderline"] = time.perf_counter() - t0
    return out


def _pairs_frame(spark, lo: np.ndarray, hi: np.ndarray, sim: np.ndarray) -> DataFrame:
    """(lo, hi, sim) arrays of the driver as a DataFrame."""
    return _arrow_frame(spark, pa.table({"lo": pa.array(lo, pa.int64()), "hi": pa.array(hi, pa.int64()),
                                           "sim": pa.array(np.asarray(sim, dtype=np.float64), pa.float64())}))


# Pairs checked exactly are decided on the driver when their documents' shingle sets take at most this
# many bytes and a quarter of the driver's memory: on the 1 M corpus 0.9 M borderline sets (1.4 GB)
# against 2.6 M pairs. Past it both sets travel with each pair through two shuffles (3.5 KB per
# document at 1 M). The same code computes each chunk of pairs either way. Estimates stay on the
# executors: on the driver (one thread, 0.5 GB of signatures, 5.6 M pairs) they took 18 s longer at 1 M.
DRIVER_SET_BYTES = 4 << 30


DRIVER_CHUNK = 1 << 18        # pairs per chunk on the driver (two copies of their values at a time)


def _driver_budget(spark) -> int:
    """Bytes of values the driver takes on: :data:`DRIVER_SET_BYTES`, at most a quarter of its memory."""
    return min(DRIVER_SET_BYTES, _driver_memory(spark) // 4)


def _budget(docs: DataFrame, col: str) -> tuple[bool, int]:
    """Whether the documents' signatures or shingle sets (binary column ``col``) fit the driver's budget,
    and how many documents there are (one Spark action)."""
    r = docs.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length(col)).alias("b")).first()
    return (r["b"] or 0) <= _driver_budget(docs.sparkSession), int(r["n"])


def _positions(rows: np.ndarray, order: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The position of each of ``r`` among ``rows`` (``order``: its stable argsort; −1: absent)."""
    if rows.shape[0] == 0:
        return np.full(r.shape[0], -1, dtype=np.int64)
    i = order[np.minimum(np.searchsorted(rows, r, sorter=order), rows.shape[0] - 1)]
    return np.where(rows[i] == r, i, -1)


def _exact_on_driver(sets: DataFrame, lo: np.ndarray, hi: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The exact similarity of the row pairs (``lo``, ``hi``) on the documents' sets ``sets`` (row, sh),
    collected: the sets as one CSR, each pair's stats read in place by the local kernel
    (:func:`~neardup.dedup.verify.ranges_similarity`, on all cores; no set is copied per pair).
    Returns the mask of pairs whose two rows are present, and their similarities."""
    docs = sets.select("row", "sh").toArrow()
    rows = docs.column("row").to_numpy().astype(np.int64)
    values = docs.column("sh")
    del docs
    order = np.argsort(rows, kind="stable")
    ia, ib = _positions(rows, order, lo), _positions(rows, order, hi)
    found = (ia >= 0) & (ib >= 0)
    feats = _csr_sets(values)
    del values
    sim = ranges_similarity(feats.hashes, feats.offsets[:-1], feats.offsets[1:], ia[found], ib[found], metric)
    return found, np.asarray(sim, dtype=np.float64)


def _similarities_on_driver(pairs: DataFrame, sigs: DataFrame, cfg: DedupConfig, col: str, border=None,
                            exact: bool = False) -> DataFrame:
    """:func:`_similarities` computed on the driver: the pairs collected as Arrow; exact similarities by
    :func:`_exact_on_driver`, estimates by :func:`_similarity_batch` — the executors' own code — over
    chunks of pairs; the result handed back as a checkpointed DataFrame. A pair whose row is absent is
    dropped, as the executors' join drops it."""
    spark = pairs.sparkSession
    p = pairs.toArrow()
    lo = p.column("lo").to_numpy().astype(np.int64)
    hi = p.column("hi").to_numpy().astype(np.int64)
    del p
    if exact and border is None:
        found, sim = _exact_on_driver(sigs.select("row", F.col(col).alias("sh")), lo, hi, cfg.metric)
        return _checkpoint(_pairs_frame(spark, lo[found], hi[found], sim)
                           .repartition(_shuffle_partitions(spark), "lo"))
    docs = sigs.select("row", col, "size").toArrow()
    rows = docs.column("row").to_numpy().astype(np.int64)
    values, sizes = docs.column(col).combine_chunks(), docs.column("size").combine_chunks()
    del docs
    order = np.argsort(rows, kind="stable")
    ia, ib = _positions(rows, order, lo), _positions(rows, order, hi)
    found = (ia >= 0) & (ib >= 0)
    lo, hi, ia, ib = lo[found], hi[found], ia[found], ib[found]
    names = ["lo", "hi", "sim"] + (["border"] if border is not None else [])
    types = [pa.int64(), pa.int64(), pa.float64()] + ([pa.bool_()] if border is not None else [])
    out = []
    for s in range(0, lo.shape[0], DRIVER_CHUNK):
        e = min(s + DRIVER_CHUNK, lo.shape[0])
        a, b = pa.array(ia[s:e]), pa.array(ib[s:e])
        batch = pa.RecordBatch.from_arrays(
            [pa.array(lo[s:e]), pa.array(hi[s:e]), values.take(a), values.take(b), sizes.take(a), sizes.take(b)],
            names=["lo", "hi", "sa", "sb", "za", "zb"])
        r = _similarity_batch(batch, cfg.scheme, _sig_dtype(cfg), cfg.metric, cfg.method, exact, border)
        if r is not None:
            out.append(r)
    table = pa.Table.from_batches(out, pa.schema(list(zip(names, types))))
    # checkpointed: the table would otherwise sit in every later plan as a local relation
    return _checkpoint(_arrow_frame(spark, table).repartition(_shuffle_partitions(spark), "lo"))


def _csr_sets(values) -> Features:
    """The sets of a binary column (each value sorted distinct uint64, :func:`_ragged_array`), chunk by
    chunk (one Arrow binary array holds at most 2 GiB), as one :class:`Features`."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts = [_ragged_features(c) for c in chunks if len(c)]
    if not parts:
        return Features.distinct(np.zeros(0, np.uint64), np.zeros(1, np.int64))
    if len(parts) == 1:
        return parts[0]
    sizes = np.concatenate([np.diff(f.offsets) for f in parts])
    offsets = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return Features.distinct(np.concatenate([f.hashes for f in parts]), offsets)


def _exact(cfg) -> bool:
    """Pairs decided on the shingle sets (``--verify exact``) rather than the signatures."""
    get = cfg.get if isinstance(cfg, dict) else lambda k: getattr(cfg, k)
    return get("method") == "minhash" and get("verify") == "exact"

