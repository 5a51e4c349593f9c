"""Corpus inputs and outputs for ``neardup dedup``: every row is read, counted and written back in
its own format.

Formats (by suffix, or forced with ``fmt=``):

* ``jsonl`` — ``.jsonl``/``.ndjson``/``.json`` (one object per line), optionally ``.gz`` / ``.zst``;
* ``parquet`` — ``.parquet`` (pyarrow; streamed by record batch);
* ``csv`` — ``.csv`` / ``.tsv`` (header row; ``csv`` module, quoted newlines allowed);
* ``lines`` — ``.txt`` (and any other suffix): one document per line;
* ``dir`` — a directory: each regular file below it (sorted, recursive) is one document.

Reading yields :class:`Row` records — a row that cannot be used is yielded with ``error`` set
(the caller decides: raise, or skip and count), so nothing disappears unnoticed. Writing copies
the kept rows of each input in input order with every field preserved (JSONL and text lines
byte for byte, Parquet through Arrow with the original schema, CSV through the csv module).
"""
from __future__ import annotations

import csv
import glob
import gzip
import io
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

FORMATS = ("jsonl", "parquet", "csv", "lines", "dir")
_JSONL = (".jsonl", ".ndjson", ".json")


class InputFormatError(ValueError):
    """A row or file that cannot be read, with its location."""


@dataclass
class Row:
    line: int               # 1-based line (JSONL, lines, CSV record number) or row number (Parquet, dir)
    id: object
    text: str | None
    error: str | None = None
    replaced: bool = False  # invalid UTF-8 replaced by U+FFFD
    blank: bool = False     # a blank line in a JSONL file: skipped and counted, never an error
    key: object = None      # the value of the keep-policy field, when one is asked for


@dataclass(frozen=True)
class InputSpec:
    path: str
    fmt: str
    compression: str | None = None


def _strip_compression(path: str) -> tuple[str, str | None]:
    for ext, comp in ((".gz", "gzip"), (".zst", "zstd"), (".zstd", "zstd")):
        if path.endswith(ext):
            return path[: -len(ext)], comp
    return path, None


def detect(path: str, fmt: str | None = None) -> InputSpec:
    if os.path.isdir(path):
        return InputSpec(path, "dir")
    base, comp = _strip_compression(path)
    if fmt is None:
        low = base.lower()
        if low.endswith(_JSONL):
            fmt = "jsonl"
        elif low.endswith(".parquet"):
            fmt = "parquet"
        elif low.endswith((".csv", ".tsv")):
            fmt = "csv"
        else:
            fmt = "lines"
    if fmt not in FORMATS:
        raise ValueError(f"unknown input format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if fmt == "parquet" and comp:
        raise ValueError(f"{path}: Parquet files are compressed internally; remove the {comp} wrapper")
    return InputSpec(path, fmt, comp)


def expand_inputs(patterns: list[str], fmt: str | None = None) -> list[InputSpec]:
    """Paths, globs and directories → input specs (globs sorted; a pattern matching nothing is an error)."""
    specs = []
    for pat in patterns:
        matches = sorted(glob.glob(pat, recursive=True)) if glob.has_magic(pat) else [pat]
        if not matches:
            raise InputFormatError(f"{pat}: no file matches")
        for m in matches:
            if not os.path.exists(m):
                raise InputFormatError(f"{m}: no such file or directory")
            specs.append(detect(m, fmt))
    return specs


def open_binary(path: str, compression: str | None, mode: str = "rb"):
    if compression == "gzip":
        return gzip.open(path, mode)
    if compression == "zstd":
        import zstandard  # noqa: PLC0415

        if "r" in mode:
            return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
        return zstandard.ZstdCompressor(level=3).stream_writer(open(path, "wb"), closefd=True)
    return open(path, mode)


def _decode(raw: bytes) -> tuple[str, bool]:
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), True


_BOM = b"\xef\xbb\xbf"


def _content(i: int, raw: bytes) -> bytes:
    """A line's bytes for parsing: a UTF-8 byte-order mark at the start of the file is dropped
    (kept rows are still copied byte for byte)."""
    return raw[3:] if i == 1 and raw.startswith(_BOM) else raw


def _lines(spec: InputSpec) -> Iterator[tuple[int, bytes]]:
    with open_binary(spec.path, spec.compression) as fh:
        reader = io.BufferedReader(fh) if spec.compression == "zstd" else fh
        for i, raw in enumerate(reader, 1):
            yield i, raw


