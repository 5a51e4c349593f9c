"""How a document's id is read from the one-pass parser and written: as JSON text (clusters.jsonl,
``.ids.jsonl``) and as the text of a Parquet string column. Plain Python and NumPy, so that every
reader and writer uses these."""
from __future__ import annotations

import json
from json.encoder import encode_basestring

import numpy as np


def json_default(o):
    """JSON for NumPy scalars and arrays (and ``str`` of anything else) in reports and records."""
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def id_json(v) -> str:
    """``json.dumps(v, ensure_ascii=False)`` for an id, with the common types done directly."""
    t = type(v)
    if t is str:
        return encode_basestring(v)
    if t is int:
        return str(v)
    return json.dumps(v, ensure_ascii=False, default=json_default)


def parquet_id_text(v) -> str:
    """An id as clusters.parquet writes it: its text (``str``), a lone surrogate as ``\\udXXX``."""
    return str(v).encode("utf-8", "backslashreplace").decode("utf-8")


def parsed_ids(kind: int, ints: np.ndarray, id_bytes: np.ndarray, id_offsets: np.ndarray) -> list:
    """The ids :func:`~neardup.kernels.jsonl.extract_fields` took out of a block, as the Python values
    ``json.loads`` gives: ``kind`` 1, integers; otherwise strings (UTF-8 cut at ``id_offsets``)."""
    if kind == 1:
        return ints.tolist()
    raw = id_bytes.tobytes()
    return [raw[a:b].decode("utf-8") for a, b in zip(id_offsets[:-1].tolist(), id_offsets[1:].tolist())]
