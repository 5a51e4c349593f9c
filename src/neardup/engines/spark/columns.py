"""Executor side of the Spark engine: Arrow columns ↔ NumPy arrays, and the run's signer per worker.

Signatures travel as binary cells (k little-endian uint32, or one uint64), shingle sets as ragged
binary cells; texts as UTF-8 bytes with lone surrogates kept. These functions are top-level so that
Spark pickles them by reference.
"""
from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pyarrow as pa

from ..._arrays import keep_freed_memory
from ...config import DedupConfig, ResolvedConfig
from ...dedup.signing import make_signer
from ...errors import ConfigError
from ...features.shingles import Features
from ...features.units import Units
from ...io.ids import id_json

_SIGNED = ("row long, id string, err string, blank boolean, fatal boolean, replaced boolean, length long, "
           "score double, sig binary, empty boolean, sig_empty boolean, size long, rk long, sh binary, nbytes long, "
           "span binary, tbytes long")


_PARSED = ("_nd_blk long, _nd_mid long, text binary, id string, keyv double, err string, "
           "blank boolean, replaced boolean, fatal boolean")


_SIGNERS: dict = {}


def _signer(cfg_json: str):
    s = _SIGNERS.get(cfg_json)
    if s is None:
        keep_freed_memory()        # this Python worker signs batch after batch, as the local workers do

        s = _SIGNERS[cfg_json] = make_signer(ResolvedConfig(**json.loads(cfg_json)))
    return s


def _column(batch, name):
    return batch.column(batch.schema.get_field_index(name))



def _lists(batch, *names) -> list[list]:
    """The named columns of an Arrow batch as Python lists."""
    return [_column(batch, name).to_pylist() for name in names]


def _binary_rows(arr, dtype) -> np.ndarray:
    """A binary column of equal-width values (no nulls) as an (n, w) matrix of ``dtype``."""
    n = len(arr)
    if n == 0:
        return np.zeros((0, 0), dtype=dtype)
    if arr.null_count:
        raise RuntimeError("signature column has nulls")
    large = pa.types.is_large_binary(arr.type)
    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)[arr.offset: arr.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8)[offs[0]: offs[-1]]
    if data.shape[0] % n:
        raise RuntimeError("signatures of different widths")
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
        raise ConfigError("a batch's shingle sets exceed 2 GiB; use smaller batches")
    bitmap = None if valid.all() else pa.array(valid).buffers()[1]
    data = np.ascontiguousarray(hashes, dtype=np.uint64).tobytes()
    return pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offs.astype(np.int32)), pa.py_buffer(data)],
                                 null_count=int(n - valid.sum()))


def _ragged_features(arr):
    """A binary column of sorted distinct uint64 shingle hashes (:func:`_ragged_array`) as
    :class:`~neardup.features.shingles.Features` (null rows are empty sets)."""
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


def _arrow_text(text):
    """Text for an Arrow string (UTF-8): a lone surrogate as its escape, the bytes the local engine writes."""
    return None if text is None else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _cfg_json(cfg: DedupConfig) -> str:
    return json.dumps(asdict(cfg), sort_keys=True)


# a line/paragraph unit on the wire: hash, start, end, tokens, digest (5 little-endian 64-bit words)
_UNIT_WORDS = 5


# the most bytes of span payload in one output batch: Arrow's binary column has 32-bit offsets
SPAN_BATCH_BYTES = 1 << 30


