"""``neardup dedup --engine spark``: the local engine's clusters, computed on Apache Spark.

The local engine (:mod:`neardup.pipeline.dedup`) holds every signature in one process. This
engine runs the same algorithm as DataFrame operations, so a corpus is limited by the cluster,
not by one machine; for the same input and parameters it writes the same ``clusters.jsonl``,
the same kept rows and the same report counts.

Stages (every step is a DataFrame operation; only counts, a few histograms and the report's
sample pairs reach the driver):

1. **Read and number.** Each input is read by Spark (JSONL and text lines with the text source,
   line separator ``\\n``; Parquet with the Parquet source) or, for formats whose rows Spark
   cannot cut the way Python does (CSV with quoted newlines, directories of files, ``.zst``), by
   neardup's own reader inside one task per file. Row numbers are those of the local engine:
   0, 1, 2, … over all rows of all inputs in input order (blank and broken lines included).
   Each row carries (input, start of its file split, ``monotonically_increasing_id``); the ids
   of one split are consecutive, the splits of a file are ordered by their byte offset, so one
   small aggregation (rows and smallest id per split, one record per split) gives every split
   its first row number and a broadcast join numbers the rows — no sort, no dependence on how
   Spark packs splits into partitions, the same numbers on every run and partitioning.
2. **Sign** (``mapInArrow``): each Arrow batch of texts goes through the same signing function
   as the local engine's workers (:func:`neardup.pipeline.dedup._make_signer`: the compiled
   shingling and MinHash kernels), giving the signature (binary: k little-endian uint32), the empty
   flag, the length and the row key of the whole signature.
   The signed table is hash-partitioned by row and persisted; later joins on a row number
   shuffle only the other side.
3. **Identical signatures**: grouped by their 64-bit row key (the local kernel
   :func:`neardup.kernels.lsh.row_keys`), linked to the smallest row of the group after
   confirming byte equality — the local engine's rule, collisions included.
4. **LSH candidates** among the distinct non-empty rows: band keys (the local kernel
   ``band_keys``) exploded to (band, key, row); per (band, key) bucket of m rows, all pairs when
   m ≤ 64, otherwise a star from the smallest row (the local ``bucket_pairs`` rule); deduplicated.
5. **Verification**: both signatures joined to each candidate; the estimate is computed with
   the local :func:`neardup.sketches.minhash.jaccard_rows` (or containment from it) in
   ``mapInArrow``; pairs ≥ t are kept.
6. **Connected components** by alternating large-star / small-star rounds (Kiveris et al.,
   *Connected Components in MapReduce and Beyond*, 2014) until the edge set is a forest of
   stars around the smallest row of each component; label = smallest row, like the local
   union–find.
7. **Representatives.** ``--linkage components``: per component the largest keep-policy score
   (ties: smallest row), the similarity of each member to it with the same kernel, and the
   ``--max-drift`` split-off (members below t − δ re-clustered among themselves, repeatedly) as
   DataFrame rounds. ``--linkage bounded`` (the local default) merges pairs most-similar first
   inside one component, never across: each multi-row component is finished by the local
   :func:`neardup.clusters.build_clusters` itself in ``applyInArrow`` (a component must fit in
   one task's memory: its rows' signatures and pairs).
8. **Outputs**: ``clusters.jsonl`` records formatted on the executors, sorted by row; kept rows
   re-read from each input, anti-joined with the removed rows, sorted and written in the
   input's format. For a local OUTDIR the part files are merged into the local engine's single
   files (``kept/<input name>``, ``clusters.jsonl``); for a URI OUTDIR (``hdfs://``, ``s3a://``,
   ``abfss://``, ``dbfs:/``, ``file://``) they stay Spark part-file folders (a CSV's header row in
   ``_header.csv`` beside its parts).

With ``--index IDX`` (a local or mounted folder): after signing, each executor opens IDX read-only
and probes its rows (the local engine's probe); the matched documents (at most one per new row,
signatures only) are gathered on the driver and join the clustering as rows −m … −1 — first in row
order, never linked to each other, winning the keep policy — exactly the local engine's fixed
rows. After the outputs are staged, the kept rows' ids and signatures are gathered on the driver
and added to IDX as one segment with the run's record (:mod:`neardup.pipeline.incremental`).

Entry points: :func:`run_spark_dedup` (what the CLI calls), :func:`dedup_dataframe` (a DataFrame
in, the DataFrame with cluster columns out), the building blocks :func:`sign_dataframe` and
:func:`find_clusters`, and ``python -m neardup.engines.spark_submit INPUT... -o OUT [options]``
(the options of ``neardup dedup``; also a file for ``spark-submit``). See
``benchmarks/SPARK.md`` for cluster deployment.

Each input path is one file (or a local directory); for corpora of many shards read them into one
DataFrame and call :func:`dedup_dataframe`. Known textual differences: Spark's line reader drops a UTF-8
byte-order mark at the start of a file (restored for local plain and .gz files, not for URIs), and
the JSON error position of a truncated final line of a *compressed* file may be reported one line
later (the driver cannot see whether such a file ends with a newline without decompressing it).
"""
from __future__ import annotations

import contextlib
import csv
import gc
import io
import json
import os
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import partial

import numpy as np

try:
    import pyarrow as pa
    from pyspark import StorageLevel
    from pyspark.sql import DataFrame, SparkSession, Window
    from pyspark.sql import functions as F
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"the Spark engine needs PySpark >= 4.0 ({_exc})") from _exc
try:
    import pandas  # noqa: F401  (PySpark's mapInArrow refuses to run without it)
except ImportError as _exc:  # pragma: no cover
    raise ImportError(f"PySpark's Arrow functions (mapInArrow) need pandas >= 2.2 ({_exc})") from _exc

from ..config import cpu_count
from ..errors import ConfigError, InputFormatError, WorkerError
from ..index.lsh import MAX_BUCKET
from ..io.compression import split_suffix
from ..io.formats import InputSpec, check_fields_apply, check_stamp, fmt_for_name, output_name, read_rows, row_place
from ..io.outdir import StagedOutput
from ..io.sources import expand_inputs, spool
from ..pipeline.dedup import INDEXED_TEXT, DedupConfig, write_report
from ..pipeline.find import CANDIDATE, ESTIMATE, EXACT, IDENTICAL
from ..pipeline.records import id_json, json_default
from ..pipeline.report import SIMILARITY_BINS, SKIPPED_LISTED, RunSummary, build_report, sample_ranks

_SIGNED = ("row long, id string, err string, blank boolean, fatal boolean, replaced boolean, length long, "
           "score double, sig binary, empty boolean, sig_empty boolean, size long, rk long, sh binary")
_PARSED = ("_nd_blk long, _nd_mid long, text binary, id string, keyv double, err string, "
           "blank boolean, replaced boolean, fatal boolean")


def _check_supported(cfg: DedupConfig) -> None:
    if cfg.method == "minhash" and cfg.scheme == "bottomk":
        raise ConfigError("bottom-k sketches hold the k smallest hashes in sorted order, so LSH banding does not "
                          "apply; use scheme 'oph' or 'permutation' to find duplicates")
    if cfg.spans is not None:
        raise ConfigError(f"spans (--spans) {cfg.spans} runs on the local engine (--engine local); on Spark it is "
                          "not built yet (see README, 'Duplicates inside documents')")
    if cfg.method in ("lines", "substrings"):
        raise ConfigError(f"method (--method) {cfg.method} runs on the local engine (--engine local); on Spark it "
                          "is not built yet (see README, 'Duplicates inside documents')")
    if cfg.resume:
        raise ConfigError("resume (--resume) runs on the local engine (--engine local); Spark keeps no checkpoint "
                          "of pass 1 yet")


# ================================================================================================
# executor side: Arrow batches in, Arrow batches out (top-level functions, pickled by reference)
# ================================================================================================
_SIGNERS: dict = {}


def _signer(cfg_json: str):
    s = _SIGNERS.get(cfg_json)
    if s is None:
        from ..pipeline.dedup import _make_signer  # noqa: PLC0415

        s = _SIGNERS[cfg_json] = _make_signer(DedupConfig(**json.loads(cfg_json)))
    return s


def _column(batch, name):
    return batch.column(batch.schema.get_field_index(name))


def _binary_rows(arr, dtype) -> np.ndarray:
    """A binary column of equal-width values (no nulls) as an (n, w) matrix of ``dtype``."""
    n = len(arr)
    if n == 0:
        return np.zeros((0, 0), dtype=dtype)
    if arr.null_count:
        raise ValueError("signature column has nulls")
    large = pa.types.is_large_binary(arr.type)
    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)[arr.offset: arr.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8)[offs[0]: offs[-1]]
    if data.shape[0] % n:
        raise ValueError("signatures of different widths")
    return data.view(dtype).reshape(n, -1).copy()   # copy: aligned for the kernels


def _binary_array(mat: np.ndarray, valid: np.ndarray | None = None):
    """Rows of ``mat`` as a binary Arrow array; with ``valid``, ``mat`` holds only the valid rows."""
    width = mat.dtype.itemsize * (mat.shape[1] if mat.ndim > 1 else 1)
    raw = np.ascontiguousarray(mat).view(np.uint8).reshape(mat.shape[0], width)   # (0, w) for no rows too
    w = raw.shape[1]
    if valid is None:
        n = raw.shape[0]
        offs = np.arange(n + 1, dtype=np.int32) * w
        return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offs), pa.py_buffer(raw.tobytes())])
    n = valid.shape[0]
    offs = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.where(valid, w, 0), out=offs[1:])
    bitmap = None if valid.all() else pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offs), pa.py_buffer(raw.tobytes())],
                                 null_count=int(n - valid.sum()))


def _ragged_array(hashes: np.ndarray, sizes: np.ndarray, valid: np.ndarray):
    """Per valid row its ``sizes[i]`` consecutive uint64 of ``hashes`` as one binary value (rows
    not valid are null; ``sizes`` and ``hashes`` hold only the valid rows)."""
    n = valid.shape[0]
    width = np.zeros(n, dtype=np.int64)
    width[valid] = np.asarray(sizes, dtype=np.int64) * 8
    offs = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(width, out=offs[1:])
    if offs[-1] >= 2**31:
        raise ValueError("a batch's shingle sets exceed 2 GiB; use smaller batches")
    bitmap = None if valid.all() else pa.array(valid).buffers()[1]
    data = np.ascontiguousarray(hashes, dtype=np.uint64).tobytes()
    return pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offs.astype(np.int32)), pa.py_buffer(data)],
                                 null_count=int(n - valid.sum()))


def _ragged_features(arr):
    """A binary column of sorted distinct uint64 shingle hashes (:func:`_ragged_array`) as
    :class:`~neardup.features.shingles.Features` (null rows are empty sets)."""
    from ..features.shingles import Features  # noqa: PLC0415

    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    n = len(arr)
    if n == 0:
        return Features(np.zeros(0, np.uint64), np.zeros(1, np.int64), np.zeros(0, np.int64))
    large = pa.types.is_large_binary(arr.type)
    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)[arr.offset: arr.offset + n + 1]
    offs = offs.astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8)[offs[0]: offs[-1]] if bufs[2] is not None else np.zeros(0, np.uint8)
    if arr.null_count:   # a null's offsets span no bytes (Arrow allows otherwise; be exact)
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        width = np.where(valid, np.diff(offs), 0)
        keep = np.repeat(valid, np.diff(offs))
        data = data[keep]
        offs = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(width, out=offs[1:])
    else:
        offs = offs - offs[0]
    hashes = data.view(np.uint64).copy() if data.shape[0] else np.zeros(0, np.uint64)
    sizes = np.diff(offs) // 8
    o = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=o[1:])
    return Features.distinct(hashes, o)


