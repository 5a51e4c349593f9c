"""Text lines: one document per line (``.txt`` and any suffix no other format claims).

Lines end at ``\\n`` only (``\\r\\n`` is stripped from the text, ``\\r`` alone is text), as Spark's
line reader cuts them; a UTF-8 byte-order mark before the first line is not part of its text.
Kept lines are copied byte for byte (a final line without ``\\n`` gets one).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..compression import open_write
from .base import Fields, Format, InputSpec, Row, check_count, decode, open_input

BOM = b"\xef\xbb\xbf"


def content(i: int, raw: bytes) -> bytes:
    """A line's bytes for parsing: a UTF-8 byte-order mark at the start of the file is dropped
    (kept rows are still copied byte for byte)."""
    return raw[3:] if i == 1 and raw.startswith(BOM) else raw


def raw_lines(spec: InputSpec) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw bytes with their ``\\n``) of a line-based input, the stream
    checked to its end."""
    with open_input(spec) as fh:
        yield from enumerate(fh, 1)


def line_text(i: int, raw: bytes) -> tuple[str, bool]:
    return decode(content(i, raw).rstrip(b"\r\n"))


class LineFormat(Format):
    """Formats whose rows are the lines of a file."""

    def write_kept(self, spec: InputSpec, keep: np.ndarray, dest: str) -> int:
        written = n = 0
        with open_write(dest, spec.compression) as out:
            for n, raw in raw_lines(spec):
                if n <= keep.shape[0] and keep[n - 1]:
                    out.write(raw if raw.endswith(b"\n") else raw + b"\n")
                    written += 1
        check_count(spec, keep.shape[0], n)
        return written


class Lines(LineFormat):
    name = "lines"
    suffix = ".txt"
    records = False

    def read(self, spec: InputSpec, fields: Fields) -> Iterator[Row]:
        self.check_fields(spec, fields)
        for i, raw in raw_lines(spec):
            text, bad = line_text(i, raw)
            yield Row(i, None, text, replaced=bad)
