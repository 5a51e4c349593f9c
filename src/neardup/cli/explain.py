"""``neardup explain OUT ID_A ID_B``: why a finished run put two documents together (or not)."""
from __future__ import annotations

import json
import os

import click

from . import main


def _fail(out: str, why: str):
    raise click.ClickException(f"{out}: {why}")


def _report(out: str) -> dict:
    path = os.path.join(out, "report.json")
    try:
        with open(path, encoding="utf-8") as fh:
            rep = json.load(fh)
    except FileNotFoundError:
        _fail(out, "no report.json here: give the output folder of a finished `neardup dedup` run")
    except (OSError, ValueError) as exc:
        _fail(out, f"report.json cannot be read ({exc})")
    if not isinstance(rep, dict) or not isinstance(rep.get("parameters"), dict) or not isinstance(
            rep.get("inputs"), list) or not isinstance(rep.get("outputs"), list):
        _fail(out, f"report.json has no run parameters and inputs (made by neardup "
                   f"{rep.get('neardup_version', '?') if isinstance(rep, dict) else '?'}, which this explain "
                   "cannot read)")
    return rep


def _records(out: str, rep: dict) -> list[dict]:
    fmt = rep["parameters"].get("clusters_format", "jsonl")
    path = os.path.join(out, f"clusters.{fmt}")
    if not os.path.exists(path):
        _fail(out, f"clusters.{fmt} is missing")
    if fmt != "parquet":                  # eval's reader: a bad line is named by file and line
        from .evaluate import _read  # noqa: PLC0415

        return [rec for _, rec in _read(path)]
    try:
        import pyarrow.parquet as pq  # noqa: PLC0415

        return pq.read_table(path).to_pylist()
    except (OSError, ValueError) as exc:
        _fail(out, f"clusters.{fmt} cannot be read ({exc})")


def _find(records: list[dict], wanted: str, out: str) -> dict:
    """The record whose id is ``wanted`` (as written, or its JSON text: ``7`` finds the integer 7,
    ``'"7"'`` the string)."""
    try:
        as_json = json.loads(wanted)
    except ValueError:
        as_json = None
    exact = [r for r in records if r.get("id") is not None and (r["id"] == as_json and type(r["id"]) is type(as_json))]
    if exact:
        return exact[0]
    by_text = [r for r in records if r.get("id") is not None and str(r["id"]) == wanted]
    if by_text:
        return by_text[0]
    indexed = any(r.get("indexed") and str(r.get("cluster")) == wanted for r in records)
    if indexed:
        _fail(out, f"{wanted!r} is a document of the index (--index): its text is not stored there, so it cannot "
                   "be explained from this run; use `neardup compare` with its text")
    skipped = sum(r.get("status") == "skipped" for r in records)
    _fail(out, f"no document with id {wanted!r} in this run ({len(records) - skipped} documents"
               + (f", {skipped} skipped rows" if skipped else "") + ")")


