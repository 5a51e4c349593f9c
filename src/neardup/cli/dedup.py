"""``neardup dedup``: a corpus in, the corpus without near-duplicates out (local or Spark engine)."""
from __future__ import annotations

import os
import sys

import click

from ..errors import NeardupError
from ..io.formats import FORMATS
from ..sketches.minhash import DEFAULT_SCHEME, SCHEMES
from ..text.tokenize import TOKENIZERS
from . import main


@main.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", "outdir", required=True, metavar="OUTDIR",
              help="Output folder: new, empty, or a previous run's (whose outputs are replaced when this run "
                   "succeeds). '-': the kept rows to stdout, nothing else written.")
@click.option("--method", type=click.Choice(["minhash", "simhash", "sentences", "exact"]), default="minhash",
              show_default=True)
@click.option("--threshold", type=click.FloatRange(0.0, 1.0, min_open=True), default=None,
              help="MinHash: similarity to call two documents duplicates (default 0.8).")
@click.option("--metric", type=click.Choice(["jaccard", "containment"]), default="jaccard", show_default=True,
              help="MinHash: Jaccard, or containment of either document in the other.")
@click.option("--tokenizer", type=click.Choice(TOKENIZERS), default="word", show_default=True)
@click.option("--convert", type=click.Choice(["t2s", "tw2s", "tw2sp", "hk2s"]), default=None,
              help="Convert traditional Chinese to simplified before signing (OpenCC; pip install 'neardup[zh]').")
@click.option("--ngram", type=click.IntRange(1, 64), default=None, help="Shingle size (default: 5 minhash, 3 simhash).")
@click.option("--num-perm", type=click.IntRange(2, 65536), default=128, show_default=True)
@click.option("--scheme", type=click.Choice(SCHEMES), default=DEFAULT_SCHEME, show_default=True)
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True)
@click.option("--bits", type=click.IntRange(0, 32), default=None, help="SimHash: max Hamming distance k (default 3).")
@click.option("--sentences", "n_sentences", type=click.IntRange(1), default=3, show_default=True)
@click.option("--lsh", "lsh_mode", type=click.Choice(["recall", "datasketch"]), default="recall", show_default=True,
              help="How to choose LSH bands: a recall target at the threshold, or datasketch's optimum.")
@click.option("--recall", type=click.FloatRange(0.5, 1.0, max_open=True), default=0.99, show_default=True)
@click.option("--bands", type=click.IntRange(1), default=None, help="Explicit LSH bands b (with --rows).")
@click.option("--rows", type=click.IntRange(1), default=None, help="Explicit LSH rows per band r (with --bands).")
@click.option("--verify", type=click.Choice(["minhash", "exact", "none"]), default="minhash", show_default=True,
              help="Check candidates on the full signature estimate, on the exact shingle sets (keeps 8 bytes "
                   "per distinct shingle in memory), or not at all.")
@click.option("--linkage", type=click.Choice(["bounded", "components"]), default="bounded", show_default=True,
              help="bounded: merge most-similar pairs first and never put documents below threshold − drift "
                   "together; components: plain transitive closure (union-find).")
@click.option("--max-drift", type=click.FloatRange(0.0, 1.0), default=None,
              help="How far below the threshold a cluster member may be from the others and from its "
                   "representative (default 0.05; simhash 2/64, i.e. 2 bits).")
@click.option("--keep", type=click.Choice(["first", "longest", "key"]), default="first", show_default=True)
@click.option("--keep-field", default=None, help="With --keep key: the field whose largest value is kept.")
@click.option("--text-field", default="text", show_default=True)
@click.option("--id-field", default=None, help="Field holding the document id (default: the row's position).")
@click.option("--input-format", type=click.Choice(FORMATS), default=None,
              help="Force the input format (default: by suffix; folders are one document per file; '-' and "
                   "pipes are JSONL).")
@click.option("--format", "clusters_format", type=click.Choice(["jsonl", "parquet"]), default="jsonl",
              show_default=True, help="Format of the clusters file.")
@click.option("--on-error", type=click.Choice(["raise", "skip"]), default="raise", show_default=True)
@click.option("--workers", type=click.IntRange(0), default=0, show_default=True,
              help="Signing processes (0: all cores; more than the cores this process may use is capped).")
