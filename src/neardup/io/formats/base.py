"""What every input format shares: the input spec, the row record, the id rules and the
interface a format implements (read rows; copy kept rows; name its output)."""
from __future__ import annotations

import math
import numbers
import os
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ...errors import InputChangedError, InputFormatError
from ..compression import CODEC_SUFFIX, open_read


@dataclass(frozen=True)
class DirEntry:
    """One file of a directory input, listed once per run: the same list is read in pass 1 and
    copied in pass 2 (``error``: why it cannot be read; it is then an error row)."""
    rel: str
    path: str
    error: str | None = None
    stamp: tuple | None = None     # (size, mtime_ns)


@dataclass(frozen=True)
class InputSpec:
    """One input: ``path`` is where its bytes are read (a run's spool file for a pipe), ``label``
    what messages and the report call it (the user's path, or ``<stdin>``)."""
    path: str
    fmt: str
    compression: str | None = None
    label: str = ""
    entries: tuple = ()             # dir: DirEntry per file, in reading order
    links: tuple = ()               # dir: where the symbolic links followed lead (real paths)
    stamp: tuple | None = None      # (size, mtime_ns) of a file when it was listed
    pipe: bool = False              # not seekable: read once (``sign``) or spooled (``dedup``)
    sniff: bool = False             # no name of its own: codec from the first bytes

    def __post_init__(self):
        if not self.label:
            object.__setattr__(self, "label", self.path)


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
class Fields:
    """Which fields of a record hold the text, the id and the keep-policy key."""
    text: str = "text"
    id: str | None = None
    key: str | None = None


#: the longest line (one JSON record, one text line: one document) an input may hold. Past it the read
#: stops with one line naming the file and line: an endless line (``/dev/zero``, a file without a
#: newline) would otherwise grow in memory until the system kills the run.
MAX_LINE_BYTES = 1 << 30


def long_line(label: str, line: int) -> InputFormatError:
    """The error of a line over :data:`MAX_LINE_BYTES`."""
    return InputFormatError(f"{label}:{line}: a line of more than {MAX_LINE_BYTES >> 20} MiB (one document per line); "
                            "is this the right file? (a file of one huge document: --input-format file)")