def _dump_id(v) -> str | None:
    """The JSON of an id; a lone surrogate as its JSON escape (Arrow strings are UTF-8), the bytes
    the local engine writes."""
    return None if v is None else _arrow_text(id_json(v))


def _utf8(texts: list) -> list:
    """Texts as UTF-8 bytes for Arrow, lone surrogates kept (``surrogatepass``; decoded back alike)."""
    return [None if t is None else t.encode("utf-8", "surrogatepass") for t in texts]


_BOM = b"\xef\xbb\xbf"


def _parse_batch(batch, kind, spec, start, last_row_nl, text_field, id_field, key_field, keyed, bom=False):
    """Rows of one numbered batch → parallel lists (text, id_json, key value, key error, error, blank,
    replaced, fatal)."""
    from ..io.formats import decode as _decode  # noqa: PLC0415
    from ..io.formats import parse_jsonl_line  # noqa: PLC0415

    rows = _column(batch, "row").to_numpy(zero_copy_only=False)
    n = rows.shape[0]
    texts, ids, keyv = [None] * n, [None] * n, [None] * n
    errs, blank, repl, fatal = [None] * n, [False] * n, [False] * n, [False] * n
    if kind == "parsed":
        texts = [None if t is None else t.decode("utf-8", "surrogatepass") for t in _column(batch, "text").to_pylist()]
        ids = _column(batch, "id").to_pylist()
        keyv = _column(batch, "keyv").to_pylist()
        errs = _column(batch, "err").to_pylist()
        blank = _column(batch, "blank").to_pylist()
        repl = _column(batch, "replaced").to_pylist()
        fatal = _column(batch, "fatal").to_pylist()
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
    from ..io.formats.base import id_problem, keep_value, key_problem  # noqa: PLC0415

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


def _parse_sign(batches, kind, spec, start, last_row_nl, cfg_json, text_field, id_field, key_field, keep, bom=False):
    """mapInArrow: numbered rows → signed rows (schema ``_SIGNED``)."""
    from ..kernels.lsh import row_keys  # noqa: PLC0415
    from ..sketches.minhash import empty_value  # noqa: PLC0415

    cfg = json.loads(cfg_json)
    sign = _signer(cfg_json)
    minhash = cfg["method"] == "minhash"
    exact = minhash and cfg["verify"] == "exact"
    for batch in batches:
        rows, texts, ids, keyv, errs, blank, repl, fatal = _parse_batch(
            batch, kind, spec, start, last_row_nl, text_field, id_field, key_field, keep == "key", bom)
        n = rows.shape[0]
        doc = np.array([t is not None and e is None for t, e in zip(texts, errs)], dtype=bool)
        idx = np.flatnonzero(doc)
        doc_texts = [texts[j] for j in idx]
        length = np.zeros(n, dtype=np.int64)
        length[idx] = [len(t) for t in doc_texts]
        sh = None
        if idx.shape[0]:
            out = sign(doc_texts)
            values, empty_d, sizes_d = out[:3]
            if exact:
                sh = _ragged_array(out[3], sizes_d, doc)
            if minhash:
                sig_empty_d = np.all(values == values.dtype.type(empty_value(cfg["scheme"])), axis=1)
                rk_d = row_keys(np.ascontiguousarray(values)).view(np.int64)
            else:
                values = np.asarray(values, dtype=np.uint64)
                sig_empty_d = np.asarray(empty_d, dtype=bool)
                rk_d = values.view(np.int64)
                values = values.reshape(-1, 1)
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
        if keep == "longest":
            score = length.astype(np.float64)
        elif keep == "key":
            score = np.array([np.nan if v is None else v for v in keyv], dtype=np.float64)
        else:
            score = np.zeros(n, dtype=np.float64)
        id_out = [(ids[j] if ids[j] is not None else str(int(rows[j]))) if doc[j] else None for j in range(n)]
        nd = ~doc
        if sh is None:
            sh = pa.nulls(n, pa.binary())
        yield pa.RecordBatch.from_arrays([
            pa.array(rows, pa.int64()), pa.array(id_out, pa.string()), pa.array(errs, pa.string()),
            pa.array(blank, pa.bool_()), pa.array(fatal, pa.bool_()), pa.array(repl, pa.bool_()),
            pa.array(length, pa.int64()), pa.array(score, pa.float64(), mask=nd),
            _binary_array(values, doc),
            pa.array(empty, pa.bool_(), mask=nd), pa.array(sig_empty, pa.bool_(), mask=nd),
            pa.array(size, pa.int64(), mask=nd), pa.array(rk, pa.int64(), mask=nd), sh,
        ], names=["row", "id", "err", "blank", "fatal", "replaced", "length", "score", "sig", "empty",
                  "sig_empty", "size", "rk", "sh"])


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
    from ..io.formats import raw_lines  # noqa: PLC0415
    from ..io.formats.delimited import dialect, records  # noqa: PLC0415

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


def _band_batches(batches, b, r, dtype):
    """mapInArrow: (row, sig) → (band, key, row), b records per row (local ``band_keys``)."""
    from ..kernels.lsh import band_keys  # noqa: PLC0415

    for batch in batches:
        rows = _column(batch, "row").to_numpy(zero_copy_only=False)
        n = rows.shape[0]
        if n == 0:
            continue
        keys = band_keys(_binary_rows(_column(batch, "sig"), dtype), b, r)
        yield pa.RecordBatch.from_arrays([
            pa.array(np.tile(np.arange(b, dtype=np.int32), n), pa.int32()),
            pa.array(keys.reshape(-1).view(np.int64), pa.int64()),
            pa.array(np.repeat(rows.astype(np.int64), b), pa.int64())], names=["band", "key", "row"])


def _task_threads() -> None:
    """One compute thread per Spark task: Spark runs tasks side by side already, and a kernel that
    spreads over every core from each task slot would oversubscribe them."""
    import numba  # noqa: PLC0415

    numba.set_num_threads(1)


def _pair_similarity(batches, scheme, dtype, metric, method="minhash", exact=False, border=None):
    """mapInArrow: (lo, hi, sa, sb, za, zb) → (lo, hi, sim), the local estimate of each pair (SimHash:
    1 − Hamming distance / 64); with ``exact``, sa and sb are the shingle sets and sim is their exact
    Jaccard (or the larger containment). ``border`` = (threshold, k, z): a fourth column, whether the
    estimate lies in the band that ``--verify borderline`` decides exactly (the local
    :func:`~neardup.pipeline.find.borderline_mask`)."""
    from ..features.shingles import Features  # noqa: PLC0415
    from ..pipeline.find import borderline_mask, exact_similarity, minhash_similarity  # noqa: PLC0415
    from ..sketches.minhash import jaccard_rows  # noqa: PLC0415
    from ..sketches.simhash import hamming_array  # noqa: PLC0415

    _task_threads()
    for batch in batches:
        mask = None
        lo = _column(batch, "lo").to_numpy(zero_copy_only=False).astype(np.int64)
        hi = _column(batch, "hi").to_numpy(zero_copy_only=False).astype(np.int64)
        n = lo.shape[0]
        if n == 0:
            continue
        ii = np.arange(n, dtype=np.int64)
        if exact:
            fa, fb = _ragged_features(_column(batch, "sa")), _ragged_features(_column(batch, "sb"))
            both = Features.distinct(np.concatenate([fa.hashes, fb.hashes]),
                                     np.concatenate([fa.offsets, fb.offsets[1:] + fa.offsets[-1]]))
            j = exact_similarity(both, ii, ii + n, metric)
        else:
            a = _binary_rows(_column(batch, "sa"), dtype)
            b = _binary_rows(_column(batch, "sb"), dtype)
            if method == "simhash":
                j = 1.0 - hamming_array(a.ravel(), b.ravel()) / 64.0
            else:
                jj = j = jaccard_rows(np.concatenate([a, b]), ii, ii + n, scheme)
                za = _column(batch, "za").to_numpy(zero_copy_only=False)
                zb = _column(batch, "zb").to_numpy(zero_copy_only=False)
                if metric != "jaccard":
                    j = minhash_similarity(j, za, zb, metric)
                if border is not None:
                    mask = borderline_mask(jj, za, zb, border[0], border[1], metric, border[2])
        cols = [pa.array(lo, pa.int64()), pa.array(hi, pa.int64()), pa.array(np.asarray(j, dtype=np.float64),
                                                                              pa.float64())]
        if border is not None:
            cols.append(pa.array(np.zeros(n, bool) if mask is None else mask, pa.bool_()))
        yield pa.RecordBatch.from_arrays(cols, names=["lo", "hi", "sim", "border"][:len(cols)])


def _format_records(batches, fmt, indexed=False):
    """mapInArrow: the per-row table → ``clusters.jsonl`` lines (``fmt="jsonl"``) or clusters.parquet
    columns (with the ``indexed`` column when asked), by the one record definition
    (:mod:`neardup.pipeline.records`)."""
    from ..pipeline.records import document_line, parquet_batch, skipped_line  # noqa: PLC0415

    for batch in batches:
        rows = _column(batch, "row").to_pylist()
        ids = _column(batch, "id").to_pylist()
        cids = _column(batch, "cid").to_pylist()
        sims = _column(batch, "sim").to_pylist()
        errs = _column(batch, "err").to_pylist()
        empties = _column(batch, "empty").to_pylist()
        kepts = _column(batch, "kept").to_pylist()
        by_index = _column(batch, "indexed").to_pylist()
        if fmt == "jsonl":
            out = [_arrow_text(skipped_line(g, e)) if e is not None else document_line(i, c, k, s, g, em, x)
                   for g, i, c, s, e, em, k, x in zip(rows, ids, cids, sims, errs, empties, kepts, by_index)]
            yield pa.RecordBatch.from_arrays([pa.array(out, pa.string())], names=["value"])
            continue
        yield parquet_batch(rows, [None if i is None else json.loads(i) for i in ids],
                            [None if c is None else json.loads(c) for c in cids], kepts,
                            [0.0 if x is None else x for x in sims], [_arrow_text(e) for e in errs],
                            [bool(x) for x in empties], by_index if indexed else None)


def _arrow_text(text):
    """Text for an Arrow string (UTF-8): a lone surrogate as its escape, the bytes the local engine writes."""
    return None if text is None else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _histogram_batches(batches):
    """mapInArrow: similarities → 20 counts per batch over [0, 1] (numpy's bin edges and rules)."""
    for batch in batches:
        s = _column(batch, "sim").to_numpy(zero_copy_only=False)
        counts, _ = np.histogram(s, bins=20, range=(0.0, 1.0))
        yield pa.RecordBatch.from_arrays([pa.array(np.arange(20, dtype=np.int32), pa.int32()),
                                          pa.array(counts.astype(np.int64), pa.int64())], names=["bin", "n"])


def _copy_kept_files(rows, spec, dest):
    paths = {e.rel: e.path for e in spec.entries}
    for r in rows:
        rel = os.fsdecode(bytes(r["raw"]))
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(paths[rel], target)


# ================================================================================================
# driver side
# ================================================================================================
def _is_uri(path: str) -> bool:
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", path) is not None


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


def _cfg_json(cfg: DedupConfig) -> str:
    return json.dumps(asdict(cfg), sort_keys=True)


def _shuffle_partitions(spark) -> int:
    return int(spark.conf.get("spark.sql.shuffle.partitions"))


def _phase(spark, what: str | None) -> None:
    """Name the jobs that follow (Spark UI, event log: the benchmark sums shuffle bytes per phase), and
    first let the JVM drop the Datasets of the DataFrames the run no longer holds (:func:`_release`)."""
    _release()
    spark.sparkContext.setJobDescription(f"neardup: {what}" if what else None)


