"""A whole file as one document (``--input-format file``; what ``neardup sign --files`` reads):
its decompressed bytes as UTF-8, invalid bytes replaced. The kept "row" is the file itself."""
from __future__ import annotations

import shutil
from collections.abc import Iterator

import numpy as np

from ..compression import open_write
from .base import Fields, Format, InputSpec, Row, check_count, decode, open_input


class Document(Format):
    name = "file"
    suffix = ".txt"
    records = False

    def read(self, spec: InputSpec, fields: Fields) -> Iterator[Row]:
        self.check_fields(spec, fields)
        with open_input(spec) as fh:
            text, bad = decode(fh.read())
        yield Row(1, spec.label, text, replaced=bad)

    def write_edited(self, spec: InputSpec, keep: np.ndarray, touched: np.ndarray, edit, dest: str,
                     text_field: str) -> int:
        check_count(spec, keep.shape[0], 1)
        if not keep[0]:
            return 0
        if touched is None or not touched[0]:
            shutil.copyfile(spec.path, dest)
            return 1
        with open_input(spec) as fh:
            new = edit(0, decode(fh.read())[0])
        if new is None:
            return 0
        with open_write(dest, spec.compression) as out:
            out.write(new.encode("utf-8", "surrogatepass"))
        return 1
