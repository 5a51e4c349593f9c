"""Stages 1–2 on Spark: inputs read and numbered as the local engine numbers them, then signed in
``mapInArrow`` by the same signer (:func:`neardup.dedup.signing.make_signer`); texts re-read for the
borderline check and the report's samples. See :mod:`neardup.engines.spark` for the numbering.
"""
from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...clusters.cluster import keep_score
from ...config import DedupConfig, simhash_verified
from ...dedup.signing import Both
from ...dedup.spans import SPAN_METHODS, edited
from ...dedup.verify import verification_config
from ...errors import InputFormatError
from ...io.compression import split_suffix
from ...io.formats import InputSpec, fmt_for_name, parse_jsonl_block, parse_jsonl_line, raw_lines, read_rows, row_place
from ...io.formats import decode as _decode
from ...io.formats.base import id_problem, keep_value, key_problem
from ...io.formats.delimited import dialect, records
from ...io.sources import expand_inputs
from ...kernels.lsh import row_keys
from ...sketches.minhash import empty_value
from .columns import (
    _PARSED,
    _SIGNED,
    _binary_array,
    _cfg_json,
    _column,
    _dump_id,
    _lists,
    _ragged_array,
    _signer,
    _span_arrays,
    _utf8,
)
from .session import _check_supported, _is_uri, _phase

_BOM = b"\xef\xbb\xbf"


def _parse_batch(batch, kind, spec, start, last_row_nl, text_field, id_field, key_field, keyed, bom=False):
    """Rows of one numbered batch → parallel lists (text, id_json, key value, key error, error, blank,
    replaced, fatal)."""

    rows = _column(batch, "row").to_numpy(zero_copy_only=False)
    n = rows.shape[0]
    texts, ids, keyv = [None] * n, [None] * n, [None] * n
    errs, blank, repl, fatal = [None] * n, [False] * n, [False] * n, [False] * n
    if kind == "parsed":
        texts = [None if t is None else t.decode("utf-8", "surrogatepass") for t in _column(batch, "text").to_pylist()]
        ids, keyv, errs, blank, repl, fatal = _lists(batch, "id", "keyv", "err", "blank", "replaced", "fatal")
        return rows, texts, ids, keyv, errs, blank, repl, fatal
    if kind in ("jsonl", "lines"):
        raws = _column(batch, "raw").to_pylist()
        for j, raw in enumerate(raws):
            g = int(rows[j])
            i = g - start + 1
            if bom and g == start:    # Spark's line reader drops a byte-order mark the local reader keeps
                raw = _BOM + raw
            if kind == "lines":
                texts[j], repl[j] = _decode(raw.rstrip(b"\r\n"))
                continue
            # the local reader sees each line with its "\n" (JSON error positions depend on it)
            r = parse_jsonl_line(spec, i, raw if (g == last_row_nl) else raw + b"\n", text_field, id_field,
                                 key_field)
            texts[j], ids[j], errs[j], blank[j], repl[j] = r.text, _dump_id(r.id), r.error, r.blank, r.replaced
            if keyed and r.error is None:
                keyv[j] = r.key              # a number: the reader refuses a row whose key is not one
        return rows, texts, ids, keyv, errs, blank, repl, fatal
    # parquet / a DataFrame: columns t (text), i (id), k (key)
    tcol = _column(batch, "t").to_pylist()
    icol = _column(batch, "i").to_pylist() if id_field is not None else None
    kcol = _column(batch, "k").to_pylist() if keyed else None

    for j, t in enumerate(tcol):   # the local Parquet reader's rules, in its order
        where = f"{spec.label}: row {int(rows[j]) - start + 1}"
        if t is not None and not isinstance(t, str):
            errs[j] = f"{where}: column {text_field!r} is not text"
            continue
        if icol is not None:
            problem = id_problem(icol[j])
            if problem is not None:
                errs[j] = f"{where}: id column {id_field!r} {problem}"
                continue
        if keyed:
            keyv[j], problem = keep_value(kcol[j])
            if problem is not None:
                errs[j] = key_problem(where, key_field, problem)
                continue
        texts[j] = "" if t is None else t
        ids[j] = _dump_id(icol[j]) if icol is not None else None
    return rows, texts, ids, keyv, errs, blank, repl, fatal