def _release() -> None:
    """Free the py4j proxies of dropped DataFrames now. A proxy on which a method was called sits in a
    reference cycle (py4j caches each method object, which points back at the proxy), so Python frees
    it only in a cycle collection, and until then the JVM keeps its Dataset alive with every plan of it
    (parsed, analysed, optimised, physical): megabytes per DataFrame over this engine's long lineages.
    Python's collector runs by the count of Python objects, which a Spark run creates few of, so without
    this one run in a 2 GB driver kept about 1 GB of dead plans (``--verify borderline``, the 42 rows of
    tests/test_golden.py in five inputs)."""
    gc.collect()


def _checkpoint(df: DataFrame) -> DataFrame:
    """Truncate the lineage of an iterated DataFrame: reliable checkpoint when a checkpoint directory
    is set (use one on clusters with dynamic allocation), else a local checkpoint."""
    if df.sparkSession.sparkContext.getCheckpointDir():
        return df.checkpoint(eager=True)
    return df.localCheckpoint(eager=True)


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


def _sign_fn(spec: InputSpec, fi: int, num: _Numbering, cfg_json: str, cfg: DedupConfig, fields: bool = True):
    """The mapInArrow function that parses and signs the numbered rows of input ``fi`` (``fields``:
    also its id and keep-key fields; without, only the text)."""
    keyed = fields and cfg.keep == "key"
    return partial(_parse_sign, kind=spec.fmt if _spark_reads(spec) else "parsed", spec=spec, start=num.starts[fi],
                   last_row_nl=num.last_nl.get(fi, -1), cfg_json=cfg_json, text_field=cfg.text_field,
                   id_field=cfg.id_field if fields else None, key_field=cfg.keep_field if keyed else None,
                   keep=cfg.keep if fields else "first", bom=num.bom.get(fi, False))


def _read_signed(spark, specs: list[InputSpec], cfg: DedupConfig) -> tuple[DataFrame, _Numbering]:
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
        signed.append(_numbered(spark, scan, num.offsets[fi]).mapInArrow(_sign_fn(spec, fi, num, cj, cfg), _SIGNED))
    if not signed:
        return spark.createDataFrame([], _SIGNED), num
    out = signed[0]
    for s in signed[1:]:
        out = out.unionByName(s)
    return out, num


# -- the Python API -----------------------------------------------------------------------------------
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
    shingles, for containment), ``score`` (keep policy), ``rk`` (64-bit key of the signature)."""
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


@dataclass
class SparkClusters:
    """What :func:`find_clusters` found. ``assign``: (row, rep, sim) for every row of a cluster with
    more than one member (representatives included, sim 1.0); rows absent from it are alone."""

    assign: DataFrame
    candidates: int
    verified: int
    params: dict
    timings: dict
    rounds: int = 0
    edges: DataFrame | None = None     # with ``--pairs``: the verified pairs (lo, hi, sim, how), persisted

    def unpersist(self) -> None:
        self.assign.unpersist()
        if self.edges is not None:
            self.edges.unpersist()


def _how(code: int):
    """The column ``how`` of verified pairs: a code into :data:`neardup.pipeline.find.HOW`."""
    return F.lit(int(code)).cast("byte").alias("how")


def _sig_dtype(cfg: DedupConfig):
    from ..sketches.minhash import _DTYPES  # noqa: PLC0415

    return _DTYPES[cfg.scheme] if cfg.method == "minhash" else np.uint64


def _rule(cfg) -> tuple[float, float | None]:
    """(threshold, drift) of the clustering as the local engine applies them: SimHash's are in whole
    bits of 64 (1 − k/64; the drift rounded to bits)."""
    get = cfg.get if isinstance(cfg, dict) else lambda k: getattr(cfg, k)
    drift = get("max_drift")
    if get("method") == "simhash":
        return 1.0 - get("bits") / 64.0, (None if drift is None else round(drift * 64) / 64.0)
    return get("threshold"), drift


def _similarities(pairs: DataFrame, sigs: DataFrame, cfg: DedupConfig, border=None, exact=None) -> DataFrame:
    """(lo, hi) → (lo, hi, sim): both signatures joined on (``sigs`` partitioned by row: only the pairs
    move), the estimate in mapInArrow; ``border`` adds the borderline flag (see
    :func:`_pair_similarity`); ``exact``: the exact similarity on ``sigs``'s shingle sets (``sh``)."""
    exact = _exact(cfg) if exact is None else exact
    col = "sh" if exact else "sig"
    a = sigs.select(F.col("row").alias("lo"), F.col(col).alias("sa"), F.col("size").alias("za"))
    b = sigs.select(F.col("row").alias("hi"), F.col(col).alias("sb"), F.col("size").alias("zb"))
    joined = pairs.join(a, "lo").join(b, "hi").select("lo", "hi", "sa", "sb", "za", "zb")
    schema = "lo long, hi long, sim double" + (", border boolean" if border is not None else "")
    return joined.mapInArrow(partial(_pair_similarity, scheme=cfg.scheme, dtype=_sig_dtype(cfg), metric=cfg.metric,
                                     method=cfg.method, exact=exact, border=border), schema)


def _decide_borderline(sims: DataFrame, exact_rows, cfg: DedupConfig, timings: dict, info: dict,
                       alias: DataFrame | None = None) -> DataFrame:
    """``--verify borderline`` on Spark (the local :func:`~neardup.pipeline.find._decide_borderline`):
    the pairs flagged ``border`` get the exact similarity of their shingle sets, recomputed from the
    texts of just their documents (``exact_rows``: rows → (row, sh, size)); the others keep the
    estimate. A fixed row (lo < 0) is checked through its ``alias`` (lo, alias): the first new row with
    an identical signature (the local :func:`~neardup.pipeline.find.fixed_aliases`); without one its
    pairs keep the estimate. Returns (lo, hi, sim, how) — ``how`` says which were decided exactly —
    checkpointed (:func:`_checkpoint`): its plan joins and unions five persisted tables, some twice, and
    a query over it would carry all their plans and print them, as a tree, for the SQL listener (with
    adaptive execution, the test suite's 2 GB driver ran out of heap doing so)."""
    t0 = time.perf_counter()
    sims = sims.persist(StorageLevel.MEMORY_AND_DISK)
    flagged = sims.filter(F.col("border") & (F.col("hi") >= 0))
    if alias is not None:
        flagged = flagged.join(alias, "lo", "left").withColumn(
            "ea", F.when(F.col("lo") < 0, F.col("alias")).otherwise(F.col("lo")))
    else:
        flagged = flagged.withColumn("ea", F.col("lo"))
    flagged = flagged.persist(StorageLevel.MEMORY_AND_DISK)
    border = flagged.filter(F.col("ea").isNotNull()).select("lo", "hi", "ea", F.col("sim").alias("est"))
    keep = (sims.filter(~F.col("border") | (F.col("hi") < 0)).select("lo", "hi", "sim")
            .unionByName(flagged.filter(F.col("ea").isNull()).select("lo", "hi", "sim")).select("*", _how(ESTIMATE)))
    rows = border.select(F.col("ea").alias("row")).unionByName(border.select(F.col("hi").alias("row"))).distinct()
    sh = exact_rows(rows).persist(StorageLevel.MEMORY_AND_DISK)
    ex = _similarities(border.select(F.col("ea").alias("lo"), "hi").distinct(), sh, cfg, exact=True)
    decided = border.join(ex.select(F.col("lo").alias("ea"), "hi", "sim"), ["ea", "hi"]).select("lo", "hi", "sim",
                                                                                                  "est")
    decided = decided.persist(StorageLevel.MEMORY_AND_DISK)
    out = _checkpoint(keep.unionByName(decided.select("lo", "hi", "sim", _how(EXACT))))
    t = F.lit(float(cfg.threshold))
    counts = decided.agg(F.count(F.lit(1)).alias("pairs"),
                         F.sum(F.when((F.col("sim") >= t) != (F.col("est") >= t), 1).otherwise(0)).alias("flipped")
                         ).first()
    info.update(pairs=int(counts["pairs"]), documents=int(sh.count()), flipped=int(counts["flipped"] or 0))
    for df in (sh, flagged, decided, sims):
        df.unpersist()
    timings["borderline"] = time.perf_counter() - t0
    return out


def _exact(cfg) -> bool:
    """Pairs decided on the shingle sets (``--verify exact``) rather than the signatures."""
    get = cfg.get if isinstance(cfg, dict) else lambda k: getattr(cfg, k)
    return get("method") == "minhash" and get("verify") == "exact"


# Up to this many verified edges (16 bytes each on the driver: 320 MB), connected components are
# found on the driver by the local union–find kernel, in one pass; above it, by star rounds on the
# executors. Both give every node the smallest node of its component, so the outputs do not change.
DRIVER_EDGES = 20_000_000


def _components(edges: DataFrame, max_rounds: int = 200) -> tuple[DataFrame, int]:
    """Connected components of the undirected edges (lo, hi), lo < hi: (row, label) for every node of an
    edge, label = the smallest node of its component. Few edges (≤ :data:`DRIVER_EDGES`): union–find
    on the driver (rounds = 0). Otherwise alternating large-star / small-star rounds until the graph
    is a forest of stars whose centres are smaller than their leaves and no leaf has two centres —
    then each star is one component and its centre its smallest node."""
    spark = edges.sparkSession
    if edges.limit(DRIVER_EDGES + 1).count() <= DRIVER_EDGES:
        from ..kernels.clusters import components  # noqa: PLC0415

        t = edges.select("lo", "hi").toArrow()
        lo = t.column("lo").to_numpy().astype(np.int64)
        hi = t.column("hi").to_numpy().astype(np.int64)
        nodes = np.unique(np.concatenate([lo, hi]))
        labels = components(nodes.shape[0], np.searchsorted(nodes, lo), np.searchsorted(nodes, hi))
        table = pa.table({"row": pa.array(nodes, pa.int64()), "label": pa.array(nodes[labels], pa.int64())})
        comps = spark.createDataFrame(table).repartition(_shuffle_partitions(spark), "row")
        return _checkpoint(comps), 0
    e = _checkpoint(edges.select(F.col("lo").alias("u"), F.col("hi").alias("v")).distinct())
    for rounds in range(1, max_rounds + 1):
        # large-star: every node links its larger neighbours to the smallest node of its neighbourhood
        sym = e.select(F.col("u").alias("a"), F.col("v").alias("b")).unionByName(
            e.select(F.col("v").alias("a"), F.col("u").alias("b")))
        m = sym.groupBy("a").agg(F.least(F.col("a"), F.min("b")).alias("m"))
        large = (sym.filter(F.col("b") > F.col("a")).join(m, "a")
                    .select(F.col("m").alias("u"), F.col("b").alias("v")).distinct())
        # small-star: every node links itself and its smaller neighbours to the smallest of them
        ms = large.groupBy("v").agg(F.min("u").alias("m"))
        lm = large.join(ms, "v")
        small = (lm.select(F.col("m").alias("u"), F.col("v"))
                   .unionByName(lm.filter(F.col("u") != F.col("m"))
                                .select(F.col("m").alias("u"), F.col("u").alias("v")))
                   .distinct())
        e_new = _checkpoint(small)
        e.unpersist()
        e = e_new
        nodes = (e.select(F.col("u").alias("x"), F.lit(1).alias("c"), F.lit(0).alias("l"))
                  .unionByName(e.select(F.col("v").alias("x"), F.lit(0).alias("c"), F.lit(1).alias("l")))
                  .groupBy("x").agg(F.max("c").alias("c"), F.sum("l").alias("l")))
        if nodes.filter(((F.col("c") == 1) & (F.col("l") > 0)) | (F.col("l") > 1)).limit(1).count() == 0:
            comps = (e.select(F.col("v").alias("row"), F.col("u").alias("label"))
                      .unionByName(e.select(F.col("u").alias("row"), F.col("u").alias("label"))).distinct())
            return comps, rounds
    raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")


