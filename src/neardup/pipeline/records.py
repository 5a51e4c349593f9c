"""The record each input row gets in ``clusters.jsonl`` / ``clusters.parquet``, defined once for both
engines (the local one formats it in the main process, the Spark one on its executors).

A document's record: ``{"id", "cluster", "kept", "similarity", "status", "row", "empty"}`` — ``cluster``
is the kept representative's id, ``similarity`` the similarity to it rounded to 6 digits, ``status``
``kept`` or ``duplicate``. A skipped row's: ``{"id": null, "cluster": null, "kept": false,
"similarity": null, "status": "skipped", "row", "reason"}``. Each JSON line is exactly
``json.dumps(record, ensure_ascii=False)`` (written with lone surrogates as JSON escapes); the lines
of documents are formatted directly, each id encoded once (3× faster at a million rows).

Parquet holds ids as text (:func:`parquet_id_text`); two different ids with one text are refused
before anything is written (``pipeline.dedup.check_parquet_ids``).
"""
from __future__ import annotations

import json
from json.encoder import encode_basestring

import numpy as np

PARQUET_COLUMNS = ("id", "cluster", "kept", "similarity", "status", "row", "reason", "empty")


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


def document_line(id_text: str, cluster_text: str, kept: bool, similarity: float, row: int, empty: bool,
                  indexed: bool = False) -> str:
    """The line of a document (ids already as JSON text), without its newline. A row removed as a
    near-duplicate of a document of the index (``--index``) ends with ``"indexed": true``."""
    tail = ', "indexed": true}' if indexed else "}"
    return (f'{{"id": {id_text}, "cluster": {cluster_text}, "kept": {"true" if kept else "false"}, '
            f'"similarity": {round(float(similarity), 6)!r}, "status": "{"kept" if kept else "duplicate"}", '
            f'"row": {row}, "empty": {"true" if empty else "false"}{tail}')


def skipped_line(row: int, reason: str) -> str:
    """The line of a skipped row, without its newline."""
    return json.dumps({"id": None, "cluster": None, "kept": False, "similarity": None, "status": "skipped",
                       "row": row, "reason": reason}, ensure_ascii=False)


def parquet_id_text(v) -> str:
    """An id as clusters.parquet writes it: its text (``str``), a lone surrogate as ``\\udXXX``."""
    return str(v).encode("utf-8", "backslashreplace").decode("utf-8")


def parquet_schema(indexed: bool = False):
    """The columns of clusters.parquet; with ``indexed`` (runs with ``--index``) a last boolean column
    ``indexed``: the row's cluster is a document of the index."""
    import pyarrow as pa  # noqa: PLC0415

    cols = [("id", pa.string()), ("cluster", pa.string()), ("kept", pa.bool_()),
            ("similarity", pa.float64()), ("status", pa.string()), ("row", pa.int64()),
            ("reason", pa.string()), ("empty", pa.bool_())]
    return pa.schema(cols + ([("indexed", pa.bool_())] if indexed else []))


def parquet_batch(rows, ids, clusters, kept, similarity, reasons, empty, indexed=None):
    """One Arrow record batch of clusters.parquet. Per row: ``ids``/``clusters`` are id values (None
    for a skipped row), ``reasons`` the skip reason or None; the rest as in the JSON record."""
    import pyarrow as pa  # noqa: PLC0415

    skip = [r is not None for r in reasons]
    cols = [
        [None if s else parquet_id_text(v) for v, s in zip(ids, skip)],
        [None if s else parquet_id_text(v) for v, s in zip(clusters, skip)],
        [bool(k) and not s for k, s in zip(kept, skip)],
        [None if s else round(float(x), 6) for x, s in zip(similarity, skip)],
        ["skipped" if s else ("kept" if k else "duplicate") for k, s in zip(kept, skip)],
        [int(r) for r in rows],
        list(reasons),
        [None if s else bool(e) for e, s in zip(empty, skip)],
    ]
    if indexed is not None:
        cols.append([bool(x) for x in indexed])
    schema = parquet_schema(indexed is not None)
    return pa.RecordBatch.from_arrays([pa.array(c, schema.field(i).type) for i, c in enumerate(cols)],
                                      schema=schema)


def pairs_schema(same_cluster: bool = True):
    """The columns of pairs.parquet (``--pairs``), one row per verified pair, a before b in input order:
    ``id_a``/``id_b`` (ids as text, as in clusters.parquet), ``row_a``/``row_b`` (input rows; ``row_b``
    null where b is a document of the index, ``--index``), ``similarity`` (full precision),
    ``decided`` (``identical``, ``estimate``, ``exact`` or ``candidate``: see
    :data:`neardup.pipeline.find.HOW`) and ``same_cluster`` (False where bounded linkage kept the two
    apart; not in a join's, ``neardup pairs``). Rows of identical signatures appear as links from the
    first such row to each other one (in a join: as every pair among them)."""
    import pyarrow as pa  # noqa: PLC0415

    return pa.schema([("id_a", pa.string()), ("id_b", pa.string()), ("row_a", pa.int64()), ("row_b", pa.int64()),
                      ("similarity", pa.float64()), ("decided", pa.dictionary(pa.int8(), pa.string()))]
                     + ([("same_cluster", pa.bool_())] if same_cluster else []))