def _parse_block(batch, spec, start, text_field, id_field, bom):
    """A batch of JSON lines parsed whole, as the local engine parses a block
    (:func:`~neardup.io.formats.parse_jsonl_block`: one compiled pass over the lines joined), or
    None when a line needs the line parser (then :func:`_parse_batch` reads each line as before)."""
    raws = _column(batch, "raw")
    if len(raws) == 0:
        return None
    rows = _column(batch, "row").to_numpy(zero_copy_only=False)
    lead = bom and int(rows[0]) == start        # the byte-order mark Spark's reader dropped, put back
    block = (_BOM if lead else b"") + b"\n".join(raws.to_pylist()) + b"\n"
    return parse_jsonl_block(spec, 1 if lead else 2, block, text_field, id_field)


def _with_rows(batch, offsets: list):
    """A scanned batch (``_nd_blk``, ``_nd_mid``, …) with its global ``row``: ``_nd_mid`` plus the base
    of its (split, id group) in :func:`_number`'s table — what :func:`_numbered`'s broadcast join
    gives, computed in the task (a Spark job fewer: the broadcast's)."""
    blk = _column(batch, "_nd_blk").to_numpy(zero_copy_only=False).astype(np.int64)
    mid = _column(batch, "_nd_mid").to_numpy(zero_copy_only=False).astype(np.int64)
    grp = mid >> 33
    base = {(b, g): x for b, g, x in offsets}
    rows = np.empty_like(mid)
    for b, g in np.unique(np.stack([blk, grp], axis=1), axis=0).tolist():     # (one pair, or a few)
        m = (blk == b) & (grp == g)
        rows[m] = mid[m] + base[(b, g)]
    return pa.RecordBatch.from_arrays([*batch.columns, pa.array(rows, pa.int64())], names=[*batch.schema.names, "row"])