def _representatives(comps: DataFrame, docs: DataFrame) -> DataFrame:
    """(row, label) → (row, rep): per component the largest score, ties the smallest row."""
    best = (comps.join(docs.select("row", "score"), "row")
                 .groupBy("label").agg(F.min(F.struct((-F.col("score")).alias("ns"), F.col("row"))).alias("best"))
                 .select("label", F.col("best.row").alias("rep")))
    return comps.join(best, "label").select("row", "rep")


def _known(sims: DataFrame, edges: DataFrame) -> DataFrame:
    """(lo, hi, sim) with the exact similarity of a pair checked exactly in place of the estimate: the
    local :func:`~neardup.pipeline.find.known_similarity`."""
    e = edges.filter(F.col("how") == F.lit(int(EXACT))).select(F.col("lo").alias("_a"), F.col("hi").alias("_b"),
                                                                F.col("sim").alias("_s"))
    k = sims.withColumn("_a", F.least("lo", "hi")).withColumn("_b", F.greatest("lo", "hi"))
    return k.join(e, ["_a", "_b"], "left").select("lo", "hi", F.coalesce("_s", "sim").alias("sim"))


def _split_drift(assign: DataFrame, edges: DataFrame, docs: DataFrame, cfg: DedupConfig) -> tuple[DataFrame, int]:
    """The local ``max_drift`` rule: members less similar than t − δ to their representative are split
    off and clustered among themselves (components of the verified pairs between them), repeatedly."""
    threshold, drift = _rule(cfg)
    floor = float(threshold - drift)
    rounds = 0
    while True:
        bad = (assign.filter((F.col("row") != F.col("rep")) & (F.col("sim") < F.lit(floor))).select("row")
                     .persist(StorageLevel.MEMORY_AND_DISK))
        if bad.limit(1).count() == 0:
            bad.unpersist()
            return assign, rounds
        rounds += 1
        sub = (edges.select("lo", "hi").join(bad.select(F.col("row").alias("lo")), "lo", "left_semi")
                    .join(bad.select(F.col("row").alias("hi")), "hi", "left_semi"))
        comps, k = _components(sub)
        rounds += k
        members = _representatives(comps, docs)
        alone = bad.join(members.select("row"), "row", "left_anti").select("row", F.col("row").alias("rep"))
        moved = members.filter(F.col("row") != F.col("rep"))
        msim = _known(_similarities(moved.select(F.col("row").alias("lo"), F.col("rep").alias("hi")), docs, cfg),
                      edges)
        new = (alone.unionByName(members.filter(F.col("row") == F.col("rep")))
                    .select("row", "rep", F.lit(1.0).alias("sim"))
                    .unionByName(msim.select(F.col("lo").alias("row"), F.col("hi").alias("rep"), "sim")))
        nxt = _checkpoint(assign.join(bad, "row", "left_anti").unionByName(new))
        assign.unpersist()
        bad.unpersist()
        assign = nxt


_SAMPLE = 16   # the local engine's bounded-linkage sample (find_minhash_duplicates' default)


def _finish_component(table, cfg_json):
    """The local :func:`neardup.clusters.build_clusters` on the rows and verified pairs of one or more
    whole connected components (relabelled 0..m−1 in row order, which the local kernels see the same
    way) → (row, rep, sim)."""
    from ..clusters import SimilarityOracle, build_clusters  # noqa: PLC0415
    from ..pipeline.find import exact_similarity, known_similarity, minhash_similarity  # noqa: PLC0415
    from ..sketches.minhash import _DTYPES, empty_value, jaccard_rows  # noqa: PLC0415
    from ..sketches.simhash import hamming_array  # noqa: PLC0415

    _task_threads()
    cfg = json.loads(cfg_json)
    exact = _exact(cfg)
    simhash = cfg["method"] == "simhash"
    kind = table.column("kind").to_numpy(zero_copy_only=False)
    nodes = table.filter(pa.array(kind == 0))
    edges = table.filter(pa.array(kind == 1))
    rows = nodes.column("a").to_numpy().astype(np.int64)
    order = np.argsort(rows, kind="stable")
    rows = rows[order]
    values = _binary_rows(nodes.column("sig").combine_chunks(), np.uint64 if simhash else _DTYPES[cfg["scheme"]])[order]
    sizes = nodes.column("size").to_numpy(zero_copy_only=False).astype(np.int64)[order]
    score = nodes.column("score").to_numpy(zero_copy_only=False).astype(np.float64)[order]
    lo = np.searchsorted(rows, edges.column("a").to_numpy().astype(np.int64))
    hi = np.searchsorted(rows, edges.column("b").to_numpy().astype(np.int64))
    esim = edges.column("s").to_numpy(zero_copy_only=False).astype(np.float64)
    scheme, metric = cfg["scheme"], cfg["metric"]
    feats = _ragged_features(nodes.column("sh")).subset(order) if exact else None

    def similarity(a, b):
        if exact:
            return exact_similarity(feats, a, b, metric)
        if simhash:
            return 1.0 - hamming_array(values[a, 0], values[b, 0]) / 64.0
        j = jaccard_rows(values, a, b, scheme)
        return j if metric == "jaccard" else minhash_similarity(j, sizes[a], sizes[b], metric)

    if simhash:
        oracle = SimilarityOracle.simhash(values.ravel())
    elif exact and metric == "jaccard":
        oracle = SimilarityOracle.exact(feats.hashes, feats.offsets)
    elif metric == "jaccard":
        oracle = SimilarityOracle.minhash(values, empty_value(scheme))
    else:
        oracle = SimilarityOracle.equal()
    keep = cfg["keep"]
    threshold, drift = _rule(cfg)
    ehow = edges.column("h").to_numpy(zero_copy_only=False).astype(np.int64)
    known = known_similarity(similarity, lo, hi, esim, rows.shape[0], ehow)
    c = build_clusters(rows.shape[0], lo, hi, known, keep=keep, lengths=score if keep == "longest" else None,
                       keys=score if keep == "key" else None, threshold=threshold, max_drift=drift,
                       linkage=cfg["linkage"], edge_sim=esim, oracle=oracle, sample=_SAMPLE)
    return pa.table({"row": pa.array(rows, pa.int64()), "rep": pa.array(rows[c.cluster], pa.int64()),
                     "sim": pa.array(c.similarity, pa.float64())})


def _local_linkage(comps: DataFrame, edges: DataFrame, docs: DataFrame, cfg: DedupConfig) -> DataFrame:
    """Every multi-row component finished by the local clustering code on one executor (bounded
    linkage: a component must fit in one task's memory — its rows' signatures and pairs)."""
    nodes = comps.join(docs.select("row", "sig", "size", "score", "sh"), "row").select(
        "label", F.lit(0).alias("kind"), F.col("row").alias("a"), F.lit(None).cast("long").alias("b"),
        F.lit(None).cast("double").alias("s"), F.lit(None).cast("byte").alias("h"), "sig", "size", "score", "sh")
    links = edges.join(comps.select(F.col("row").alias("lo"), "label"), "lo").select(
        "label", F.lit(1).alias("kind"), F.col("lo").alias("a"), F.col("hi").alias("b"), F.col("sim").alias("s"),
        F.col("how").alias("h"), F.lit(None).cast("binary").alias("sig"), F.lit(None).cast("long").alias("size"),
        F.lit(None).cast("double").alias("score"), F.lit(None).cast("binary").alias("sh"))
    spark = comps.sparkSession
    return (nodes.unionByName(links).repartition(_shuffle_partitions(spark), "label")
            .mapInArrow(partial(_finish_partition, cfg_json=_cfg_json(cfg)), "row long, rep long, sim double"))


def _finish_partition(batches, cfg_json):
    """mapInArrow over a partition holding whole components (partitioned by label): all of them
    finished by one call of :func:`_finish_component`. Components are independent — no edge joins
    two, and a merge's checks look only at the two groups merged — so their union clustered at once
    gives each the result it gets alone, at one Python call per partition instead of one per
    component (300,000 components at 1 M documents)."""
    parts = [b for b in batches if b.num_rows]
    if not parts:
        return
    table = pa.Table.from_batches(parts)
    out = _finish_component(table, cfg_json)
    yield from out.to_batches(max_chunksize=65536)


def _band_cands(distinct: DataFrame, lsh, cfg: DedupConfig, max_bucket: int) -> DataFrame:
    """LSH candidates (lo < hi) among the distinct rows (row, sig), persisted: rows sharing a band key;
    a bucket of more than ``max_bucket`` rows links each to its first (the local ``candidate_pairs``)."""
    bands = distinct.mapInArrow(partial(_band_batches, b=lsh.b, r=lsh.r, dtype=_sig_dtype(cfg)),
                                "band int, key long, row long")
    w = Window.partitionBy("band", "key")
    bk = (bands.withColumn("cnt", F.count(F.lit(1)).over(w)).withColumn("mn", F.min("row").over(w))
               .filter(F.col("cnt") >= 2).persist(StorageLevel.MEMORY_AND_DISK))
    star = bk.filter((F.col("cnt") > max_bucket) & (F.col("row") != F.col("mn"))).select(
        F.col("mn").alias("lo"), F.col("row").alias("hi"))
    small = bk.filter(F.col("cnt") <= max_bucket).select("band", "key", "row")
    pa_, pb_ = small.alias("a"), small.alias("b")
    allp = pa_.join(pb_, (F.col("a.band") == F.col("b.band")) & (F.col("a.key") == F.col("b.key"))
                    & (F.col("a.row") < F.col("b.row"))) \
        .select(F.col("a.row").alias("lo"), F.col("b.row").alias("hi"))
    cands = star.unionByName(allp).distinct().persist(StorageLevel.MEMORY_AND_DISK)
    cands.count()
    bk.unpersist()
    return cands


def _containment_cands(spark, rows: DataFrame, cfg: DedupConfig):
    """``--metric containment`` candidates (lo < hi) among the distinct rows (row, sig, size), banded per
    size ratio by the local rule (:func:`~neardup.pipeline.find.containment_candidate_pairs`), and the
    report's LSH parameters. The signatures and sizes go to the driver (n × k × 8 bytes, e.g. 1 GB for
    a million documents at k = 128) and the compiled probe runs there: the per-ratio banding has no
    shuffle formulation that stays near a band join's size (a pair's bands depend on both sizes)."""
    from ..pipeline.find import containment_candidate_pairs, containment_lsh  # noqa: PLC0415

    t = rows.select("row", "sig", "size").orderBy("row").toArrow()
    row = t.column("row").to_numpy().astype(np.int64)
    values = _binary_rows(t.column("sig").combine_chunks(), _sig_dtype(cfg)) if row.shape[0] else \
        np.zeros((0, cfg.num_perm), dtype=_sig_dtype(cfg))
    sizes = t.column("size").to_numpy().astype(np.int64)
    lo, hi = containment_candidate_pairs(values, sizes, cfg.threshold, cfg.lsh_mode, cfg.recall)
    lsh = containment_lsh(cfg.threshold, cfg.num_perm, cfg.lsh_mode, cfg.recall)
    table = pa.table({"lo": pa.array(row[lo], pa.int64()), "hi": pa.array(row[hi], pa.int64())})
    cands = spark.createDataFrame(table.to_pandas(), "lo long, hi long").persist(StorageLevel.MEMORY_AND_DISK)
    cands.count()
    return cands, lsh


