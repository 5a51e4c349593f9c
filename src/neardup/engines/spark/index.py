"""``--engine spark --index IDX``: each executor probes IDX read-only for its rows; the matched
documents join the clustering as fixed rows (the rule of :mod:`neardup.dedup.incremental`), and the
kept rows are added to IDX after the outputs are staged."""
from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...config import DedupConfig, ResolvedConfig
from ...dedup.incremental import add_kept, check_ids, is_key, matched_sized, rerun_view, run_key
from ...dedup.methods import method_of
from ...index.disk import open_index
from ...kernels.lsh import row_keys
from .columns import _SIGNED, _binary_array, _binary_rows, _cfg_json, _column, _dump_id
from .graph import _sig_dtype
from .read import _Numbering, _row_place
from .session import _arrow_frame


@dataclass
class _IndexPart:
    """The indexed documents the new rows matched, as rows of the signed schema numbered −m … −1 in
    document-id order (``fixed``, persisted; None when nothing matched), their keys, the index's
    size as this run sees it, and whether this run was added before (a rerun)."""
    fixed: DataFrame | None
    keys: list
    documents: int
    rerun: bool
    key: str


_READERS: dict = {}


def _index_reader(path: str, token: str):
    """The index opened read-only in this Python worker, once per run (``token``); a reader sees the
    manifest's newest generation at every probe, while the driver holds the writer's lock."""
    idx = _READERS.get((path, token))
    if idx is None:
        for old in list(_READERS):
            _READERS.pop(old).close()
        idx = _READERS[(path, token)] = open_index(path, readonly=True)     # (the class of its stored kind)
    return idx


def _index_matches(batches, path, cfg_json, hidden, token):
    """mapInArrow: (row, sig, empty, size) of new documents → (doc, id, sig, size) of the indexed documents that
    match any of them by the index's own probe (:func:`neardup.dedup.incremental.matched_sized`,
    what the local engine calls on all rows at once: a query's matches do not depend on the others)."""
    cfg = ResolvedConfig(**json.loads(cfg_json))
    idx = _index_reader(path, token)
    dtype = _sig_dtype(cfg)
    idx.store.hide(hidden)
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            values = _binary_rows(_column(batch, "sig"), dtype)
            empty = _column(batch, "empty").to_numpy(zero_copy_only=False).astype(bool)
            docs, keys, vals, sizes = matched_sized(idx, values, empty, cfg,
                                                    _column(batch, "size").to_numpy(zero_copy_only=False))
            if not keys:
                continue
            yield pa.RecordBatch.from_arrays([
                pa.array(docs, pa.int64()), pa.array([_dump_id(k) for k in keys], pa.string()),
                _binary_array(np.ascontiguousarray(np.asarray(vals, dtype=dtype).reshape(len(keys), -1))),
                pa.array(np.zeros(len(keys), np.int64) if sizes is None else sizes, pa.int64())],
                names=["doc", "id", "sig", "size"])
    finally:
        idx.store.hide(())


def _bad_ids(batches):
    """mapInArrow: (row, id JSON) → the rows whose id cannot be an index key
    (:func:`neardup.dedup.incremental.is_key`)."""
    for batch in batches:
        ids = _column(batch, "id").to_pylist()
        bad = [k for k, i in enumerate(ids) if i is not None and not is_key(json.loads(i))]
        yield batch.take(pa.array(bad, pa.int64())) if bad else batch.slice(0, 0)


def _index_part(spark, specs, signed: DataFrame, num: _Numbering, cfg: DedupConfig, index) -> _IndexPart:
    """The local engine's :func:`neardup.dedup.incremental.matched` on Spark: ids checked, this
    run's record looked up, the new rows probed against the index on the executors (each opens the
    folder read-only), the matched documents gathered on the driver (at most one per new row: their
    signatures, not their texts) and numbered before every new row."""

    docs = signed.filter(F.col("err").isNull())
    bad = docs.select("row", "id").mapInArrow(_bad_ids, "row long, id string").orderBy("row").first()
    if bad is not None:
        check_ids([json.loads(bad["id"])], lambda _: _row_place(specs, num, bad["row"]))
    key = run_key(specs, cfg)
    rerun, hidden = rerun_view(index, cfg, key)
    index.store.hide(hidden)
    try:
        documents = len(index)
    finally:
        index.store.hide(())

    fn = partial(_index_matches, path=os.path.abspath(cfg.index), cfg_json=_cfg_json(cfg), hidden=sorted(hidden),
                 token=uuid.uuid4().hex)
    got = (docs.select("row", "sig", "empty", "size").mapInArrow(fn, "doc long, id string, sig binary, size long")
           .dropDuplicates(["doc"]).toArrow())
    m = got.num_rows
    if m == 0:
        return _IndexPart(None, [], documents, rerun, key)
    order = np.argsort(got.column("doc").to_numpy(), kind="stable")
    got = got.take(pa.array(order))
    ids = got.column("id").to_pylist()
    dtype = _sig_dtype(cfg)
    values = _binary_rows(got.column("sig").combine_chunks(), dtype)
    rk = row_keys(np.ascontiguousarray(values)).view(np.int64) if method_of(cfg).slots(cfg) is not None \
        else values[:, 0].view(np.int64)
    no = pa.array(np.zeros(m, bool))
    table = pa.table({
        "row": pa.array(np.arange(-m, 0, dtype=np.int64)), "id": pa.array(ids, pa.string()),
        "err": pa.nulls(m, pa.string()), "blank": no, "fatal": no, "replaced": no,
        "length": pa.array(np.zeros(m, np.int64)),
        "score": pa.array(np.full(m, 0.0 if cfg.keep == "first" else np.inf)),   # they win their clusters
        "sig": got.column("sig"), "empty": no, "sig_empty": no, "size": got.column("size"),
        "rk": pa.array(rk, pa.int64()), "sh": pa.nulls(m, pa.binary()), "nbytes": pa.nulls(m, pa.int64()),
        "span": pa.nulls(m, pa.binary()), "tbytes": pa.nulls(m, pa.int64())})
    fixed = _arrow_frame(spark, table, schema=_SIGNED)
    return _IndexPart(fixed, [json.loads(i) for i in ids], documents, rerun, key)


def _add_kept(signed: DataFrame, table: DataFrame, cfg: DedupConfig, index, key: str) -> None:
    """The kept new rows into the index as one segment with this run's record (the local
    :func:`neardup.dedup.incremental.add_kept`): their ids and signatures gathered on the driver
    in row order (k × 4 bytes each, no text)."""
    kept = (table.filter(F.col("kept")).select("row").join(signed.select("row", "id", "sig", "empty", "size"), "row")
            .orderBy("row").toArrow())
    values = _binary_rows(kept.column("sig").combine_chunks(), _sig_dtype(cfg))
    empty = kept.column("empty").to_numpy(zero_copy_only=False).astype(bool)
    sizes = kept.column("size").to_numpy(zero_copy_only=False).astype(np.int64) if index.kind == "containment" else None
    add_kept(index, [json.loads(i) for i in kept.column("id").to_pylist()], values, empty, key, cfg, sizes)