def _parse_sign(batches, kind, spec, start, last_row_nl, cfg_json, text_field, id_field, key_field, keep, bom=False,
                offsets=None, edits=None):
    """mapInArrow: numbered rows → signed rows (schema ``_SIGNED``); with ``offsets`` (:func:`_number`'s
    table of the input), scanned rows numbered here (:func:`_with_rows`); ``edits``: a broadcast of row →
    the byte ranges removed from its text before it is signed (``--spans-order before``)."""

    cfg = json.loads(cfg_json)
    sign = _signer(cfg_json)
    minhash = cfg["method"] == "minhash"
    exact = minhash and cfg["verify"] == "exact"
    spans = cfg["method"] if cfg["method"] in SPAN_METHODS else cfg["spans"]    # the span step's method, or None
    cut = edits.value if edits is not None else None
    for batch in batches:
        if offsets is not None:
            batch = _with_rows(batch, offsets)
        whole = _parse_block(batch, spec, start, text_field, id_field, bom) if kind == "jsonl" and keep != "key" \
            else None
        if cut and whole is not None and any(r in cut for r in _column(batch, "row").to_pylist()):
            whole = None            # (rows to edit: their texts as strings)
        if whole is not None:           # every row a document, its text packed as the kernel left it
            rows = _column(batch, "row").to_numpy(zero_copy_only=False)
            n = rows.shape[0]
            ids = [_dump_id(v) for v in whole.ids] if whole.ids is not None else [None] * n
            keyv, errs, blank, repl, fatal = [None] * n, [None] * n, [False] * n, [False] * n, [False] * n
            doc = np.ones(n, dtype=bool)
            idx = np.arange(n)
            doc_texts = whole.texts
            length = np.asarray(whole.chars, dtype=np.int64)
        else:
            rows, texts, ids, keyv, errs, blank, repl, fatal = _parse_batch(
                batch, kind, spec, start, last_row_nl, text_field, id_field, key_field, keep == "key", bom)
            n = rows.shape[0]
            doc = np.array([t is not None and e is None for t, e in zip(texts, errs)], dtype=bool)
            idx = np.flatnonzero(doc)
            doc_texts = [texts[j] for j in idx]
            length = np.zeros(n, dtype=np.int64)
            length[idx] = [len(t) for t in doc_texts]       # (the text's length as read, edited or not)
            if cut:
                doc_texts = [edited(t, cut[int(rows[j])]) if int(rows[j]) in cut else t
                             for j, t in zip(idx.tolist(), doc_texts)]
        sh = None
        span = [(0, n, pa.nulls(n, pa.binary()), pa.nulls(n, pa.int64()))]     # (first row, end row, columns)
        if idx.shape[0]:
            out = sign(doc_texts)
            if isinstance(out, Both):           # --spans: the documents' result and the span step's payload
                span = _span_arrays(out.span, spans, doc)
                out = out.doc
            elif spans is not None:             # a span method: its payload, no signature
                span = _span_arrays(out[0], spans, doc)
                out = (np.zeros((idx.shape[0], 1), np.uint64), *out[1:])
            values, empty_d, sizes_d = out[:3]
            if exact:
                sh = _ragged_array(out[3], sizes_d, doc)
            if minhash:
                sig_empty_d = np.all(values == values.dtype.type(empty_value(cfg["scheme"])), axis=1)
                rk_d = row_keys(np.ascontiguousarray(values)).view(np.int64)
            else:       # one word per row, or a verified index's fingerprint and sketch words per row
                values = np.asarray(values, dtype=np.uint64)
                values = values.reshape(-1, 1) if values.ndim == 1 else values
                sig_empty_d = np.asarray(empty_d, dtype=bool)
                rk_d = np.ascontiguousarray(values[:, 0]).view(np.int64)
        else:
            values = np.zeros((0, 1), dtype=np.uint64)
            empty_d, sizes_d, sig_empty_d, rk_d = (np.zeros(0, bool), None, np.zeros(0, bool),
                                                   np.zeros(0, np.int64))
        empty = np.zeros(n, dtype=bool)
        empty[idx] = empty_d
        sig_empty = np.zeros(n, dtype=bool)
        sig_empty[idx] = sig_empty_d
        size = np.zeros(n, dtype=np.int64)
        if sizes_d is not None:
            size[idx] = sizes_d
        rk = np.zeros(n, dtype=np.int64)
        rk[idx] = rk_d
        keys = np.array([np.nan if v is None else v for v in keyv], dtype=np.float64) if keep == "key" else None
        score = keep_score(keep, n, length, keys)
        id_out = [(ids[j] if ids[j] is not None else str(int(rows[j]))) if doc[j] else None for j in range(n)]
        nd = ~doc
        if sh is None:
            sh = pa.nulls(n, pa.binary())
        nbytes = _line_bytes(batch, kind, start, last_row_nl, bom) if kind == "jsonl" else pa.nulls(n, pa.int64())
        signed = pa.RecordBatch.from_arrays([
            pa.array(rows, pa.int64()), pa.array(id_out, pa.string()), pa.array(errs, pa.string()),
            pa.array(blank, pa.bool_()), pa.array(fatal, pa.bool_()), pa.array(repl, pa.bool_()),
            pa.array(length, pa.int64()), pa.array(score, pa.float64(), mask=nd),
            _binary_array(values, doc),
            pa.array(empty, pa.bool_(), mask=nd), pa.array(sig_empty, pa.bool_(), mask=nd),
            pa.array(size, pa.int64(), mask=nd), pa.array(rk, pa.int64(), mask=nd), sh, nbytes,
        ], names=["row", "id", "err", "blank", "fatal", "replaced", "length", "score", "sig", "empty",
                  "sig_empty", "size", "rk", "sh", "nbytes"])
        for lo, hi, payload, tbytes in span:    # (one piece unless the span payload passes a binary column's size)
            part = signed.slice(lo, hi - lo)
            yield pa.RecordBatch.from_arrays([*part.columns, payload, tbytes], names=[*part.schema.names, "span",
                                                                                     "tbytes"])


