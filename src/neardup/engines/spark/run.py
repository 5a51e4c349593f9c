"""The Spark run: :func:`run_spark_dedup` (the CLI's call: inputs → OUTDIR, staged and committed by
:class:`neardup.io.outdir.StagedOutput`) and :func:`dedup_dataframe` (a DataFrame in, cluster
columns out); the report from :class:`neardup.dedup.report.RunSummary`."""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ...config import DedupConfig, simhash_verified
from ...dedup import resume
from ...dedup.finish import ROW_CONTAINED, decision_name
from ...dedup.incremental import check_index_path, opened_index
from ...dedup.methods import method_of
from ...dedup.records import check_parquet_ids
from ...dedup.report import (
    CONTAINERS_LISTED,
    INDEXED_TEXT,
    SIMILARITY_BINS,
    SKIPPED_LISTED,
    RunSummary,
    build_report,
    decisions_report,
    distance_counts,
    sample_ranks,
    similarity_counts,
    write_report,
)
from ...dedup.spans import run_spans, span_method, spans_beside
from ...errors import ConfigError, InputFormatError
from ...explain import compact_explanation
from ...io.formats import check_fields_apply, check_stamp, output_name
from ...io.ids import json_default
from ...io.outdir import StagedOutput
from ...io.sources import spool
from ..local.run import checkpoint_pass1, doc_place, drop_duplicate_ids, finish_run, resumed_pass1, spans_before
from .columns import _column
from .driver import fits_driver, pass1_on_driver
from .graph import find_clusters
from .index import _add_kept, _index_part
from .read import (
    _exact_rows,
    _expand,
    _fetch_texts,
    _input_of,
    _line_of,
    _Numbering,
    _read_signed,
    _row_place,
    _shingles_cfg,
    number_rows,
    sign_dataframe,
)
from .session import _check_supported, _first_message, _is_uri, _join, _phase, _session, _shuffle_partitions
from .verify import _driver_budget
from .write import _histogram_batches, _id_texts, _per_row, _write_clusters, _write_file, _write_kept, _write_pairs


def dedup_dataframe(df: DataFrame, cfg: DedupConfig | None = None, text_col: str = "text", id_col: str | None = None,
                    row_col: str | None = None) -> DataFrame:
    """Deduplicate a DataFrame: the input columns plus ``row`` (order; numbered in partition order when
    ``row_col`` is None — persist ``df`` first if its plan is not deterministic), ``cluster_row`` (row of
    the kept representative), ``cluster`` (its id: ``id_col``'s value as JSON text, or its row), ``kept``,
    ``similarity`` (to the representative) and ``empty``. Keep the rows with ``kept`` to deduplicate."""
    cfg = (cfg or DedupConfig()).resolved()
    if cfg.resume:
        raise ConfigError("resume (--resume) keeps pass 1 beside an output folder; dedup_dataframe writes none "
                          "(persist or checkpoint the DataFrame instead)")
    if row_col is None:
        df = number_rows(df, "row")
        row_col = "row"
    signed = sign_dataframe(df, cfg, text_col, id_col, row_col)
    signed = signed.repartition(_shuffle_partitions(df.sparkSession), "row").persist(StorageLevel.MEMORY_AND_DISK)
    ecfg = _shingles_cfg(cfg)

    def exact_rows(rows: DataFrame) -> DataFrame:     # --verify borderline: the texts are in df
        wanted = df.join(rows.withColumnRenamed("row", row_col), row_col, "left_semi")
        return sign_dataframe(wanted, ecfg, text_col, None, row_col).select("row", "sh", "size")

    found = find_clusters(signed, cfg, exact_rows=exact_rows)
    info = (_per_row(signed, found)
            .join(found.assign.select("row", "rep"), "row", "left")
            .select(F.col("row").alias(row_col), F.coalesce("rep", "row").alias("cluster_row"),
                    F.col("cid").alias("cluster"), "kept", F.col("sim").alias("similarity"), "empty"))
    return df.join(info, row_col)


