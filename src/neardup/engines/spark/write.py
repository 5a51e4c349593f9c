"""Stage 8 on Spark: the outputs — kept rows per input in its format, ``clusters.jsonl`` / ``.parquet``
records formatted on the executors by :mod:`neardup.dedup.records`, ``pairs.parquet``; part files
merged into the local engine's single files for a local OUTDIR."""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...config import DedupConfig
from ...dedup.finish import decision_name
from ...dedup.records import document_line, pairs_schema, parquet_batch, parquet_schema, skipped_line
from ...dedup.verify import HOW
from ...io.compression import open_write
from ...io.formats import InputSpec, format_of
from ...io.formats.delimited import dialect
from ...io.ids import parquet_id_text
from .columns import _arrow_text, _column, _lists
from .graph import SparkClusters
from .read import _BOM, _numbered, _Numbering, _scan
from .session import _is_uri


def _format_records(batches, fmt, indexed=False):
    """mapInArrow: the per-row table → ``clusters.jsonl`` lines (``fmt="jsonl"``) or clusters.parquet
    columns (with the ``indexed`` column when asked), by the one record definition
    (:mod:`neardup.dedup.records`)."""

    for batch in batches:
        rows, ids, cids, sims, errs, empties, kepts, by_index, decs = _lists(
            batch, "row", "id", "cid", "sim", "err", "empty", "kept", "indexed", "dec")
        words = [None if k or d is None else decision_name(d) for k, d in zip(kepts, decs)]
        if fmt == "jsonl":
            out = [_arrow_text(skipped_line(g, e)) if e is not None else document_line(i, c, k, s, g, em, x, w)
                   for g, i, c, s, e, em, k, x, w in zip(rows, ids, cids, sims, errs, empties, kepts, by_index, words)]
            yield pa.RecordBatch.from_arrays([pa.array(out, pa.string())], names=["value"])
            continue
        yield parquet_batch(rows, [None if i is None else json.loads(i) for i in ids],
                            [None if c is None else json.loads(c) for c in cids], kepts,
                            [0.0 if x is None else x for x in sims], [_arrow_text(e) for e in errs],
                            [bool(x) for x in empties], words, by_index if indexed else None)


def _histogram_batches(batches):
    """mapInArrow: similarities → 20 counts per batch over [0, 1] (numpy's bin edges and rules)."""
    for batch in batches:
        s = _column(batch, "sim").to_numpy(zero_copy_only=False)
        counts, _ = np.histogram(s, bins=20, range=(0.0, 1.0))
        yield pa.RecordBatch.from_arrays([pa.array(np.arange(20, dtype=np.int32), pa.int32()),
                                          pa.array(counts.astype(np.int64), pa.int64())], names=["bin", "n"])


def _copy_kept_files(rows, spec, dest):
    paths = {e.rel: e.path for e in spec.entries}
    for r in rows:
        rel = os.fsdecode(bytes(r["raw"]))
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(paths[rel], target)


def _per_row(signed: DataFrame, found: SparkClusters, fixed_ids: DataFrame | None = None) -> DataFrame:
    """Every row: row, id, err, empty, kept, sim, cid (the id of its cluster's representative),
    indexed (the representative is a fixed row: a document of the index, ``fixed_ids`` (row, id))."""
    ids = signed.filter(F.col("err").isNull()).select(F.col("row").alias("rep"), F.col("id").alias("cid"))
    if fixed_ids is not None:
        ids = ids.unionByName(fixed_ids.select(F.col("row").alias("rep"), F.col("id").alias("cid")))
    a = found.assign.join(ids, "rep").select("row", "rep", "sim", "cid", "dec")
    return (signed.select("row", "id", "err", "empty").join(a, "row", "left")
                  .select("row", "id", "err", "empty",
                          F.when(F.col("err").isNull(), F.coalesce(F.col("rep"), F.col("row")) == F.col("row"))
                           .otherwise(F.lit(False)).alias("kept"),
                          F.coalesce(F.col("sim"), F.lit(1.0)).alias("sim"),
                          F.coalesce(F.col("cid"), F.col("id")).alias("cid"),
                          F.coalesce(F.col("rep") < 0, F.lit(False)).alias("indexed"),
                          F.coalesce(F.col("dec"), F.lit(255).cast("short")).alias("dec")))


