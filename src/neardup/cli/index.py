"""``neardup index``: create, add to, query, remove from, describe, compact and export a persistent
index (the folder store of :mod:`neardup.index.segments`), the one ``dedup --index`` grows.

Examples::

    neardup index create IDX                            # MinHash, the dedup defaults
    neardup index create IDX --method simhash --bits 3
    neardup index create IDX --metric containment       # passages inside documents, either way
    neardup index add IDX day1.jsonl --id-field id      # signs on all cores' kernels, one segment per batch
    neardup index query IDX new.jsonl --id-field id     # JSONL: {"id", "matches": [{"id", "similarity"}]}
    neardup index query IDX --text "some text" --format table
    neardup index remove IDX doc-17 doc-18
    neardup index stats IDX --json
    neardup index compact IDX
    neardup index backup IDX IDX-2026-12-07              # a consistent copy (hard links to the segments)
    neardup index export IDX -o signatures.parquet
    neardup index migrate old.ndx IDX                   # an SQLite index file of neardup 0.x → a folder
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..config import DedupConfig, click_options
from ..dedup.incremental import create_index, index_kind
from ..dedup.progress import begin, plain_size, reporting
from ..errors import InputFormatError
from ..index.disk import open_index
from ..index.files import taken
from ..index.migrate import migrate_sqlite
from ..index.repair import repair_index, verify_index
from ..index.store import DuplicateKeyError, InvalidKeyError, check_key, key_candidates
from ..io.formats import check_fields_apply, read_rows
from ..io.outfile import STDOUT, check_output_file, replacing
from ..io.readers import batched
from ..io.sources import expand_inputs
from .group import ParameterError, index_folder, main

_ALGO = ("threshold", "metric", "tokenizer", "ngram", "num_perm", "scheme", "seed", "bits", "weighting", "idf",
         "user_dict", "stop_words", "top_n", "compat", "lsh_mode", "recall", "bands", "rows")
_BATCH = 20000


def _open(path: str, readonly: bool, synchronous: str = "NORMAL"):
    return open_index(path, readonly=readonly, synchronous=synchronous)


def _rows(inputs, text_field, id_field, on_error, texts=(), fmt=None, specs=None, check_ids=False):
    """(label, id, text) of every row of the inputs (ids: the id field, else "FILE:LINE"), then of
    each ``--text``; bad rows stop the command naming their place, or with ``--on-error skip`` are
    counted (returned in the last tuple element as a list). ``specs``: the inputs already expanded.
    ``check_ids``: an id of the id field must be one an index can hold (:func:`~neardup.index.store.check_key`),
    else the row is bad (its error names FILE:LINE and the value)."""

    if specs is None:
        specs = expand_inputs(list(inputs), fmt) if inputs else []
    check_fields_apply(specs, text_field, id_field)
    skipped = _Skipped()
    for spec in specs:
        for row in read_rows(spec, text_field, id_field):
            if row.error is None and check_ids and row.id is not None:
                try:
                    row.id = check_key(row.id, f"{spec.label}:{row.line}")
                except InvalidKeyError as exc:
                    row.error = str(exc)
            if row.error is not None:
                if row.blank or on_error == "skip":
                    skipped.append(row.error)
                    continue
                raise InputFormatError(row.error)
            yield (row.id if row.id is not None else f"{spec.label}:{row.line}"), row.text, skipped
    for i, t in enumerate(texts):
        yield f"--text {i + 1}", t, skipped


class _Skipped(list):
    """The skipped rows of ``--on-error skip``: all counted (``len``), the first
    :data:`~neardup.dedup.report.SKIPPED_LISTED` kept with their messages (an input of millions of
    bad rows holds no million messages)."""

    LISTED = 20

    def __init__(self):
        super().__init__()
        self.count = 0

    def append(self, message) -> None:
        self.count += 1
        if super().__len__() < self.LISTED:
            super().append(message)

    def __len__(self) -> int:
        return self.count


@main.group()
def index():
    """A persistent index of documents that new ones are checked against ("have I seen this?").
    The same index `neardup dedup --index` creates and grows.

    \b
    Examples:
      neardup index create crawl-idx
      neardup index add crawl-idx docs.jsonl --id-field id
      neardup index query crawl-idx new.jsonl --id-field id
    """


@index.command()
@click.argument("path", type=click.Path())
@click_options(("method",), choices={"method": ("minhash", "simhash")},
               helps={"method": "The index's method: minhash or simhash."})
@click_options(_ALGO)
def create(path, method, **algo):
    """Create an empty index at PATH (a folder) with these parameters.

    \b
    Examples:
      neardup index create idx                              # MinHash, the dedup defaults
      neardup index create simhash-idx --method simhash --bits 3
      neardup index create passages-idx --metric containment   # passages inside documents, either way
    """

    cfg = DedupConfig(method=method, **algo).resolved()
    p = Path(path)
    if p.exists() and not (p.is_dir() and not any(p.iterdir())):
        raise click.ClickException(f"{path} already exists; `neardup index stats {path}` shows what it is")
    create_index(path, cfg, exist_ok=False).close()
    click.echo(f"created {path} ({index_kind(cfg)})")


@index.command()
@click.argument("path", type=click.Path(exists=True))
@click.argument("inputs", nargs=-1, required=True)
@click_options(("text_field", "id_field", "on_error", "replace", "progress"), required=("id_field",),
               helps={"id_field": "Field holding each document's id (its key in the index).",
                      "replace": "A document whose id is indexed replaces it (default: refused)."})
def add(path, inputs, id_field, text_field, on_error, replace, progress):
    """Add every row of INPUTS to the index (each batch of 20,000 rows at once, all or nothing). An id
    must be a string or an integer in the signed 64-bit range (a bad one is named by FILE:LINE).

    \b
    Examples:
      neardup index add idx docs.jsonl --id-field id
      neardup index add idx new.jsonl --id-field id --replace      # an id already there: its document replaced
    """
    added = 0
    skipped: list = []
    specs = expand_inputs(list(inputs), None)
    with reporting(progress), _open(path, readonly=False) as idx:
        step = begin("read+sign+add", plain_size(specs), unit="B")
        for batch in batched(_rows(inputs, text_field, id_field, on_error, specs=specs, check_ids=True), _BATCH):
            try:
                idx.add_batch([k for k, _, _ in batch], [t for _, t, _ in batch], replace=replace, bulk=True)
            except DuplicateKeyError as exc:
                why = str(exc).replace("pass replace=True to overwrite", "give --replace to replace them")
                raise click.ClickException(f"{path}: {why}; none of the {len(batch)} rows of this batch was added"
                                           + (f" (the {added} before it were)" if added else "")) from None
            added += len(batch)
            skipped = batch[-1][2]
            step.update(sum(len(t) for _, t, _ in batch), rows=added + len(skipped) - (step.rows or 0))
        step.end(step.total, rows=added + len(skipped), documents=added, skipped=len(skipped))
        total = len(idx)
    click.echo(f"added {added} documents ({len(skipped)} rows skipped); the index holds {total}")


@index.command()
@click.argument("path", type=click.Path(exists=True))
@click.argument("inputs", nargs=-1)
@click.option("--text", "texts", multiple=True, help="A text to look up (repeatable), besides INPUTS.")
@click_options(("text_field", "id_field"), helps={"id_field": "Field holding each row's id (default: FILE:LINE)."})
@click.option("--threshold", type=click.FloatRange(0.0, 1.0), default=None,
              help="MinHash: lowest estimated Jaccard (containment, for a containment index) to report "
                   "(default: the index's; below it, only "
                   "documents that also share a band are found).")
@click.option("--bits", "--max-distance", "max_distance", type=click.IntRange(0, 64), default=None,
              help="Classic SimHash index: the largest Hamming distance to report (default: the index's; "
                   "--max-distance is its older name).")
@click.option("--top", type=click.IntRange(1), default=None, help="At most this many matches per document.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "table"]), default="jsonl", show_default=True,
              help="jsonl: one JSON object per row; table: 'ID<TAB>match (similarity or distance), …' per row.")
@click_options(("on_error",))
def query(path, inputs, texts, id_field, text_field, threshold, max_distance, top, fmt, on_error):
    """Print the indexed documents near each row of INPUTS (and each --text): best first. Nothing is
    added. JSONL: one {"id", "matches": [{"id", "similarity" | "distance"}]} per row, in order.

    \b
    Examples:
      neardup index query idx new.jsonl --id-field id
      neardup index query idx --text "some text to look up" --format table
      neardup index query simhash-idx new.jsonl --max-distance 3 --top 5
    """
    if not inputs and not texts:
        raise click.UsageError("give INPUTS or --text")
    out = sys.stdout
    with _open(path, readonly=True) as idx:
        simhash = idx.kind == "simhash"          # (the classic rule: distances; every other index: similarities)
        if simhash and threshold is not None or not simhash and max_distance is not None:
            raise click.UsageError("--threshold is for MinHash and verified SimHash indexes, --bits for classic "
                                   "SimHash ones")
        if simhash:
            try:                # the index's own rule: no more than its block keys guarantee to find
                idx._distance(max_distance)
            except ValueError as exc:
                raise ParameterError(f"--max-distance {max_distance}: {exc}") from None
        for batch in batched(_rows(inputs, text_field, id_field, on_error, texts), 4096):
            docs = [t for _, t, _ in batch]
            found = idx.query_batch(docs, max_distance) if simhash else idx.query_batch(docs, threshold)
            for (rid, _, _), matches in zip(batch, found):
                matches = matches[:top] if top else matches
                field = "distance" if simhash else "similarity"
                if fmt == "jsonl":
                    out.write(json.dumps({"id": rid, "matches": [{"id": k, field: s} for k, s in matches]},
                                         ensure_ascii=False) + "\n")
                else:
                    shown = ", ".join(f"{k} ({s if simhash else round(s, 4)})" for k, s in matches) or "—"
                    out.write(f"{rid}\t{shown}\n")


@index.command()
@click.argument("path", type=click.Path(exists=True))
@click.argument("ids", nargs=-1, required=True)
def remove(path, ids):
    """Remove the documents IDS: each the string id, else the integer id it spells (ASCII digits, an
    optional minus, in the signed 64-bit range: :func:`~neardup.index.store.key_candidates`).

    \b
    Examples:
      neardup index remove idx doc-17 doc-18
    """
    gone, missing = 0, []
    with _open(path, readonly=False) as idx:
        for i in ids:
            for key in key_candidates(i):
                if key in idx:
                    idx.remove(key)
                    gone += 1
                    break
            else:
                missing.append(i)
    click.echo(f"removed {gone}" + (f"; not in the index: {', '.join(missing[:10])}" if missing else ""))
    if missing:
        sys.exit(1)


@index.command()
@click.argument("path", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="One JSON object (with at least `documents`).")
def stats(path, as_json):
    """Documents, bytes on disk, segments and the parameters of the index.

    \b
    Examples:
      neardup index stats idx
      neardup index stats idx --json
    """
    with _open(path, readonly=True) as idx:
        s = idx.stats()
    if as_json:
        click.echo(json.dumps(s, sort_keys=True))
        return
    per = f" ({s['bytes'] / s['documents']:.0f} B per document)" if s["documents"] else ""
    click.echo(f"{path}: {s['documents']} documents, {s['bytes']:,} bytes on disk{per}, "
               f"{s.get('segments', 1)} segments")
    for k, v in sorted(s["parameters"].items()):
        click.echo(f"  {k}: {v}")


@index.command()
@click.argument("path", type=click.Path(exists=True))
def compact(path):
    """Rewrite the index as one segment without removed documents.

    \b
    Examples:
      neardup index compact idx              # e.g. nightly, after the day's removals
    """
    with _open(path, readonly=False) as idx:
        before = idx.stats()
        idx.compact()
        after = idx.stats()
    click.echo(f"{before['segments']} segments, {before['bytes']:,} bytes → {after['segments']}, "
               f"{after['bytes']:,} bytes")


@index.command()
@click.argument("path", type=click.Path(exists=True), callback=index_folder)
@click.argument("dest", type=click.Path())
def backup(path, dest):
    """Copy the index at PATH as a new index folder DEST, consistently: segments hard-linked where the
    file system allows (they never change), the log up to its last acknowledged record. Takes the
    writer's lock, so no write runs meanwhile; while `neardup serve` holds the index, use its
    POST /v1/admin/backup.

    \b
    Examples:
      neardup index backup idx idx-2026-12-07        # hard links to the segments: fast, little space
    """
    with _open(path, readonly=False) as idx:
        out = idx.backup(dest)
        n = len(idx)
    click.echo(f"backed up {n} documents to {dest} ({out['linked']} files linked, {out['copied']} copied, "
               f"{out['bytes']:,} bytes)")


@index.command()
@click.argument("path", type=click.Path(exists=True))
@click.option("-o", "--output", required=True, help="The Parquet file to write (a new file; - for standard output).")
def export(path, output):
    """Ids and signatures as Parquet: id (text), id_type (str, int, bytes), and signature
    (MinHash: k unsigned integers) or fingerprint (SimHash: uint64).

    \b
    Examples:
      neardup index export idx -o signatures.parquet
      neardup index export simhash-idx -o simhash-idx.parquet
    """

    check_output_file(output, what="index export -o")
    if output != STDOUT and os.path.exists(output):
        raise click.ClickException(f"{output} already exists; choose a new file")
    if output == STDOUT and sys.stdout.isatty():
        raise click.UsageError("Parquet is binary; give -o FILE rather than writing it to a terminal")
    with _open(path, readonly=True) as idx:
        if output == STDOUT:
            n = _export(idx, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            with replacing(output) as tmp:
                n = _export(idx, tmp)
    if output != STDOUT:
        click.echo(f"wrote {n} documents to {output}" if n else "the index is empty: an empty table written")


def _export(idx, sink) -> int:
    """Write the index's live documents to ``sink`` (a path or a binary stream) as Parquet; returns
    how many. An empty index gives a table of no rows with the columns."""

    st = idx.store
    n = 0
    with st.snapshot():
        ids = st.live_ids()
        writer = None
        try:
            for lo in range(0, max(len(ids), 1), 65536):
                keys, raw = st.fetch_arrays(ids[lo:lo + 65536])
                vals = idx._values_of(raw)
                cols = {"id": pa.array([k.hex() if isinstance(k, bytes) else str(k) for k in keys], pa.string()),
                        "id_type": pa.array([type(k).__name__ for k in keys], pa.string())}
                if idx.kind == "simhash":
                    cols["fingerprint"] = pa.array(vals.reshape(-1))
                elif idx.kind == "simhash-verified":     # (the fingerprint, then the sketch's slots)
                    cols["fingerprint"] = pa.array(np.ascontiguousarray(vals[:, 0]))
                    sk = idx.sketch_of(vals)
                    cols["sketch"] = pa.FixedSizeListArray.from_arrays(pa.array(sk.reshape(-1)), sk.shape[1])
                elif idx.kind == "containment":        # (signature slots, set size)
                    sig = np.ascontiguousarray(vals[:, :-1])
                    cols["signature"] = pa.FixedSizeListArray.from_arrays(pa.array(sig.reshape(-1)), sig.shape[1])
                    cols["size"] = pa.array(vals[:, -1].astype(np.int64))
                else:
                    cols["signature"] = pa.FixedSizeListArray.from_arrays(pa.array(vals.reshape(-1)), vals.shape[1])
                table = pa.table(cols)
                if writer is None:
                    writer = pq.ParquetWriter(sink, table.schema)
                writer.write_table(table)
                n += len(keys)
        finally:
            if writer is not None:
                writer.close()
    return n


@index.command()
@click.argument("old", type=click.Path(exists=True, dir_okay=False))
@click.argument("new", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="The result as one JSON object.")
def migrate(old, new, as_json):
    """Convert OLD, an index in neardup 0.x's SQLite file format, into a new index folder NEW, the
    store every command reads: the same configuration, every document's id and stored signature in
    the order they were added (band keys computed again). OLD is only read. NEW is built under a
    temporary name beside it and appears only when complete. Refused, with nothing written, when NEW
    exists or when this neardup signs text differently from the neardup that built OLD.

    \b
    Examples:
      neardup index migrate crawl.ndx crawl-migrated
      neardup index migrate old/news.ndx news-idx --json
    """
    if not new:
        raise click.BadParameter("an empty path", param_hint="NEW")
    out = migrate_sqlite(old, new)
    if as_json:
        click.echo(json.dumps(out, sort_keys=True))
    else:
        click.echo(f"migrated {out['documents']} documents ({out['kind']}) from {old} to the index folder {new}")


@index.command()
@click.argument("path", type=click.Path(exists=True), callback=index_folder)
@click.option("--repair", "repair_to", type=click.Path(), default=None, metavar="NEW",
              help="Salvage what verifies into a new index at NEW (the damaged one is left as it is).")
@click.option("--json", "as_json", is_flag=True, help="The report as one JSON object.")
def verify(path, repair_to, as_json):
    """Check every byte of the index: each segment file's checksum and contents, the list of removed
    documents, every log record. Exit 0 when all of it verifies, 1 when something does not (the
    report says what, and how many documents it puts at risk). With --repair NEW, what verifies
    is copied into a new index at NEW and what could not be recovered is listed.

    \b
    Examples:
      neardup index verify idx                     # exit 0: every byte verifies
      neardup index verify idx --repair idx-salvaged --json
    """
    if repair_to is not None:
        if taken(repair_to):
            raise click.ClickException(f"{repair_to} already exists; --repair writes a new index")
        report = repair_index(path, repair_to)
    else:
        report = verify_index(path)
    if as_json:
        click.echo(json.dumps(report, sort_keys=True, default=str))
    else:
        _print_verify(report)
    if not report["ok"]:
        sys.exit(1)


def _print_verify(report: dict) -> None:
    log = report["log"]
    click.echo(f"{report['path']}: {'verifies' if report['ok'] else 'DAMAGED'} — {len(report['segments'])} segments, "
               f"log {log['file']}: {log['records']} records ({log['documents']} documents)"
               + (f", a torn tail at byte {log['torn_tail']} (never acknowledged; a writer cuts it off)"
                  if log["torn_tail"] is not None else ""))
    for s in report["segments"]:
        for p in s["problems"]:
            click.echo(f"  segment {s['segment']} ({s['documents']} documents): {p}")
    for p in report["manifest"]:
        click.echo(f"  manifest: {p}")
    for p in report["removed"]:
        click.echo(f"  removed documents: {p}")
    for d in log["damaged"]:
        click.echo(f"  log bytes {d['start']}–{d['end']}: {d['why']}")
    if "recovered" in report:
        click.echo(f"repaired into {report['new']}: {report['recovered']} documents")
        for line in report["lost"]:
            click.echo(f"  not recovered: {line}")
    elif not report["ok"]:
        click.echo(f"  {report['documents_at_risk']} documents in damaged segments; "
                   "`neardup index verify PATH --repair NEW` salvages what verifies")
