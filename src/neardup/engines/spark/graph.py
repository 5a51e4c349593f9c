"""Stage 3 on Spark, candidates, and the clustering of a run: identical rows, LSH bands, containment per
size ratio, SimHash tables; then verification (:mod:`.verify`) and the finish step (:mod:`.finish`).
:func:`find_clusters` is the entry point.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ...config import DedupConfig, simhash_verified
from ...dedup.candidates import MAX_BUCKET, choose_params, containment_candidate_pairs, containment_lsh
from ...dedup.methods import method_of
from ...dedup.verify import (
    CANDIDATE,
    ESTIMATE,
    EXACT,
    IDENTICAL,
    borderline_band,
    borderline_mask,
    borderline_z,
    verification_config,
)
from ...errors import ConfigError
from ...index.lsh import candidate_pairs, identical_rows
from ...index.simhash_index import plan_tables
from ...kernels.lsh import band_keys, bucket_pairs
from ...sketches.minhash import jaccard_rows
from .columns import _binary_rows, _column
from .finish import finish_clusters
from .session import _arrow_frame, _check_supported, _checkpoint, _phase, _shuffle_partitions
from .verify import _budget, _decide_borderline, _exact, _how, _pairs_frame, _sig_dtype, _similarities


def _band_batches(batches, b, r, dtype):
    """mapInArrow: (row, sig) → (band, key, row), b records per row (local ``band_keys``)."""
    for batch in batches:
        rows = _column(batch, "row").to_numpy(zero_copy_only=False)
        n = rows.shape[0]
        if n == 0:
            continue
        keys = band_keys(_binary_rows(_column(batch, "sig"), dtype), b, r)
        yield pa.RecordBatch.from_arrays([
            pa.array(np.tile(np.arange(b, dtype=np.int32), n), pa.int32()),
            pa.array(keys.reshape(-1).view(np.int64), pa.int64()),
            pa.array(np.repeat(rows.astype(np.int64), b), pa.int64())], names=["band", "key", "row"])


def _bucket_batches(batches, max_bucket):
    """mapInArrow over one partition of (band, key, row) rows, hash-partitioned by (band, key) so that
    every bucket is whole here: the partition sorted by (band, key) in NumPy, then each band's runs of
    equal keys turned into pairs by the local kernel (:func:`neardup.kernels.lsh.bucket_pairs`: all
    pairs of a bucket of at most ``max_bucket`` rows, else a star from its smallest row)."""
    parts = [(_column(b, "band").to_numpy(zero_copy_only=False), _column(b, "key").to_numpy(zero_copy_only=False),
              _column(b, "row").to_numpy(zero_copy_only=False)) for b in batches]
    if not parts:
        return
    band = np.concatenate([p[0] for p in parts]).astype(np.int64)
    key = np.concatenate([p[1] for p in parts]).astype(np.int64)
    row = np.concatenate([p[2] for p in parts]).astype(np.int64)
    del parts
    order = np.lexsort((key, band))
    band, key, row = band[order], key[order], row[order]
    cuts = np.flatnonzero(np.diff(band)) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [band.shape[0]]])
    for s, e in zip(starts.tolist(), ends.tolist()):
        if e - s < 2:
            continue
        lo, hi = bucket_pairs(key[s:e], np.arange(e - s, dtype=np.int64), row[s:e], max_bucket)
        for a in range(0, lo.shape[0], 1 << 20):
            yield pa.RecordBatch.from_arrays([pa.array(lo[a:a + (1 << 20)], pa.int64()),
                                              pa.array(hi[a:a + (1 << 20)], pa.int64())], names=["lo", "hi"])


@dataclass
class SparkClusters:
    """What :func:`find_clusters` found. ``assign``: (row, rep, sim, dec) for every row of a cluster with
    more than one member (representatives included, sim 1.0; ``dec`` each row's decision code,
    :data:`neardup.dedup.finish.ROW_HOW`, 255 for the kept one); rows absent from it are alone."""

    assign: DataFrame
    candidates: int
    verified: int
    params: dict
    timings: dict
    rounds: int = 0
    edges: DataFrame | None = None     # with ``--pairs``: the verified pairs (lo, hi, sim, how), persisted

    def unpersist(self) -> None:
        self.assign.unpersist()
        if self.edges is not None:
            self.edges.unpersist()


def _band_cands(distinct: DataFrame, lsh, cfg: DedupConfig, max_bucket: int) -> tuple[DataFrame, int]:
    """LSH candidates (lo < hi) among the distinct rows (row, sig), persisted: rows sharing a band key;
    a bucket of more than ``max_bucket`` rows links each to its first (the local ``candidate_pairs``)."""
    bands = distinct.mapInArrow(partial(_band_batches, b=lsh.b, r=lsh.r, dtype=_sig_dtype(cfg)),
                                "band int, key long, row long")
    # one shuffle puts each bucket in one partition; its pairs come from the local kernel there
    pairs = (bands.repartition(_shuffle_partitions(distinct.sparkSession), "band", "key")
             .mapInArrow(partial(_bucket_batches, max_bucket=max_bucket), "lo long, hi long"))
    cands = pairs.distinct().persist(StorageLevel.MEMORY_AND_DISK)
    return cands, cands.count()


def _containment_cands(spark, rows: DataFrame, cfg: DedupConfig):
    """``--metric containment`` candidates (lo < hi) among the distinct rows (row, sig, size), banded per
    size ratio by the local rule (:func:`~neardup.dedup.candidates.containment_candidate_pairs`), and the
    report's LSH parameters. The signatures and sizes go to the driver (n × k × 8 bytes, e.g. 1 GB for
    a million documents at k = 128) and the compiled probe runs there: the per-ratio banding has no
    shuffle formulation that stays near a band join's size (a pair's bands depend on both sizes)."""
    t = rows.select("row", "sig", "size").orderBy("row").toArrow()
    row = t.column("row").to_numpy().astype(np.int64)
    values = _binary_rows(t.column("sig").combine_chunks(), _sig_dtype(cfg)) if row.shape[0] else \
        np.zeros((0, cfg.num_perm), dtype=_sig_dtype(cfg))
    sizes = t.column("size").to_numpy().astype(np.int64)
    lo, hi = containment_candidate_pairs(values, sizes, cfg.threshold, cfg.lsh_mode, cfg.recall)
    lsh = containment_lsh(cfg.threshold, cfg.num_perm, cfg.lsh_mode, cfg.recall)
    table = pa.table({"lo": pa.array(row[lo], pa.int64()), "hi": pa.array(row[hi], pa.int64())})
    cands = spark.createDataFrame(table.to_pandas(), "lo long, hi long").persist(StorageLevel.MEMORY_AND_DISK)
    return cands, int(lo.shape[0]), lsh


def find_clusters(sig_df: DataFrame, cfg: DedupConfig | None = None, max_bucket: int = MAX_BUCKET,
                  fixed: bool = False, exact_rows=None) -> SparkClusters:
    """Clusters of the signed rows (``_SIGNED`` schema; rows with ``err`` set are ignored) by the local
    engine's rules. ``sig_df`` should be persisted (and ideally hash-partitioned by ``row``).
    ``fixed``: rows with negative row numbers are documents decided before (an index's, the local
    ``fixed`` rows): they come first in row order, are never linked to each other (a verified pair
    lo < hi with hi < 0) and win the keep policy through their score (+inf, or first in row order).
    ``exact_rows`` (``--verify borderline``, the default): a function of a DataFrame of rows giving
    (row, sh, size), their distinct shingle hashes from their texts. Without ``cfg`` and ``exact_rows``
    the candidates are decided by their estimates (``verify="minhash"``): there are no texts to re-read."""
    if cfg is None:
        cfg = DedupConfig(verify="borderline" if exact_rows is not None else "minhash")
    cfg = cfg.resolved()
    _check_supported(cfg)
    timings: dict = {}
    docs = sig_df.filter(F.col("err").isNull()) if "err" in sig_df.columns else sig_df
    live = docs.filter(~F.col("sig_empty"))
    spark = sig_df.sparkSession
    _phase(spark, "identical rows")
    t0 = time.perf_counter()
    first = live.select("row", "rk").withColumn("first", F.min("row").over(Window.partitionBy("rk")))
    same = first.filter(F.col("row") != F.col("first")).select(F.col("first").alias("lo"), F.col("row").alias("hi"))
    params: dict = {}
    if cfg.method == "minhash" and cfg.verify == "borderline" and exact_rows is None:    # (verified SimHash: its own)
        raise ConfigError("verify (--verify) borderline needs the documents' texts; find_clusters was given none "
                          "(exact_rows): pass exact_rows, or decide by the estimates with verify='minhash'")
    if cfg.method == "minhash" and _budget(live, "sig")[0]:     # (the driver path: 50.3 -> 36.9 s at 100k, measured)
        edges, n_cand, n_edges, params = _minhash_edges_on_driver(spark, live, docs, cfg, timings, max_bucket,
                                                                  exact_rows, fixed)
    elif cfg.method == "minhash":
        lsh = choose_params(cfg.threshold, cfg.num_perm, cfg.lsh_mode, cfg.recall, cfg.bands, cfg.rows)
        params = {"b": lsh.b, "r": lsh.r, "lsh_mode": lsh.mode}
        # identical rows: equal 64-bit key, confirmed byte for byte against the group's first row
        s1 = docs.select(F.col("row").alias("lo"), F.col("sig").alias("s1"))
        s2 = docs.select(F.col("row").alias("hi"), F.col("sig").alias("s2"))
        dup = (same.join(s1, "lo").join(s2, "hi").filter(F.col("s1") == F.col("s2"))
                   .select("lo", "hi", F.lit(1.0).alias("sim"), _how(IDENTICAL))
                   .persist(StorageLevel.MEMORY_AND_DISK))
        dup.count()
        timings["identical"] = time.perf_counter() - t0
        # LSH candidates among the distinct rows
        _phase(spark, "LSH candidates")
        t0 = time.perf_counter()
        distinct = live.join(dup.select(F.col("hi").alias("row")), "row", "left_anti").select("row", "sig")
        if cfg.metric == "containment" and lsh.mode != "explicit":
            cands, n_cand, lsh = _containment_cands(spark, live.join(distinct.select("row"), "row"), cfg)
            params = {"b": lsh.b, "r": lsh.r, "lsh_mode": lsh.mode}
        else:
            cands, n_cand = _band_cands(distinct, lsh, cfg, max_bucket)
        timings["candidates"] = time.perf_counter() - t0
        # verification on the full signatures
        _phase(spark, "verify")
        t0 = time.perf_counter()
        if cfg.verify == "borderline":
            z = borderline_z(n_cand)
            t = float(cfg.threshold)
            params["borderline"] = borderline_band(n_cand, t, cfg.num_perm)
            alias = _aliases(dup) if fixed else None
            est = _similarities(cands, docs, cfg, border=(t, cfg.num_perm, z))
            sims = _decide_borderline(est, exact_rows, cfg, timings, params["borderline"], alias)
        else:
            sims = _similarities(cands, docs, cfg, driver=_exact(cfg)).select(
                "*", _how({"none": CANDIDATE, "exact": EXACT}.get(cfg.verify, ESTIMATE)))
        if cfg.verify != "none":
            sims = sims.filter(F.col("sim") >= F.lit(float(cfg.threshold)))
        edges = dup.unionByName(sims).persist(StorageLevel.MEMORY_AND_DISK)
        n_edges = edges.count()
        cands.unpersist()
        dup.unpersist()
        timings["verify"] = time.perf_counter() - t0
    elif cfg.method == "simhash" and simhash_verified(cfg):
        edges, n_cand, n_edges, params, band = _verified_simhash_edges(spark, live, same, cfg, timings, exact_rows)
        docs = docs.drop("sh", "size").join(band, "row", "left")     # the finish compares the band's exact sets
    elif cfg.method == "simhash":
        edges, n_cand, n_edges, params = _simhash_edges(spark, live, same, cfg, timings)
    else:   # exact / sentences: equal 64-bit values are the duplicates (local find_equal_duplicates)
        edges = same.select("lo", "hi", F.lit(1.0).alias("sim"), _how(IDENTICAL)).persist(StorageLevel.MEMORY_AND_DISK)
        n_edges = n_cand = edges.count()
        timings["group"] = time.perf_counter() - t0
    if fixed:   # the local _unfix: no pair between two fixed rows
        unfixed = edges.filter(F.col("hi") >= 0).persist(StorageLevel.MEMORY_AND_DISK)
        n_edges = unfixed.count()
        edges.unpersist()
        edges = unfixed
    # clusters: components, representative by the keep policy, similarity to it
    _phase(spark, "clusters")
    t0 = time.perf_counter()
    assign, rounds = finish_clusters(edges, docs, cfg, n_edges)
    if not cfg.pairs:
        edges.unpersist()
    timings["clusters"] = time.perf_counter() - t0
    return SparkClusters(assign, int(n_cand), int(n_edges), params, timings, rounds, edges if cfg.pairs else None)


def _minhash_edges_on_driver(spark, live: DataFrame, docs: DataFrame, cfg: DedupConfig, timings: dict,
                             max_bucket: int, exact_rows, fixed: bool):
    """MinHash's identical rows, candidates and estimates on the driver, by the local engine's own steps
    (:func:`~neardup.index.lsh.identical_rows`, :func:`~neardup.index.lsh.candidate_pairs` or
    :func:`~neardup.dedup.candidates.containment_candidate_pairs`, the similarity of the method's
    :meth:`~neardup.dedup.methods.base.Method.finish_rule`, :func:`~neardup.dedup.verify.borderline_mask`),
    when the signatures fit the driver's budget (:func:`~.verify._budget`; n × k × 4 bytes: 0.5 GB at a
    million documents): one collect of the signatures replaces three phases of joins and shuffles. The
    pairs go back as checkpointed DataFrames; the borderline band, ``--verify exact`` and the finish
    step run as on the other path. Returns the verified edges (lo, hi, sim, how) persisted, the
    candidate and edge counts and the report's LSH parameters."""
    t0 = time.perf_counter()
    got = live.select("row", "sig", "size").toArrow()
    rows = got.column("row").to_numpy().astype(np.int64)
    order = np.argsort(rows, kind="stable")
    rows = rows[order]
    dtype = _sig_dtype(cfg)
    values = (np.ascontiguousarray(_binary_rows(got.column("sig").combine_chunks(), dtype)[order]) if rows.shape[0]
              else np.zeros((0, cfg.num_perm), dtype=dtype))
    sizes = got.column("size").to_numpy(zero_copy_only=False).astype(np.int64)[order]
    del got
    n = rows.shape[0]
    same = identical_rows(values) if n else np.zeros(0, np.int64)
    copies = np.flatnonzero(same != np.arange(n))
    dup = _edges_frame(spark, rows[same[copies]], rows[copies], np.ones(copies.shape[0]), IDENTICAL)
    timings["identical"] = time.perf_counter() - t0

    _phase(spark, "LSH candidates")
    t0 = time.perf_counter()
    distinct = np.flatnonzero(same == np.arange(n))
    lsh = choose_params(cfg.threshold, cfg.num_perm, cfg.lsh_mode, cfg.recall, cfg.bands, cfg.rows)
    if cfg.metric == "containment" and lsh.mode != "explicit":
        lo, hi = containment_candidate_pairs(values, sizes, cfg.threshold, cfg.lsh_mode, cfg.recall, distinct)
        lsh = containment_lsh(cfg.threshold, cfg.num_perm, cfg.lsh_mode, cfg.recall)
    else:
        lo, hi = candidate_pairs(values, lsh.b, lsh.r, max_bucket=max_bucket, rows=distinct)
    n_cand = int(lo.shape[0])
    params = {"b": lsh.b, "r": lsh.r, "lsh_mode": lsh.mode}
    timings["candidates"] = time.perf_counter() - t0

    _phase(spark, "verify")
    t0 = time.perf_counter()
    if cfg.verify == "exact":          # on the shingle sets: as the other path does it
        cands = _pairs_frame(spark, rows[lo], rows[hi], np.zeros(n_cand)).select("lo", "hi")
        sims = _similarities(cands, docs, cfg, driver=True).select("*", _how(EXACT))
    else:
        sim = method_of(cfg).finish_rule(cfg).similarity(values, sizes, None)(lo, hi)    # (the estimates)
        if cfg.verify == "borderline":
            t = float(cfg.threshold)
            params["borderline"] = borderline_band(n_cand, t, cfg.num_perm)
            j = sim if cfg.metric == "jaccard" else jaccard_rows(values, lo, hi, cfg.scheme)
            za, zb = (None, None) if cfg.metric == "jaccard" else (sizes[lo], sizes[hi])
            border = borderline_mask(j, za, zb, t, cfg.num_perm, cfg.metric, borderline_z(n_cand))
            est = _checkpoint(_arrow_frame(spark, pa.table({
                "lo": pa.array(rows[lo], pa.int64()), "hi": pa.array(rows[hi], pa.int64()),
                "sim": pa.array(np.asarray(sim, dtype=np.float64), pa.float64()),
                "border": pa.array(border, pa.bool_())})).repartition(_shuffle_partitions(spark), "lo"))
            alias = _aliases(dup) if fixed else None
            sims = _decide_borderline(est, exact_rows, cfg, timings, params["borderline"], alias)
        else:
            how = CANDIDATE if cfg.verify == "none" else ESTIMATE
            ok = np.ones(n_cand, bool) if cfg.verify == "none" else sim >= float(cfg.threshold)
            sims = _edges_frame(spark, rows[lo[ok]], rows[hi[ok]], np.asarray(sim, dtype=np.float64)[ok], how)
    del values
    if cfg.verify != "none":
        sims = sims.filter(F.col("sim") >= F.lit(float(cfg.threshold)))
    edges = dup.unionByName(sims).persist(StorageLevel.MEMORY_AND_DISK)
    n_edges = edges.count()
    timings["verify"] = time.perf_counter() - t0
    return edges, n_cand, n_edges, params


