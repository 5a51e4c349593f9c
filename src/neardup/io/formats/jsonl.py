"""JSON Lines: one JSON object per line (``.jsonl``, ``.ndjson``, ``.json``; plain, ``.gz``,
``.zst``, ``.bz2``).

A line that is not an object, lacks the text field, holds a non-string text, or nests deeper
than Python's parser can follow is an error row naming ``file:line`` (raise, or skip and count).
A blank line is skipped and counted. Invalid UTF-8 inside a line is replaced by U+FFFD and
counted. Ids must not be null, NaN or ±Infinity (see :func:`~.base.id_problem`).
"""
from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from ...kernels.jsonl import extract_fields, scan_lines
from ...kernels.normalize import char_counts
from ...text.packed import PackedTexts
from ..ids import parsed_ids
from .base import Fields, InputSpec, Row, decode, fields_present, id_problem, keep_value, key_problem
from .lines import BOM, LineFormat, content, raw_lines


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


class ParsedBlock(NamedTuple):
    """A block of JSON lines parsed whole (:func:`parse_jsonl_block`): every line a document."""
    texts: PackedTexts
    chars: np.ndarray            # int64: characters of each document
    ids: list | None             # each document's id (None: no id field asked for)


_ID_TYPES = ("int64", "string")
_KEYS: dict = {}


def _key_bytes(name: str) -> np.ndarray:
    """A field name as the UTF-8 bytes its key has in a line without escapes."""
    got = _KEYS.get(name)
    if got is None:
        got = _KEYS[name] = np.frombuffer(name.encode("utf-8", "surrogatepass"), dtype=np.uint8).copy()
    return got


_id_first: dict = {}             # (file, id field) → the id type that parsed its last block


def _parsed(buf: np.ndarray, offsets: np.ndarray, ids: list | None) -> ParsedBlock:
    """A block's texts (UTF-8 ``buf`` cut at ``offsets``; an empty buffer becomes one byte) and ids."""
    texts = PackedTexts(buf if buf.shape[0] else np.zeros(1, np.uint8), offsets)
    return ParsedBlock(texts, char_counts(texts.buf, texts.offsets), ids)


def parse_jsonl_block(spec: InputSpec, first: int, block: bytes, text_field: str,
                      id_field: str | None) -> ParsedBlock | None:
    """The lines of ``block`` (whole lines, the first numbered ``first``) parsed at once, or None
    when the block must be read line by line (:func:`parse_jsonl_line`).

    The result is what :func:`parse_jsonl_line` gives for every line, or None. A block is taken
    whole only when it is well-formed UTF-8 (nothing to replace) with every line exactly one object
    on its own line (no blank line, no object over two lines or two on one), nested less than half
    of Python's recursion limit deep and with no integer of as many digits as Python refuses.
    :func:`~neardup.kernels.jsonl.extract_fields` makes those checks, parses every line by the JSON
    grammar and takes the text (and id) out, all in one pass: 2.5× the checks and Arrow's reader
    on 4 MiB blocks. A block it leaves (see there) goes through the checks alone
    (:func:`~neardup.kernels.jsonl.scan_lines`), then to Arrow's JSON reader, which must parse it
    with the text a string (ids all integers or all strings), no null, and one row per line.
    Everything else Arrow refuses (duplicate keys, NaN, a lone surrogate escape, numbers out of
    range, another type) sends the block line by line, where the rules of
    :func:`parse_jsonl_line` decide."""

    if not block or len(block) >= 1 << 31:
        return None
    arr = np.frombuffer(block, dtype=np.uint8)
    head = 3 if first == 1 and block.startswith(BOM) else 0
    max_digits = getattr(sys, "get_int_max_str_digits", lambda: 0)()    # Python ≥ 3.11: ints of 4,300 digits
    depth = max(sys.getrecursionlimit() // 2, 1)
    ok, n, buf, offsets, kind, ints, id_bytes, id_offsets = extract_fields(
        arr, head, depth, max_digits, _key_bytes(text_field), _key_bytes(id_field or ""), id_field is not None)
    if ok:                           # every line parsed in one pass: the values json.loads gives
        ids = None if id_field is None else parsed_ids(kind, ints, id_bytes, id_offsets)
        return _parsed(buf, offsets, ids)
    lines, status = scan_lines(arr, head, depth, max_digits)
    if status != 0:
        return None
    key = (spec.path, id_field)
    types = [None] if id_field is None else sorted(_ID_TYPES, key=lambda t: t != _id_first.get(key, "int64"))
    opts = pj.ReadOptions(use_threads=False, block_size=max(len(block) + 1, 1 << 16))
    table = None
    for t in types:
        fields = [(text_field, pa.string())] + ([(id_field, getattr(pa, t)())] if t else [])
        try:
            table = pj.read_json(pa.BufferReader(block), read_options=opts,
                                 parse_options=pj.ParseOptions(explicit_schema=pa.schema(fields),
                                                               unexpected_field_behavior="ignore"))
        except (pa.ArrowInvalid, ValueError):
            continue
        if t:
            _id_first[key] = t
        break
    if table is None or table.num_rows != lines:
        return None
    text = table.column(text_field).combine_chunks()
    if text.null_count:
        return None                      # null or missing: parse_jsonl_line tells them apart
    ids = None
    if id_field is not None:
        col = table.column(id_field)
        if col.null_count:
            return None
        ids = col.to_pylist()
    _, off_buf, data_buf = text.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int32, count=len(text) + 1, offset=4 * text.offset).astype(np.int64)
    buf = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return _parsed(buf, offsets, ids)


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