def find_clusters(sig_df: DataFrame, cfg: DedupConfig | None = None, max_bucket: int = MAX_BUCKET,
                  fixed: bool = False, exact_rows=None) -> SparkClusters:
    """Clusters of the signed rows (``_SIGNED`` schema; rows with ``err`` set are ignored) by the local
    engine's rules. ``sig_df`` should be persisted (and ideally hash-partitioned by ``row``).
    ``fixed``: rows with negative row numbers are documents decided before (an index's, the local
    ``fixed`` rows): they come first in row order, are never linked to each other (a verified pair
    lo < hi with hi < 0) and win the keep policy through their score (+inf, or first in row order).
    ``exact_rows`` (``--verify borderline``, the default): a function of a DataFrame of rows giving
    (row, sh, size), their distinct shingle hashes from their texts. Without ``cfg`` and ``exact_rows``
    the candidates are decided by their estimates (``verify="minhash"``): there are no texts to re-read."""
    if cfg is None:
        cfg = DedupConfig(verify="borderline" if exact_rows is not None else "minhash")
    cfg = cfg.resolved()
    _check_supported(cfg)
    timings: dict = {}
    docs = sig_df.filter(F.col("err").isNull()) if "err" in sig_df.columns else sig_df
    live = docs.filter(~F.col("sig_empty"))
    spark = sig_df.sparkSession
    _phase(spark, "identical rows")
    t0 = time.perf_counter()
    first = live.select("row", "rk").withColumn("first", F.min("row").over(Window.partitionBy("rk")))
    same = first.filter(F.col("row") != F.col("first")).select(F.col("first").alias("lo"), F.col("row").alias("hi"))
    params: dict = {}
    if cfg.method == "minhash":
        from ..index.lsh import choose_params  # noqa: PLC0415

        lsh = choose_params(cfg.threshold, cfg.num_perm, cfg.lsh_mode, cfg.recall, cfg.bands, cfg.rows)
        params = {"b": lsh.b, "r": lsh.r, "lsh_mode": lsh.mode}
        # identical rows: equal 64-bit key, confirmed byte for byte against the group's first row
        s1 = docs.select(F.col("row").alias("lo"), F.col("sig").alias("s1"))
        s2 = docs.select(F.col("row").alias("hi"), F.col("sig").alias("s2"))
        dup = (same.join(s1, "lo").join(s2, "hi").filter(F.col("s1") == F.col("s2"))
                   .select("lo", "hi", F.lit(1.0).alias("sim"), _how(IDENTICAL))
                   .persist(StorageLevel.MEMORY_AND_DISK))
        dup.count()
        timings["identical"] = time.perf_counter() - t0
        # LSH candidates among the distinct rows
        _phase(spark, "LSH candidates")
        t0 = time.perf_counter()
        distinct = live.join(dup.select(F.col("hi").alias("row")), "row", "left_anti").select("row", "sig")
        if cfg.metric == "containment" and lsh.mode != "explicit":
            cands, lsh = _containment_cands(spark, live.join(distinct.select("row"), "row"), cfg)
            params = {"b": lsh.b, "r": lsh.r, "lsh_mode": lsh.mode}
        else:
            cands = _band_cands(distinct, lsh, cfg, max_bucket)
        n_cand = cands.count()
        timings["candidates"] = time.perf_counter() - t0
        # verification on the full signatures
        _phase(spark, "verify")
        t0 = time.perf_counter()
        if cfg.verify == "borderline":
            if exact_rows is None:
                raise ConfigError("verify (--verify) borderline needs the documents' texts; find_clusters was "
                                  "given none (exact_rows): pass exact_rows, or decide by the estimates with "
                                  "verify='minhash'")
            from ..pipeline.find import borderline_band, borderline_z  # noqa: PLC0415

            z = borderline_z(n_cand)
            t = float(cfg.threshold)
            params["borderline"] = borderline_band(n_cand, t, cfg.num_perm)
            alias = (dup.filter((F.col("lo") < 0) & (F.col("hi") >= 0)).groupBy("lo").agg(F.min("hi").alias("alias"))
                     if fixed else None)
            sims = _decide_borderline(_similarities(cands, docs, cfg, border=(t, cfg.num_perm, z)), exact_rows, cfg,
                                      timings, params["borderline"], alias)
        else:
            sims = _similarities(cands, docs, cfg).select(
                "*", _how({"none": CANDIDATE, "exact": EXACT}.get(cfg.verify, ESTIMATE)))
        if cfg.verify != "none":
            sims = sims.filter(F.col("sim") >= F.lit(float(cfg.threshold)))
        edges = dup.unionByName(sims).persist(StorageLevel.MEMORY_AND_DISK)
        n_edges = edges.count()
        cands.unpersist()
        dup.unpersist()
        timings["verify"] = time.perf_counter() - t0
    elif cfg.method == "simhash":
        edges, n_cand, n_edges, params = _simhash_edges(spark, live, same, cfg, timings)
    else:   # exact / sentences: equal 64-bit values are the duplicates (local find_equal_duplicates)
        edges = same.select("lo", "hi", F.lit(1.0).alias("sim"), _how(IDENTICAL)).persist(StorageLevel.MEMORY_AND_DISK)
        n_edges = n_cand = edges.count()
        timings["group"] = time.perf_counter() - t0
    if fixed:   # the local _unfix: no pair between two fixed rows
        unfixed = edges.filter(F.col("hi") >= 0).persist(StorageLevel.MEMORY_AND_DISK)
        n_edges = unfixed.count()
        edges.unpersist()
        edges = unfixed
    # clusters: components, representative by the keep policy, similarity to it
    _phase(spark, "clusters")
    t0 = time.perf_counter()
    comps, rounds = _components(edges.select("lo", "hi"))
    if cfg.method in ("minhash", "simhash") and cfg.linkage != "components":
        assign = _local_linkage(comps, edges, docs, cfg).persist(StorageLevel.MEMORY_AND_DISK)
        assign.count()
        if not cfg.pairs:
            edges.unpersist()
        timings["clusters"] = time.perf_counter() - t0
        return SparkClusters(assign, int(n_cand), int(n_edges), params, timings, rounds, edges if cfg.pairs else None)
    members = _representatives(comps, docs)
    reps = members.filter(F.col("row") == F.col("rep")).select("row", "rep", F.lit(1.0).alias("sim"))
    others = members.filter(F.col("row") != F.col("rep"))
    if cfg.method in ("minhash", "simhash"):
        msim = _known(_similarities(others.select(F.col("row").alias("lo"), F.col("rep").alias("hi")), docs, cfg),
                      edges)
        msim = msim.select(F.col("lo").alias("row"), F.col("hi").alias("rep"), "sim")
    else:
        msim = others.select("row", "rep", F.lit(1.0).alias("sim"))
    assign = reps.unionByName(msim).persist(StorageLevel.MEMORY_AND_DISK)
    assign.count()
    if cfg.method in ("minhash", "simhash") and cfg.max_drift is not None:
        assign, extra = _split_drift(assign, edges, docs, cfg)
        rounds += extra
    if not cfg.pairs:
        edges.unpersist()
    timings["clusters"] = time.perf_counter() - t0
    return SparkClusters(assign, int(n_cand), int(n_edges), params, timings, rounds, edges if cfg.pairs else None)


def _table_keys(batches, masks):
    """mapInArrow: (row, rk) of distinct fingerprints → (t, key, row, fp): each fingerprint's key in
    every permuted table of the plan (the bits of table t's mask)."""
    m = np.asarray([int(x) for x in masks], dtype=np.uint64)
    for batch in batches:
        rows = _column(batch, "row").to_numpy(zero_copy_only=False).astype(np.int64)
        fps = _column(batch, "rk").to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
        n, t = rows.shape[0], m.shape[0]
        keys = (fps[:, None] & m[None, :]).view(np.int64).ravel()
        yield pa.RecordBatch.from_arrays([
            pa.array(np.tile(np.arange(t, dtype=np.int32), n), pa.int32()), pa.array(keys, pa.int64()),
            pa.array(np.repeat(rows, t), pa.int64()), pa.array(np.repeat(fps.view(np.int64), t), pa.int64())],
            names=["t", "key", "row", "fp"])


def _simhash_edges(spark, live: DataFrame, same: DataFrame, cfg: DedupConfig, timings: dict):
    """The local :func:`~neardup.pipeline.find.find_simhash_duplicates` pairs as DataFrame operations:
    equal fingerprints link to the first copy (distance 0); among the distinct ones, Manku et al.'s
    permuted tables (the local planner's masks: two fingerprints within k bits agree on every bit of
    at least one table's mask) give the candidates, kept when popcount(a ⊕ b) ≤ k — all pairs within
    k, exactly, as the local engine finds them."""
    from ..index.simhash_index import plan_tables  # noqa: PLC0415

    t0 = time.perf_counter()
    dup = same.select("lo", "hi", F.lit(1.0).alias("sim"), _how(IDENTICAL)).persist(StorageLevel.MEMORY_AND_DISK)
    dup.count()
    timings["identical"] = time.perf_counter() - t0
    _phase(spark, "Hamming tables")
    t0 = time.perf_counter()
    distinct = live.join(dup.select(F.col("hi").alias("row")), "row", "left_anti").select("row", "rk")
    n_distinct = distinct.count()
    plan = plan_tables(64, cfg.bits, max(n_distinct, 2))
    keys = distinct.mapInArrow(partial(_table_keys, masks=[int(x) for x in plan.key_masks]),
                               "t int, key long, row long, fp long")
    a, b = keys.alias("a"), keys.alias("b")
    dist = F.bit_count(F.col("a.fp").bitwiseXOR(F.col("b.fp")))
    pairs = (a.join(b, (F.col("a.t") == F.col("b.t")) & (F.col("a.key") == F.col("b.key"))
                    & (F.col("a.row") < F.col("b.row")))
             .select(F.col("a.row").alias("lo"), F.col("b.row").alias("hi"), dist.alias("d"))
             .filter(F.col("d") <= F.lit(int(cfg.bits))).distinct()
             .select("lo", "hi", (F.lit(1.0) - F.col("d") / F.lit(64.0)).alias("sim"), _how(ESTIMATE))
             .persist(StorageLevel.MEMORY_AND_DISK))
    n_cand = pairs.count()
    edges = dup.unionByName(pairs).persist(StorageLevel.MEMORY_AND_DISK)
    n_edges = edges.count()
    pairs.unpersist()
    dup.unpersist()
    timings["candidates"] = time.perf_counter() - t0
    return edges, n_cand, n_edges, {"tables": int(len(plan.key_masks)), "fingerprints": int(n_distinct)}


def _per_row(signed: DataFrame, found: SparkClusters, fixed_ids: DataFrame | None = None) -> DataFrame:
    """Every row: row, id, err, empty, kept, sim, cid (the id of its cluster's representative),
    indexed (the representative is a fixed row: a document of the index, ``fixed_ids`` (row, id))."""
    ids = signed.filter(F.col("err").isNull()).select(F.col("row").alias("rep"), F.col("id").alias("cid"))
    if fixed_ids is not None:
        ids = ids.unionByName(fixed_ids.select(F.col("row").alias("rep"), F.col("id").alias("cid")))
    a = found.assign.join(ids, "rep").select("row", "rep", "sim", "cid")
    return (signed.select("row", "id", "err", "empty").join(a, "row", "left")
                  .select("row", "id", "err", "empty",
                          F.when(F.col("err").isNull(), F.coalesce(F.col("rep"), F.col("row")) == F.col("row"))
                           .otherwise(F.lit(False)).alias("kept"),
                          F.coalesce(F.col("sim"), F.lit(1.0)).alias("sim"),
                          F.coalesce(F.col("cid"), F.col("id")).alias("cid"),
                          F.coalesce(F.col("rep") < 0, F.lit(False)).alias("indexed")))