def _decision_counts(removed: DataFrame) -> dict:
    """Removed rows per decision code (one Spark action; their sum is the number removed)."""
    return {int(r["dec"]): int(r["n"]) for r in removed.groupBy("dec").agg(F.count(F.lit(1)).alias("n")).collect()}


def _decisions(cfg, removed, signed, part, m: int, by_code: dict) -> dict:
    """The report's ``decisions`` (:func:`~neardup.dedup.report.decisions_report`) of the removed rows
    (row, rep, dec, ovr), as the local engine counts them (``by_code``: :func:`_decision_counts`)."""
    counts = {decision_name(code): n for code, n in by_code.items()}
    containment = cfg.metric == "containment"     # (MinHash's only: another method refuses --metric)
    top, over = [], 0
    if containment:
        over = removed.filter(F.col("ovr")).count()
        held = (removed.filter(F.col("dec") == F.lit(ROW_CONTAINED)).groupBy("rep").agg(F.count(F.lit(1)).alias("n"))
                .orderBy(F.desc("n"), F.col("rep") < 0, "rep").limit(CONTAINERS_LISTED).collect())   # (local order)
        ids = {r["row"]: json.loads(r["id"]) for r in signed.filter(F.col("row").isin([h["rep"] for h in held]))
               .select("row", "id").collect()} if held else {}
        top = [(ids[h["rep"]] if h["rep"] >= 0 else part.keys[h["rep"] + m], h["n"]) for h in held]
    return decisions_report(counts, containment, over, top)


def run_spark_dedup(inputs: list[str], outdir: str, config: DedupConfig | None = None, spark=None,
                    command: str = "", spark_conf: dict | None = None) -> dict:
    """``neardup dedup`` on Spark: the local engine's outputs (``kept/``, ``clusters.jsonl``, ``report.json``,
    ``report.html``) for the same clusters. ``spark``: a session (default: the active one, or a new one
    that is stopped at the end). A local ``outdir`` gets the local engine's files (through a temporary
    folder, ``report.json`` last); a URI (``hdfs://…``) gets Spark part-file folders."""
    cfg = (config or DedupConfig()).resolved()
    _check_supported(cfg, spans=True)
    t_start = time.perf_counter()
    spanned = span_method(cfg)
    # the span step runs on the driver, which writes the outputs and re-reads the inputs: local paths
    what = f"{'method (--method)' if method_of(cfg).spans else 'spans (--spans)'} {spanned}"
    if spanned and _is_uri(outdir):
        raise ConfigError(f"{what} on Spark runs its span step on the driver, which writes the outputs: it needs a "
                          f"local (or mounted) OUTDIR; got -o {outdir}")
    specs = _expand(list(inputs), cfg.input_format)        # inputs and OUTDIR before the JVM starts
    remote = [s.label for s in specs if _is_uri(s.path)]
    if spanned and remote:
        raise ConfigError(f"{what} on Spark runs its span step on the driver, which re-reads the inputs: they must "
                          f"be local (or mounted) paths; got {remote[0]}")
    check_fields_apply(specs, cfg.text_field, cfg.id_field)
    if cfg.index is not None:
        if _is_uri(outdir) or _is_uri(cfg.index):
            raise ConfigError("index (--index) with --engine spark needs a local OUTDIR and a local (or mounted) "
                              "index folder: the outputs and the index change are committed together, by renames "
                              f"on one file system; got -o {outdir} --index {cfg.index}")

        check_index_path(cfg.index, outdir, specs)
    if _is_uri(outdir):
        if cfg.resume:
            raise ConfigError(f"resume (--resume) keeps its checkpoint beside a local OUTDIR; got -o {outdir}")
        if any(s.pipe for s in specs):
            raise ConfigError("standard input or a pipe can be read by --engine spark only into a local OUTDIR "
                              "(it is copied there first)")
        with _session(spark, cfg, spark_conf) as session:
            return _run(session, specs, cfg, outdir, None, command, t_start)

    resume.check_resumable(cfg, specs, outdir)
    checkpoint = resume.checkpoint_dir(outdir) if cfg.resume else None
    with StagedOutput(outdir, specs) as stage, opened_index(cfg) as index:
        specs = spool(specs, stage.work)
        with _session(spark, cfg, spark_conf) as session:
            report = _run(session, specs, cfg, stage.out, stage.out, command, t_start, index, stage.work,
                          checkpoint)
        shutil.rmtree(os.path.join(stage.out, "_spark"), ignore_errors=True)
        stage.commit()
    resume.remove(resume.checkpoint_dir(outdir))     # done: a checkpoint of this OUTDIR (any run's) is stale
    return report


