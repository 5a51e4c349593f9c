"""CSV and TSV (``.csv``, ``.tsv``; plain or compressed): a header row, then one record per row;
quoted fields may hold newlines.

Parsing is strict (:mod:`csv` with ``strict=True``): an unterminated quote, or text after a
closing quote, stops the run naming the line where the record began — a quote left open would
otherwise swallow every following row into one field without a word. Fields may be as long as
memory allows (the module's default cap of 128 KiB is lifted). A record with the wrong number of
fields is an error row (raise, or skip and count); a blank line is skipped and counted, as in
JSONL. Kept records are written back through the
same dialect, so quoting may be normalised but every field's value is preserved.
"""
from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterator

import numpy as np

from ...errors import InputFormatError
from ..compression import open_write, split_suffix
from .base import Fields, Format, InputSpec, Row, check_count, id_problem, keep_value, key_problem, open_input

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def dialect(spec: InputSpec) -> str:
    return "excel-tab" if split_suffix(spec.label)[0].lower().endswith(".tsv") else "excel"


def check_columns(where: str, names: list, text_field: str, id_field: str | None, key_field: str | None) -> None:
    """A clear error naming the file (and header line) and the columns present, for a missing column."""
    for role, name in (("", text_field), ("id ", id_field), ("keep ", key_field)):
        if name is not None and name not in names:
            raise InputFormatError(f"{where}: no {role}column {name!r}; columns: {', '.join(map(repr, names))}")


def records(spec: InputSpec, errors: str) -> Iterator[tuple[int, list[str]]]:
    """(line where the record begins, fields) of every record, header first; ``errors``: how invalid
    UTF-8 is decoded (``replace`` to read, ``surrogateescape`` to copy bytes back unchanged)."""
    with open_input(spec) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8-sig" if errors == "replace" else "utf-8", errors=errors,
                                newline="")
        reader = csv.reader(text, dialect=dialect(spec), strict=True)
        start = 1
        while True:
            try:
                rec = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise InputFormatError(f"{spec.label}:{start}: {_csv_problem(exc)} (the record starting on line "
                                       f"{start}, read to line {reader.line_num})") from None
            yield start, rec
            start = reader.line_num + 1


def _csv_problem(exc: csv.Error) -> str:
    msg = str(exc)
    if "unexpected end of data" in msg:
        return "unterminated quoted field: a quote is opened and never closed"
    if "expected after" in msg:
        return f"malformed quoting ({msg})"
    return f"malformed CSV ({msg})"


class Delimited(Format):
    name = "csv"
    suffix = ".csv"

    def read(self, spec: InputSpec, fields: Fields) -> Iterator[Row]:
        it = records(spec, "replace")
        first = next(it, None)
        if first is None:
            return
        _, header = first
        check_columns(f"{spec.label}:1", header, fields.text, fields.id, fields.key)
        ti = header.index(fields.text)
        ii = header.index(fields.id) if fields.id is not None else None
        ki = header.index(fields.key) if fields.key is not None else None
        for rec_no, (line, rec) in enumerate(it, 2):
            if not rec:       # a blank line (a trailing one is common in exports): skipped and counted
                yield Row(rec_no, None, None, error=f"{spec.label}:{line}: blank line", blank=True)
                continue
            if len(rec) != len(header):
                yield Row(rec_no, None, None, error=f"{spec.label}:{line}: {len(rec)} fields, header has {len(header)}")
                continue
            rid = None
            if ii is not None:
                rid = rec[ii]
                if rid == "":
                    yield Row(rec_no, None, None, error=f"{spec.label}:{line}: id column {fields.id!r} is empty")
                    continue
                problem = id_problem(rid)
                if problem is not None:
                    yield Row(rec_no, None, None, error=f"{spec.label}:{line}: id column {fields.id!r} {problem}")
                    continue
            key = None
            if ki is not None:
                key, problem = keep_value(rec[ki])
                if problem is not None:
                    yield Row(rec_no, None, None, error=key_problem(f"{spec.label}:{line}", fields.key, problem))
                    continue
            yield Row(rec_no, rid, rec[ti], replaced="\ufffd" in rec[ti], key=key)

    def write_edited(self, spec: InputSpec, keep: np.ndarray, touched: np.ndarray, edit, dest: str,
                     text_field: str) -> int:
        written = n = 0
        with open_write(dest, spec.compression) as outb:
            dst = io.TextIOWrapper(outb, encoding="utf-8", errors="surrogateescape", newline="")
            writer = csv.writer(dst, dialect=dialect(spec))
            it = records(spec, "surrogateescape")
            header = next(it, None)
            if header is not None:
                writer.writerow(header[1])
                ti = header[1].index(text_field) if text_field in header[1] else -1
                for n, (_, rec) in enumerate(it, 1):
                    k = n - 1
                    if k >= keep.shape[0] or not keep[k]:
                        continue
                    if touched is not None and touched[k] and 0 <= ti < len(rec):
                        # the text as the reader gave it (invalid bytes replaced), not as escaped here
                        text = rec[ti].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                        new = edit(k, text)
                        if new is None:
                            continue
                        rec = list(rec)
                        rec[ti] = new
                    writer.writerow(rec)
                    written += 1
            dst.flush()
            dst.detach()
        check_count(spec, keep.shape[0], n)
        return written

    def header(self, spec: InputSpec) -> list[str] | None:
        """The header row as the writer copies it (invalid UTF-8 kept as surrogate escapes)."""
        first = next(records(spec, "surrogateescape"), None)
        return None if first is None else first[1]
