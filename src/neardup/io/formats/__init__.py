"""Input formats behind one registry, used by every command (``sign``, ``dedup``, ``eval``) and
by the Spark engine: one rule per format, streamed, integrity-checked.

=========  ====================================================  ===========================
format     chosen by                                             a row is
=========  ====================================================  ===========================
jsonl      ``.jsonl`` ``.ndjson`` ``.json``                      a JSON object on one line
csv        ``.csv`` ``.tsv`` (header row)                        a record
parquet    ``.parquet``                                          a row
lines      ``.txt`` and any other suffix                         a line
dir        a directory                                           a file below it
file       only ``--input-format file``                          the whole file
=========  ====================================================  ===========================

Any line-based format may be compressed (``.gz``, ``.zst``, ``.bz2``), read to its verified end
(:mod:`neardup.io.compression`). Input without a name of its own — ``-`` (standard input), a pipe
such as ``<(cat a b)`` — is JSONL unless ``--input-format`` says otherwise, and its compression
is recognised from its first bytes.

Reading yields :class:`Row` records; a row that cannot be used carries ``error`` (the caller
raises, or skips and counts), so nothing disappears unnoticed; a fault of the whole file (a
truncated stream, a missing column, malformed CSV quoting) raises
:class:`~neardup.errors.InputFormatError`. Writing copies the kept rows of each input in input
order with every field preserved (JSONL and text lines byte for byte, Parquet through Arrow with
the input's schema, CSV through the same dialect) and checks that it saw as many rows as pass 1.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ...errors import InputFormatError
from ..compression import split_suffix
from .base import DirEntry, Fields, Format, InputSpec, Row, check_stamp, decode, row_place, safe_name, unique_name
from .delimited import Delimited
from .directory import Directory, list_entries
from .document import Document
from .jsonl import JSONL, parse_jsonl_block, parse_jsonl_line
from .lines import Lines, block_lines, content, file_blocks, line_text, raw_blocks, raw_lines, read_block
from .parquet import Parquet

REGISTRY: dict[str, Format] = {f.name: f for f in (JSONL(), Delimited(), Parquet(), Lines(), Directory(), Document())}
FORMATS = tuple(REGISTRY)
_BY_SUFFIX = ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "jsonl"), (".parquet", "parquet"),
              (".csv", "csv"), (".tsv", "csv"))


def format_of(spec: InputSpec) -> Format:
    return REGISTRY[spec.fmt]


def fmt_for_name(name: str, default: str = "lines") -> str:
    """The format a file name selects (``default`` when no suffix claims it)."""
    base = split_suffix(name)[0].lower()
    for ext, fmt in _BY_SUFFIX:
        if base.endswith(ext):
            return fmt
    return default


def check_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in REGISTRY:
        raise InputFormatError(f"unknown input format {fmt!r}; expected one of {', '.join(FORMATS)}")


def check_fields_apply(specs, text_field: str = "text", id_field: str | None = None) -> None:
    """``--text-field`` and ``--id-field`` name fields of records: given when no input has records
    (text lines, folders, whole files), they would be ignored without a word, so they are refused."""
    if any(format_of(s).records for s in specs):
        return
    given = [flag for flag, on in (("--text-field", text_field != "text"), ("--id-field", id_field is not None)) if on]
    if given and specs:
        kinds = sorted({s.fmt for s in specs})
        raise InputFormatError(f"{' and '.join(given)} name fields of records (JSONL, CSV, Parquet); the inputs here "
                               f"are {', '.join(kinds)}, whose rows have no fields")


def read_rows(spec: InputSpec, text_field: str = "text", id_field: str | None = None,
              key_field: str | None = None) -> Iterator[Row]:
    """Every row of one input, in order (ids default to None: the caller numbers them).
    ``key_field`` (JSONL, CSV, Parquet) fills :attr:`Row.key` for the ``key`` keep policy."""
    return format_of(spec).read(spec, Fields(text_field, id_field, key_field))


def write_kept(spec: InputSpec, keep: np.ndarray, dest: str) -> int:
    return format_of(spec).write_kept(spec, keep, dest)


def write_edited(spec: InputSpec, keep: np.ndarray, touched: np.ndarray, edit, dest: str, text_field: str) -> int:
    """Kept rows with some texts rewritten (:meth:`Format.write_edited`)."""
    return format_of(spec).write_edited(spec, keep, touched, edit, dest, text_field)


def output_name(spec: InputSpec, used: set) -> str:
    """A unique, sanitised file (or folder) name under ``kept/`` for this input's kept rows."""
    return unique_name(format_of(spec).kept_name(spec), used)

__all__ = ["DirEntry", "Fields", "Format", "InputSpec", "Row", "REGISTRY", "FORMATS", "InputFormatError",
           "check_fields_apply", "check_format", "check_stamp", "content", "decode", "fmt_for_name", "format_of",
           "line_text", "list_entries", "output_name", "parse_jsonl_block", "parse_jsonl_line", "raw_blocks",
           "file_blocks", "read_block", "block_lines", "raw_lines", "read_rows", "row_place", "safe_name",
           "write_edited", "write_kept", "Delimited", "Directory", "Document", "JSONL", "Lines", "Parquet"]