def _run(spark, specs, cfg: DedupConfig, out: str, local: str | None, command: str, t_start: float,
         index=None, work: str | None = None, checkpoint: str | None = None) -> dict:
    timings: dict = {}
    t0 = time.perf_counter()
    info = {**_engine_info(spark), "finished_on": "driver"}
    found = resumed_pass1(checkpoint, cfg, specs, timings)       # --resume: a stopped run's pass 1, if kept
    if found is not None:
        arrays, corpus = found
        timings["read_sign"] = time.perf_counter() - t0
        return finish_run(specs, cfg, local, command, t_start, timings, corpus, arrays, index, work,
                          engine=("spark", {**info, "signed_rows": "checkpoint"}))
    span_cfg = spans_beside(cfg)
    if span_cfg is not None and cfg.spans_order == "before":     # (a URI OUTDIR was refused: local is set)
        hows = []

        def read(c: DedupConfig, edits=None):   # one pass 1 on Spark, its tables on the driver
            cut = spark.sparkContext.broadcast(edits[0]) if edits and edits[0] else None     # (sent once)
            try:
                signed, num = _read_signed(spark, specs, c, cut)
                corpus, arrays, how = _on_driver(spark, signed, specs, num, c, out, work)
            finally:
                if cut is not None:
                    cut.destroy()
            hows.append(how)
            return corpus, arrays

        stage, by_row, corpus, arrays = spans_before(specs, cfg, read, timings)
        timings["read_sign"] = time.perf_counter() - t0
        return finish_run(specs, cfg, local, command, t_start, timings, corpus, arrays, index, work, span_cfg, stage,
                          by_row, engine=("spark", {**info, "signed_rows": "+".join(hows)}))
    signed, num = _read_signed(spark, specs, cfg)
    if fits_driver(specs, num, cfg, local):     # the local engine's steps after signing, on the driver
        corpus, arrays, how = _on_driver(spark, signed, specs, num, cfg, out, work)
        checkpoint_pass1(checkpoint, cfg, specs, arrays, corpus, timings)
        timings["read_sign"] = time.perf_counter() - t0
        engine = ("spark", {**info, "signed_rows": how})
        if method_of(cfg).spans:      # (a span method has no whole-document step: the local run_spans)
            return run_spans(specs, cfg, local, corpus, command, t_start, timings,
                             lambda d: doc_place(specs, corpus, d), engine)
        return finish_run(specs, cfg, local, command, t_start, timings, corpus, arrays, index, work, span_cfg,
                          engine=engine)
    if span_method(cfg):       # (refused before the session started: a URI OUTDIR or input never gets here)
        raise RuntimeError(f"a run with the span step {span_method(cfg)} did not finish on the driver")
    if cfg.index is not None and simhash_verified(cfg):
        raise ConfigError("index (--index) with verified SimHash runs where the run finishes on the driver (its "
                          "values within half the driver machine's memory and a local OUTDIR) or on the local "
                          "engine; on the executors the index is probed with the classic rule only (give --bits K)")
    if checkpoint is not None and not cfg.quiet:
        print("neardup: --resume: this Spark run finishes on its executors (its values exceed what the driver "
              "takes on) and keeps no checkpoint", file=sys.stderr)
    signed = signed.repartition(_shuffle_partitions(spark), "row").persist(StorageLevel.MEMORY_AND_DISK)
    _phase(spark, "read + sign")
    st = _signed_stats(signed)
    timings["read_sign"] = time.perf_counter() - t0
    try:
        if st["fatal"]:
            raise InputFormatError(_first_message(signed, F.col("fatal")))
        if st["bad"] and cfg.on_error == "raise":
            raise InputFormatError(_first_message(signed, F.col("err").isNotNull() & ~F.col("blank")))
        if cfg.id_field is not None:
            marked = _mark_duplicate_ids(signed, specs, num, cfg)
            if marked is not None:
                signed.unpersist()
                signed = marked
                st = _signed_stats(signed)
        return _finish(spark, specs, cfg, out, local, command, t_start, signed, num, st, timings, index)
    finally:
        signed.unpersist()
        _phase(spark, None)


