"""``neardup sign --format parquet|npy``: a corpus's signatures in a binary table, signed on all cores.

The rows are read and signed exactly as ``neardup dedup``'s pass 1 does (the batch kernels in worker
processes, :func:`neardup.engines.local.workers.read_and_sign`), so a document's signature here is the
one dedup compares. Outputs, one row per document in input order (skipped rows leave none; they are
counted and listed):

* Parquet: ``id`` (text; ``file:line`` without ``--id-field``), ``row`` (input row, from 0 across
  the inputs), ``empty`` (no token: the empty signature), and the signature — ``minhash`` a
  fixed-size list of k unsigned integers (uint32; uint64 for ``bottomk``), ``simhash`` or
  ``sentences`` one uint64.
* ``.npy``: the signature matrix alone (n × k, or n for a 64-bit signature), memory-mappable, and
  beside it ``<name>.ids.jsonl``: one line per row with its ``id`` and ``row``.

Each file replaces its destination only when the run succeeds.
"""
from __future__ import annotations

import sys
import tempfile

import numpy as np

from ...config import DedupConfig
from ...dedup.methods import method_of
from ...dedup.progress import begin, reporting, shows_progress
from ...dedup.tables import Corpus
from ...errors import ConfigError, OutputError
from ...io.formats import check_fields_apply
from ...io.sources import expand_inputs, spool
from ..sign_output import check_sign_outputs, replacing, write_npy, write_parquet
from .run import _spec_of_row
from .warmup import warm_up
from .workers import read_and_sign


def sign_corpus(inputs: list[str], cfg: DedupConfig):
    """Read and sign ``inputs`` on all cores (``cfg.workers``): returns (values, empty, ids, rows,
    skipped, specs); ``ids`` are the documents' ids (``file:line`` without ``cfg.id_field``),
    ``skipped`` the (row, file, line, reason) of rows left out (``cfg.on_error="skip"``)."""

    cfg = cfg.resolved()
    specs = expand_inputs(list(inputs), cfg.input_format)

    check_fields_apply(specs, cfg.text_field, cfg.id_field)
    with reporting(cfg), tempfile.TemporaryDirectory(prefix="neardup-sign-") as work:
        warm_up(cfg, announce=shows_progress(cfg))
        specs = spool(specs, work)
        corpus = Corpus()
        values, empty, _, _ = read_and_sign(specs, cfg, corpus)
    rows = np.asarray(corpus.doc_row, dtype=np.int64)
    if cfg.id_field is None:
        ids = [f"{_spec_of_row(specs, corpus, int(g)).label}:{line}" for g, line in zip(rows.tolist(), corpus.doc_line)]
    else:
        ids = list(corpus.ids)
    return values, np.asarray(empty, dtype=bool), ids, rows, corpus.skipped, specs


def write_signatures(inputs: list[str], output: str, cfg: DedupConfig, fmt: str) -> dict:
    """``neardup sign --format parquet|npy``: sign ``inputs`` on all cores into ``output`` (``-``:
    Parquet to standard output). Returns counts (documents, skipped rows, empty documents)."""
    if fmt not in ("parquet", "npy"):
        raise ConfigError(f"format (--format) must be parquet or npy here; got {fmt!r}")
    if output == "-" and fmt == "npy":
        raise ConfigError("--format npy writes two files (the matrix and its ids); give -o FILE.npy")
    if fmt == "npy" and not output.endswith(".npy"):
        raise ConfigError(f"--format npy: -o must name a .npy file; got {output!r}")
    cfg = cfg.resolved()
    check_sign_outputs(output, fmt, expand_inputs(list(inputs), cfg.input_format), cfg)
    with reporting(cfg):
        values, empty, ids, rows, skipped, _ = sign_corpus(inputs, cfg)
        step = begin("write", len(ids))
        _write(output, fmt, cfg, values, empty, ids, rows)
        step.end(len(ids))
    return {"documents": len(ids), "skipped": skipped, "empty": int(empty.sum())}


def _write(output: str, fmt: str, cfg: DedupConfig, values, empty, ids, rows) -> None:
    if values.ndim == 2 and method_of(cfg).slots(cfg) is None:     # (a verified index's rows: the fingerprint)
        values = values[:, 0]
    if fmt == "parquet":
        if output == "-":
            if sys.stdout is None or getattr(sys.stdout, "closed", False):
                raise OutputError("standard output is closed; give -o FILE")
            write_parquet(sys.stdout.buffer, cfg, values, empty, ids, rows)
            sys.stdout.buffer.flush()
        else:
            with replacing(output) as tmp:
                write_parquet(tmp, cfg, values, empty, ids, rows)
    else:
        write_npy(output, values, ids, rows)
