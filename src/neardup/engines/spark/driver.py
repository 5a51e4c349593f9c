"""A Spark run whose signatures fit its driver: Spark reads, numbers and signs the rows (the part that
grows with the text), one collect brings pass 1's tables to the driver, and the local engine's own
steps finish the run there (:func:`neardup.engines.local.run.finish_run`: index, candidates,
verification with the texts re-read, clusters, kept rows, records, report) — one definition of every
rule after signing, and two Spark jobs instead of dozens.

Taken when the OUTDIR and every input are local paths (the local steps read and write files; a
local OUTDIR lands on the driver's disk anyway) and the collected values fit the driver's budget
(:func:`~.verify._driver_budget`: a quarter of ``spark.driver.memory``, at most 4 GB): rows × the
signature's bytes, plus 8 bytes per input byte with ``--verify exact`` (its shingle sets, bounded
by the text's length). Otherwise the run stays on the executors (:mod:`.graph`)."""
from __future__ import annotations

import json
from array import array

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from ...config import DedupConfig
from ...dedup.progress import plain_size
from ...dedup.tables import Corpus
from ...errors import InputFormatError
from ...io.formats import InputSpec
from .columns import _binary_rows
from .read import _Numbering
from .session import _is_uri
from .verify import _csr_sets, _driver_budget, _exact, _sig_dtype

# The most bytes of collected values a run finishes on its driver with, below the driver's own budget
# (:func:`~.verify._driver_budget`). 0 keeps every step on the executors (the tests run both ways).
FINISH_BYTES = 4 << 30


def fits_driver(spark, specs: list[InputSpec], num: _Numbering, cfg: DedupConfig, local: str | None) -> bool:
    """Whether the run finishes on the driver (see the module's docstring); known before any row is
    signed: the rows are counted, the signature's width is fixed."""
    if local is None or any(_is_uri(s.path) for s in specs):
        return False
    width = cfg.num_perm * np.dtype(_sig_dtype(cfg)).itemsize if cfg.method == "minhash" else 8
    need = num.total * (width + 64)             # (+ the row's other columns: id, length, flags)
    if _exact(cfg):
        size = plain_size(specs)
        if size is None:
            return False
        need += 8 * size
    return need <= min(FINISH_BYTES, _driver_budget(spark))


def pass1_on_driver(signed: DataFrame, specs: list[InputSpec], num: _Numbering, cfg: DedupConfig):
    """The signed rows (``_SIGNED``) collected in one Spark job, as the local engine's pass 1 leaves
    them: the :class:`~neardup.dedup.tables.Corpus` and the documents' (values, empty, sizes,
    features). A broken row stops the run with the local engine's line (the first in row order),
    unless ``--on-error skip``; blank rows are skipped rows."""
    cols = ["row", "id", "err", "blank", "fatal", "replaced", "length", "score", "sig", "empty", "size"]
    exact = _exact(cfg)
    t = signed.select(*cols, *(["sh"] if exact else [])).toArrow()
    rows = t.column("row").to_numpy().astype(np.int64)
    order = np.argsort(rows, kind="stable")
    t = t.take(pa.array(order))
    rows = rows[order]
    if rows.shape[0] != num.total or (rows.shape[0] and (rows[0] != 0 or rows[-1] != num.total - 1)):
        raise RuntimeError(f"Spark signed {rows.shape[0]} rows where {num.total} were numbered")   # (a bug)
    bad = np.asarray(t.column("err").is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    fatal = np.asarray(t.column("fatal").to_numpy(zero_copy_only=False), dtype=bool)
    blank = np.asarray(t.column("blank").to_numpy(zero_copy_only=False), dtype=bool)
    errs = t.column("err")
    for stop in (fatal, (bad & ~blank) if cfg.on_error == "raise" else None):
        if stop is not None and stop.any():
            raise InputFormatError(errs[int(np.argmax(stop))].as_py())
    doc = ~bad
    d = t.filter(pa.array(doc))
    corpus = Corpus()
    corpus.n_rows = num.total
    corpus.row_source = list(num.rows)
    starts = np.asarray(num.starts, dtype=np.int64)
    fi = np.searchsorted(starts, rows, side="right") - 1 if rows.shape[0] else np.zeros(0, np.int64)
    first_line = np.asarray([2 if s.fmt == "csv" else 1 for s in specs], dtype=np.int64)
    line = rows - starts[fi] + first_line[fi] if rows.shape[0] else rows
    for g in np.flatnonzero(bad).tolist():
        corpus.skipped.append((g, specs[fi[g]].label, int(line[g]), errs[g].as_py()))
    doc_rows = rows[doc]
    corpus.doc_row = array("q", doc_rows.tobytes())
    corpus.doc_line = array("q", line[doc].tobytes())
    lengths = d.column("length").to_numpy().astype(np.int64)
    corpus.lengths = array("q", lengths.tobytes())
    corpus.n_chars = int(lengths.sum())
    corpus.replaced = int(pc.sum(pc.cast(d.column("replaced"), pa.int64())).as_py() or 0)
    corpus.keys = d.column("score").to_pylist() if cfg.keep == "key" else [None] * len(d)
    if cfg.id_field is None and all(s.fmt != "dir" for s in specs):
        corpus.ids = array("q", doc_rows.tobytes())          # (the local engine's ids: the rows)
    else:
        corpus.ids = [json.loads(i) for i in d.column("id").to_pylist()]
    corpus.payload_of_doc = np.arange(len(d), dtype=np.int64)
    dtype = _sig_dtype(cfg)
    n = len(d)
    if cfg.method == "minhash":
        values = (np.ascontiguousarray(_binary_rows(d.column("sig").combine_chunks(), dtype)) if n
                  else np.zeros((0, cfg.num_perm), dtype=dtype))
        sizes = d.column("size").to_numpy().astype(np.int64)
    else:
        values = _binary_rows(d.column("sig").combine_chunks(), dtype).reshape(-1) if n else np.zeros(0, dtype)
        sizes = None
    empty = np.asarray(d.column("empty").to_numpy(zero_copy_only=False), dtype=bool)
    features = _csr_sets(d.column("sh")) if exact else None
    return corpus, (values, empty, sizes, features)
