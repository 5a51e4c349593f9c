"""``neardup explain OUT ID_A ID_B``: why a finished run put two documents together (or not)."""
from __future__ import annotations

import datetime as dt
import json
import os

import click
import numpy as np
import pyarrow.parquet as pq

from ..config import BY_NAME, PARAMS, SPAN_OPTIONS, DedupConfig
from ..dedup.verify import borderline_z
from ..explain import explain_pair, render
from ..explain.replay import SmallRun
from ..explain.verdict import Side, verdict
from ..index.lsh import LSHParams
from ..io.formats import check_fields_apply, read_rows
from ..io.sources import expand_inputs
from .evaluate import _read
from .group import main


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
        return [rec for _, rec in _read(path)]
    try:
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


def _texts(out: str, rep: dict, rows: list[int], keys: dict | None = None) -> dict[int, str]:
    """The texts of global rows ``rows``, re-read from the run's inputs, refused when an input changed
    since the run: modified after it (its report.json's time), other row counts, or (the local
    engine) other character counts than the run recorded. ``keys``: filled with each row's
    ``--keep-field`` value (runs with ``--keep key``)."""

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
    key_field = p.get("keep_field") if keys is not None and p.get("keep") == "key" else None
    for spec, o in zip(specs, rep["outputs"]):
        n = 0
        for row in read_rows(spec, p.get("text_field", "text"), p.get("id_field"), key_field):
            if g + n in want:
                got[g + n] = row.text if row.text is not None else ""
                if key_field is not None:
                    keys[g + n] = row.key
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


#: the most documents explain replays (the members of both clusters): past it, the verdict is the
#: pair's own and the run's records, without the chain or the refused merge
MAX_REPLAY = 256


def _config(p: dict):
    """The run's configuration from report.json's ``parameters`` (its ``lsh_mode`` is the banding's
    label there: ``recall≥0.99``, ``datasketch``, ``explicit``, ``containment per size ratio (…)``)."""
    values = {q.name: p[q.name] for q in PARAMS if q.name in p}
    label = str(p.get("lsh_mode") or "recall")
    values["lsh_mode"] = "datasketch" if "datasketch" in label else "recall"
    values["index"], values["replace"], values["resume"], values["spans"] = None, False, False, None
    for name in ("spans_order", *SPAN_OPTIONS):     # (explain replays the whole-document decision alone)
        values[name] = BY_NAME[name].default
    return DedupConfig(**values).resolved()        # (a damaged report is refused in one line)


def _context(records: list[dict], ra: dict, rb: dict) -> tuple[list[dict], bool]:
    """The documents explain replays: every member of A's and of B's cluster (row order), at most
    :data:`MAX_REPLAY` (A, B and the kept documents first); whether that is all of them and none is
    an index's."""
    def key(r):
        return json.dumps(r.get("cluster"), sort_keys=True, default=str)
    wanted = {key(ra), key(rb)}
    members = [r for r in records if r.get("status") != "skipped" and key(r) in wanted]
    whole = len(members) <= MAX_REPLAY and not any(r.get("indexed") for r in members)
    if len(members) > MAX_REPLAY:
        first = [r for r in members if r is ra or r is rb or r.get("kept")]
        rest = [r for r in members if not (r is ra or r is rb or r.get("kept"))]
        members = first + rest[:MAX_REPLAY - len(first)]
    return sorted({id(r): r for r in members}.values(), key=lambda r: r["row"]), whole


def _z(rep: dict):
    """The run's borderline z: recomputed from its candidate count where that gives the reported one
    (rounded to 3 digits there), else the reported value; None when the run had no band."""
    band = rep.get("borderline")
    if not isinstance(band, dict) or band.get("z") is None:
        return None
    n = rep.get("counts", {}).get("candidate_pairs")
    if isinstance(n, int):
        z = borderline_z(n)
        if round(z, 3) == band["z"]:
            return z
    return float(band["z"])