def _line_bytes(batch, kind, start, last_row_nl, bom):
    """Each line's bytes in its file, for a JSON lines file Spark read: the line, its "\\n" (not after a
    final line without one) and the byte-order mark Spark's reader dropped (the file's first line)
    — the driver cuts the file into the local engine's blocks from them (:func:`.driver._blocks`)."""
    raws = _column(batch, "raw")
    raws = raws.combine_chunks() if isinstance(raws, pa.ChunkedArray) else raws
    rows = _column(batch, "row").to_numpy(zero_copy_only=False).astype(np.int64)
    wide = pa.types.is_large_binary(raws.type)
    offs = np.frombuffer(raws.buffers()[1], dtype=np.int64 if wide else np.int32)
    offs = offs[raws.offset: raws.offset + len(raws) + 1]
    n = np.diff(offs).astype(np.int64) + (rows != last_row_nl)
    if bom:
        n += 3 * (rows == start)
    return pa.array(n, pa.int64())


def _py_read(batches, spec, text_field, id_field, key_field, keyed):
    """mapInArrow on a one-row frame: read one input with neardup's own reader (schema ``_PARSED``)."""
    for _ in batches:
        pass
    cols = {k: [] for k in ("_nd_mid", "text", "id", "keyv", "err", "blank", "replaced", "fatal")}

    def flush():
        n = len(cols["_nd_mid"])
        out = pa.RecordBatch.from_arrays([
            pa.array(np.zeros(n, np.int64), pa.int64()), pa.array(cols["_nd_mid"], pa.int64()),
            pa.array(_utf8(cols["text"]), pa.binary()), pa.array(cols["id"], pa.string()),
            pa.array(cols["keyv"], pa.float64()),
            pa.array(cols["err"], pa.string()), pa.array(cols["blank"], pa.bool_()),
            pa.array(cols["replaced"], pa.bool_()), pa.array(cols["fatal"], pa.bool_())],
            names=["_nd_blk", "_nd_mid", "text", "id", "keyv", "err", "blank", "replaced", "fatal"])
        for v in cols.values():
            v.clear()
        return out

    seq = 0
    try:
        for row in read_rows(spec, text_field, id_field, key_field if keyed else None):
            kv = row.key if (keyed and row.error is None) else None
            for k, v in (("_nd_mid", seq), ("text", row.text if row.error is None else None), ("id", _dump_id(row.id)),
                         ("keyv", kv), ("err", row.error), ("blank", row.blank),
                         ("replaced", bool(row.replaced)), ("fatal", False)):
                cols[k].append(v)
            seq += 1
            if seq % 4096 == 0:
                yield flush()
    except InputFormatError as exc:   # the local engine stops here whatever --on-error says
        for k, v in (("_nd_mid", seq), ("text", None), ("id", None), ("keyv", None),
                     ("err", str(exc)), ("blank", False), ("replaced", False), ("fatal", True)):
            cols[k].append(v)
    yield flush()


def _py_payload(batches, spec):
    """mapInArrow on a one-row frame: (blk, mid, raw) of every row of one input, for writing the kept
    rows — CSV records re-formatted as the local writer does, raw lines, or file paths."""

    for _ in batches:
        pass
    mids, raws = [], []

    def flush():
        n = len(mids)
        out = pa.RecordBatch.from_arrays([pa.array(np.zeros(n, np.int64), pa.int64()), pa.array(mids, pa.int64()),
                                          pa.array(raws, pa.binary())], names=["_nd_blk", "_nd_mid", "raw"])
        mids.clear()
        raws.clear()
        return out

    def rows():
        if spec.fmt in ("jsonl", "lines"):
            for _, raw in raw_lines(spec):
                yield raw[:-1] if raw.endswith(b"\n") else raw
        elif spec.fmt == "csv":
            it = records(spec, "surrogateescape")
            if next(it, None) is None:
                return
            buf = io.StringIO()
            writer = csv.writer(buf, dialect=dialect(spec))
            for _, rec in it:
                buf.seek(0)
                buf.truncate()
                writer.writerow(rec)
                yield buf.getvalue().encode("utf-8", "surrogateescape")[:-2]   # without the "\r\n"
        else:
            for e in spec.entries:
                yield os.fsencode(e.rel)

    for seq, raw in enumerate(rows()):
        mids.append(seq)
        raws.append(raw)
        if len(mids) >= 4096:
            yield flush()
    yield flush()


