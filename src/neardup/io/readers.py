"""Document readers. Every record read is either yielded or reported: nothing is dropped silently.

* a plain file is one document (id: its path); ``-`` is one document read from stdin;
* ``*.jsonl`` / ``*.jsonl.gz`` / ``*.ndjson`` (or ``jsonl=True``): one JSON object per line, text in
  ``text_field``, id in ``id_field`` (default: ``<file>:<line>``).

Errors name the file and line. With ``on_error="skip"`` a bad record is skipped and appended to
``skipped`` as ``(file, line, reason)``.
"""
from __future__ import annotations

import gzip
import io
import json
import sys
from dataclasses import dataclass
from typing import Iterable, Iterator

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".json.gz")


class InputError(ValueError):
    """A record that cannot be read, with its location."""


@dataclass(frozen=True)
class Document:
    id: object
    text: str
    source: str
    line: int | None = None


def is_jsonl(path: str) -> bool:
    return path.endswith(JSONL_SUFFIXES)


def _open_text(path: str):
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="strict")
    return open(path, encoding="utf-8", errors="strict")


def _read_file_document(path: str) -> Document:
    if path == "-":
        raw = sys.stdin.buffer.read()
        return Document("-", raw.decode("utf-8", errors="replace"), "-")
    with open(path, "rb") as fh:
        raw = fh.read()
    return Document(path, raw.decode("utf-8", errors="replace"), path)


def iter_jsonl(path: str, text_field: str = "text", id_field: str | None = None, on_error: str = "raise",
               skipped: list | None = None) -> Iterator[Document]:
    opener = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    with opener as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                try:
                    rec = json.loads(raw)
                except ValueError as exc:
                    raise InputError(f"{path}:{lineno}: malformed JSON ({exc})") from None
                if not isinstance(rec, dict):
                    raise InputError(f"{path}:{lineno}: expected a JSON object, got {type(rec).__name__}")
                if text_field not in rec:
                    raise InputError(f"{path}:{lineno}: no field {text_field!r}; fields present: "
                                     f"{', '.join(map(repr, rec)) or '(none)'}")
                text = rec[text_field]
                if text is None:
                    text = ""
                if not isinstance(text, str):
                    raise InputError(f"{path}:{lineno}: field {text_field!r} is {type(text).__name__}, not a string")
                if id_field is not None:
                    if id_field not in rec:
                        raise InputError(f"{path}:{lineno}: no id field {id_field!r}; fields present: "
                                         f"{', '.join(map(repr, rec))}")
                    doc_id = rec[id_field]
                else:
                    doc_id = f"{path}:{lineno}"
            except InputError as exc:
                if on_error == "skip" and skipped is not None:
                    skipped.append((path, lineno, str(exc)))
                    continue
                raise
            yield Document(doc_id, text, path, lineno)


def iter_documents(paths: Iterable[str], jsonl: bool | None = None, text_field: str = "text",
                   id_field: str | None = None, on_error: str = "raise",
                   skipped: list | None = None) -> Iterator[Document]:
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    for path in paths:
        if (jsonl is True) or (jsonl is None and is_jsonl(path)):
            yield from iter_jsonl(path, text_field, id_field, on_error, skipped)
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