def _replay(out: str, rep: dict, records: list[dict], ra: dict, rb: dict):
    """(small run of the context, local rows of A and B, names, recorded sides, texts of A and B, whole)."""

    members, whole = _context(records, ra, rb)
    p = rep["parameters"]
    keys: dict = {}
    texts = _texts(out, rep, [r["row"] for r in members], keys)
    local = {r["row"]: i for i, r in enumerate(members)}
    cfg = _config(p)
    lsh = None
    if cfg.method == "minhash" and cfg.metric == "jaccard" and p.get("b") and p.get("r"):
        lsh = LSHParams(int(p["b"]), int(p["r"]), cfg.threshold, "recorded")
    kv = None
    if cfg.keep == "key":
        kv = np.array([float(keys.get(r["row"]) or 0) for r in members])
    try:
        run = SmallRun([texts[r["row"]] for r in members], cfg, z=_z(rep), keys=kv, lsh=lsh)
    except (ValueError, ImportError) as exc:
        _fail(out, f"the run cannot be replayed here ({exc})")
    def named(v):
        return repr(v) if isinstance(v, str) else str(v)
    kept_at = {json.dumps(r["id"], sort_keys=True, default=str): local[r["row"]] for r in members if r.get("kept")}
    names = {local[r["row"]]: named(r["id"]) for r in members}
    sides = {}
    for r in members:         # a kept document outside the replay (an index's): a row number below 0
        key = json.dumps(r.get("cluster"), sort_keys=True, default=str)
        if key not in kept_at:
            kept_at[key] = -1 - len(names)
            names[kept_at[key]] = named(r.get("cluster"))
        sides[local[r["row"]]] = Side(kept_at[key], r.get("decided"), r.get("similarity"))
    return run, local[ra["row"]], local[rb["row"]], names, sides, texts, whole


@main.command("explain")
@click.argument("out", type=click.Path(file_okay=False))
@click.argument("id_a")
@click.argument("id_b")
@click.option("--show", type=click.IntRange(0), default=10, show_default=True, help="Shingles / features listed.")
@click.option("--slots", type=click.Choice(["matter", "all"]), default="matter", show_default=True,
              help="MinHash slots listed: those that matter (the disagreeing ones and the first colliding band's), "
                   "or all.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def explain_cmd(out, id_a, id_b, show, slots, as_json):
    """Why did the run in OUT put documents ID_A and ID_B together, or not? Reads the run's parameters
    from OUT/report.json and the texts of both documents' clusters from its inputs, replays the
    run's rules on them, and leads with one sentence: the verdict, the rule that decided, its numbers
    and what would change it. Then the evidence in the method's own terms (MinHash slots and LSH
    bands, containment both ways, SimHash bits and the features that flip them, the longest
    sentences).

    \b
    Examples:
      neardup explain out doc-2 doc-3          # after: neardup dedup docs.jsonl --id-field id -o out
      neardup explain out doc-2 doc-3 --slots all --show 20 --json
    """

    rep = _report(out)
    records = _records(out, rep)
    ra, rb = _find(records, id_a, out), _find(records, id_b, out)
    run, a, b, names, sides, texts, whole = _replay(out, rep, records, ra, rb)
    try:
        e = explain_pair(texts[ra["row"]], texts[rb["row"]], rep["parameters"], show)
    except (ValueError, ImportError) as exc:
        e = {"method": rep["parameters"].get("method"), "unavailable": str(exc)}
    if a == b:
        v = {"sentence": "the same document: A and B name one row", "verdict": "the same document",
             "same_cluster": True, "replayed": True}
    else:
        v = verdict(run, a, b, names.get, sides)
    spans = rep["parameters"].get("spans") is not None and rep["parameters"].get("spans_order") == "before"
    if not whole or spans:
        v["replayed"] = False
    same = ra.get("cluster") == rb.get("cluster") and ra.get("cluster") is not None
    fields = ("id", "row", "cluster", "kept", "similarity", "status", "decided", "contained_in")
    decision = {"a": {k: ra.get(k) for k in fields}, "b": {k: rb.get(k) for k in fields}, "same_cluster": same}
    result = {"run": {"path": os.path.abspath(out), "neardup": rep.get("neardup_version"),
                      "method": rep["parameters"].get("method")}, "verdict": v, "decision": decision, "explain": e}
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False, default=str))
        return
    click.echo(v["sentence"])
    click.echo("")
    for side, r in (("A", ra), ("B", rb)):
        state = ("kept" if r.get("kept")
                 else f"{r.get('status')} of {r.get('cluster')!r} (similarity {r.get('similarity')}, decided "
                      f"{r.get('decided')})")
        click.echo(f"{side} = {r.get('id')!r} (row {r.get('row')}): {state}")
    click.echo(f"the run put them {'in one cluster' if same else 'in different clusters'}")
    if spans:
        click.echo("(--spans-order before: the run compared the texts left after removing repeated spans; explain "
                   "compares them whole)")
    elif not v.get("replayed", True):
        click.echo(f"(the replay of the {len(run.texts)} documents of their clusters does not give the run's clusters"
                   + ("" if whole else f": more than {MAX_REPLAY} members, or a document of an index") + ")")
    click.echo("")
    click.echo(e["unavailable"] if "unavailable" in e else render({e["method"]: e}, slots=slots))