def dedup_dataframe(df: DataFrame, cfg: DedupConfig | None = None, text_col: str = "text", id_col: str | None = None,
                    row_col: str | None = None) -> DataFrame:
    """Deduplicate a DataFrame: the input columns plus ``row`` (order; numbered in partition order when
    ``row_col`` is None — persist ``df`` first if its plan is not deterministic), ``cluster_row`` (row of
    the kept representative), ``cluster`` (its id: ``id_col``'s value as JSON text, or its row), ``kept``,
    ``similarity`` (to the representative) and ``empty``. Keep the rows with ``kept`` to deduplicate."""
    cfg = (cfg or DedupConfig()).resolved()
    if row_col is None:
        df = number_rows(df, "row")
        row_col = "row"
    signed = sign_dataframe(df, cfg, text_col, id_col, row_col)
    signed = signed.repartition(_shuffle_partitions(df.sparkSession), "row").persist(StorageLevel.MEMORY_AND_DISK)
    ecfg = _shingles_cfg(cfg)

    def exact_rows(rows: DataFrame) -> DataFrame:     # --verify borderline: the texts are in df
        wanted = df.join(rows.withColumnRenamed("row", row_col), row_col, "left_semi")
        return sign_dataframe(wanted, ecfg, text_col, None, row_col).select("row", "sh", "size")

    found = find_clusters(signed, cfg, exact_rows=exact_rows)
    info = (_per_row(signed, found)
            .join(found.assign.select("row", "rep"), "row", "left")
            .select(F.col("row").alias(row_col), F.coalesce("rep", "row").alias("cluster_row"),
                    F.col("cid").alias("cluster"), "kept", F.col("sim").alias("similarity"), "empty"))
    return df.join(info, row_col)


# -- writing -------------------------------------------------------------------------------------------
def _part_files(folder: str) -> list[str]:
    return sorted(p for p in os.listdir(folder) if p.startswith("part-"))


def _concat(folder: str, dest: str, compression: str | None, header: bytes = b"") -> None:
    from ..io.compression import open_write  # noqa: PLC0415

    with open_write(dest, compression) as out:
        out.write(header)
        for p in _part_files(folder):
            with open(os.path.join(folder, p), "rb") as fh:
                shutil.copyfileobj(fh, out, 1 << 20)


def _csv_header(spec: InputSpec) -> bytes | None:
    from ..io.formats import format_of  # noqa: PLC0415
    from ..io.formats.delimited import dialect  # noqa: PLC0415

    header = format_of(spec).header(spec)
    if header is None:
        return None
    buf = io.StringIO()
    csv.writer(buf, dialect=dialect(spec)).writerow(header)
    return buf.getvalue().encode("utf-8", "surrogateescape")


def _write_file(spark, path: str, data: bytes) -> None:
    """A small file (report) at a local path or through Hadoop's FileSystem for a URI."""
    if not _is_uri(path):
        with open(path, "wb") as fh:
            fh.write(data)
        return
    jvm = spark.sparkContext._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    out = p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).create(p, True)
    try:
        out.write(bytearray(data))
    finally:
        out.close()


def _write_kept(spark, spec: InputSpec, fi: int, num: _Numbering, cfg: DedupConfig, drop: DataFrame,
                folder: str, dest: str | None) -> None:
    """The kept rows of one input, in its format and order: a part-file folder at ``folder``; merged into
    the local engine's single file ``dest`` when given."""
    lo, n = num.starts[fi], num.rows[fi]
    gone = drop.filter((F.col("row") >= lo) & (F.col("row") < lo + n))
    payload = _scan(spark, spec, cfg, payload=True)
    kept = _numbered(spark, payload, num.offsets[fi]).join(gone, "row", "left_anti")
    if spec.fmt == "dir":
        target = dest if dest is not None else folder
        os.makedirs(target, exist_ok=True)
        kept.select("raw").foreachPartition(partial(_copy_kept_files, spec=spec, dest=target))
        return
    ordered = kept.orderBy("row")
    if spec.fmt == "parquet":
        ordered.drop("row").write.mode("overwrite").parquet(folder)
        if dest is not None:
            import pyarrow.parquet as pq  # noqa: PLC0415

            schema = pq.ParquetFile(spec.path).schema_arrow
            with pq.ParquetWriter(dest, schema) as w:
                for p in _part_files(folder):
                    t = pq.read_table(os.path.join(folder, p))
                    if t.num_rows:
                        w.write_table(t.select(schema.names).cast(schema))
        return
    sep = "\r\n" if spec.fmt == "csv" else "\n"
    if num.bom.get(fi):
        ordered = ordered.withColumn("raw", F.when(F.col("row") == lo, F.concat(F.lit(_BOM), F.col("raw")))
                                     .otherwise(F.col("raw")))
    ordered.select(F.col("raw").cast("string").alias("value")).write.mode("overwrite").option("lineSep", sep) \
        .text(folder)
    header = _csv_header(spec) if spec.fmt == "csv" else b""
    if dest is not None:
        _concat(folder, dest, spec.compression, header or b"")
    elif header:
        _write_file(spark, folder.rstrip("/") + "/_header.csv", header)


def _write_clusters(spark, table: DataFrame, cfg: DedupConfig, folder: str, dest: str | None,
                    indexed: bool = False) -> None:
    """clusters.jsonl / clusters.parquet (``indexed``: the parquet gets the ``indexed`` column, as the
    local engine writes it when an index's documents took part)."""
    ordered = table.orderBy("row")
    if cfg.clusters_format == "jsonl":
        ordered.mapInArrow(partial(_format_records, fmt="jsonl"), "value string").write.mode("overwrite") \
            .option("lineSep", "\n").text(folder)
        if dest is not None:
            _concat(folder, dest, None)
        return
    schema = ("id string, cluster string, kept boolean, similarity double, status string, row long, reason string, "
              "empty boolean" + (", indexed boolean" if indexed else ""))
    ordered.mapInArrow(partial(_format_records, fmt="parquet", indexed=indexed), schema).write.mode("overwrite") \
        .parquet(folder)
    if dest is not None:
        import pyarrow.parquet as pq  # noqa: PLC0415

        from ..pipeline.records import parquet_schema  # noqa: PLC0415

        schema = parquet_schema(indexed)
        tables = [pq.read_table(os.path.join(folder, p)).cast(schema) for p in _part_files(folder)]
        pq.write_table(pa.concat_tables(tables) if tables else schema.empty_table(), dest)


def _write_pairs(found: SparkClusters, ids: DataFrame, folder: str, dest: str | None) -> None:
    """pairs.parquet (``--pairs``; :func:`neardup.pipeline.records.pairs_schema`) as the local engine
    writes it: a pair (a, b) has a before b in input order, an index's document (a negative row here)
    last as b with no row; sorted by (a, b), the index's documents in their order after every input row.
    ``ids``: (row, id JSON) of every document, the index's included."""
    from ..pipeline.find import HOW  # noqa: PLC0415

    e = found.edges
    lo, hi = F.col("lo"), F.col("hi")
    pairs = e.select(F.when(lo < 0, hi).otherwise(lo).alias("a"), F.when(lo < 0, lo).otherwise(hi).alias("b"),
                     "sim", "how")
    texts = ids.mapInArrow(_id_texts, "row long, id string, text string")
    rep = found.assign.select("row", "rep")
    ra = rep.select(F.col("row").alias("a"), F.col("rep").alias("ra"))
    rb = rep.select(F.col("row").alias("b"), F.col("rep").alias("rb"))
    ta = texts.select(F.col("row").alias("a"), F.col("text").alias("id_a"))
    tb = texts.select(F.col("row").alias("b"), F.col("text").alias("id_b"))
    names = F.array(*[F.lit(h) for h in HOW])
    table = (pairs.join(ta, "a").join(tb, "b").join(ra, "a", "left").join(rb, "b", "left")
             .select("id_a", "id_b", F.col("a").alias("row_a"),
                     F.when(F.col("b") >= 0, F.col("b")).alias("row_b"), F.col("sim").alias("similarity"),
                     F.element_at(names, F.col("how").cast("int") + 1).alias("decided"),
                     (F.coalesce("ra", "a") == F.coalesce("rb", "b")).alias("same_cluster"),
                     F.when(F.col("b") < 0, F.col("b") + F.lit(1 << 62)).otherwise(F.col("b")).alias("_b"))
             .orderBy("row_a", "_b").drop("_b"))
    table.write.mode("overwrite").parquet(folder)
    if dest is not None:
        import pyarrow.parquet as pq  # noqa: PLC0415

        from ..pipeline.records import pairs_schema  # noqa: PLC0415

        schema = pairs_schema()
        code = {h: k for k, h in enumerate(HOW)}
        with pq.ParquetWriter(dest, schema) as writer:
            for p in _part_files(folder):
                t = pq.read_table(os.path.join(folder, p))
                how = pa.array([code[h] for h in t.column("decided").to_pylist()], pa.int8())
                t = t.set_column(5, "decided", pa.DictionaryArray.from_arrays(how, pa.array(list(HOW))))
                writer.write_table(t.cast(schema))


# -- the run ---------------------------------------------------------------------------------------------
def run_spark_dedup(inputs: list[str], outdir: str, config: DedupConfig | None = None, spark=None,
                    command: str = "") -> dict:
    """``neardup dedup`` on Spark: the local engine's outputs (``kept/``, ``clusters.jsonl``, ``report.json``,
    ``report.html``) for the same clusters. ``spark``: a session (default: the active one, or a new one
    that is stopped at the end). A local ``outdir`` gets the local engine's files (through a temporary
    folder, ``report.json`` last); a URI (``hdfs://…``) gets Spark part-file folders."""
    cfg = (config or DedupConfig()).resolved()
    _check_supported(cfg)
    t_start = time.perf_counter()
    specs = _expand(list(inputs), cfg.input_format)        # inputs and OUTDIR before the JVM starts
    check_fields_apply(specs, cfg.text_field, cfg.id_field)
    if cfg.index is not None:
        if _is_uri(outdir) or _is_uri(cfg.index):
            raise ConfigError("index (--index) with --engine spark needs a local OUTDIR and a local (or mounted) "
                              "index folder: the outputs and the index change are committed together, by renames "
                              f"on one file system; got -o {outdir} --index {cfg.index}")
        from ..pipeline.dedup import check_index_path  # noqa: PLC0415

        check_index_path(cfg.index, outdir, specs)
    if _is_uri(outdir):
        if any(s.pipe for s in specs):
            raise ConfigError("standard input or a pipe can be read by --engine spark only into a local OUTDIR "
                              "(it is copied there first)")
        with _session(spark, cfg) as session:
            return _run(session, specs, cfg, outdir, None, command, t_start)
    from ..pipeline.dedup import _open_index  # noqa: PLC0415

    with StagedOutput(outdir, specs) as stage, _open_index(cfg) as index:
        specs = spool(specs, stage.work)
        with _session(spark, cfg) as session:
            report = _run(session, specs, cfg, stage.out, stage.out, command, t_start, index)
        shutil.rmtree(os.path.join(stage.out, "_spark"), ignore_errors=True)
        stage.commit()
    return report


def _local_master() -> bool:
    """Whether a session made here runs in local mode (no master given by spark-submit or MASTER)."""
    master = os.environ.get("MASTER", "")
    return (not master or master.startswith("local")) and "--master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


