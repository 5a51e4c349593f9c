"""A Spark run that finishes on its driver: Spark reads, numbers and signs the rows (the part that grows
with the text), the signed rows come to the driver, and the local engine's own steps finish the run
(:func:`neardup.engines.local.run.finish_run`: index, candidates, verification with the texts
re-read, clusters, kept rows, records, report) — one definition of every rule after signing, and
one Spark job after the numbering.

Taken when the OUTDIR and every input are local paths (the local steps read and write files; the
executors already write a local OUTDIR's part files, so it is local to them too: one machine or a
shared mount) and the values fit :func:`finish_bytes`: rows × the signature's bytes (+ 64 for the
other columns), plus 8 bytes per input byte with ``--verify exact`` (its shingle sets, bounded by
the text's length). They reach the driver collected through its JVM when they fit its budget, else
as Parquet files the executors write into the run's work folder (:func:`_signed_tables`).
Otherwise the run stays on the executors (:mod:`.graph`)."""
from __future__ import annotations

import json
import os
from array import array

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame

from ..._arrays import physical_memory
from ...config import DedupConfig
from ...dedup.methods import method_of
from ...dedup.progress import plain_size
from ...dedup.spans import TextSpool, span_method
from ...dedup.tables import Corpus
from ...errors import InputFormatError
from ...features.shingles import Features
from ...io.formats import InputSpec
from ...io.formats.lines import BLOCK_BYTES
from .columns import _binary_rows, _span_payloads
from .read import _first_line, _Numbering
from .session import _is_uri
from .verify import _csr_sets, _driver_budget, _exact, _sig_dtype


def finish_bytes() -> int:
    """The most bytes of values a run finishes on its driver with: half the driver machine's memory
    (the local engine's own scale: 10 M documents at k = 128 take 5.8 GB), or :data:`FINISH_BYTES`."""
    return FINISH_BYTES if FINISH_BYTES is not None else physical_memory() // 2


# None: :func:`finish_bytes` decides; 0 keeps every step on the executors (the tests run both ways).
FINISH_BYTES: int | None = None


def _need(specs: list[InputSpec], num: _Numbering, cfg: DedupConfig) -> int | None:
    """Bytes of the values a run finished on the driver holds (see the module's docstring); None when
    unknown (``--verify exact`` or a span step over a compressed input)."""
    width = method_of(cfg).row_bytes(cfg)

    need = num.total * (width + 64)             # (+ the row's other columns: id, length, flags)
    # per input byte, at most: 8 for a shingle hash (--verify exact); a span step's units (40 bytes per
    # line, and a line of a word takes 2 bytes or more: 20) or its text (substrings: 1)
    per_byte = (8 if _exact(cfg) else 0) + {None: 0, "substrings": 1}.get(span_method(cfg), 20)
    if per_byte:
        size = plain_size(specs)
        if size is None:
            return None
        need += per_byte * size
    return need


def fits_driver(specs: list[InputSpec], num: _Numbering, cfg: DedupConfig, local: str | None) -> bool:
    """Whether the run finishes on the driver (see the module's docstring); known before any row is
    signed: the rows are counted, the signature's width is fixed. A run with a span step finishes
    there whenever its paths are local, whatever its size: the executors have no span step, and the
    local engine would hold the same on one machine."""
    if local is None or any(_is_uri(s.path) for s in specs):
        return False
    if span_method(cfg):
        return True
    need = _need(specs, num, cfg)
    return need is not None and need <= finish_bytes()


def _files(folder: str) -> list[str]:
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".parquet"))


def _flags(t: pa.Table, name: str) -> np.ndarray:
    return np.asarray(t.column(name).to_numpy(zero_copy_only=False), dtype=bool)


