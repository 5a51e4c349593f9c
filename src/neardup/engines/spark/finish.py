"""Stage 5 on Spark, finish: the verified pairs → each row's representative, similarity to it and
decision, by the local engine's finish step (:func:`neardup.dedup.finish.finish`). On the driver, on
the whole graph at once, when the pairs and their rows' values fit its budget
(:func:`_finish_on_driver`); otherwise connected components (union–find on the driver below
:data:`DRIVER_EDGES` edges, else large/small-star rounds) and every component finished inside one
executor task (:func:`_local_linkage`). :func:`finish_clusters` chooses."""
from __future__ import annotations

import json
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..._arrays import sorted_unique
from ...clusters.cluster import LINKAGE_SAMPLE
from ...config import DedupConfig, ResolvedConfig
from ...dedup.finish import finish
from ...dedup.methods import method_of
from ...kernels.clusters import components
from .columns import _binary_rows, _cfg_json, _ragged_features
from .session import _arrow_frame, _checkpoint, _shuffle_partitions, _task_threads
from .verify import _budget, _driver_budget, _sig_dtype

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
        comps = _arrow_frame(spark, table).repartition(_shuffle_partitions(spark), "row")
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
    the local kernels see the same way) → (row, rep, sim, dec). On an executor: one compute thread."""
    _task_threads()
    return _finish_table(table, cfg_json)


def _finish_table(table, cfg_json):
    """:func:`_finish_component`'s work, on the threads the process has (the driver: all its cores):
    the local finish step by the run's rule (:meth:`~neardup.dedup.methods.base.Method.finish_rule`,
    which gives the local finders' clusters: ``tests/test_methods.py``)."""
    cfg = ResolvedConfig(**json.loads(cfg_json))
    rule = method_of(cfg).finish_rule(cfg)
    kind = table.column("kind").to_numpy(zero_copy_only=False)
    nodes = table.filter(pa.array(kind == 0))
    edges = table.filter(pa.array(kind == 1))
    rows = nodes.column("a").to_numpy().astype(np.int64)
    order = np.argsort(rows, kind="stable")
    rows = rows[order]
    values = _binary_rows(nodes.column("sig").combine_chunks(), _sig_dtype(cfg))[order]
    sizes = nodes.column("size").to_numpy(zero_copy_only=False).astype(np.int64)[order]
    score = nodes.column("score").to_numpy(zero_copy_only=False).astype(np.float64)[order]
    lo = np.searchsorted(rows, edges.column("a").to_numpy().astype(np.int64))
    hi = np.searchsorted(rows, edges.column("b").to_numpy().astype(np.int64))
    esim = edges.column("s").to_numpy(zero_copy_only=False).astype(np.float64)
    ehow = edges.column("h").to_numpy(zero_copy_only=False).astype(np.uint8)
    feats = _ragged_features(nodes.column("sh")).subset(order) if rule.sets else None
    keep = cfg.keep
    done = finish(rows.shape[0], lo, hi, esim, ehow, rule.similarity(values, sizes, feats), threshold=rule.threshold,
                  max_drift=rule.max_drift, linkage=rule.linkage, keep=keep,
                  lengths=score if keep == "longest" else None, keys=score if keep == "key" else None,
                  oracle=rule.oracle(values, feats) if rule.linkage == "bounded" else None,
                  containment=rule.containment, sizes=sizes, fixed=int((rows < 0).sum()), sample=LINKAGE_SAMPLE)
    c = done.clusters
    return pa.table({"row": pa.array(rows, pa.int64()), "rep": pa.array(rows[c.cluster], pa.int64()),
                     "sim": pa.array(c.similarity, pa.float64()),
                     "dec": pa.array(c.decided.astype(np.int16), pa.int16()),
                     "ovr": pa.array(np.zeros(rows.shape[0], bool) if done.overridden is None else done.overridden,
                                     pa.bool_())})