def _when(ns: int) -> str:
    import datetime as dt  # noqa: PLC0415  (only for this message)

    return dt.datetime.fromtimestamp(ns / 1e9, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _unchanged(out: str, label: str, stamp, ran: int, recorded=None) -> None:
    """Refuse an input (or a word file) that changed since the run: its (size, mtime_ns) ``stamp``
    differs from the ``recorded`` one where the run recorded one, or it was modified after the run
    wrote report.json (``ran``, ns): explain would read other texts than the run did."""
    if stamp is None:
        return
    if recorded is not None and list(stamp) != list(recorded):
        _fail(out, f"{label} changed since the run (its size or modification time differ from the run's): "
                   "explain would read other texts than the run did; run dedup again")
    if stamp[1] > ran:
        _fail(out, f"{label} changed since the run: modified {_when(stamp[1])}, after the run wrote report.json "
                   f"({_when(ran)}); explain would read other texts than the run did; run dedup again")


def _stamp(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None                        # (missing: the reader names it)
    return st.st_size, st.st_mtime_ns


def _texts(out: str, rep: dict, rows: list[int]) -> dict[int, str]:
    """The texts of global rows ``rows``, re-read from the run's inputs, refused when an input changed
    since the run: modified after it (its report.json's time), other row counts, or (the local
    engine) other character counts than the run recorded."""
    from ..io.formats import check_fields_apply, read_rows  # noqa: PLC0415
    from ..io.sources import expand_inputs  # noqa: PLC0415

    p = rep["parameters"]
    labels = rep["inputs"]
    if any(lab in ("-", "<stdin>") for lab in labels):
        _fail(out, "the run read standard input, which cannot be read again; run dedup on a file to explain it")
    try:
        specs = expand_inputs(labels, p.get("input_format"))
        check_fields_apply(specs, p.get("text_field", "text"), p.get("id_field"))
    except Exception as exc:       # a moved or removed input: say which, never a traceback
        _fail(out, f"the run's inputs cannot be read again ({exc}); explain must run where the run's input "
                   "paths are valid")
    ran = os.stat(os.path.join(out, "report.json")).st_mtime_ns
    for spec, o in zip(specs, rep["outputs"]):
        _unchanged(out, spec.label, spec.stamp, ran, o.get("stamp"))
        for e in spec.entries:
            _unchanged(out, os.path.join(spec.label, e.rel), e.stamp, ran)
    for name in ("idf", "user_dict", "stop_words"):           # the word files explain reads again
        if p.get(name) not in (None, "jieba"):
            _unchanged(out, f"{p[name]} (--{name.replace('_', '-')})", _stamp(p[name]), ran)
    want = set(rows)
    got: dict[int, str] = {}
    g = chars = 0
    for spec, o in zip(specs, rep["outputs"]):
        n = 0
        for row in read_rows(spec, p.get("text_field", "text"), p.get("id_field")):
            if g + n in want:
                got[g + n] = row.text if row.text is not None else ""
            if row.error is None:
                chars += len(row.text)
            n += 1
        if n != o.get("rows"):
            _fail(out, f"{spec.label} has {n} rows now; the run read {o.get('rows')}: it changed since the run")
        g += n
    read = rep.get("counts", {}).get("input_chars")
    if rep.get("engine") == "local" and isinstance(read, int) and chars != read:   # (what its readers count)
        which = specs[0].label if len(specs) == 1 else "one of " + ", ".join(s.label for s in specs[:5])
        _fail(out, f"{which} changed since the run: its documents hold {chars:,} characters now, the run read "
                   f"{read:,}; run dedup again")
    return got


@main.command("explain")
@click.argument("out", type=click.Path(file_okay=False))
@click.argument("id_a")
@click.argument("id_b")
@click.option("--show", type=click.IntRange(0), default=10, show_default=True, help="Shingles / features listed.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def explain_cmd(out, id_a, id_b, show, as_json):
    """Why did the run in OUT put documents ID_A and ID_B together, or not? Reads the run's parameters
    from OUT/report.json and both texts from its inputs, and explains the decision in the method's
    own terms (MinHash slots and LSH bands, SimHash bits, the longest sentences)."""
    from ..explain import explain_pair, render  # noqa: PLC0415

    rep = _report(out)
    records = _records(out, rep)
    ra, rb = _find(records, id_a, out), _find(records, id_b, out)
    texts = _texts(out, rep, [ra["row"], rb["row"]])
    try:
        e = explain_pair(texts[ra["row"]], texts[rb["row"]], rep["parameters"], show)
    except (ValueError, ImportError) as exc:
        _fail(out, str(exc))
    same = ra.get("cluster") == rb.get("cluster") and ra.get("cluster") is not None
    decision = {"a": {k: ra.get(k) for k in ("id", "row", "cluster", "kept", "similarity", "status")},
                "b": {k: rb.get(k) for k in ("id", "row", "cluster", "kept", "similarity", "status")},
                "same_cluster": same}
    result = {"run": {"path": os.path.abspath(out), "neardup": rep.get("neardup_version"),
                      "method": rep["parameters"].get("method")}, "decision": decision, "explain": e}
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False, default=str))
        return
    for side, r in (("A", ra), ("B", rb)):
        state = ("kept" if r.get("kept")
                 else f"{r.get('status')} of {r.get('cluster')!r} (similarity {r.get('similarity')})")
        click.echo(f"{side} = {r.get('id')!r} (row {r.get('row')}): {state}")
    click.echo(f"the run put them {'in one cluster' if same else 'in different clusters'}")
    click.echo("")
    click.echo(render({e["method"]: e}))
