"""``neardup pairs``: a similarity join — every pair of documents at or above the threshold, no clusters.

Its options are ``neardup dedup``'s (the one table, :data:`neardup.config.PARAMS`) less those about
which row is kept and how clusters are cut."""
from __future__ import annotations

import sys

import click

from ..config import PARAMS, DedupConfig, click_options, inapplicable
from ..engines.local.pairs import DEFAULT_MAX_PAIRS, NOT_USED, run_pairs
from ..errors import NeardupError
from .group import ParameterError, main


@main.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", "outdir", required=True, metavar="OUTDIR",
              help="Output folder: new, empty, or a previous run's (whose outputs are replaced when this run "
                   "succeeds).")
@click.option("--max-pairs", type=click.IntRange(0), default=DEFAULT_MAX_PAIRS, show_default=True,
              help="Refuse, before writing, a join with more pairs (n identical documents give n(n-1)/2).")
@click_options(exclude=NOT_USED)
def pairs(inputs, outdir, max_pairs, **params):
    """Every pair of documents of INPUTS at or above the threshold (a similarity join), into
    OUTDIR/pairs.parquet: id_a, id_b, row_a, row_b, similarity, decided (identical / estimate / exact).

    \b
    Documents are read, signed and verified as `neardup dedup` does (same options, same defaults);
    nothing is removed or clustered, so every listed pair passed on its own. Documents with identical
    signatures give every pair among them. OUTDIR/report.json counts rows, skipped rows and pairs.

    \b
    Examples:
      neardup pairs docs.jsonl --id-field id -o pairs-out          # pairs-out/pairs.parquet
      neardup pairs docs.jsonl --id-field id -o pairs-out --threshold 0.95 --verify exact
    """
    ctx = click.get_current_context()
    given = [p.name for p in PARAMS
             if p.name in params and ctx.get_parameter_source(p.name) is not click.core.ParameterSource.DEFAULT]
    wrong = inapplicable(params["method"], given)
    if wrong:
        raise click.UsageError(f"not used by --method {params['method']}: {'; '.join(wrong)}")
    try:
        raw = DedupConfig(**params)
        cfg = raw.resolved()
    except NeardupError as exc:
        raise ParameterError(str(exc)) from None
    report = run_pairs(list(inputs), outdir, raw, command="neardup " + " ".join(sys.argv[1:]), max_pairs=max_pairs)
    if not cfg.quiet:
        c = report["counts"]
        by = ", ".join(f"{v} {k}" for k, v in c["pairs_by_decision"].items())
        click.echo(f"neardup pairs --method {cfg.method}: {c['input_rows']} rows → {c['documents']} documents, "
                   f"{c['skipped_records']} skipped; {c['pairs']} pairs ({by or 'none'}) among "
                   f"{c['documents_in_pairs']} documents; {report['timings']['total']:.2f} s", err=True)
        click.echo(f"pairs: {outdir.rstrip('/')}/pairs.parquet", err=True)