@contextlib.contextmanager
def _session(spark, cfg: DedupConfig):
    """The session to run on: the one given, the active one, or a new one stopped at the end. A new
    local one runs its Python workers with this very interpreter (``PYSPARK_PYTHON``), so
    ``.venv/bin/neardup dedup --engine spark`` works without activating the environment, uses
    4 shuffle partitions per CPU (at least 8) unless ``PYSPARK_SUBMIT_ARGS`` sets them, and logs only
    fatal messages (``NEARDUP_SPARK_LOG_LEVEL`` to see more). A failure inside a Python worker
    reaches the caller as one :class:`~neardup.errors.WorkerError` line (the worker's own error,
    the JVM's trace chained)."""
    from pyspark.errors import PythonException  # noqa: PLC0415

    own = spark is None and SparkSession.getActiveSession() is None
    if spark is None:
        builder = SparkSession.builder.appName("neardup dedup")
        if cfg.quiet or not sys.stderr.isatty():
            builder = builder.config("spark.ui.showConsoleProgress", "false")
        if own and _local_master() and not os.environ.get("PYSPARK_PYTHON"):
            os.environ["PYSPARK_PYTHON"] = sys.executable     # read by the SparkContext for its workers
        if own and _local_master() and "spark.sql.shuffle.partitions" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
            # Spark's default of 200 shuffle partitions is for clusters: on one machine each is a task
            # with a Python worker (a 40-document run: 113 s with 200, 49 s with 8)
            builder = builder.config("spark.sql.shuffle.partitions", str(max(8, 4 * cpu_count())))
        spark = builder.getOrCreate()
        if own:   # a failing task is neardup's one line, not pages of executor log (NEARDUP_SPARK_LOG_LEVEL)
            spark.sparkContext.setLogLevel(os.environ.get("NEARDUP_SPARK_LOG_LEVEL", "FATAL"))
    try:
        yield spark
    except PythonException as exc:
        raise WorkerError(f"a Spark Python worker failed: {_worker_error(str(exc))}") from exc
    finally:
        if own:
            spark.stop()


def _worker_error(message: str) -> str:
    """The last Python error line of a worker's traceback (``ModuleNotFoundError: No module …``)."""
    lines = [ln.strip() for ln in message.splitlines()]
    errs = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", ln)]
    return errs[-1] if errs else (next((ln for ln in lines if ln), "") or "unknown error")


def _join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *parts]) if _is_uri(base) else os.path.join(base, *parts)


def _first_message(df: DataFrame, cond, col: str = "err") -> str:
    return df.filter(cond).orderBy("row").select(col).first()[0]


def _run(spark, specs, cfg: DedupConfig, out: str, local: str | None, command: str, t_start: float,
         index=None) -> dict:
    timings: dict = {}
    t0 = time.perf_counter()
    signed, num = _read_signed(spark, specs, cfg)
    signed = signed.repartition(_shuffle_partitions(spark), "row").persist(StorageLevel.MEMORY_AND_DISK)
    _phase(spark, "read + sign")
    st = _signed_stats(signed)
    timings["read_sign"] = time.perf_counter() - t0
    try:
        if st["fatal"]:
            raise InputFormatError(_first_message(signed, F.col("fatal")))
        if st["bad"] and cfg.on_error == "raise":
            raise InputFormatError(_first_message(signed, F.col("err").isNotNull() & ~F.col("blank")))
        if cfg.id_field is not None:
            marked = _mark_duplicate_ids(signed, specs, num, cfg)
            if marked is not None:
                signed.unpersist()
                signed = marked
                st = _signed_stats(signed)
        return _finish(spark, specs, cfg, out, local, command, t_start, signed, num, st, timings, index)
    finally:
        signed.unpersist()
        _phase(spark, None)


def _signed_stats(signed: DataFrame):
    return signed.agg(
        F.count(F.lit(1)).alias("rows"),
        F.count("id").alias("docs"),
        F.sum(F.when(F.col("fatal"), 1).otherwise(0)).alias("fatal"),
        F.sum(F.when(F.col("err").isNotNull() & ~F.col("blank"), 1).otherwise(0)).alias("bad"),
        F.sum(F.when(F.col("err").isNotNull(), 1).otherwise(0)).alias("skipped"),
        F.sum(F.when(F.col("err").isNull() & F.col("replaced"), 1).otherwise(0)).alias("replaced"),
        F.sum(F.when(F.col("err").isNull(), F.col("length")).otherwise(0)).alias("chars"),
        F.sum(F.when(F.col("err").isNull() & F.col("empty"), 1).otherwise(0)).alias("empty")).first()


def _row_place(specs, num: _Numbering, row: int) -> str:
    """A row as the local engine names it (:func:`neardup.io.formats.row_place`)."""
    return row_place(specs[_input_of(num, row)], _line_of(specs, num, row))


def _dup_reasons(batches, specs, num):
    """mapInArrow: (row, id, first) of a repeated id → (row, dup_err), the local engine's reason."""
    for batch in batches:
        rows = _column(batch, "row").to_pylist()
        ids = _column(batch, "id").to_pylist()
        firsts = _column(batch, "first").to_pylist()
        out = [f"{_row_place(specs, num, r)}: id {json.loads(i)!r} repeats the id of {_row_place(specs, num, f)}"
               for r, i, f in zip(rows, ids, firsts)]
        yield pa.RecordBatch.from_arrays([pa.array(rows, pa.int64()), pa.array(out, pa.string())],
                                         names=["row", "dup_err"])


def _id_texts(batches):
    """mapInArrow: (row, id JSON) → (row, id JSON, the id's text in clusters.parquet)."""
    from ..pipeline.dedup import parquet_id_text  # noqa: PLC0415

    for batch in batches:
        ids = _column(batch, "id").to_pylist()
        yield pa.RecordBatch.from_arrays([_column(batch, "row"), pa.array(ids, pa.string()),
                                          pa.array([parquet_id_text(json.loads(i)) for i in ids], pa.string())],
                                         names=["row", "id", "text"])


def _check_parquet_ids(signed: DataFrame, specs, num: _Numbering) -> None:
    """The local engine's :func:`~neardup.pipeline.dedup.check_parquet_ids`: the first row whose id
    has the text of an earlier row's different id is refused, naming both rows."""
    texts = signed.filter(F.col("err").isNull()).select("row", "id").mapInArrow(_id_texts,
                                                                                 "row long, id string, text string")
    w = Window.partitionBy("text").orderBy("row").rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    clash = (texts.select("row", "id", "text", F.first("id").over(w).alias("id0"), F.min("row").over(w).alias("r0"))
             .filter(F.col("id") != F.col("id0")).orderBy("row").first())
    if clash is not None:
        from ..pipeline.dedup import check_parquet_ids  # noqa: PLC0415

        check_parquet_ids([json.loads(clash["id0"]), json.loads(clash["id"])],
                          lambda k: _row_place(specs, num, (clash["r0"], clash["row"])[k]))