def _spark_reads(spec: InputSpec) -> bool:
    """Whether Spark's own source reads this input (else neardup's reader, one task per file).
    Compressed files go to neardup's reader, which checks the stream to its verified end (Hadoop's
    codecs do not split a .gz anyway)."""
    return spec.fmt == "parquet" or (spec.fmt in ("jsonl", "lines") and spec.compression is None)


def _expand(inputs, fmt) -> list[InputSpec]:
    local = [p for p in inputs if not _is_uri(p)]
    checked = iter(expand_inputs(local, fmt))
    specs = []
    for p in inputs:
        if _is_uri(p):
            base, codec = split_suffix(p)
            specs.append(InputSpec(p, fmt or fmt_for_name(p), codec, p))
        else:
            specs.append(next(checked))
    specs.extend(checked)        # a glob may have matched several files
    for s in specs:
        if _is_uri(s.path) and not _spark_reads(s):
            raise InputFormatError(f"{s.label}: {s.fmt} inputs{' (compressed)' if s.compression else ''} are "
                                   "read by neardup's own reader on the executors and need a local (shared) path; "
                                   "convert to plain JSONL/Parquet or copy it to a path every executor sees")
    return specs


@dataclass
class _Numbering:
    starts: list          # first global row of each input
    rows: list            # rows of each input
    offsets: dict         # input → list of (blk, grp, base): row = mid + base
    last_nl: dict = field(default_factory=dict)   # input → row of a final line that had no "\n" (or -1)
    bom: dict = field(default_factory=dict)       # input → starts with a UTF-8 byte-order mark

    @property
    def total(self) -> int:
        return (self.starts[-1] + self.rows[-1]) if self.rows else 0


def _scan(spark, spec: InputSpec, cfg: DedupConfig, payload: bool = False) -> DataFrame:
    """An input as (blk, mid, …) with ``mid`` = monotonically_increasing_id at the scan."""
    keyed = cfg.keep == "key"
    # a local path goes to the JVM absolute: it resolves relative ones against its own working folder
    where = spec.path if _is_uri(spec.path) else os.path.abspath(spec.path)
    if _spark_reads(spec) and spec.fmt != "parquet":
        df = spark.read.option("lineSep", "\n").text(where)
        return df.select(F.input_file_block_start().alias("_nd_blk"), F.monotonically_increasing_id().alias("_nd_mid"),
                         F.col("value").cast("binary").alias("raw"))
    if spec.fmt == "parquet":
        df = spark.read.parquet(where)
        names = df.columns
        for what, c in (("column", cfg.text_field), ("id column", cfg.id_field),
                        ("keep column", cfg.keep_field if keyed else None)):
            if c is not None and c not in names:
                raise InputFormatError(f"{spec.label}: no {what} {c!r}; columns: {', '.join(map(repr, names))}")
        head = [F.input_file_block_start().alias("_nd_blk"), F.monotonically_increasing_id().alias("_nd_mid")]
        if payload:
            return df.select(*head, *[F.col(f"`{c}`") for c in names])
        cols = [F.col(f"`{cfg.text_field}`").alias("t")]
        if cfg.id_field is not None:
            cols.append(F.col(f"`{cfg.id_field}`").alias("i"))
        if keyed:
            cols.append(F.col(f"`{cfg.keep_field}`").alias("k"))
        return df.select(*head, *cols)
    one = spark.range(0, 1, 1, 1)
    if payload:
        return one.mapInArrow(partial(_py_payload, spec=spec), "_nd_blk long, _nd_mid long, raw binary")
    return one.mapInArrow(partial(_py_read, spec=spec, text_field=cfg.text_field, id_field=cfg.id_field,
                                  key_field=cfg.keep_field, keyed=keyed), _PARSED)


