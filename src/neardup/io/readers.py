"""Documents for the one-pass commands (``neardup sign``, ``eval --corpus``): the inputs of
:mod:`neardup.io.sources` read through the format registry — the same rules as ``dedup``
(``.txt`` is one document per line everywhere; ``--input-format file`` makes a whole file one
document; ``-`` is standard input, JSONL unless the format is given). Every record is yielded
or reported.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..errors import ConfigError, InputFormatError
from .formats import check_fields_apply, read_rows
from .sources import expand_inputs

InputError = InputFormatError


@dataclass(frozen=True)
class Document:
    id: object
    text: str
    source: str
    line: int | None = None


def iter_documents(paths: Iterable[str], jsonl: bool | None = None, text_field: str = "text",
                   id_field: str | None = None, on_error: str = "raise", skipped: list | None = None,
                   fmt: str | None = None, blank: list | None = None) -> Iterator[Document]:
    """Documents of ``paths``; ``fmt`` forces a format (``jsonl=True``/``False`` are the older
    spellings of ``fmt="jsonl"``/``"file"``). With ``on_error="skip"`` bad records go to
    ``skipped`` as ``(file, line, reason)`` instead of raising :class:`InputError`; blank JSONL
    lines are skipped (listed in ``blank`` as ``(file, line)``, when given). A document without an
    id field gets ``file:line`` (``file`` for a whole file, its path for a file of a folder)."""
    if on_error not in ("raise", "skip"):
        raise ConfigError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if fmt is None and jsonl is not None:
        fmt = "jsonl" if jsonl else "file"
    specs = expand_inputs(list(paths), fmt)
    check_fields_apply(specs, text_field, id_field)
    for spec in specs:
        for row in read_rows(spec, text_field, id_field):
            if row.error is not None:
                if row.blank or on_error == "skip":
                    if skipped is not None and not row.blank:
                        skipped.append((spec.label, row.line, row.error))
                    elif blank is not None and row.blank:
                        blank.append((spec.label, row.line))
                    continue
                raise InputError(row.error)
            rid = row.id if row.id is not None else f"{spec.label}:{row.line}"
            yield Document(rid, row.text, spec.label, row.line)


def batched(it: Iterable, size: int) -> Iterator[list]:
    batch = []
    for x in it:
        batch.append(x)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
