"""``neardup lsh``: the LSH bands chosen for a threshold, and their S-curve."""
from __future__ import annotations

import json

import click

from ..config import DEFAULTS, click_options
from ..index.lsh import choose_params, false_negative_mass, false_positive_mass
from .group import ParameterError, main


@main.command()
@click_options(("threshold", "num_perm", "lsh_mode", "recall", "bands", "rows"))     # the table's, as dedup's
@click.option("--json", "as_json", is_flag=True, help="Print the parameters and the curve as JSON.")
def lsh(threshold, num_perm, lsh_mode, recall, bands, rows, as_json):
    """Show the LSH bands chosen for a threshold and their S-curve P(candidate | s) = 1 − (1 − s^r)^b.

    \b
    Examples:
      neardup lsh --threshold 0.8                           # the bands dedup chooses by default
      neardup lsh --threshold 0.7 --num-perm 256 --recall 0.95
      neardup lsh --bands 16 --rows 8 --json
    """
    if threshold is None:
        threshold = DEFAULTS["minhash"]["threshold"]
    try:
        p = choose_params(threshold, num_perm, lsh_mode, recall, bands, rows)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None
    xs = [round(0.05 * i, 2) for i in range(21)]
    ys = [float(p.curve(x)) for x in xs]
    if as_json:
        click.echo(json.dumps({"b": p.b, "r": p.r, "mode": p.mode, "threshold": threshold,
                               "p_at_threshold": float(p.curve(threshold)),
                               "curve": [[x, y] for x, y in zip(xs, ys)]}))
        return
    click.echo(f"b = {p.b} bands × r = {p.r} rows ({p.mode}); P(candidate | s = {threshold}) = "
               f"{float(p.curve(threshold)):.4f}")
    click.echo(f"false-positive mass ∫0^t P ds = {false_positive_mass(threshold, p.b, p.r):.4f}, "
               f"false-negative mass ∫t^1 (1 − P) ds = {false_negative_mass(threshold, p.b, p.r):.4f}")
    for x, y in zip(xs, ys):
        mark = " ← t" if abs(x - threshold) < 0.025 else ""
        click.echo(f"  s = {x:4.2f}  {y:7.4f}  {'█' * int(round(40 * y))}{mark}")