def _number(spark, scans: list[DataFrame]) -> _Numbering:
    """Rows per (input, split, partition) → the first row number of each split (one small job)."""
    parts = [df.select(F.lit(fi).alias("fi"), "_nd_blk", F.shiftright("_nd_mid", 33).alias("_nd_grp"), "_nd_mid")
             for fi, df in enumerate(scans)]
    if not parts:
        return _Numbering([], [], {})
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p)
    stats = (union.groupBy("fi", "_nd_blk", "_nd_grp")
             .agg(F.count(F.lit(1)).alias("n"), F.min("_nd_mid").alias("s0")).collect())
    by_input: dict = {fi: [] for fi in range(len(scans))}
    for r in stats:
        by_input[r["fi"]].append((r["_nd_blk"], r["s0"], r["_nd_grp"], r["n"]))
    starts, rows, offsets = [], [], {}
    g = 0
    for fi in range(len(scans)):
        starts.append(g)
        offs = []
        for blk, s0, grp, n in sorted(by_input[fi]):
            offs.append((blk, grp, g - s0))
            g += n
        offsets[fi] = offs
        rows.append(g - starts[-1])
    return _Numbering(starts, rows, offsets)


def _numbered(spark, df: DataFrame, offsets: list) -> DataFrame:
    """The scan with its global ``row`` (broadcast join on the split: no shuffle, no sort)."""
    off = spark.createDataFrame(offsets or [(0, 0, 0)], "_nd_blk long, _nd_grp long, _nd_base long")
    if not offsets:
        off = off.limit(0)
    df = df.withColumn("_nd_grp", F.shiftright("_nd_mid", 33))
    return (df.join(F.broadcast(off), ["_nd_blk", "_nd_grp"])
              .withColumn("row", F.col("_nd_mid") + F.col("_nd_base"))
              .drop("_nd_blk", "_nd_grp", "_nd_mid", "_nd_base"))


