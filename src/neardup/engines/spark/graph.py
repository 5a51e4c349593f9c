"""Stages 3–7 on Spark: candidates (identical rows, LSH bands, containment per size ratio, SimHash
tables), verification (the rules of :mod:`neardup.dedup.verify`, applied in ``mapInArrow``),
connected components (on the driver below ``DRIVER_EDGES``, else large/small-star rounds) and
representatives (bounded linkage per component by :func:`neardup.clusters.build_clusters` itself,
or components with the drift split). :func:`find_clusters` is the entry point.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..._arrays import sorted_unique
from ...clusters.cluster import LINKAGE_SAMPLE
from ...config import DedupConfig, simhash_verified
from ...dedup.candidates import MAX_BUCKET, choose_params, containment_candidate_pairs, containment_lsh
from ...dedup.finish import finish, linkage_oracle, pair_similarity
from ...dedup.verify import (
    CANDIDATE,
    ESTIMATE,
    EXACT,
    IDENTICAL,
    borderline_band,
    borderline_mask,
    borderline_z,
    clustering_rule,
    exact_similarity,
    ranges_similarity,
    verification_config,
)
from ...errors import ConfigError
from ...features.shingles import Features
from ...index.simhash_index import plan_tables
from ...kernels.clusters import components
from ...kernels.lsh import band_keys, bucket_pairs
from ...similarity.estimates import minhash_similarity
from ...sketches.minhash import _DTYPES, jaccard_rows
from ...sketches.simhash import hamming_array
from .columns import _binary_rows, _cfg_json, _column, _ragged_features
from .session import _check_supported, _checkpoint, _driver_memory, _phase, _shuffle_partitions, _task_threads


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


def _how(code: int):
    """The column ``how`` of verified pairs: a code into :data:`neardup.dedup.verify.HOW`."""
    return F.lit(int(code)).cast("byte").alias("how")


def _sig_dtype(cfg: DedupConfig):
    return _DTYPES[cfg.scheme] if cfg.method == "minhash" else np.uint64


def _similarities(pairs: DataFrame, sigs: DataFrame, cfg: DedupConfig, border=None, exact=None,
                  driver: bool = False) -> DataFrame:
    """(lo, hi) → (lo, hi, sim): both signatures joined on (``sigs`` partitioned by row: only the pairs
    move), the estimate in mapInArrow; ``border`` adds the borderline flag (see
    :func:`_pair_similarity`); ``exact``: the exact similarity on ``sigs``'s shingle sets (``sh``);
    ``driver``: on the driver when the documents' values fit its budget (:func:`_similarities_on_driver`:
    for many pairs, not for a few)."""
    exact = _exact(cfg) if exact is None else exact
    col = "sh" if exact else "sig"
    if driver and _fits_driver(sigs, col):
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
    checkpointed (:func:`_checkpoint`): its plan joins and unions five persisted tables, some twice, and
    a query over it would carry all their plans and print them, as a tree, for the SQL listener (with
    adaptive execution, the test suite's 2 GB driver ran out of heap doing so)."""
    t0 = time.perf_counter()
    spark = sims.sparkSession
    _phase(spark, "verify: estimates")
    sims = sims.persist(StorageLevel.MEMORY_AND_DISK)
    sims.count()
    flagged = sims.filter(F.col("border") & (F.col("hi") >= 0))
    if alias is not None:
        flagged = flagged.join(alias, "lo", "left").withColumn(
            "ea", F.when(F.col("lo") < 0, F.col("alias")).otherwise(F.col("lo")))
    else:
        flagged = flagged.withColumn("ea", F.col("lo"))
    flagged = flagged.persist(StorageLevel.MEMORY_AND_DISK)
    border = flagged.filter(F.col("ea").isNotNull()).select("lo", "hi", "ea", F.col("sim").alias("est"))
    keep = (sims.filter(~F.col("border") | (F.col("hi") < 0)).select("lo", "hi", "sim")
            .unionByName(flagged.filter(F.col("ea").isNull()).select("lo", "hi", "sim")).select("*", _how(ESTIMATE)))
    rows = border.select(F.col("ea").alias("row")).unionByName(border.select(F.col("hi").alias("row"))).distinct()
    _phase(spark, "verify: borderline texts")
    sh = exact_rows(rows).persist(StorageLevel.MEMORY_AND_DISK)
    n_docs = sh.count()
    _phase(spark, "verify: borderline exact")
    ex = _similarities(border.select(F.col("ea").alias("lo"), "hi").distinct(), sh, cfg, exact=True, driver=True)
    decided = border.join(ex.select(F.col("lo").alias("ea"), "hi", "sim"), ["ea", "hi"]).select("lo", "hi", "sim",
                                                                                                  "est")
    decided = decided.persist(StorageLevel.MEMORY_AND_DISK)
    out = _checkpoint(keep.unionByName(decided.select("lo", "hi", "sim", _how(EXACT))))
    t = F.lit(float(cfg.threshold))
    counts = decided.agg(F.count(F.lit(1)).alias("pairs"),
                         F.sum(F.when((F.col("sim") >= t) != (F.col("est") >= t), 1).otherwise(0)).alias("flipped")
                         ).first()
    info.update(pairs=int(counts["pairs"]), documents=int(n_docs), flipped=int(counts["flipped"] or 0))
    for df in (sh, flagged, decided, sims):
        df.unpersist()
    timings["borderline"] = time.perf_counter() - t0
    return out