@click.option("--batch-size", type=click.IntRange(1), default=2000, show_default=True)
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True)
@click.option("--no-html", is_flag=True, help="Skip report.html.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars or summary.")
def dedup(inputs, outdir, method, threshold, metric, tokenizer, convert, ngram, num_perm, scheme, seed, bits,
          n_sentences, lsh_mode, recall, bands, rows, verify, linkage, max_drift, keep, keep_field, text_field,
          id_field, input_format, clusters_format, on_error, workers, batch_size, engine, no_html, quiet):
    """Deduplicate INPUTS (JSONL[.gz|.zst], Parquet, CSV, text lines, directories; globs allowed) into OUTDIR.

    \b
    Writes OUTDIR/kept/ (the kept rows, each input in its own format, every field preserved, input order),
    OUTDIR/clusters.jsonl (one record per input row: id, cluster, kept, similarity, status),
    OUTDIR/report.json and OUTDIR/report.html.
    Defaults: minhash — word 5-grams, 128 permutations (oph), Jaccard ≥ 0.8, LSH bands for 99% recall
    at the threshold, candidates verified on the full signatures; simhash — word 3-grams, tf weights,
    Hamming ≤ 3; sentences — the 3 longest sentences; exact — normalised text hash.
    """
    from ..pipeline.dedup import CLI_NAMES, DedupConfig, inapplicable, run_dedup  # noqa: PLC0415

    ctx = click.get_current_context()
    given = [CLI_NAMES.get(p, p) for p in ctx.params
             if ctx.get_parameter_source(p) is not click.core.ParameterSource.DEFAULT]
    wrong = inapplicable(method, given)
    if wrong:
        raise click.UsageError(f"not used by --method {method}: {'; '.join(wrong)}")
    if engine == "spark":
        try:
            from ..engines.spark import run_spark_dedup  # noqa: PLC0415
        except ImportError as exc:
            raise click.UsageError(f"--engine spark: {exc}; install with: pip install 'neardup[spark]' "
                                   "'pandas>=2.2'") from None
        run_dedup = run_spark_dedup
    cfg = DedupConfig(method=method, threshold=threshold, metric=metric, tokenizer=tokenizer, convert=convert,
                      ngram=ngram,
                      num_perm=num_perm, scheme=scheme, seed=seed, bits=bits, sentences=n_sentences,
                      lsh_mode=lsh_mode, recall=recall, bands=bands, rows=rows, verify=verify, linkage=linkage,
                      max_drift=max_drift, keep=keep,
                      keep_field=keep_field, text_field=text_field, id_field=id_field, input_format=input_format,
                      clusters_format=clusters_format, on_error=on_error, workers=workers, batch_size=batch_size,
                      html=not no_html, quiet=quiet)
    try:
        cfg = cfg.resolved()
    except NeardupError as exc:
        raise click.UsageError(str(exc)) from None
    if workers > cfg.workers and not quiet:
        click.echo(f"neardup: --workers {workers} capped at {cfg.workers}, the CPUs this process may use "
                   f"(of {os.cpu_count()} on the machine; more processes than CPUs only add memory)", err=True)
    if engine == "spark" and outdir == "-":
        raise click.UsageError("-o - (kept rows to stdout) works with --engine local")
    report = run_dedup(list(inputs), outdir, cfg, command="neardup " + " ".join(sys.argv[1:]))
    if not quiet:
        c = report["counts"]
        t = report["timings"]
        click.echo(f"neardup dedup --method {method}: {c['input_rows']} rows → {c['kept']} kept, {c['removed']} "
                   f"removed as duplicates ({100 * c['duplicate_rate']:.1f}%), {c['skipped_records']} skipped, "
                   f"{c['clusters']} clusters, {c['empty_documents']} empty; {t['total']:.2f} s", err=True)
        if outdir != "-":
            html = os.path.join(outdir, "report.html")
            click.echo(f"report: {os.path.join(outdir, 'report.json')}"
                       + (f" and {html}" if os.path.exists(html) else ""), err=True)