def _aliases(dup: DataFrame) -> DataFrame:
    """(lo, alias): each fixed row's first new row with an identical signature, from the identical pairs
    (the local :func:`~neardup.dedup.verify.fixed_aliases`)."""
    return dup.filter((F.col("lo") < 0) & (F.col("hi") >= 0)).groupBy("lo").agg(F.min("hi").alias("alias"))


def _edges_frame(spark, lo: np.ndarray, hi: np.ndarray, sim: np.ndarray, how: int) -> DataFrame:
    """Verified pairs of the driver (lo, hi, sim, how), checkpointed (not a local relation in every
    later plan) and partitioned by ``lo``."""
    return _checkpoint(_pairs_frame(spark, lo, hi, sim).select("*", _how(how))
                       .repartition(_shuffle_partitions(spark), "lo"))


def _verified_simhash_edges(spark, live, same, cfg: DedupConfig, timings: dict, exact_rows):
    """Verified SimHash on Spark (the local :func:`~neardup.dedup.find.find_simhash_verified`): the pairs
    within ``candidate_bits`` (:func:`_simhash_edges` at that radius), each decided by the exact Jaccard of
    its documents' sets (:func:`~neardup.dedup.verify.verification_config`, re-read from the texts of
    just those documents by ``exact_rows``) ≥ the threshold. Returns the edges, counts, the report's
    parameters (with the accepted pairs' distances) and the band's sets (row, sh, size)."""
    if exact_rows is None:
        raise ConfigError("verified SimHash checks its candidates on their texts; find_clusters was given none "
                          "(exact_rows): pass exact_rows, or give --bits for the unchecked rule")
    cands, _, n_cand, params = _simhash_edges(spark, live, same, cfg, timings, k=cfg.candidate_bits)  # (copies too)
    t0 = time.perf_counter()
    _phase(spark, "verify: texts of the candidates")
    d = cands.select("lo", "hi", F.round(F.lit(64.0) * (F.lit(1.0) - F.col("sim"))).cast("int").alias("d"))
    rows = d.select(F.col("lo").alias("row")).unionByName(d.select(F.col("hi").alias("row"))).distinct()
    band = exact_rows(rows).persist(StorageLevel.MEMORY_AND_DISK)
    band.count()
    _phase(spark, "verify: exact")
    vcfg = replace(verification_config(cfg), verify="exact")
    ex = _similarities(d.select("lo", "hi"), band, vcfg, exact=True, driver=True)
    ok = ex.filter(F.col("sim") >= F.lit(float(cfg.threshold))).join(d, ["lo", "hi"])
    edges = ok.select("lo", "hi", "sim", _how(EXACT)).persist(StorageLevel.MEMORY_AND_DISK)
    n_edges = edges.count()
    hist = {r["d"]: r["n"] for r in ok.groupBy("d").agg(F.count(F.lit(1)).alias("n")).collect()}
    params["accepted_distances"] = [int(hist.get(i, 0)) for i in range(int(cfg.candidate_bits) + 1)]
    params["verified"] = True
    cands.unpersist()
    timings["verify"] = time.perf_counter() - t0
    return edges, n_cand, n_edges, params, band