def _span_arrays(payload, method: str, valid: np.ndarray, limit: int = SPAN_BATCH_BYTES) -> list:
    """A batch's span payload (:func:`neardup.dedup.spans.make_signer`: (units or the UTF-8 bytes, bytes
    per document) of the valid rows) as per-row columns, cut where needed so that each piece holds at
    most ``limit`` bytes: a list of (first row, end row, ``span``, ``tbytes``) — ``span`` (binary: the
    document's units, 40 bytes each, or its UTF-8 bytes), ``tbytes`` (its UTF-8 bytes' count); rows not
    valid are null. A line of at least one word takes at least 2 bytes of text, so lines' payload is
    at most 20 bytes per byte of text: a batch of short-line documents can pass 2 GiB where its text
    does not (hence the cuts)."""
    got, nbytes = payload
    n, m = valid.shape[0], int(np.asarray(nbytes).shape[0])
    if method == "lines":       # (the span signer's two payloads: units, or the text's bytes as they are)
        u: Units = got
        per_doc = np.bincount(u.docs, minlength=m).astype(np.int64) * (8 * _UNIT_WORDS)
        data = np.stack([u.hashes.view(np.int64), u.starts, u.ends, u.tokens, u.digests.view(np.int64)], axis=1)
        data = np.ascontiguousarray(data, dtype=np.int64).view(np.uint8).reshape(-1)
    else:
        per_doc = np.asarray(nbytes, dtype=np.int64)
        data = np.ascontiguousarray(got[:int(per_doc.sum())]).reshape(-1)
    width = np.zeros(n, dtype=np.int64)
    width[valid] = per_doc
    if n and int(width.max()) >= 2**31:
        raise ConfigError(f"one document's span payload is {int(width.max()):,} bytes: more than a Spark binary "
                          "value holds (2 GiB); run it on the local engine")
    offs = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(width, out=offs[1:])
    tb = np.zeros(n, dtype=np.int64)
    tb[valid] = np.asarray(nbytes, dtype=np.int64)
    pieces, lo = [], 0
    while lo < n or not pieces:
        hi = max(lo + 1, int(np.searchsorted(offs, offs[lo] + limit, side="right")) - 1) if n else 0
        hi = min(hi, n)
        v = valid[lo:hi]
        o = offs[lo:hi + 1] - offs[lo]
        bitmap = None if v.all() else pa.array(v).buffers()[1]
        span = pa.Array.from_buffers(pa.binary(), hi - lo, [bitmap, pa.py_buffer(o.astype(np.int32)),
                                                            pa.py_buffer(data[offs[lo]:offs[hi]].tobytes())],
                                     null_count=int((~v).sum()))
        pieces.append((lo, hi, span, pa.array(tb[lo:hi], pa.int64(), mask=~v)))
        lo = hi
    return pieces


def _span_payloads(span, tbytes, method: str):
    """:func:`_span_arrays`' columns (every row valid) back as payloads of the span step, a chunk of the
    column at a time (a whole table's can pass what one Arrow binary array holds), in the rows'
    order: (units, bytes per document) for ``lines``, (the UTF-8 bytes, bytes per document) else."""
    chunks = span.chunks if isinstance(span, pa.ChunkedArray) else [span]
    nbytes_all = np.asarray(tbytes.to_numpy(zero_copy_only=False), dtype=np.int64)
    at = 0
    for chunk in chunks:
        n = len(chunk)
        nbytes = nbytes_all[at:at + n]
        at += n
        bufs = chunk.buffers()
        large = pa.types.is_large_binary(chunk.type)
        offs = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)[chunk.offset: chunk.offset + n + 1]
        offs = offs.astype(np.int64)
        raw = np.frombuffer(bufs[2], dtype=np.uint8)[offs[0]: offs[-1]] if n and bufs[2] is not None \
            else np.zeros(0, np.uint8)
        if method != "lines":   # (substrings: the bytes are the payload; lines: 5-word unit records)
            yield raw, nbytes
            continue
        words = raw.view(np.int64).reshape(-1, _UNIT_WORDS) if raw.shape[0] else np.zeros((0, _UNIT_WORDS), np.int64)
        docs = np.repeat(np.arange(n, dtype=np.int64), np.diff(offs) // (8 * _UNIT_WORDS))
        yield Units(words[:, 0].view(np.uint64).copy(), docs, words[:, 1].copy(), words[:, 2].copy(),
                    words[:, 3].copy(), words[:, 4].view(np.uint64).copy()), nbytes