def _on_driver(spark, signed: DataFrame, specs, num, cfg: DedupConfig, out: str, work: str | None):
    """Pass 1's tables on the driver (:func:`.driver.pass1_on_driver`), repeated ids dropped as the local
    engine drops them: (corpus, arrays, how the rows came)."""
    _phase(spark, "read + sign")
    try:
        corpus, arrays, how = pass1_on_driver(signed, specs, num, cfg, os.path.join(work or out, "_signed"), work)
    finally:
        _phase(spark, None)
    if cfg.id_field is not None:
        arrays = drop_duplicate_ids(specs, cfg, corpus, arrays)
    return corpus, arrays, how


def _engine_info(spark) -> dict:
    """The report's ``spark`` section: the session's version, master, parallelism and shuffle partitions."""
    sc = spark.sparkContext
    return {"version": spark.version, "master": sc.master, "default_parallelism": sc.defaultParallelism,
            "shuffle_partitions": _shuffle_partitions(spark)}


def _signed_stats(signed: DataFrame):
    return signed.agg(
        F.count(F.lit(1)).alias("rows"),
        F.count("id").alias("docs"),
        F.sum(F.when(F.col("fatal"), 1).otherwise(0)).alias("fatal"),
        F.sum(F.when(F.col("err").isNotNull() & ~F.col("blank"), 1).otherwise(0)).alias("bad"),
        F.sum(F.when(F.col("err").isNotNull(), 1).otherwise(0)).alias("skipped"),
        F.sum(F.when(F.col("err").isNull() & F.col("replaced"), 1).otherwise(0)).alias("replaced"),
        F.sum(F.when(F.col("err").isNull(), F.col("length")).otherwise(0)).alias("chars"),
        F.sum(F.when(F.col("err").isNull() & F.col("empty"), 1).otherwise(0)).alias("empty")).first()


def _dup_reasons(batches, specs, num):
    """mapInArrow: (row, id, first) of a repeated id → (row, dup_err), the local engine's reason."""
    for batch in batches:
        rows = _column(batch, "row").to_pylist()
        ids = _column(batch, "id").to_pylist()
        firsts = _column(batch, "first").to_pylist()
        out = [f"{_row_place(specs, num, r)}: id {json.loads(i)!r} repeats the id of {_row_place(specs, num, f)}"
               for r, i, f in zip(rows, ids, firsts)]
        yield pa.RecordBatch.from_arrays([pa.array(rows, pa.int64()), pa.array(out, pa.string())],
                                         names=["row", "dup_err"])


def _check_parquet_ids(signed: DataFrame, specs, num: _Numbering) -> None:
    """The local engine's :func:`~neardup.dedup.records.check_parquet_ids`: the first row whose id
    has the text of an earlier row's different id is refused, naming both rows."""
    texts = signed.filter(F.col("err").isNull()).select("row", "id").mapInArrow(_id_texts,
                                                                                 "row long, id string, text string")
    w = Window.partitionBy("text").orderBy("row").rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    clash = (texts.select("row", "id", "text", F.first("id").over(w).alias("id0"), F.min("row").over(w).alias("r0"))
             .filter(F.col("id") != F.col("id0")).orderBy("row").first())
    if clash is not None:
        check_parquet_ids([json.loads(clash["id0"]), json.loads(clash["id"])],
                          lambda k: _row_place(specs, num, (clash["r0"], clash["row"])[k]))