#: the finish step's rows: each row of a component, its representative, similarity to it, decision code
#: (:data:`~neardup.dedup.finish.ROW_HOW`) and whether the keep policy was overridden (containment)
_ASSIGNED = "row long, rep long, sim double, dec short, ovr boolean"


def _finish_on_driver(edges: DataFrame, docs: DataFrame, cfg: DedupConfig) -> DataFrame | None:
    """Every component finished at once on the driver (:func:`_finish_table`, the local engine's finish
    step on the whole graph, as the local engine runs it) when the verified pairs and their rows'
    values fit its budget (:func:`~.verify._driver_budget`): the pairs and those
    rows collected (two Spark actions), the result handed back as a checkpointed DataFrame. None past
    the budget (the caller finishes the components on the executors)."""
    spark = edges.sparkSession
    e = edges.select("lo", "hi", "sim", "how").toArrow()
    lo = e.column("lo").to_numpy().astype(np.int64)
    hi = e.column("hi").to_numpy().astype(np.int64)
    if lo.shape[0] == 0:
        return spark.createDataFrame([], _ASSIGNED)
    nodes = sorted_unique(np.concatenate([lo, hi]))
    width = method_of(cfg).row_bytes(cfg)
    if nodes.shape[0] * (width + 32) + lo.shape[0] * 32 > _driver_budget(spark):
        return None
    wanted = docs.select("row", "sig", "size", "score", "sh").join(
        _arrow_frame(spark, pa.table({"row": pa.array(nodes, pa.int64())})), "row", "left_semi")
    if method_of(cfg).finish_rule(cfg).sets:    # the shingle sets travel too: their size is known only here
        fits, _ = _budget(wanted, "sh")
        if not fits:
            return None
    rows = wanted.toArrow()
    m, n = rows.num_rows, e.num_rows
    none = pa.nulls
    table = pa.table({
        "kind": pa.concat_arrays([pa.array(np.zeros(m, np.int32)), pa.array(np.ones(n, np.int32))]),
        "a": pa.concat_arrays([rows.column("row").combine_chunks().cast(pa.int64()), pa.array(lo, pa.int64())]),
        "b": pa.concat_arrays([none(m, pa.int64()), pa.array(hi, pa.int64())]),
        "s": pa.concat_arrays([none(m, pa.float64()), e.column("sim").combine_chunks().cast(pa.float64())]),
        "h": pa.concat_arrays([none(m, pa.int8()), e.column("how").combine_chunks().cast(pa.int8())]),
        "sig": pa.concat_arrays([rows.column("sig").combine_chunks(), none(n, pa.binary())]),
        "size": pa.concat_arrays([rows.column("size").combine_chunks().cast(pa.int64()), none(n, pa.int64())]),
        "score": pa.concat_arrays([rows.column("score").combine_chunks().cast(pa.float64()), none(n, pa.float64())]),
        "sh": pa.concat_arrays([rows.column("sh").combine_chunks().cast(pa.binary()), none(n, pa.binary())]),
    })
    del rows, e
    out = _finish_table(table, _cfg_json(cfg))
    return _checkpoint(_arrow_frame(spark, out).repartition(_shuffle_partitions(spark), "row"))


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
            .mapInArrow(partial(_finish_partition, cfg_json=_cfg_json(cfg)), _ASSIGNED))


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



def finish_clusters(edges: DataFrame, docs: DataFrame, cfg: DedupConfig, n_edges: int) -> tuple[DataFrame, int]:
    """(row, rep, sim, dec, ovr) of every row of a verified pair (``n_edges`` of them), persisted, and
    the component rounds run on the executors (0: none)."""
    assign = _finish_on_driver(edges, docs, cfg) if n_edges <= DRIVER_EDGES else None
    if assign is not None:
        return assign, 0
    comps, rounds = _components(edges.select("lo", "hi"))
    # every component finished by the local engine's finish step on one executor (a component must fit in one
    # task's memory: its rows' signatures and pairs)
    assign = _local_linkage(comps, edges, docs, cfg).persist(StorageLevel.MEMORY_AND_DISK)
    assign.count()
    return assign, rounds

