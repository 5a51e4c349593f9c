"""JSON Lines: one JSON object per line (``.jsonl``, ``.ndjson``, ``.json``; plain, ``.gz``,
``.zst``, ``.bz2``).

A line that is not an object, lacks the text field, holds a non-string text, or nests deeper
than Python's parser can follow is an error row naming ``file:line`` (raise, or skip and count).
A blank line is skipped and counted. Invalid UTF-8 inside a line is replaced by U+FFFD and
counted. Ids must not be null, NaN or ±Infinity (see :func:`~.base.id_problem`).
"""
from __future__ import annotations

import json
from collections.abc import Iterator

from .base import Fields, InputSpec, Row, decode, fields_present, id_problem, keep_value, key_problem
from .lines import LineFormat, content, raw_lines


def parse_jsonl_line(spec: InputSpec, i: int, raw: bytes, text_field: str, id_field: str | None,
                     key_field: str | None) -> Row:
    """Line ``i`` of a JSONL input as a :class:`Row` (an error row for a bad line)."""
    raw = content(i, raw)
    if not raw.strip():
        return Row(i, None, None, error=f"{spec.label}:{i}: blank line", blank=True)
    replaced = False
    try:
        try:
            rec = json.loads(raw)
        except UnicodeDecodeError:
            text, replaced = decode(raw)
            rec = json.loads(text)
    except ValueError as exc:
        return Row(i, None, None, error=f"{spec.label}:{i}: malformed JSON ({exc})")
    except RecursionError:
        return Row(i, None, None, error=f"{spec.label}:{i}: JSON nested too deeply to parse")
    row = _record_row(spec, i, rec, text_field, id_field, key_field)
    row.replaced = replaced
    return row


def _record_row(spec: InputSpec, i: int, rec, text_field: str, id_field: str | None, key_field: str | None) -> Row:
    where = f"{spec.label}:{i}"
    if not isinstance(rec, dict):
        return Row(i, None, None, error=f"{where}: expected a JSON object, got {type(rec).__name__}")
    if text_field not in rec:
        return Row(i, None, None, error=f"{where}: no field {text_field!r}; fields present: {fields_present(rec)}")
    text = rec[text_field]
    if text is None:
        text = ""
    if not isinstance(text, str):
        return Row(i, None, None, error=f"{where}: field {text_field!r} is {type(text).__name__}, not a string")
    key = None
    if key_field is not None:
        if key_field not in rec:
            return Row(i, None, None, error=f"{where}: no keep field {key_field!r}; fields present: "
                                            f"{fields_present(rec)}")
        key, problem = keep_value(rec[key_field])
        if problem is not None:
            return Row(i, None, None, error=key_problem(where, key_field, problem))
    if id_field is None:
        return Row(i, None, text, key=key)
    if id_field not in rec:
        return Row(i, None, None, error=f"{where}: no id field {id_field!r}; fields present: {fields_present(rec)}")
    rid = rec[id_field]
    problem = id_problem(rid)
    if problem is not None:
        return Row(i, None, None, error=f"{where}: id field {id_field!r} {problem}")
    return Row(i, rid, text, key=key)


class JSONL(LineFormat):
    name = "jsonl"
    suffix = ".jsonl"

    def edit_line(self, spec: InputSpec, n: int, raw: bytes, edit, text_field: str) -> bytes | None:
        """The record with its text field replaced, written as ``json.dumps(record, ensure_ascii=False)``
        (every other field keeps its value; a lone surrogate is written as its JSON escape)."""
        raw = content(n, raw)
        try:
            rec = json.loads(raw)
        except UnicodeDecodeError:
            rec = json.loads(decode(raw)[0])
        new = edit(rec.get(text_field) or "")
        if new is None:
            return None
        rec[text_field] = new
        return (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")

    def read(self, spec: InputSpec, fields: Fields) -> Iterator[Row]:
        for i, raw in raw_lines(spec):
            yield parse_jsonl_line(spec, i, raw, fields.text, fields.id, fields.key)