def _collect_bytes(spark) -> int:
    """The most bytes the signed rows are collected through the driver's JVM with: its budget
    (:func:`~.verify._driver_budget`) and at most three quarters of ``spark.driver.maxResultSize`` (1 GiB
    unless set; 0 is no limit)."""
    utils = spark.sparkContext._jvm.org.apache.spark.network.util.JavaUtils
    cap = int(utils.byteStringAsBytes(str(spark.conf.get("spark.driver.maxResultSize", "1g"))))
    return min(_driver_budget(spark), cap * 3 // 4 if cap else _driver_budget(spark))


def _signed_tables(signed: DataFrame, cols: list, need: int | None, folder: str):
    """(``tables(columns)``: the signed rows as Arrow tables of those columns, how they came: "collect" or
    "parquet"), one Spark job for all.
    Collected through the JVM when ``need`` bytes are known and fit :func:`_collect_bytes` (faster: 100k documents
    17.1 s against 20.9 s through files); else written by the executors as Parquet into ``folder``
    and read back a file at a time (the values never sit in the JVM's heap)."""
    frame = signed.select(*cols)
    if need is not None and need <= _collect_bytes(signed.sparkSession):
        table = frame.toArrow()
        return (lambda columns: [table.select(columns)]), "collect"
    frame.write.mode("overwrite").option("compression", "none").parquet(os.path.abspath(folder))
    files = _files(folder)
    return (lambda columns: (pq.read_table(f, columns=columns) for f in files)), "parquet"


def pass1_on_driver(signed: DataFrame, specs: list[InputSpec], num: _Numbering, cfg: DedupConfig, folder: str,
                    spill: str | None = None):
    """The signed rows (``_SIGNED``) brought to the driver (:func:`_signed_tables`) as what the local
    engine's pass 1 leaves: the :class:`~neardup.dedup.tables.Corpus` and the documents' (values,
    empty, sizes, features), in row order, assembled a table at a time. A broken row stops the run
    with the local engine's line (the first in row order), unless ``--on-error skip``; blank rows are
    skipped rows. With a span step, each table's payload joins ``corpus.spans`` as it comes
    (``payload_of_doc``: each document's place there; substrings' text goes to a
    :class:`~neardup.dedup.spans.TextSpool` in ``spill``). Also returns how the rows came
    (:func:`_signed_tables`)."""
    exact = _exact(cfg)
    spanned = span_method(cfg)
    cols = ["row", "id", "err", "blank", "fatal", "replaced", "length", "score", "sig", "empty", "size", "nbytes"]
    extra = (["sh"] if exact else []) + (["span", "tbytes"] if spanned else [])
    tables, how = _signed_tables(signed, cols + extra, _need(specs, num, cfg), folder)
    n = num.total
    # first the rows' status (small columns): which rows are documents, and each document's place
    bad, blank, fatal = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
    seen = np.zeros(n, np.int64)
    errs: dict = {}
    nbytes = np.zeros(n, np.int64)
    for t in tables(["row", "err", "blank", "fatal", "nbytes"]):
        rows = t.column("row").to_numpy().astype(np.int64)
        if rows.shape[0] and (rows.min() < 0 or rows.max() >= n):
            raise RuntimeError(f"Spark signed row {int(rows.max())} of {n} numbered rows")    # (a bug)
        np.add.at(seen, rows, 1)
        e = t.column("err")
        has = np.asarray(e.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        bad[rows] = has
        blank[rows], fatal[rows] = _flags(t, "blank"), _flags(t, "fatal")
        nbytes[rows] = t.column("nbytes").fill_null(0).to_numpy().astype(np.int64)
        errs.update(zip(rows[has].tolist(), e.filter(pa.array(has)).to_pylist()))
    if not (seen == 1).all():
        raise RuntimeError(f"Spark signed {int(seen.sum())} rows where {n} were numbered")    # (a bug)
    for stop in (fatal, (bad & ~blank) if cfg.on_error == "raise" else None):
        if stop is not None and stop.any():
            raise InputFormatError(errs[int(np.argmax(stop))])
    doc = ~bad
    place = np.cumsum(doc) - 1                      # each document's index, in row order
    n_docs = int(doc.sum())
    rows = np.arange(n, dtype=np.int64)
    starts = np.asarray(num.starts, dtype=np.int64)
    fi = np.searchsorted(starts, rows, side="right") - 1 if n else rows
    first_line = np.asarray([_first_line(s) for s in specs], dtype=np.int64)     # (_line_of's rule, per row)
    line = rows - starts[fi] + first_line[fi] if n else rows
    corpus = Corpus()
    corpus.n_rows = n
    corpus.row_source = list(num.rows)
    corpus.skipped = [(g, specs[fi[g]].label, int(line[g]), errs[g]) for g in np.flatnonzero(bad).tolist()]
    doc_rows = rows[doc]
    corpus.doc_row = array("q", doc_rows.tobytes())
    corpus.doc_line = array("q", line[doc].tobytes())
    corpus.blocks = _blocks(specs, num, nbytes, cfg.batch_size)
    del rows, fi, line, bad, blank, fatal, seen, nbytes
    # then the documents' columns, each file's scattered to its documents' places
    method = method_of(cfg)
    matrix = method.slots(cfg) is not None      # (the local engine's layout: k slots per row)
    dtype = _sig_dtype(cfg)
    values = None                                   # (its width: the first file's signatures')
    empty = np.zeros(n_docs, bool)
    lengths = np.zeros(n_docs, np.int64)
    sizes = np.zeros(n_docs, np.int64)
    scores = np.zeros(n_docs, np.float64)
    replaced = 0
    named = cfg.id_field is not None or any(s.fmt == "dir" for s in specs)
    ids: list = [None] * n_docs if named else []
    sets = []
    payload_of_doc = np.zeros(n_docs, np.int64)
    base = 0                                        # documents in corpus.spans so far
    spool = TextSpool(spill) if spanned == "substrings" else None
    corpus.span_text = spool
    try:     # (a run stopped here leaves no spool file behind)
        for t in tables(["row", "id", "replaced", "length", "score", "sig", "empty", "size", *extra]):
            r = t.column("row").to_numpy().astype(np.int64)
            mine = doc[r]
            t = t.filter(pa.array(mine))
            if not len(t):
                continue
            at = place[r[mine]]
            if spanned:
                for got, nb in _span_payloads(t.column("span"), t.column("tbytes"), spanned):    # (in row order)
                    if spool is not None:
                        spool.add(got)
                        got = None
                    corpus.spans.append((got, nb))
                payload_of_doc[at] = base + np.arange(at.shape[0])
                base += at.shape[0]
            sig = _binary_rows(t.column("sig").combine_chunks(), dtype)
            wide = matrix or sig.shape[1] > 1          # (a verified SimHash index's rows: fingerprint and sketch)
            if values is None:
                values = np.zeros((n_docs, sig.shape[1]) if wide else n_docs, dtype=dtype)
            values[at] = sig if wide else sig.reshape(-1)
            empty[at] = _flags(t, "empty")
            lengths[at] = t.column("length").to_numpy().astype(np.int64)
            sizes[at] = t.column("size").to_numpy().astype(np.int64)
            scores[at] = t.column("score").to_numpy(zero_copy_only=False).astype(np.float64)
            replaced += int(_flags(t, "replaced").sum())
            if named:
                for k, i in zip(at.tolist(), t.column("id").to_pylist()):
                    ids[k] = json.loads(i)
            if exact:
                sets.append((at, _csr_sets(t.column("sh"))))
    except BaseException:
        if spool is not None:
            spool.close()
        raise
    if values is None:
        values = method.no_values(cfg)
    corpus.ids = ids if named else array("q", doc_rows.tobytes())      # (the local engine's ids: the rows)
    corpus.lengths = array("q", lengths.tobytes())
    corpus.n_chars = int(lengths.sum())
    corpus.replaced = replaced
    corpus.keys = scores.tolist() if cfg.keep == "key" else [None] * n_docs
    corpus.payload_of_doc = payload_of_doc if spanned else np.arange(n_docs, dtype=np.int64)
    features = _placed_sets(sets, n_docs) if exact else None
    if method.spans:          # (the local engine's pass 1 of a span method: no signatures)
        values = np.arange(n_docs, dtype=np.int64)
    return corpus, (values, empty, sizes if method.sizes else None, features), how


def _blocks(specs: list[InputSpec], num: _Numbering, nbytes: np.ndarray, max_lines: int) -> dict:
    """The local engine's blocks (input → (first line, byte offset, byte length, lines), as
    :func:`~neardup.io.formats.lines.file_blocks` cuts them: at most ``max_lines`` lines, about
    :data:`~neardup.io.formats.lines.BLOCK_BYTES` bytes) of each plain JSON lines file Spark read,
    from its lines' byte counts — so that the borderline band's sets are re-read by block on all
    cores, as the local engine does. An input whose counts do not add up to its size gets none (its
    texts are then re-read line by line)."""
    out = {}
    for fi, spec in enumerate(specs):
        lo, n = num.starts[fi], num.rows[fi]
        if spec.fmt != "jsonl" or spec.compression is not None or not n or not os.path.isfile(spec.path):
            continue
        size = nbytes[lo:lo + n]
        if int(size.sum()) != os.path.getsize(spec.path) or (size <= 0).any():
            continue
        end = np.cumsum(size)
        start = end - size
        k = np.arange(n)
        cut = np.flatnonzero((k[1:] // max_lines != k[:-1] // max_lines)
                             | (start[1:] // BLOCK_BYTES != start[:-1] // BLOCK_BYTES)) + 1
        firsts = np.concatenate([[0], cut])
        lasts = np.concatenate([cut, [n]])
        out[fi] = [(a + 1, int(start[a]), int(end[b - 1] - start[a]), b - a)
                   for a, b in zip(firsts.tolist(), lasts.tolist())]
    return out


def _placed_sets(sets: list, n_docs: int) -> Features:
    """Shingle sets read a file at a time ((places, :class:`Features`) pairs) as one CSR in document order."""
    size = np.zeros(n_docs, np.int64)
    for at, f in sets:
        size[at] = np.diff(f.offsets)
    offsets = np.zeros(n_docs + 1, np.int64)
    np.cumsum(size, out=offsets[1:])
    hashes = np.zeros(int(offsets[-1]), np.uint64)
    for at, f in sets:
        z = np.diff(f.offsets)
        # each hash goes to its document's start there plus its position inside its own set
        hashes[np.repeat(offsets[at] - f.offsets[:-1], z) + np.arange(f.hashes.shape[0])] = f.hashes
    return Features.distinct(hashes, offsets)
