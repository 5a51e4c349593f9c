"""``neardup dedup``: a corpus in, the corpus without near-duplicates out (local or Spark engine).

Its options come from the one table of parameters (:data:`neardup.config.PARAMS`): types, allowed
values, defaults and help are written there, once."""
from __future__ import annotations

import os
import sys

import click

from ..config import PARAMS, DedupConfig, click_options
from ..dedup.plan import describe, plan, refusals
from ..engines.local import run_dedup
from ..errors import NeardupError
from .group import ParameterError, main, refuse_unused

#: how each engine runs the plan's steps (``--plan``)
_ENGINES = {"local": "local engine: read_sign in {workers} worker processes over blocks of the inputs; the steps after "
                     "it in this process, on all its cores; write re-reads the inputs",
            "spark": "spark engine: read_sign in mapInArrow tasks; the steps after it on the driver when the values "
                     "fit half its memory, else a map step in mapInArrow and a step by a key after a shuffle on it"}


@main.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", "outdir", required=True, metavar="OUTDIR",
              help="Output folder: new, empty, or a previous run's (whose outputs are replaced when this run "
                   "succeeds). '-': the kept rows to stdout, nothing else written.")
@click_options()
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="Where the run executes: this machine (worker processes), or Spark (local[*] unless "
                   "spark-submit or MASTER names a cluster; pip install 'neardup[spark]').")
@click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE",
              help="A Spark setting for --engine spark (repeatable), e.g. spark.driver.memory=16g; by default "
                   "the driver gets 40 % of this machine's memory in local mode.")
@click.option("--plan", "show_plan", is_flag=True,
              help="Print the run's steps with its parameters (what each step does, what flows through it and "
                   "how its work divides) and stop: no input is read, nothing is written.")
def dedup(inputs, outdir, engine, spark_conf, show_plan, **params):
    """Deduplicate INPUTS (JSONL[.gz|.zst|.bz2], Parquet, CSV, text lines, folders, '-'; globs allowed) into
    OUTDIR.

    \b
    Writes OUTDIR/kept/ (the kept rows, each input in its own format, every field preserved, input order),
    OUTDIR/clusters.jsonl (one record per input row: id, cluster, kept, similarity, status),
    OUTDIR/report.json and OUTDIR/report.html; with --pairs also OUTDIR/pairs.parquet (every verified pair:
    id_a, id_b, row_a, row_b, similarity, decided, same_cluster). `neardup pairs` lists all pairs above the
    threshold without clustering (a similarity join).
    Defaults: minhash — word 5-grams, 128 permutations (oph), Jaccard ≥ 0.8, LSH bands for 99% recall
    at the threshold, candidates decided by the signature estimate, and those near the threshold exactly
    on shingles re-read from their texts (--verify borderline); simhash — verified: candidates within 9
    bits of unigram-tf fingerprints, each decided by the exact Jaccard of word 5-grams ≥ 0.8 (--bits K:
    the classic rule, every pair within K bits); sentences — the 3 longest sentences; exact — normalised
    text hash.

    \b
    Spans inside documents: --method lines (repeated lines or paragraphs) and --method substrings
    (exact repeats of ≥ --min-length bytes) keep every row, rewrite its text, and write
    OUTDIR/edits.jsonl (per row: the byte ranges removed, each with its XXH64) instead of clusters.jsonl;
    --spans lines|substrings adds them to a whole-document method in the same run.

    \b
    Examples:
      neardup dedup docs.jsonl --id-field id -o out      # MinHash, Jaccard >= 0.8; open out/report.html
      neardup dedup 'news/*.jsonl' -o news-out --method simhash --tokenizer jieba    # Chinese: jieba's words
      neardup dedup docs.jsonl --id-field id -o out --index seen-idx   # also drops what earlier runs kept
    """
    refuse_unused(click.get_current_context(), params["method"], [p.name for p in PARAMS if p.name in params],
                  params.get("spans"))
    if engine == "spark":
        try:
            from ..engines.spark import run_spark_dedup  # noqa: PLC0415  (the spark extra: --engine spark only)
        except ImportError as exc:
            raise click.UsageError(f"--engine spark: {exc}; install with: pip install 'neardup[spark]' "
                                   "'pandas>=2.2'") from None
        run = run_spark_dedup
    else:
        run = run_dedup
    try:
        cfg = DedupConfig(**params).resolved()
    except NeardupError as exc:
        raise ParameterError(str(exc)) from None
    quiet = cfg.quiet
    if params["workers"] > cfg.workers and not quiet:
        click.echo(f"neardup: --workers {params['workers']} capped at {cfg.workers}, the CPUs this process may use "
                   f"(of {os.cpu_count()} on the machine; more processes than CPUs only add memory)", err=True)
    if engine == "spark" and outdir == "-":
        raise click.UsageError("-o - (kept rows to stdout) works with --engine local")
    extra = {}
    if spark_conf:
        if engine != "spark":
            raise ParameterError("spark_conf (--spark-conf) must be given only with --engine spark; "
                                 f"got {spark_conf[0]!r}")
        from ..engines.spark.session import parse_spark_conf  # noqa: PLC0415  (PySpark: --engine spark only)

        try:
            extra["spark_conf"] = parse_spark_conf(spark_conf)
        except NeardupError as exc:
            raise ParameterError(str(exc)) from None
    if show_plan:
        try:
            refusals(cfg, outdir)
        except NeardupError as exc:
            raise ParameterError(str(exc)) from None
        steps = plan(cfg, outdir)
        click.echo(f"neardup dedup --method {cfg.method} --engine {engine}: {len(steps)} steps (no input read, "
                   "nothing written)")
        click.echo(describe(steps))
        click.echo(_ENGINES[engine].format(workers=cfg.workers))
        return
    report = run(list(inputs), outdir, cfg, command="neardup " + " ".join(sys.argv[1:]), **extra)
    if not quiet:
        c = report["counts"]
        t = report["timings"]
        if "spans" in report and "clusters" in c:
            click.echo(f"neardup dedup --method {cfg.method} --spans {cfg.spans}: {c['input_rows']} rows → "
                       f"{c['kept']} kept, {c['removed']} removed as duplicates, {c['dropped']} dropped, "
                       f"{c['skipped_records']} skipped; {c['edited_documents']} edited: {c['removed_bytes']:,} "
                       f"bytes of spans removed ({100 * c['removed_byte_rate']:.1f}%); {t['total']:.2f} s", err=True)
        elif "spans" in report:
            click.echo(f"neardup dedup --method {cfg.method}: {c['input_rows']} rows → {c['kept']} kept "
                       f"({c['edited_documents']} edited, {c['emptied_documents']} emptied, {c['dropped']} dropped), "
                       f"{c['skipped_records']} skipped; {c['removed_bytes']:,} of {c['input_bytes']:,} bytes removed "
                       f"({100 * c['removed_byte_rate']:.1f}%) in {c['removed_spans']:,} spans; {t['total']:.2f} s",
                       err=True)
        else:
            click.echo(f"neardup dedup --method {cfg.method}: {c['input_rows']} rows → {c['kept']} kept, "
                       f"{c['removed']} removed as duplicates ({100 * c['duplicate_rate']:.1f}%), "
                       f"{c['skipped_records']} skipped, {c['clusters']} cluster{'' if c['clusters'] == 1 else 's'}, "
                       f"{c['empty_documents']} empty; "
                       f"{t['total']:.2f} s", err=True)
        if outdir != "-":
            html = os.path.join(outdir, "report.html")
            click.echo(f"report: {os.path.join(outdir, 'report.json')}"
                       + (f" and {html}" if os.path.exists(html) else ""), err=True)