def decode(raw: bytes) -> tuple[str, bool]:
    """UTF-8 text and whether invalid bytes were replaced by U+FFFD."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), True


def row_place(spec: InputSpec, line: int) -> str:
    """Where a row is, as messages name it: ``file:line`` for line-based formats (CSV: the record
    number), ``file: row N`` for Parquet, folders and whole files."""
    return f"{spec.label}: row {line}" if spec.fmt in ("parquet", "dir", "file") else f"{spec.label}:{line}"


def id_problem(value) -> str | None:
    """Why ``value`` cannot be a document id (None if it can): null, NaN and ±Infinity are refused
    — a null would collide with a row number, and NaN/Infinity are not JSON."""
    if value is None:
        return "is null"
    if isinstance(value, float) and not math.isfinite(value):
        return f"is {value!r} (not a valid JSON id)"
    return None


def keep_value(value) -> tuple[float | None, str | None]:
    """A ``--keep key`` value as a number, or why it is not one: null is −∞ (such a row is kept
    only when no member of its cluster has a value); numbers and numeric text are floats; NaN,
    true/false and other text are refused (an ordering needs numbers)."""
    if value is None:
        return -math.inf, None
    if isinstance(value, bool):
        return None, f"is {str(value).lower()}, not a number"
    if isinstance(value, str):
        if not value.strip():
            return None, "is empty, not a number"
        try:
            x = float(value)
        except ValueError:
            return None, f"is {value!r}, not a number"
    elif isinstance(value, numbers.Real):
        try:
            x = float(value)
        except OverflowError:         # an integer past float's range: beyond every float, on its side
            x = math.inf if value > 0 else -math.inf
    else:
        return None, f"is a {type(value).__name__}, not a number"
    if math.isnan(x):
        return None, "is NaN, which has no order"
    return x, None


def key_problem(where: str, field: str, problem: str) -> str:
    return f"{where}: keep field {field!r} {problem}"


def fields_present(rec) -> str:
    return ", ".join(map(repr, rec)) or "(none)"


def open_input(spec: InputSpec):
    """The decompressed, integrity-checked byte stream of a file input."""
    return open_read(spec.path, spec.compression, spec.label, sniffed=spec.sniff)


def check_count(spec: InputSpec, expected: int, got: int) -> None:
    """Pass 2 must see the rows pass 1 saw: a difference means the input changed during the run."""
    if got != expected:
        raise InputChangedError(f"{spec.label}: {expected} rows were read in the first pass and {got} in the "
                                "second: the input changed during the run (nothing was written)")


def check_stamp(spec: InputSpec) -> None:
    """An input file whose size or modification time changed since it was listed is an error."""
    for path, label, stamp in ([(spec.path, spec.label, spec.stamp)] if spec.stamp else []) + \
            [(e.path, os.path.join(spec.label, e.rel), e.stamp) for e in spec.entries if e.stamp]:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise InputChangedError(f"{label}: gone or unreadable since the run started "
                                    f"({exc.strerror or exc})") from None
        if (st.st_size, st.st_mtime_ns) != stamp:
            raise InputChangedError(f"{label}: changed while the run was reading it (size or modification "
                                    "time differ from the first pass); nothing was written")


_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\]")


def safe_name(name: str, fallback: str = "input") -> str:
    """A file name made only of the input's own name: no folder part, no control characters, no
    ``.``/``..``, undecodable bytes replaced, at most 200 characters."""
    name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace").replace("\ufffd", "_")
    name = _UNSAFE.sub("_", unicodedata.normalize("NFC", name)).strip()
    if name in ("", ".", "..") or set(name) <= {"."}:
        name = fallback
    if len(name) > 200:
        stem, dot, ext = name.rpartition(".")
        name = (stem[: 200 - len(ext) - 1] + "." + ext) if dot and len(ext) < 20 else name[:200]
    return name


def unique_name(name: str, used: set) -> str:
    """``name``, or ``stem-2.ext``, ``stem-3.ext`` … the first one not in ``used`` (added to it)."""
    cand, k = name, 1
    while cand.lower() in used:
        k += 1
        stem, dot, ext = name.partition(".")
        cand = f"{stem}-{k}{dot}{ext}"
    used.add(cand.lower())
    return cand


class Format:
    """An input format: rows in, kept rows out, in the format's own bytes."""

    name = ""
    suffix = ""                    # for an input without a name of its own (standard input)
    records = True                 # rows have named fields (text, id, keep key)

    def read(self, spec: InputSpec, fields: Fields) -> Iterator[Row]:
        raise NotImplementedError

    def write_kept(self, spec: InputSpec, keep: np.ndarray, dest: str) -> int:
        """Copy the rows whose ``keep[row]`` is True (row counts every row read, good or bad, from
        0) to ``dest``; the number of rows must equal ``len(keep)`` (else
        :class:`~neardup.errors.InputChangedError`). Returns the number written."""
        return self.write_edited(spec, keep, None, None, dest, "")

    def write_edited(self, spec: InputSpec, keep: np.ndarray, touched: np.ndarray | None, edit, dest: str,
                     text_field: str) -> int:
        """:meth:`write_kept`, where a kept row with ``touched[row]`` gets its text replaced by
        ``edit(row, text)`` (the text as :meth:`read` gave it), every other field as it was; when
        ``edit`` returns None the row is dropped. ``touched=None``: no row is edited (rows are
        copied as they are). Returns the number of rows written."""
        raise NotImplementedError

    def kept_name(self, spec: InputSpec) -> str:
        """The name of this input's kept rows under ``kept/``."""
        if spec.pipe:
            stem = "stdin" if spec.label == "<stdin>" else safe_name(os.path.basename(spec.label), "pipe")
            return stem + self.suffix + (CODEC_SUFFIX[spec.compression] if spec.compression else "")
        return safe_name(os.path.basename(os.path.abspath(spec.label)))

    def check_fields(self, spec: InputSpec, fields: Fields) -> None:
        if not self.records and fields.key is not None:
            raise InputFormatError(f"{spec.label}: --keep-field needs records with fields (JSONL, CSV, Parquet)")

