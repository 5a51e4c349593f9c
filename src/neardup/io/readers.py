"""Documents for ``neardup sign``: a file per document, ``-`` for stdin, or JSONL files (one
document per line, parsed by :mod:`neardup.io.formats`). Every record is yielded or reported.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Iterable, Iterator

from .formats import InputFormatError, detect, read_rows

InputError = InputFormatError


@dataclass(frozen=True)
class Document:
    id: object
    text: str
    source: str
    line: int | None = None


def is_jsonl(path: str) -> bool:
    return path != "-" and detect(path).fmt == "jsonl"


def _read_file_document(path: str) -> Document:
    if path == "-":
        raw = sys.stdin.buffer.read()
        return Document("-", raw.decode("utf-8", errors="replace"), "-")
    with open(path, "rb") as fh:
        raw = fh.read()
    return Document(path, raw.decode("utf-8", errors="replace"), path)


def iter_documents(paths: Iterable[str], jsonl: bool | None = None, text_field: str = "text",
                   id_field: str | None = None, on_error: str = "raise",
                   skipped: list | None = None) -> Iterator[Document]:
    """Documents of ``paths``; with ``on_error="skip"`` bad JSONL records go to ``skipped`` as
    ``(file, line, reason)`` instead of raising :class:`InputError`."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    for path in paths:
        if (jsonl is True) or (jsonl is None and is_jsonl(path)):
            spec = detect(path, "jsonl")
            for row in read_rows(spec, text_field, id_field):
                if row.error is not None:
                    if row.blank or on_error == "skip":
                        if skipped is not None and not row.blank:
                            skipped.append((path, row.line, row.error))
                        continue
                    raise InputError(row.error)
                yield Document(row.id if row.id is not None else f"{path}:{row.line}", row.text, path, row.line)
        else:
            try:
                yield _read_file_document(path)
            except OSError as exc:
                raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def batched(it: Iterable, size: int) -> Iterator[list]:
    batch = []
    for x in it:
        batch.append(x)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