def _mark_duplicate_ids(signed: DataFrame, specs, num: _Numbering, cfg: DedupConfig):
    """Ids must name one row each (the local rule): a repeated id raises naming both rows, or with
    ``--on-error skip`` the later rows become skipped rows. Returns the marked, persisted table (or
    None when every id is unique)."""
    first = F.min("row").over(Window.partitionBy("id"))
    dups = (signed.filter(F.col("err").isNull() & F.col("id").isNotNull())
            .select("row", "id", first.alias("first")).filter(F.col("row") != F.col("first"))
            .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        n = dups.count()
        if n == 0:
            return None
        if cfg.on_error != "skip":
            r = dups.orderBy("row").first()
            raise InputFormatError(f"{_row_place(specs, num, r['row'])}: id {json.loads(r['id'])!r} is already the "
                                   f"id of {_row_place(specs, num, r['first'])}; ids must be unique ({n} repeated; "
                                   "--on-error skip skips the later rows)")
        reasons = dups.mapInArrow(partial(_dup_reasons, specs=specs, num=num), "row long, dup_err string")
        hit = F.col("dup_err").isNotNull()
        marked = (signed.join(reasons, "row", "left")
                  .withColumn("err", F.coalesce(F.col("err"), F.col("dup_err")))
                  .withColumn("id", F.when(hit, F.lit(None)).otherwise(F.col("id")))
                  .withColumn("empty", F.when(hit, F.lit(None)).otherwise(F.col("empty")))
                  .select(*signed.columns)
                  .repartition(_shuffle_partitions(signed.sparkSession), "row")
                  .persist(StorageLevel.MEMORY_AND_DISK))
        marked.count()
        return marked
    finally:
        dups.unpersist()


def _finish(spark, specs, cfg, out, local, command, t_start, signed, num, st, timings, index=None) -> dict:
    part = None
    docs = signed
    if index is not None:     # the indexed documents the new rows match join the clustering, first
        _phase(spark, "index")
        t0 = time.perf_counter()
        part = _index_part(spark, specs, signed, num, cfg, index)
        if part.fixed is not None:
            docs = part.fixed.unionByName(signed).repartition(_shuffle_partitions(spark), "row") \
                .persist(StorageLevel.MEMORY_AND_DISK)
        timings["index_query"] = time.perf_counter() - t0
    try:
        found = find_clusters(docs, cfg, fixed=docs is not signed, exact_rows=_exact_rows(spark, specs, num, cfg))
    finally:
        if docs is not signed:
            docs.unpersist()
    timings.update(found.timings)
    n_docs = int(st["docs"])
    table = removed = None
    m = len(part.keys) if part is not None else 0
    try:
        _phase(spark, "write")
        t0 = time.perf_counter()
        # every row's outcome, used four times (kept per input, the rows to drop, clusters, the index's add)
        table = _per_row(signed, found, part.fixed.select("row", "id") if m else None).persist(
            StorageLevel.MEMORY_AND_DISK)
        drop = table.filter(~F.col("kept")).select("row")
        ours = found.assign.filter(F.col("row") >= 0)    # an index's rows are not outputs
        removed = ours.filter(F.col("row") != F.col("rep")).persist(StorageLevel.MEMORY_AND_DISK)
        by_code = _decision_counts(removed)
        n_removed = sum(by_code.values())
        parts = _join(out, "_spark") if local is not None else out
        if cfg.clusters_format == "parquet":
            _check_parquet_ids(signed, specs, num)
        kept_dir = _join(out, "kept")
        if local is not None:
            for spec in specs:           # pass 2 re-reads the inputs: they must be as pass 1 saw them
                if not _is_uri(spec.path):
                    check_stamp(spec)
            os.makedirs(kept_dir)
        used: set = set()
        outputs = []
        starts = num.starts
        in_expr = F.lit(0)
        for fi, s in enumerate(starts[1:], 1):
            in_expr = F.when(F.col("row") >= s, F.lit(fi)).otherwise(in_expr)
        kept_per = {r["fi"]: r["n"] for r in table.filter(F.col("kept")).groupBy(in_expr.alias("fi"))
                    .agg(F.count(F.lit(1)).alias("n")).collect()}
        for fi, spec in enumerate(specs):
            name = output_name(spec, used)
            if local is not None:
                _write_kept(spark, spec, fi, num, cfg, drop, os.path.join(parts, f"kept-{fi}"),
                            os.path.join(kept_dir, name))
            else:
                _write_kept(spark, spec, fi, num, cfg, drop, _join(kept_dir, name), None)
            outputs.append({"input": spec.label, "format": spec.fmt, "output": f"kept/{name}",
                            "rows": num.rows[fi], "kept": int(kept_per.get(fi, 0))})
        cname = f"clusters.{cfg.clusters_format}"
        if local is not None:
            _write_clusters(spark, table, cfg, os.path.join(parts, "clusters"), os.path.join(local, cname), m > 0)
        else:
            _write_clusters(spark, table, cfg, _join(out, cname), None, m > 0)
        n_pairs = None
        if cfg.pairs:
            ids = signed.filter(F.col("err").isNull()).select("row", "id")
            if m:
                ids = ids.unionByName(part.fixed.select("row", "id"))
            n_pairs = found.edges.count()
            if local is not None:
                _write_pairs(found, ids, os.path.join(parts, "pairs"), os.path.join(local, "pairs.parquet"))
            else:
                _write_pairs(found, ids, _join(out, "pairs.parquet"), None)
        timings["write"] = time.perf_counter() - t0

        # -- report ---------------------------------------------------------------------------------------
        _phase(spark, "report")
        fig = _removed_figures(removed, n_removed, cfg) if n_removed * 32 <= _driver_budget(spark) else None
        removed_sim = by_index = None
        if fig is not None:       # the removed rows on the driver: the local engine's own functions
            sizes, hist, samples, by_index, removed_sim = fig
        else:
            sizes = {int(r["s"]): int(r["k"]) for r in
                     ours.groupBy("rep").agg(F.count(F.lit(1)).alias("s")).filter(F.col("s") > 1).groupBy("s")
                     .agg(F.count(F.lit(1)).alias("k")).collect()}
            hist = np.zeros(SIMILARITY_BINS, dtype=np.int64)
            for r in removed.select("sim").mapInArrow(_histogram_batches, "bin int, n long").groupBy("bin") \
                    .agg(F.sum("n").alias("n")).collect():
                hist[r["bin"]] = r["n"]
            samples = _sample_pairs(removed, n_removed, cfg.samples)
        dist = None
        simhash = "fingerprints" in found.params    # (the SimHash finders' report: distances of the removed)
        if simhash and found.params.get("verified"):
            dist = np.asarray(found.params["accepted_distances"], dtype=np.int64)
        elif simhash and removed_sim is not None:    # (collected already: no Spark job)
            dist = np.asarray(distance_counts(removed_sim), dtype=np.int64)
        elif simhash:
            d = removed.select(F.round(F.lit(64.0) * (F.lit(1.0) - F.col("sim"))).cast("int").alias("d")) \
                .groupBy("d").count().collect()
            dist = np.zeros(max([r["d"] for r in d], default=-1) + 1, dtype=np.int64)
            for r in d:
                dist[r["d"]] = r["count"]
        want = {x for k, d, _ in samples for x in (k, d)}
        ids = {r["row"]: json.loads(r["id"]) for r in signed.filter(F.col("row").isin(list(want)))
               .select("row", "id").collect()} if want else {}
        texts = _fetch_texts(spark, specs, cfg, num, {r for r in want if r >= 0})
        for r in want:
            if r < 0:                  # a document of the index
                ids[r] = part.keys[r + m]
                texts[r] = INDEXED_TEXT
        index_info = None
        if part is not None:
            by_index = removed.filter(F.col("rep") < 0).count() if by_index is None else by_index
            n_kept = sum(o["kept"] for o in outputs)
            index_info = {"path": os.path.abspath(cfg.index), "documents_before": part.documents,
                          "matched_documents": m, "removed_by_index": int(by_index),
                          "added": 0 if part.rerun else int(n_kept), "rerun": part.rerun}
        skipped_rows = (signed.filter(F.col("err").isNotNull()).orderBy("row").select("row", "err")
                        .limit(SKIPPED_LISTED).collect()) if st["skipped"] else []
        decisions = _decisions(cfg, removed, signed, part, m, by_code)
        timings["total"] = time.perf_counter() - t_start
        report = build_report(RunSummary(
            cfg=cfg, command=command, engine="spark", inputs=[s.label for s in specs], outputs=outputs,
            n_rows=num.total, n_docs=n_docs, removed=n_removed, n_skipped=int(st["skipped"]),
            skipped=[(specs[_input_of(num, r["row"])].label, _line_of(specs, num, r["row"]), r["err"])
                     for r in skipped_rows],
            empty=int(st["empty"] or 0), replaced=int(st["replaced"] or 0), chars=int(st["chars"] or 0),
            candidates=found.candidates, verified=found.verified,
            cluster_sizes=sizes, similarity_counts=[int(x) for x in hist],
            samples=[(ids.get(k), ids.get(d), s, texts.get(k, ""), texts.get(d, "")) for k, d, s in samples],
            timings=timings,
            lsh=(found.params["b"], found.params["r"], found.params["lsh_mode"]) if "b" in found.params else None,
            simhash=(dist.tolist(), found.params["fingerprints"]) if dist is not None else None,
            decisions=decisions,
            engine_info={**_engine_info(spark), "component_rounds": found.rounds},
            index=index_info,
            extra={"borderline": found.params["borderline"]} if "borderline" in found.params else {}),
            explain=compact_explanation)
        if n_pairs is not None:
            report["pairs"] = {"output": "pairs.parquet", "pairs": int(n_pairs)}
        if local is not None:
            write_report(report, local, cfg.html)        # the local engine's writer, report.html included
        else:
            data = json.dumps(report, indent=2, ensure_ascii=False, default=json_default) + "\n"
            _write_file(spark, _join(out, "report.json"), data.encode("utf-8", "backslashreplace"))
        if part is not None and not part.rerun:   # outputs staged in full: the index changes, then they go in place
            _add_kept(signed, table, cfg, index, part.key)
        return report
    finally:
        found.unpersist()
        for df in (table, removed):
            if df is not None:
                df.unpersist()


def _removed_figures(removed: DataFrame, n_removed: int, cfg: DedupConfig):
    """The report's figures of the removed rows (row, rep, sim), collected (about 25 bytes a row), by the
    local engine's functions: cluster sizes (a representative of this run counts itself), the
    similarity histogram, the sample pairs in (similarity, row) order, the rows removed by an index's
    documents (rep < 0), and the removed rows' similarities (SimHash's distances come from them)."""
    t = removed.select("row", "rep", "sim").toArrow()
    row = t.column("row").to_numpy().astype(np.int64)
    rep = t.column("rep").to_numpy().astype(np.int64)
    sim = t.column("sim").to_numpy().astype(np.float64)
    reps, members = np.unique(rep, return_counts=True)
    size = members + (reps >= 0)
    multi = size[size > 1]
    sizes = {int(s): int(k) for s, k in zip(*np.unique(multi, return_counts=True))}
    order = np.lexsort((row, sim))
    samples = [(int(rep[i]), int(row[i]), float(sim[i])) for i in order[sample_ranks(n_removed, cfg.samples)].tolist()]
    return sizes, np.asarray(similarity_counts(sim), dtype=np.int64), samples, int((rep < 0).sum()), sim


def _sample_pairs(removed: DataFrame, n_removed: int, n: int) -> list[tuple[int, int, float]]:
    """The local engine's sample pairs (:func:`neardup.dedup.report.sample_ranks` in the order
    (similarity, row)) — only the chosen ranks reach the driver."""
    ranks = sample_ranks(n_removed, n)
    if not ranks:
        return []
    want = set(ranks)
    got = (removed.select("sim", "row", "rep").orderBy("sim", "row").rdd.zipWithIndex()
           .filter(lambda x: x[1] in want).map(lambda x: (x[1], x[0][2], x[0][1], x[0][0])).collect())
    by_rank = {k: (int(rep), int(d), float(s)) for k, rep, d, s in got}
    return [by_rank[k] for k in ranks]