def read_rows(spec: InputSpec, text_field: str = "text", id_field: str | None = None,
              key_field: str | None = None) -> Iterator[Row]:
    """Every row of one input, in order (ids default to None: the caller numbers them).
    ``key_field`` (JSONL, CSV, Parquet) fills :attr:`Row.key` for the ``key`` keep policy."""
    if key_field is not None and spec.fmt in ("lines", "dir"):
        raise InputFormatError(f"{spec.path}: --keep-field needs records with fields (JSONL, CSV, Parquet)")
    if spec.fmt == "jsonl":
        yield from _read_jsonl(spec, text_field, id_field, key_field)
    elif spec.fmt == "lines":
        for i, raw in _lines(spec):
            text, bad = _decode(_content(i, raw).rstrip(b"\r\n"))
            yield Row(i, None, text, replaced=bad)
    elif spec.fmt == "csv":
        yield from _read_csv(spec, text_field, id_field, key_field)
    elif spec.fmt == "parquet":
        yield from _read_parquet(spec, text_field, id_field, key_field)
    else:
        for i, p in enumerate(dir_files(spec.path), 1):
            with open(p, "rb") as fh:
                text, bad = _decode(fh.read())
            yield Row(i, os.path.relpath(p, spec.path) if id_field is None else None, text, replaced=bad)


def _read_jsonl(spec: InputSpec, text_field: str, id_field: str | None, key_field: str | None) -> Iterator[Row]:
    for i, raw in _lines(spec):
        yield parse_jsonl_line(spec, i, raw, text_field, id_field, key_field)


def jsonl_lines(spec: InputSpec) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw bytes) of a JSONL input, for :func:`parse_jsonl_line` elsewhere
    (the dedup pipeline parses in its worker processes)."""
    return _lines(spec)


def parse_jsonl_line(spec: InputSpec, i: int, raw: bytes, text_field: str, id_field: str | None,
                     key_field: str | None) -> Row:
    """Line ``i`` of a JSONL input as a :class:`Row` (an error row for a bad line)."""
    raw = _content(i, raw)
    if not raw.strip():
        return Row(i, None, None, error=f"{spec.path}:{i}: blank line", blank=True)
    try:
        rec = json.loads(raw)
    except UnicodeDecodeError:
        text, _ = _decode(raw)
        try:
            rec = json.loads(text)
        except ValueError as exc:
            return Row(i, None, None, error=f"{spec.path}:{i}: malformed JSON ({exc})")
        row = _jsonl_row(spec, i, rec, text_field, id_field, key_field)
        row.replaced = True
        return row
    except ValueError as exc:
        return Row(i, None, None, error=f"{spec.path}:{i}: malformed JSON ({exc})")
    return _jsonl_row(spec, i, rec, text_field, id_field, key_field)


def _jsonl_row(spec, i, rec, text_field, id_field, key_field=None) -> Row:
    if not isinstance(rec, dict):
        return Row(i, None, None, error=f"{spec.path}:{i}: expected a JSON object, got {type(rec).__name__}")
    if text_field not in rec:
        return Row(i, None, None, error=f"{spec.path}:{i}: no field {text_field!r}; fields present: "
                                       f"{', '.join(map(repr, rec)) or '(none)'}")
    text = rec[text_field]
    if text is None:
        text = ""
    if not isinstance(text, str):
        return Row(i, None, None, error=f"{spec.path}:{i}: field {text_field!r} is {type(text).__name__}, not a string")
    key = None
    if key_field is not None:
        if key_field not in rec:
            return Row(i, None, None, error=f"{spec.path}:{i}: no keep field {key_field!r}; fields present: "
                                           f"{', '.join(map(repr, rec))}")
        key = rec[key_field]
    if id_field is not None:
        if id_field not in rec:
            return Row(i, None, None, error=f"{spec.path}:{i}: no id field {id_field!r}; fields present: "
                                           f"{', '.join(map(repr, rec))}")
        return Row(i, rec[id_field], text, key=key)
    return Row(i, None, text, key=key)


def _csv_dialect(spec: InputSpec) -> str:
    return "excel-tab" if _strip_compression(spec.path)[0].lower().endswith(".tsv") else "excel"


def _check_columns(where: str, names: list, text_field: str, id_field: str | None, key_field: str | None) -> None:
    """A clear error naming the file (and header line) and the columns present, for a missing column."""
    for role, name in (("", text_field), ("id ", id_field), ("keep ", key_field)):
        if name is not None and name not in names:
            raise InputFormatError(f"{where}: no {role}column {name!r}; columns: {', '.join(map(repr, names))}")


def _read_csv(spec: InputSpec, text_field: str, id_field: str | None, key_field: str | None) -> Iterator[Row]:
    with open_binary(spec.path, spec.compression) as fh:
        text_io = io.TextIOWrapper(io.BufferedReader(fh) if spec.compression == "zstd" else fh,
                                   encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.reader(text_io, dialect=_csv_dialect(spec))
        header = next(reader, None)
        if header is None:
            return
        _check_columns(f"{spec.path}:1", header, text_field, id_field, key_field)
        ti = header.index(text_field)
        ii = header.index(id_field) if id_field is not None else None
        ki = header.index(key_field) if key_field is not None else None
        for rec_no, rec in enumerate(reader, 2):
            if len(rec) != len(header):
                yield Row(rec_no, None, None, error=f"{spec.path}:{reader.line_num}: {len(rec)} fields, header has {len(header)}")
                continue
            yield Row(rec_no, rec[ii] if ii is not None else None, rec[ti], replaced="\ufffd" in rec[ti],
                      key=rec[ki] if ki is not None else None)


def _read_parquet(spec: InputSpec, text_field: str, id_field: str | None, key_field: str | None) -> Iterator[Row]:
    import pyarrow.parquet as pq  # noqa: PLC0415

    pf = pq.ParquetFile(spec.path)
    names = pf.schema_arrow.names
    _check_columns(spec.path, names, text_field, id_field, key_field)
    cols = list(dict.fromkeys([text_field] + [c for c in (id_field, key_field) if c is not None]))
    row_no = 0
    for batch in pf.iter_batches(columns=cols, batch_size=8192):
        data = {c: batch.column(j).to_pylist() for j, c in enumerate(cols)}
        texts = data[text_field]
        ids = data.get(id_field) if id_field is not None else None
        keys = data.get(key_field) if key_field is not None else None
        for k, t in enumerate(texts):
            row_no += 1
            if t is not None and not isinstance(t, str):
                yield Row(row_no, None, None, error=f"{spec.path}: row {row_no}: column {text_field!r} is not text")
                continue
            yield Row(row_no, ids[k] if ids is not None else None, "" if t is None else t,
                      key=keys[k] if keys is not None else None)


def dir_files(path: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            if os.path.isfile(p) and not os.path.islink(p):
                out.append(p)
    return out


# -- writing the kept rows --------------------------------------------------------------------------
def output_name(spec: InputSpec, used: set) -> str:
    """A unique file (or folder) name under ``kept/`` for this input's kept rows."""
    name = Path(spec.path.rstrip("/")).name or "input"
    cand, k = name, 1
    while cand in used:
        k += 1
        stem, dot, ext = name.partition(".")
        cand = f"{stem}-{k}{dot}{ext}"
    used.add(cand)
    return cand