def _mark_duplicate_ids(signed: DataFrame, specs, num: _Numbering, cfg: DedupConfig):
    """Ids must name one row each (the local rule): a repeated id raises naming both rows, or with
    ``--on-error skip`` the later rows become skipped rows. Returns the marked, persisted table (or
    None when every id is unique)."""
    first = F.min("row").over(Window.partitionBy("id"))
    dups = (signed.filter(F.col("err").isNull() & F.col("id").isNotNull())
            .select("row", "id", first.alias("first")).filter(F.col("row") != F.col("first"))
            .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        n = dups.count()
        if n == 0:
            return None
        if cfg.on_error != "skip":
            r = dups.orderBy("row").first()
            raise InputFormatError(f"{_row_place(specs, num, r['row'])}: id {json.loads(r['id'])!r} is already the "
                                   f"id of {_row_place(specs, num, r['first'])}; ids must be unique ({n} repeated; "
                                   "--on-error skip skips the later rows)")
        reasons = dups.mapInArrow(partial(_dup_reasons, specs=specs, num=num), "row long, dup_err string")
        hit = F.col("dup_err").isNotNull()
        marked = (signed.join(reasons, "row", "left")
                  .withColumn("err", F.coalesce(F.col("err"), F.col("dup_err")))
                  .withColumn("id", F.when(hit, F.lit(None)).otherwise(F.col("id")))
                  .withColumn("empty", F.when(hit, F.lit(None)).otherwise(F.col("empty")))
                  .select(*signed.columns)
                  .repartition(_shuffle_partitions(signed.sparkSession), "row")
                  .persist(StorageLevel.MEMORY_AND_DISK))
        marked.count()
        return marked
    finally:
        dups.unpersist()


def _shingles_cfg(cfg: DedupConfig) -> DedupConfig:
    """The configuration that signs rows with their distinct shingle hashes (``sh``, ``size``) for
    ``--verify borderline``: the run's, with verify="exact". A datasketch scheme's signer keeps no
    shingle hashes, so those rows are signed as oph: the shingles do not depend on the scheme (one
    shingler, as the local engine's re-read uses), and only ``sh`` and ``size`` are used."""
    scheme = "oph" if cfg.scheme.startswith("datasketch") else cfg.scheme
    return DedupConfig(**{**asdict(cfg), "verify": "exact", "scheme": scheme})


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


def _finish(spark, specs, cfg, out, local, command, t_start, signed, num, st, timings, index=None) -> dict:
    part = None
    docs = signed
    if index is not None:     # the indexed documents the new rows match join the clustering, first
        _phase(spark, "index")
        t0 = time.perf_counter()
        part = _index_part(spark, specs, signed, num, cfg, index)
        if part.fixed is not None:
            docs = part.fixed.unionByName(signed).repartition(_shuffle_partitions(spark), "row") \
                .persist(StorageLevel.MEMORY_AND_DISK)
        timings["index_query"] = time.perf_counter() - t0
    try:
        found = find_clusters(docs, cfg, fixed=docs is not signed, exact_rows=_exact_rows(spark, specs, num, cfg))
    finally:
        if docs is not signed:
            docs.unpersist()
    timings.update(found.timings)
    n_docs = int(st["docs"])
    drop = removed = None
    m = len(part.keys) if part is not None else 0
    try:
        _phase(spark, "write")
        t0 = time.perf_counter()
        table = _per_row(signed, found, part.fixed.select("row", "id") if m else None)
        drop = table.filter(~F.col("kept")).select("row").persist(StorageLevel.MEMORY_AND_DISK)
        ours = found.assign.filter(F.col("row") >= 0)    # an index's rows are not outputs
        removed = ours.filter(F.col("row") != F.col("rep")).persist(StorageLevel.MEMORY_AND_DISK)
        n_removed = removed.count()
        parts = _join(out, "_spark") if local is not None else out
        if cfg.clusters_format == "parquet":
            _check_parquet_ids(signed, specs, num)
        kept_dir = _join(out, "kept")
        if local is not None:
            for spec in specs:           # pass 2 re-reads the inputs: they must be as pass 1 saw them
                if not _is_uri(spec.path):
                    check_stamp(spec)
            os.makedirs(kept_dir)
        used: set = set()
        outputs = []
        starts = num.starts
        in_expr = F.lit(0)
        for fi, s in enumerate(starts[1:], 1):
            in_expr = F.when(F.col("row") >= s, F.lit(fi)).otherwise(in_expr)
        kept_per = {r["fi"]: r["n"] for r in table.filter(F.col("kept")).groupBy(in_expr.alias("fi"))
                    .agg(F.count(F.lit(1)).alias("n")).collect()}
        for fi, spec in enumerate(specs):
            name = output_name(spec, used)
            if local is not None:
                _write_kept(spark, spec, fi, num, cfg, drop, os.path.join(parts, f"kept-{fi}"),
                            os.path.join(kept_dir, name))
            else:
                _write_kept(spark, spec, fi, num, cfg, drop, _join(kept_dir, name), None)
            outputs.append({"input": spec.label, "format": spec.fmt, "output": f"kept/{name}",
                            "rows": num.rows[fi], "kept": int(kept_per.get(fi, 0))})
        cname = f"clusters.{cfg.clusters_format}"
        if local is not None:
            _write_clusters(spark, table, cfg, os.path.join(parts, "clusters"), os.path.join(local, cname), m > 0)
        else:
            _write_clusters(spark, table, cfg, _join(out, cname), None, m > 0)
        n_pairs = None
        if cfg.pairs:
            ids = signed.filter(F.col("err").isNull()).select("row", "id")
            if m:
                ids = ids.unionByName(part.fixed.select("row", "id"))
            n_pairs = found.edges.count()
            if local is not None:
                _write_pairs(found, ids, os.path.join(parts, "pairs"), os.path.join(local, "pairs.parquet"))
            else:
                _write_pairs(found, ids, _join(out, "pairs.parquet"), None)
        timings["write"] = time.perf_counter() - t0

        # -- report ---------------------------------------------------------------------------------------
        _phase(spark, "report")
        sizes = (ours.groupBy("rep").agg(F.count(F.lit(1)).alias("s")).filter(F.col("s") > 1).groupBy("s")
                 .agg(F.count(F.lit(1)).alias("k")).collect())
        hist = np.zeros(SIMILARITY_BINS, dtype=np.int64)
        for r in removed.select("sim").mapInArrow(_histogram_batches, "bin int, n long").groupBy("bin") \
                .agg(F.sum("n").alias("n")).collect():
            hist[r["bin"]] = r["n"]
        dist = None
        if cfg.method == "simhash":
            d = removed.select(F.round(F.lit(64.0) * (F.lit(1.0) - F.col("sim"))).cast("int").alias("d")) \
                .groupBy("d").count().collect()
            dist = np.zeros(max([r["d"] for r in d], default=-1) + 1, dtype=np.int64)
            for r in d:
                dist[r["d"]] = r["count"]
        samples = _sample_pairs(removed, n_removed, cfg.samples)
        want = {x for k, d, _ in samples for x in (k, d)}
        ids = {r["row"]: json.loads(r["id"]) for r in signed.filter(F.col("row").isin(list(want)))
               .select("row", "id").collect()} if want else {}
        texts = _fetch_texts(spark, specs, cfg, num, {r for r in want if r >= 0})
        for r in want:
            if r < 0:                  # a document of the index
                ids[r] = part.keys[r + m]
                texts[r] = INDEXED_TEXT
        index_info = None
        if part is not None:
            by_index = removed.filter(F.col("rep") < 0).count()
            n_kept = sum(o["kept"] for o in outputs)
            index_info = {"path": os.path.abspath(cfg.index), "documents_before": part.documents,
                          "matched_documents": m, "removed_by_index": int(by_index),
                          "added": 0 if part.rerun else int(n_kept), "rerun": part.rerun}
        skipped_rows = (signed.filter(F.col("err").isNotNull()).orderBy("row").select("row", "err")
                        .limit(SKIPPED_LISTED).collect()) if st["skipped"] else []
        timings["total"] = time.perf_counter() - t_start
        sc = spark.sparkContext
        report = build_report(RunSummary(
            cfg=cfg, command=command, engine="spark", inputs=[s.label for s in specs], outputs=outputs,
            n_rows=num.total, n_docs=n_docs, removed=n_removed, n_skipped=int(st["skipped"]),
            skipped=[(specs[_input_of(num, r["row"])].label, _line_of(specs, num, r["row"]), r["err"])
                     for r in skipped_rows],
            empty=int(st["empty"] or 0), replaced=int(st["replaced"] or 0), chars=int(st["chars"] or 0),
            candidates=found.candidates, verified=found.verified,
            cluster_sizes={int(r["s"]): int(r["k"]) for r in sizes}, similarity_counts=hist.tolist(),
            samples=[(ids.get(k), ids.get(d), s, texts.get(k, ""), texts.get(d, "")) for k, d, s in samples],
            timings=timings,
            lsh=(found.params["b"], found.params["r"], found.params["lsh_mode"]) if cfg.method == "minhash" else None,
            simhash=(dist.tolist(), found.params["fingerprints"]) if dist is not None else None,
            engine_info={"version": spark.version, "master": sc.master, "default_parallelism": sc.defaultParallelism,
                         "shuffle_partitions": _shuffle_partitions(spark), "component_rounds": found.rounds},
            index=index_info,
            extra={"borderline": found.params["borderline"]} if "borderline" in found.params else {}))
        if n_pairs is not None:
            report["pairs"] = {"output": "pairs.parquet", "pairs": int(n_pairs)}
        if local is not None:
            write_report(report, local, cfg.html)        # the local engine's writer, report.html included
        else:
            data = json.dumps(report, indent=2, ensure_ascii=False, default=json_default) + "\n"
            _write_file(spark, _join(out, "report.json"), data.encode("utf-8", "backslashreplace"))
        if part is not None and not part.rerun:   # outputs staged in full: the index changes, then they go in place
            _add_kept(signed, table, cfg, index, part.key)
        return report
    finally:
        found.unpersist()
        for df in (drop, removed):
            if df is not None:
                df.unpersist()


# -- --index: the documents of a persistent index as fixed rows ------------------------------------------
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


def _index_reader(path: str, method: str, token: str):
    """The index opened read-only in this Python worker, once per run (``token``); a reader sees the
    manifest's newest generation at every probe, while the driver holds the writer's lock."""
    idx = _READERS.get((path, token))
    if idx is None:
        from ..index.disk import DiskIndex, SimHashDiskIndex  # noqa: PLC0415

        for old in list(_READERS):
            _READERS.pop(old).close()
        cls = DiskIndex if method == "minhash" else SimHashDiskIndex
        idx = _READERS[(path, token)] = cls.open(path, readonly=True)
    return idx


def _index_matches(batches, path, cfg_json, hidden, token):
    """mapInArrow: (row, sig, empty) of new documents → (doc, id, sig) of the indexed documents that
    match any of them by the index's own probe (:func:`neardup.pipeline.incremental.matched_rows`,
    what the local engine calls on all rows at once: a query's matches do not depend on the others)."""
    from ..pipeline.incremental import matched_rows  # noqa: PLC0415

    cfg = DedupConfig(**json.loads(cfg_json))
    idx = _index_reader(path, cfg.method, token)
    dtype = _sig_dtype(cfg)
    idx.store.hide(hidden)
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            values = _binary_rows(_column(batch, "sig"), dtype)
            empty = _column(batch, "empty").to_numpy(zero_copy_only=False).astype(bool)
            docs, keys, vals = matched_rows(idx, values, empty, cfg)
            if not keys:
                continue
            yield pa.RecordBatch.from_arrays([
                pa.array(docs, pa.int64()), pa.array([_dump_id(k) for k in keys], pa.string()),
                _binary_array(np.asarray(vals, dtype=dtype).reshape(len(keys), -1))], names=["doc", "id", "sig"])
    finally:
        idx.store.hide(())


def _bad_ids(batches):
    """mapInArrow: (row, id JSON) → the rows whose id cannot be an index key
    (:func:`neardup.pipeline.incremental.is_key`)."""
    from ..pipeline.incremental import is_key  # noqa: PLC0415

    for batch in batches:
        ids = _column(batch, "id").to_pylist()
        bad = [k for k, i in enumerate(ids) if i is not None and not is_key(json.loads(i))]
        yield batch.take(pa.array(bad, pa.int64())) if bad else batch.slice(0, 0)


def _index_part(spark, specs, signed: DataFrame, num: _Numbering, cfg: DedupConfig, index) -> _IndexPart:
    """The local engine's :func:`neardup.pipeline.incremental.matched` on Spark: ids checked, this
    run's record looked up, the new rows probed against the index on the executors (each opens the
    folder read-only), the matched documents gathered on the driver (at most one per new row: their
    signatures, not their texts) and numbered before every new row."""
    from ..kernels.lsh import row_keys  # noqa: PLC0415
    from ..pipeline.incremental import check_ids, rerun_view, run_key  # noqa: PLC0415

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
    import uuid  # noqa: PLC0415

    fn = partial(_index_matches, path=os.path.abspath(cfg.index), cfg_json=_cfg_json(cfg), hidden=sorted(hidden),
                 token=uuid.uuid4().hex)
    got = (docs.select("row", "sig", "empty").mapInArrow(fn, "doc long, id string, sig binary")
           .dropDuplicates(["doc"]).toArrow())
    m = got.num_rows
    if m == 0:
        return _IndexPart(None, [], documents, rerun, key)
    order = np.argsort(got.column("doc").to_numpy(), kind="stable")
    got = got.take(pa.array(order))
    ids = got.column("id").to_pylist()
    dtype = _sig_dtype(cfg)
    values = _binary_rows(got.column("sig").combine_chunks(), dtype)
    rk = row_keys(np.ascontiguousarray(values)).view(np.int64) if cfg.method == "minhash" \
        else values[:, 0].view(np.int64)
    no = pa.array(np.zeros(m, bool))
    table = pa.table({
        "row": pa.array(np.arange(-m, 0, dtype=np.int64)), "id": pa.array(ids, pa.string()),
        "err": pa.nulls(m, pa.string()), "blank": no, "fatal": no, "replaced": no,
        "length": pa.array(np.zeros(m, np.int64)),
        "score": pa.array(np.full(m, 0.0 if cfg.keep == "first" else np.inf)),   # they win their clusters
        "sig": got.column("sig"), "empty": no, "sig_empty": no, "size": pa.array(np.zeros(m, np.int64)),
        "rk": pa.array(rk, pa.int64()), "sh": pa.nulls(m, pa.binary())})
    fixed = spark.createDataFrame(table, schema=_SIGNED)
    return _IndexPart(fixed, [json.loads(i) for i in ids], documents, rerun, key)


def _add_kept(signed: DataFrame, table: DataFrame, cfg: DedupConfig, index, key: str) -> None:
    """The kept new rows into the index as one segment with this run's record (the local
    :func:`neardup.pipeline.incremental.add_kept`): their ids and signatures gathered on the driver
    in row order (k × 4 bytes each, no text)."""
    from ..pipeline.incremental import add_kept  # noqa: PLC0415

    kept = (table.filter(F.col("kept")).select("row").join(signed.select("row", "id", "sig", "empty"), "row")
            .orderBy("row").toArrow())
    values = _binary_rows(kept.column("sig").combine_chunks(), _sig_dtype(cfg))
    empty = kept.column("empty").to_numpy(zero_copy_only=False).astype(bool)
    add_kept(index, [json.loads(i) for i in kept.column("id").to_pylist()], values, empty, key, cfg)


def _input_of(num: _Numbering, row: int) -> int:
    fi = 0
    for i, s in enumerate(num.starts):
        if row >= s:
            fi = i
    return fi


def _line_of(specs, num: _Numbering, row: int) -> int:
    fi = _input_of(num, row)
    return row - num.starts[fi] + (2 if specs[fi].fmt == "csv" else 1)


def _sample_pairs(removed: DataFrame, n_removed: int, n: int) -> list[tuple[int, int, float]]:
    """The local engine's sample pairs (:func:`neardup.pipeline.report.sample_ranks` in the order
    (similarity, row)) — only the chosen ranks reach the driver."""
    ranks = sample_ranks(n_removed, n)
    if not ranks:
        return []
    want = set(ranks)
    got = (removed.select("sim", "row", "rep").orderBy("sim", "row").rdd.zipWithIndex()
           .filter(lambda x: x[1] in want).map(lambda x: (x[1], x[0][2], x[0][1], x[0][0])).collect())
    by_rank = {k: (int(rep), int(d), float(s)) for k, rep, d, s in got}
    return [by_rank[k] for k in ranks]


def _fetch_texts(spark, specs, cfg: DedupConfig, num: _Numbering, rows: set) -> dict:
    """Texts of a few rows (report samples): the inputs are scanned, only those rows parsed."""
    if not rows:
        return {}
    out: dict = {}
    cj = _cfg_json(DedupConfig(**{**asdict(cfg), "method": "exact", "keep": "first"}))
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