def _part_files(folder: str) -> list[str]:
    return sorted(p for p in os.listdir(folder) if p.startswith("part-"))


def _concat(folder: str, dest: str, compression: str | None, header: bytes = b"") -> None:
    with open_write(dest, compression) as out:
        out.write(header)
        for p in _part_files(folder):
            with open(os.path.join(folder, p), "rb") as fh:
                shutil.copyfileobj(fh, out, 1 << 20)


def _csv_header(spec: InputSpec) -> bytes | None:
    header = format_of(spec).header(spec)
    if header is None:
        return None
    buf = io.StringIO()
    csv.writer(buf, dialect=dialect(spec)).writerow(header)
    return buf.getvalue().encode("utf-8", "surrogateescape")


def _write_file(spark, path: str, data: bytes) -> None:
    """A small file (report) at a local path or through Hadoop's FileSystem for a URI."""
    if not _is_uri(path):
        with open(path, "wb") as fh:
            fh.write(data)
        return
    jvm = spark.sparkContext._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    out = p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).create(p, True)
    try:
        out.write(bytearray(data))
    finally:
        out.close()


def _write_kept(spark, spec: InputSpec, fi: int, num: _Numbering, cfg: DedupConfig, drop: DataFrame,
                folder: str, dest: str | None) -> None:
    """The kept rows of one input, in its format and order: a part-file folder at ``folder``; merged into
    the local engine's single file ``dest`` when given."""
    lo, n = num.starts[fi], num.rows[fi]
    gone = drop.filter((F.col("row") >= lo) & (F.col("row") < lo + n))
    payload = _scan(spark, spec, cfg, payload=True)
    kept = _numbered(spark, payload, num.offsets[fi]).join(gone, "row", "left_anti")
    if spec.fmt == "dir":
        target = dest if dest is not None else folder
        os.makedirs(target, exist_ok=True)
        kept.select("raw").foreachPartition(partial(_copy_kept_files, spec=spec, dest=target))
        return
    ordered = kept.orderBy("row")
    if spec.fmt == "parquet":
        ordered.drop("row").write.mode("overwrite").parquet(folder)
        if dest is not None:
            schema = pq.ParquetFile(spec.path).schema_arrow
            with pq.ParquetWriter(dest, schema) as w:
                for p in _part_files(folder):
                    t = pq.read_table(os.path.join(folder, p))
                    if t.num_rows:
                        w.write_table(t.select(schema.names).cast(schema))
        return
    sep = "\r\n" if spec.fmt == "csv" else "\n"
    if num.bom.get(fi):
        ordered = ordered.withColumn("raw", F.when(F.col("row") == lo, F.concat(F.lit(_BOM), F.col("raw")))
                                     .otherwise(F.col("raw")))
    ordered.select(F.col("raw").cast("string").alias("value")).write.mode("overwrite").option("lineSep", sep) \
        .text(folder)
    header = _csv_header(spec) if spec.fmt == "csv" else b""
    if dest is not None:
        _concat(folder, dest, spec.compression, header or b"")
    elif header:
        _write_file(spark, folder.rstrip("/") + "/_header.csv", header)