def write_kept(spec: InputSpec, keep: np.ndarray, dest: str, on_row=None) -> int:
    """Copy the rows of ``spec`` whose ``keep[row_index]`` is True (row_index counts every row read,
    good or bad, from 0) to ``dest`` in the same format. ``on_row(row_index, text)`` sees each kept
    row's text when the format makes it cheap. Returns the number of rows written."""
    written = 0
    if spec.fmt in ("jsonl", "lines"):
        with open_binary(dest, spec.compression, "wb") as out:
            for i, raw in _lines(spec):
                if i - 1 < keep.shape[0] and keep[i - 1]:
                    out.write(raw if raw.endswith(b"\n") else raw + b"\n")
                    written += 1
        return written
    if spec.fmt == "csv":
        with open_binary(spec.path, spec.compression) as fh, open_binary(dest, spec.compression, "wb") as outb:
            src = io.TextIOWrapper(io.BufferedReader(fh) if spec.compression == "zstd" else fh,
                                   encoding="utf-8", errors="surrogateescape", newline="")
            dst = io.TextIOWrapper(outb, encoding="utf-8", errors="surrogateescape", newline="")
            reader = csv.reader(src, dialect=_csv_dialect(spec))
            writer = csv.writer(dst, dialect=_csv_dialect(spec))
            header = next(reader, None)
            if header is not None:
                writer.writerow(header)
                for k, rec in enumerate(reader):
                    if k < keep.shape[0] and keep[k]:
                        writer.writerow(rec)
                        written += 1
            dst.flush()
            dst.detach()
        return written
    if spec.fmt == "parquet":
        import pyarrow as pa  # noqa: PLC0415
        import pyarrow.parquet as pq  # noqa: PLC0415

        pf = pq.ParquetFile(spec.path)
        with pq.ParquetWriter(dest, pf.schema_arrow) as w:
            start = 0
            for batch in pf.iter_batches(batch_size=8192):
                m = keep[start:start + batch.num_rows]
                start += batch.num_rows
                if m.any():
                    w.write_table(pa.Table.from_batches([batch.filter(pa.array(m))]))
                    written += int(m.sum())
        return written
    os.makedirs(dest, exist_ok=True)
    for k, p in enumerate(dir_files(spec.path)):
        if k < keep.shape[0] and keep[k]:
            target = os.path.join(dest, os.path.relpath(p, spec.path))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(p, target)
            written += 1
    return written