# Pairs checked exactly are decided on the driver when their documents' shingle sets take at most this
# many bytes and a quarter of the driver's memory: on the 1 M corpus 0.9 M borderline sets (1.4 GB)
# against 2.6 M pairs. Past it both sets travel with each pair through two shuffles (3.5 KB per
# document at 1 M). The same code computes each chunk of pairs either way. Estimates stay on the
# executors: on the driver (one thread, 0.5 GB of signatures, 5.6 M pairs) they took 18 s longer at 1 M.
DRIVER_SET_BYTES = 4 << 30
DRIVER_CHUNK = 1 << 18        # pairs per chunk on the driver (two copies of their values at a time)


def _fits_driver(docs: DataFrame, col: str) -> bool:
    """Whether the documents' signatures or shingle sets (binary column ``col``) fit the driver's budget."""
    size = docs.agg(F.sum(F.length(col)).alias("b")).first()["b"] or 0
    return size <= min(DRIVER_SET_BYTES, _driver_memory(docs.sparkSession) // 4)


def _similarities_on_driver(pairs: DataFrame, sigs: DataFrame, cfg: DedupConfig, col: str, border=None,
                            exact: bool = False) -> DataFrame:
    """:func:`_similarities` computed on the driver: the documents' (row, ``col``, size) and the pairs
    collected as Arrow, then :func:`_similarity_batch` — the executors' own code — over chunks of pairs
    (exact similarities: every pair at once by its kernel, :func:`~neardup.dedup.verify.ranges_similarity`,
    reading the sets in place), the result handed back as a checkpointed DataFrame. A pair whose row is
    absent is dropped, as the executors' join drops it."""
    spark = pairs.sparkSession
    docs = sigs.select("row", col, "size").toArrow()
    rows = docs.column("row").to_numpy().astype(np.int64)
    values, sizes = docs.column(col), docs.column("size").combine_chunks()
    del docs
    p = pairs.toArrow()
    lo = p.column("lo").to_numpy().astype(np.int64)
    hi = p.column("hi").to_numpy().astype(np.int64)
    del p
    order = np.argsort(rows, kind="stable")

    def at(r):    # the position of each row among the documents (-1: absent)
        if rows.shape[0] == 0:
            return np.full(r.shape[0], -1, dtype=np.int64)
        i = order[np.minimum(np.searchsorted(rows, r, sorter=order), rows.shape[0] - 1)]
        return np.where(rows[i] == r, i, -1)

    ia, ib = at(lo), at(hi)
    found = (ia >= 0) & (ib >= 0)
    lo, hi, ia, ib = lo[found], hi[found], ia[found], ib[found]
    if exact and border is None:
        # the documents' sorted distinct sets as one CSR, each pair's stats read in place by the local
        # kernel (exact_similarity's own ranges_similarity, on all cores): no set is copied per pair
        feats = _csr_sets(values)
        del values
        sim = ranges_similarity(feats.hashes, feats.offsets[:-1], feats.offsets[1:], ia, ib, cfg.metric)
        table = pa.table({"lo": pa.array(lo, pa.int64()), "hi": pa.array(hi, pa.int64()),
                          "sim": pa.array(np.asarray(sim, dtype=np.float64), pa.float64())})
        return _checkpoint(spark.createDataFrame(table).repartition(_shuffle_partitions(spark), "lo"))
    values = values.combine_chunks()
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
    return _checkpoint(spark.createDataFrame(table).repartition(_shuffle_partitions(spark), "lo"))


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


# Up to this many verified edges (16 bytes each on the driver: 320 MB), connected components are
# found on the driver by the local union–find kernel, in one pass; above it, by star rounds on the
# executors. Both give every node the smallest node of its component, so the outputs do not change.
DRIVER_EDGES = 20_000_000


def _components(edges: DataFrame, max_rounds: int = 200) -> tuple[DataFrame, int]:
    """Connected components of the undirected edges (lo, hi), lo < hi: (row, label) for every node of an
    edge, label = the smallest node of its component. Few edges (≤ :data:`DRIVER_EDGES`): union–find
    on the driver (rounds = 0). Otherwise alternating large-star / small-star rounds until the graph
    is a forest of stars whose centres are smaller than their leaves and no leaf has two centres —
    then each star is one component and its centre its smallest node."""
    spark = edges.sparkSession
    if edges.limit(DRIVER_EDGES + 1).count() <= DRIVER_EDGES:
        t = edges.select("lo", "hi").toArrow()
        lo = t.column("lo").to_numpy().astype(np.int64)
        hi = t.column("hi").to_numpy().astype(np.int64)
        nodes = sorted_unique(np.concatenate([lo, hi]))
        labels = components(nodes.shape[0], np.searchsorted(nodes, lo), np.searchsorted(nodes, hi))
        table = pa.table({"row": pa.array(nodes, pa.int64()), "label": pa.array(nodes[labels], pa.int64())})
        comps = spark.createDataFrame(table).repartition(_shuffle_partitions(spark), "row")
        return _checkpoint(comps), 0
    e = _checkpoint(edges.select(F.col("lo").alias("u"), F.col("hi").alias("v")).distinct())
    for rounds in range(1, max_rounds + 1):
        # large-star: every node links its larger neighbours to the smallest node of its neighbourhood
        sym = e.select(F.col("u").alias("a"), F.col("v").alias("b")).unionByName(
            e.select(F.col("v").alias("a"), F.col("u").alias("b")))
        m = sym.groupBy("a").agg(F.least(F.col("a"), F.min("b")).alias("m"))
        large = (sym.filter(F.col("b") > F.col("a")).join(m, "a")
                    .select(F.col("m").alias("u"), F.col("b").alias("v")).distinct())
        # small-star: every node links itself and its smaller neighbours to the smallest of them
        ms = large.groupBy("v").agg(F.min("u").alias("m"))
        lm = large.join(ms, "v")
        small = (lm.select(F.col("m").alias("u"), F.col("v"))
                   .unionByName(lm.filter(F.col("u") != F.col("m"))
                                .select(F.col("m").alias("u"), F.col("u").alias("v")))
                   .distinct())
        e_new = _checkpoint(small)
        e.unpersist()
        e = e_new
        nodes = (e.select(F.col("u").alias("x"), F.lit(1).alias("c"), F.lit(0).alias("l"))
                  .unionByName(e.select(F.col("v").alias("x"), F.lit(0).alias("c"), F.lit(1).alias("l")))
                  .groupBy("x").agg(F.max("c").alias("c"), F.sum("l").alias("l")))
        if nodes.filter(((F.col("c") == 1) & (F.col("l") > 0)) | (F.col("l") > 1)).limit(1).count() == 0:
            comps = (e.select(F.col("v").alias("row"), F.col("u").alias("label"))
                      .unionByName(e.select(F.col("u").alias("row"), F.col("u").alias("label"))).distinct())
            return comps, rounds
    raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")


def _finish_component(table, cfg_json):
    """The finish step (:func:`neardup.dedup.finish.finish`, the local engine's) on the rows and
    verified pairs of one or more whole connected components (relabelled 0..m−1 in row order, which
    the local kernels see the same way) → (row, rep, sim, dec)."""

    _task_threads()
    cfg = json.loads(cfg_json)
    exact = _exact(cfg)
    method = cfg["method"] if cfg["method"] in ("minhash", "simhash") else "equal"
    metric = cfg["metric"]
    if simhash_verified(cfg):        # decided on exact sets (the band's): MinHash's finish with an exact check
        method, exact, metric = "minhash", True, "jaccard"
    kind = table.column("kind").to_numpy(zero_copy_only=False)
    nodes = table.filter(pa.array(kind == 0))
    edges = table.filter(pa.array(kind == 1))
    rows = nodes.column("a").to_numpy().astype(np.int64)
    order = np.argsort(rows, kind="stable")
    rows = rows[order]
    values = (_binary_rows(nodes.column("sig").combine_chunks(),
                           np.uint64 if method != "minhash" else _DTYPES[cfg["scheme"]])[order])
    sizes = nodes.column("size").to_numpy(zero_copy_only=False).astype(np.int64)[order]
    score = nodes.column("score").to_numpy(zero_copy_only=False).astype(np.float64)[order]
    lo = np.searchsorted(rows, edges.column("a").to_numpy().astype(np.int64))
    hi = np.searchsorted(rows, edges.column("b").to_numpy().astype(np.int64))
    esim = edges.column("s").to_numpy(zero_copy_only=False).astype(np.float64)
    ehow = edges.column("h").to_numpy(zero_copy_only=False).astype(np.uint8)
    scheme = cfg["scheme"]
    feats = _ragged_features(nodes.column("sh")).subset(order) if exact else None
    bounded = method != "equal" and cfg["linkage"] == "bounded"
    threshold, drift = clustering_rule(cfg) if method != "equal" else (1.0, None)
    keep = cfg["keep"]
    similarity = pair_similarity(method, metric, scheme, values, sizes, feats, exact)
    done = finish(rows.shape[0], lo, hi, esim, ehow, similarity, method=method, threshold=threshold, max_drift=drift,
                  linkage=cfg["linkage"] if method != "equal" else "components", keep=keep,
                  lengths=score if keep == "longest" else None, keys=score if keep == "key" else None,
                  oracle=linkage_oracle(method, metric, scheme, values, feats, exact) if bounded else None,
                  metric=metric, sizes=sizes, fixed=int((rows < 0).sum()), sample=LINKAGE_SAMPLE)
    c = done.clusters
    return pa.table({"row": pa.array(rows, pa.int64()), "rep": pa.array(rows[c.cluster], pa.int64()),
                     "sim": pa.array(c.similarity, pa.float64()),
                     "dec": pa.array(c.decided.astype(np.int16), pa.int16()),
                     "ovr": pa.array(np.zeros(rows.shape[0], bool) if done.overridden is None else done.overridden,
                                     pa.bool_())})


def _local_linkage(comps: DataFrame, edges: DataFrame, docs: DataFrame, cfg: DedupConfig) -> DataFrame:
    """Every multi-row component finished by the local clustering code on one executor (bounded
    linkage: a component must fit in one task's memory — its rows' signatures and pairs)."""
    nodes = comps.join(docs.select("row", "sig", "size", "score", "sh"), "row").select(
        "label", F.lit(0).alias("kind"), F.col("row").alias("a"), F.lit(None).cast("long").alias("b"),
        F.lit(None).cast("double").alias("s"), F.lit(None).cast("byte").alias("h"), "sig", "size", "score", "sh")
    links = edges.join(comps.select(F.col("row").alias("lo"), "label"), "lo").select(
        "label", F.lit(1).alias("kind"), F.col("lo").alias("a"), F.col("hi").alias("b"), F.col("sim").alias("s"),
        F.col("how").alias("h"), F.lit(None).cast("binary").alias("sig"), F.lit(None).cast("long").alias("size"),
        F.lit(None).cast("double").alias("score"), F.lit(None).cast("binary").alias("sh"))
    spark = comps.sparkSession
    return (nodes.unionByName(links).repartition(_shuffle_partitions(spark), "label")
            .mapInArrow(partial(_finish_partition, cfg_json=_cfg_json(cfg)),
                        "row long, rep long, sim double, dec short, ovr boolean"))


def _finish_partition(batches, cfg_json):
    """mapInArrow over a partition holding whole components (partitioned by label): all of them
    finished by one call of :func:`_finish_component`. Components are independent — no edge joins
    two, and a merge's checks look only at the two groups merged — so their union clustered at once
    gives each the result it gets alone, at one Python call per partition instead of one per
    component (300,000 components at 1 M documents)."""
    parts = [b for b in batches if b.num_rows]
    if not parts:
        return
    table = pa.Table.from_batches(parts)
    out = _finish_component(table, cfg_json)
    yield from out.to_batches(max_chunksize=65536)


def _band_cands(distinct: DataFrame, lsh, cfg: DedupConfig, max_bucket: int) -> DataFrame:
    """LSH candidates (lo < hi) among the distinct rows (row, sig), persisted: rows sharing a band key;
    a bucket of more than ``max_bucket`` rows links each to its first (the local ``candidate_pairs``)."""
    bands = distinct.mapInArrow(partial(_band_batches, b=lsh.b, r=lsh.r, dtype=_sig_dtype(cfg)),
                                "band int, key long, row long")
    # one shuffle puts each bucket in one partition; its pairs come from the local kernel there
    pairs = (bands.repartition(_shuffle_partitions(distinct.sparkSession), "band", "key")
             .mapInArrow(partial(_bucket_batches, max_bucket=max_bucket), "lo long, hi long"))
    cands = pairs.distinct().persist(StorageLevel.MEMORY_AND_DISK)
    cands.count()
    return cands


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
    cands.count()
    return cands, lsh


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
    if cfg.method == "minhash":
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
            cands, lsh = _containment_cands(spark, live.join(distinct.select("row"), "row"), cfg)
            params = {"b": lsh.b, "r": lsh.r, "lsh_mode": lsh.mode}
        else:
            cands = _band_cands(distinct, lsh, cfg, max_bucket)
        n_cand = cands.count()
        timings["candidates"] = time.perf_counter() - t0
        # verification on the full signatures
        _phase(spark, "verify")
        t0 = time.perf_counter()
        if cfg.verify == "borderline":
            if exact_rows is None:
                raise ConfigError("verify (--verify) borderline needs the documents' texts; find_clusters was "
                                  "given none (exact_rows): pass exact_rows, or decide by the estimates with "
                                  "verify='minhash'")

            z = borderline_z(n_cand)
            t = float(cfg.threshold)
            params["borderline"] = borderline_band(n_cand, t, cfg.num_perm)
            alias = (dup.filter((F.col("lo") < 0) & (F.col("hi") >= 0)).groupBy("lo").agg(F.min("hi").alias("alias"))
                     if fixed else None)
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
    comps, rounds = _components(edges.select("lo", "hi"))
    # every component finished by the local engine's finish step on one executor (a component must fit in
    # one task's memory: its rows' signatures and pairs)
    assign = _local_linkage(comps, edges, docs, cfg).persist(StorageLevel.MEMORY_AND_DISK)
    assign.count()
    if not cfg.pairs:
        edges.unpersist()
    timings["clusters"] = time.perf_counter() - t0
    return SparkClusters(assign, int(n_cand), int(n_edges), params, timings, rounds, edges if cfg.pairs else None)


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
