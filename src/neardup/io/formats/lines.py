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

    def write_edited(self, spec: InputSpec, keep: np.ndarray, touched: np.ndarray, edit, dest: str,
                     text_field: str) -> int:
        written = n = 0
        with open_write(dest, spec.compression) as out:
            for n, raw in raw_lines(spec):
                k = n - 1
                if k >= keep.shape[0] or not keep[k]:
                    continue
                if touched is not None and touched[k]:
                    line = self.edit_line(spec, n, raw, lambda text, k=k: edit(k, text), text_field)
                    if line is None:
                        continue
                    out.write(line)
                else:
                    out.write(raw if raw.endswith(b"\n") else raw + b"\n")
                written += 1
        check_count(spec, keep.shape[0], n)
        return written

    def edit_line(self, spec: InputSpec, n: int, raw: bytes, edit, text_field: str) -> bytes | None:
        """Line ``n`` with its text edited (None: dropped)."""
        raise NotImplementedError


class Lines(LineFormat):
    name = "lines"
    suffix = ".txt"
    records = False

    def edit_line(self, spec: InputSpec, n: int, raw: bytes, edit, text_field: str) -> bytes | None:
        new = edit(line_text(n, raw)[0])
        if new is None:
            return None
        head = BOM if n == 1 and raw.startswith(BOM) else b""
        end = b"\r\n" if raw.endswith(b"\r\n") else b"\n"
        return head + new.encode("utf-8", "surrogatepass") + end

    def read(self, spec: InputSpec, fields: Fields) -> Iterator[Row]:
        self.check_fields(spec, fields)
        for i, raw in raw_lines(spec):
            text, bad = line_text(i, raw)
            yield Row(i, None, text, replaced=bad)