def _write_clusters(spark, table: DataFrame, cfg: DedupConfig, folder: str, dest: str | None,
                    indexed: bool = False) -> None:
    """clusters.jsonl / clusters.parquet (``indexed``: the parquet gets the ``indexed`` column, as the
    local engine writes it when an index's documents took part)."""
    ordered = table.orderBy("row")
    if cfg.clusters_format == "jsonl":
        ordered.mapInArrow(partial(_format_records, fmt="jsonl"), "value string").write.mode("overwrite") \
            .option("lineSep", "\n").text(folder)
        if dest is not None:
            _concat(folder, dest, None)
        return
    schema = ("id string, cluster string, kept boolean, similarity double, status string, row long, reason string, "
              "empty boolean, decided string, contained_in string" + (", indexed boolean" if indexed else ""))
    ordered.mapInArrow(partial(_format_records, fmt="parquet", indexed=indexed), schema).write.mode("overwrite") \
        .parquet(folder)
    if dest is not None:
        schema = parquet_schema(indexed)
        tables = [pq.read_table(os.path.join(folder, p)).cast(schema) for p in _part_files(folder)]
        pq.write_table(pa.concat_tables(tables) if tables else schema.empty_table(), dest)


def _write_pairs(found: SparkClusters, ids: DataFrame, folder: str, dest: str | None) -> None:
    """pairs.parquet (``--pairs``; :func:`neardup.dedup.records.pairs_schema`) as the local engine
    writes it: a pair (a, b) has a before b in input order, an index's document (a negative row here)
    last as b with no row; sorted by (a, b), the index's documents in their order after every input row.
    ``ids``: (row, id JSON) of every document, the index's included."""
    e = found.edges
    lo, hi = F.col("lo"), F.col("hi")
    pairs = e.select(F.when(lo < 0, hi).otherwise(lo).alias("a"), F.when(lo < 0, lo).otherwise(hi).alias("b"),
                     "sim", "how")
    texts = ids.mapInArrow(_id_texts, "row long, id string, text string")
    rep = found.assign.select("row", "rep")
    ra = rep.select(F.col("row").alias("a"), F.col("rep").alias("ra"))
    rb = rep.select(F.col("row").alias("b"), F.col("rep").alias("rb"))
    ta = texts.select(F.col("row").alias("a"), F.col("text").alias("id_a"))
    tb = texts.select(F.col("row").alias("b"), F.col("text").alias("id_b"))
    names = F.array(*[F.lit(h) for h in HOW])
    table = (pairs.join(ta, "a").join(tb, "b").join(ra, "a", "left").join(rb, "b", "left")
             .select("id_a", "id_b", F.col("a").alias("row_a"),
                     F.when(F.col("b") >= 0, F.col("b")).alias("row_b"), F.col("sim").alias("similarity"),
                     F.element_at(names, F.col("how").cast("int") + 1).alias("decided"),
                     (F.coalesce("ra", "a") == F.coalesce("rb", "b")).alias("same_cluster"),
                     F.when(F.col("b") < 0, F.col("b") + F.lit(1 << 62)).otherwise(F.col("b")).alias("_b"))
             .orderBy("row_a", "_b").drop("_b"))
    table.write.mode("overwrite").parquet(folder)
    if dest is not None:
        schema = pairs_schema()
        code = {h: k for k, h in enumerate(HOW)}
        with pq.ParquetWriter(dest, schema) as writer:
            for p in _part_files(folder):
                t = pq.read_table(os.path.join(folder, p))
                how = pa.array([code[h] for h in t.column("decided").to_pylist()], pa.int8())
                t = t.set_column(5, "decided", pa.DictionaryArray.from_arrays(how, pa.array(list(HOW))))
                writer.write_table(t.cast(schema))


def _id_texts(batches):
    """mapInArrow: (row, id JSON) → (row, id JSON, the id's text in clusters.parquet)."""
    for batch in batches:
        ids = _column(batch, "id").to_pylist()
        yield pa.RecordBatch.from_arrays([_column(batch, "row"), pa.array(ids, pa.string()),
                                          pa.array([parquet_id_text(json.loads(i)) for i in ids], pa.string())],
                                         names=["row", "id", "text"])