def _last_line_without_newline(spec: InputSpec) -> bool | None:
    """Whether a local uncompressed line file ends without "\\n" (None: unknown, treated as ending with one)."""
    if _is_uri(spec.path) or spec.compression is not None or not os.path.isfile(spec.path):
        return None
    size = os.path.getsize(spec.path)
    if size == 0:
        return None
    with open(spec.path, "rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) != b"\n"


def _starts_with_bom(spec: InputSpec) -> bool:
    """Whether a line file Spark reads starts with a UTF-8 BOM (local plain files; else False)."""
    if _is_uri(spec.path) or spec.compression is not None or not os.path.isfile(spec.path):
        return False
    with open(spec.path, "rb") as fh:
        return fh.read(3) == _BOM


def _sign_fn(spec: InputSpec, fi: int, num: _Numbering, cfg_json: str, cfg: DedupConfig, fields: bool = True,
             scanned: bool = False, edits=None):
    """The mapInArrow function that parses and signs the numbered rows of input ``fi`` (``fields``:
    also its id and keep-key fields; without, only the text; ``scanned``: rows straight from
    :func:`_scan`, numbered in the task)."""
    keyed = fields and cfg.keep == "key"
    return partial(_parse_sign, kind=spec.fmt if _spark_reads(spec) else "parsed", spec=spec, start=num.starts[fi],
                   last_row_nl=num.last_nl.get(fi, -1), cfg_json=cfg_json, text_field=cfg.text_field,
                   id_field=cfg.id_field if fields else None, key_field=cfg.keep_field if keyed else None,
                   keep=cfg.keep if fields else "first", bom=num.bom.get(fi, False),
                   offsets=num.offsets[fi] if scanned else None, edits=edits)


def _read_signed(spark, specs: list[InputSpec], cfg: DedupConfig, edits=None) -> tuple[DataFrame, _Numbering]:
    """Every input scanned, numbered and signed (``_SIGNED``); ``edits``: a broadcast of row → the byte
    ranges cut from its text before it is signed (``--spans-order before``; the caller frees it)."""
    scans = [_scan(spark, s, cfg) for s in specs]
    _phase(spark, "number rows")
    num = _number(spark, scans)
    cj = _cfg_json(cfg)
    signed = []
    for fi, (spec, scan) in enumerate(zip(specs, scans)):
        kind = spec.fmt if _spark_reads(spec) else "parsed"
        last = -1
        if kind == "jsonl" and num.rows[fi] and _last_line_without_newline(spec):
            last = num.starts[fi] + num.rows[fi] - 1
        num.last_nl[fi] = last
        num.bom[fi] = kind in ("jsonl", "lines") and _starts_with_bom(spec)
        signed.append(scan.mapInArrow(_sign_fn(spec, fi, num, cj, cfg, scanned=True, edits=edits), _SIGNED))
    if not signed:
        return spark.createDataFrame([], _SIGNED), num
    out = signed[0]
    for s in signed[1:]:
        out = out.unionByName(s)
    return out, num


def number_rows(df: DataFrame, row_col: str = "row") -> DataFrame:
    """``df`` with a dense row number 0..n−1 in partition order (like ``zipWithIndex``, without leaving
    the DataFrame API). Deterministic when ``df``'s plan is (a file scan is; persist anything else)."""
    spark = df.sparkSession
    scan = df.select(F.lit(0).cast("long").alias("_nd_blk"), F.monotonically_increasing_id().alias("_nd_mid"), "*")
    out = _numbered(spark, scan, _number(spark, [scan]).offsets[0])
    return out if row_col == "row" else out.withColumnRenamed("row", row_col)


def sign_dataframe(df: DataFrame, cfg: DedupConfig | None = None, text_col: str = "text", id_col: str | None = None,
                   row_col: str = "row") -> DataFrame:
    """Signatures of a DataFrame's texts, computed on the executors with the local engine's kernels.

    ``df`` needs ``text_col`` (null counts as the empty text) and the row order ``row_col`` (a
    long; numbered in partition order by :func:`number_rows` when absent). Returns one row per
    input row with the columns of ``_SIGNED``: ``row``, ``id`` (the JSON of ``id_col``'s value,
    or of the row number), ``sig`` (binary: k little-endian uint32, uint64 for ``bottomk``;
    8 bytes for exact/sentences), ``empty``, ``sig_empty``, ``length``, ``size`` (distinct
    shingles, for containment), ``score`` (keep policy), ``rk`` (64-bit key of the signature),
    ``sh`` (the distinct shingle hashes, ``verify="exact"``), ``nbytes`` (the line's bytes in its
    file, for JSON lines files Spark read; null here), ``span`` and ``tbytes`` (a span step's payload
    in whole runs: null here)."""
    cfg = (cfg or DedupConfig()).resolved()
    _check_supported(cfg)
    if row_col not in df.columns:
        df = number_rows(df, row_col)
    keyed = cfg.keep == "key"
    cols = [F.col(f"`{row_col}`").cast("long").alias("row"), F.col(f"`{text_col}`").alias("t")]
    if id_col is not None:
        cols.append(F.col(f"`{id_col}`").alias("i"))
    if keyed:
        cols.append(F.col(f"`{cfg.keep_field}`").alias("k"))
    fn = partial(_parse_sign, kind="frame", spec=InputSpec("<DataFrame>", "parquet"), start=0, last_row_nl=-1,
                 cfg_json=_cfg_json(cfg), text_field=text_col, id_field=id_col,
                 key_field=cfg.keep_field if keyed else None, keep=cfg.keep)
    return df.select(*cols).mapInArrow(fn, _SIGNED)


def _row_place(specs, num: _Numbering, row: int) -> str:
    """A row as the local engine names it (:func:`neardup.io.formats.row_place`)."""
    return row_place(specs[_input_of(num, row)], _line_of(specs, num, row))


def _shingles_cfg(cfg: DedupConfig) -> DedupConfig:
    """The configuration that signs rows with their distinct shingle hashes (``sh``, ``size``) for
    ``--verify borderline``: the run's, with verify="exact". A datasketch scheme's signer keeps no
    shingle hashes, so those rows are signed as oph: the shingles do not depend on the scheme (one
    shingler, as the local engine's re-read uses), and only ``sh`` and ``size`` are used."""
    if simhash_verified(cfg):       # verified SimHash: the sets its candidates are checked on
        return replace(verification_config(cfg), verify="exact")
    scheme = "oph" if cfg.scheme.startswith("datasketch") else cfg.scheme
    return replace(cfg, verify="exact", scheme=scheme)


def _exact_rows(spark, specs, num: _Numbering, cfg: DedupConfig):
    """``--verify borderline``: rows → (row, sh, size), each row's distinct shingle hashes signed from
    its text, which is re-read from its input (only the rows asked for are parsed and signed)."""
    cj = _cfg_json(_shingles_cfg(cfg))

    def exact_rows(rows: DataFrame) -> DataFrame:
        parts = []
        for fi, spec in enumerate(specs):
            lo, n = num.starts[fi], num.rows[fi]
            mine = rows.filter((F.col("row") >= lo) & (F.col("row") < lo + n))
            fn = _sign_fn(spec, fi, num, cj, cfg, fields=False)
            parts.append(_numbered(spark, _scan(spark, spec, cfg), num.offsets[fi]).join(mine, "row", "left_semi")
                         .mapInArrow(fn, _SIGNED).select("row", "sh", "size"))
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        return out
    return exact_rows


def _input_of(num: _Numbering, row: int) -> int:
    fi = 0
    for i, s in enumerate(num.starts):
        if row >= s:
            fi = i
    return fi


def _first_line(spec: InputSpec) -> int:
    """The line (record) number of an input's first row: 2 for CSV (its header is line 1), else 1."""
    return 2 if spec.fmt == "csv" else 1


def _line_of(specs, num: _Numbering, row: int) -> int:
    fi = _input_of(num, row)
    return row - num.starts[fi] + _first_line(specs[fi])


def _fetch_texts(spark, specs, cfg: DedupConfig, num: _Numbering, rows: set) -> dict:
    """Texts of a few rows (report samples): the inputs are scanned, only those rows parsed."""
    if not rows:
        return {}
    out: dict = {}
    cj = _cfg_json(replace(cfg, method="exact", keep="first"))
    for fi, spec in enumerate(specs):
        lo, hi = num.starts[fi], num.starts[fi] + num.rows[fi]
        mine = [r for r in rows if lo <= r < hi]
        if not mine:
            continue
        kind = spec.fmt if _spark_reads(spec) else "parsed"
        fn = partial(_parse_texts, kind=kind, spec=spec, start=lo,
                     last_row_nl=num.last_nl.get(fi, -1), cfg_json=cj, text_field=cfg.text_field,
                     bom=num.bom.get(fi, False))
        df = _numbered(spark, _scan(spark, spec, cfg), num.offsets[fi]).filter(F.col("row").isin(mine))
        for r in df.mapInArrow(fn, "row long, text binary").collect():
            out[r["row"]] = bytes(r["text"] or b"").decode("utf-8", "surrogatepass")
    return out


def _parse_texts(batches, kind, spec, start, last_row_nl, cfg_json, text_field, bom=False):
    for batch in batches:
        rows, texts, *_ = _parse_batch(batch, kind, spec, start, last_row_nl, text_field, None, None, False, bom)
        yield pa.RecordBatch.from_arrays([pa.array(rows, pa.int64()), pa.array(_utf8(texts), pa.binary())],
                                         names=["row", "text"])