def _table_keys(batches, masks):
    """mapInArrow: (row, rk) of distinct fingerprints → (t, key, row, fp): each fingerprint's key in
    every permuted table of the plan (the bits of table t's mask)."""
    m = np.asarray([int(x) for x in masks], dtype=np.uint64)
    for batch in batches:
        rows = _column(batch, "row").to_numpy(zero_copy_only=False).astype(np.int64)
        fps = _column(batch, "rk").to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
        n, t = rows.shape[0], m.shape[0]
        keys = (fps[:, None] & m[None, :]).view(np.int64).ravel()
        yield pa.RecordBatch.from_arrays([
            pa.array(np.tile(np.arange(t, dtype=np.int32), n), pa.int32()), pa.array(keys, pa.int64()),
            pa.array(np.repeat(rows, t), pa.int64()), pa.array(np.repeat(fps.view(np.int64), t), pa.int64())],
            names=["t", "key", "row", "fp"])


def _simhash_edges(spark, live: DataFrame, same: DataFrame, cfg: DedupConfig, timings: dict, k: int | None = None):
    """The local :func:`~neardup.dedup.find.find_simhash_duplicates` pairs as DataFrame operations:
    equal fingerprints link to the first copy (distance 0); among the distinct ones, Manku et al.'s
    permuted tables (the local planner's masks: two fingerprints within k bits agree on every bit of
    at least one table's mask) give the candidates, kept when popcount(a ⊕ b) ≤ k — all pairs within
    k, exactly, as the local engine finds them."""
    t0 = time.perf_counter()
    dup = same.select("lo", "hi", F.lit(1.0).alias("sim"), _how(IDENTICAL)).persist(StorageLevel.MEMORY_AND_DISK)
    dup.count()
    timings["identical"] = time.perf_counter() - t0
    _phase(spark, "Hamming tables")
    t0 = time.perf_counter()
    distinct = live.join(dup.select(F.col("hi").alias("row")), "row", "left_anti").select("row", "rk")
    n_distinct = distinct.count()
    k = cfg.bits if k is None else k
    plan = plan_tables(64, k, max(n_distinct, 2))
    keys = distinct.mapInArrow(partial(_table_keys, masks=[int(x) for x in plan.key_masks]),
                               "t int, key long, row long, fp long")
    a, b = keys.alias("a"), keys.alias("b")
    dist = F.bit_count(F.col("a.fp").bitwiseXOR(F.col("b.fp")))
    pairs = (a.join(b, (F.col("a.t") == F.col("b.t")) & (F.col("a.key") == F.col("b.key"))
                    & (F.col("a.row") < F.col("b.row")))
             .select(F.col("a.row").alias("lo"), F.col("b.row").alias("hi"), dist.alias("d"))
             .filter(F.col("d") <= F.lit(int(k))).distinct()
             .select("lo", "hi", (F.lit(1.0) - F.col("d") / F.lit(64.0)).alias("sim"), _how(ESTIMATE))
             .persist(StorageLevel.MEMORY_AND_DISK))
    n_cand = pairs.count()
    edges = dup.unionByName(pairs).persist(StorageLevel.MEMORY_AND_DISK)
    n_edges = edges.count()
    pairs.unpersist()
    dup.unpersist()
    timings["candidates"] = time.perf_counter() - t0
    return edges, n_cand, n_edges, {"tables": int(len(plan.key_masks)), "fingerprints": int(n_distinct)}
