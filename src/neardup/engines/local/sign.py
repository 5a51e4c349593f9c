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

import contextlib
import json
import os
import sys
import tempfile

import numpy as np

from ...config import DedupConfig
from ...errors import ConfigError, OutputError
from ...io.sources import expand_inputs, spool

FORMATS = ("jsonl", "parquet", "npy")


def ids_path(npy_path: str) -> str:
    """Where the ids of an ``.npy`` output go: ``sigs.npy`` → ``sigs.ids.jsonl``."""
    base = npy_path[:-4] if npy_path.endswith(".npy") else npy_path
    return base + ".ids.jsonl"


@contextlib.contextmanager
def replacing(path: str):
    """A temporary file beside ``path`` (yielded as its name) that replaces ``path`` only when the
    block ends without an error."""
    if os.path.isdir(path):
        raise OutputError(f"{path}: is a folder; -o needs a file")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write here ({exc.strerror or exc})") from None
    os.close(fd)
    try:
        yield tmp
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def sign_corpus(inputs: list[str], cfg: DedupConfig):
    """Read and sign ``inputs`` on all cores (``cfg.workers``): returns (values, empty, ids, rows,
    skipped, specs); ``ids`` are the documents' ids (``file:line`` without ``cfg.id_field``),
    ``skipped`` the (row, file, line, reason) of rows left out (``cfg.on_error="skip"``)."""
    from ...dedup.progress import shows_progress  # noqa: PLC0415
    from ...dedup.tables import Corpus  # noqa: PLC0415
    from .run import _spec_of_row  # noqa: PLC0415
    from .warmup import warm_up  # noqa: PLC0415
    from .workers import read_and_sign  # noqa: PLC0415

    cfg = cfg.resolved()
    specs = expand_inputs(list(inputs), cfg.input_format)
    from ...io.formats import check_fields_apply  # noqa: PLC0415

    check_fields_apply(specs, cfg.text_field, cfg.id_field)
    warm_up(cfg, announce=shows_progress(cfg))
    with tempfile.TemporaryDirectory(prefix="neardup-sign-") as work:
        specs = spool(specs, work)
        corpus = Corpus()
        values, empty, _, _ = read_and_sign(specs, cfg, corpus)
    rows = np.asarray(corpus.doc_row, dtype=np.int64)
    if cfg.id_field is None:
        ids = [f"{_spec_of_row(specs, corpus, int(g)).label}:{line}" for g, line in zip(rows.tolist(), corpus.doc_line)]
    else:
        ids = list(corpus.ids)
    return values, np.asarray(empty, dtype=bool), ids, rows, corpus.skipped, specs


def _column_name(cfg: DedupConfig) -> str:
    return {"minhash": "minhash", "simhash": "simhash"}.get(cfg.method, "sentences")


def write_parquet(path_or_file, cfg: DedupConfig, values, empty, ids, rows) -> None:
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    from ..._arrays import arrow_bool, arrow_numeric, arrow_strings  # noqa: PLC0415  (no pandas import)
    from ...dedup.records import parquet_id_text  # noqa: PLC0415

    name = _column_name(cfg)
    if values.ndim == 2 and cfg.method == "minhash":
        k = values.shape[1]
        sig = pa.FixedSizeListArray.from_arrays(arrow_numeric(np.ascontiguousarray(values).reshape(-1)), k)
    else:
        sig = arrow_numeric(np.ascontiguousarray(values).reshape(-1).astype(np.uint64))
    table = pa.table({"id": arrow_strings([parquet_id_text(v) for v in ids]),
                      "row": arrow_numeric(np.asarray(rows, dtype=np.int64)), "empty": arrow_bool(empty), name: sig})
    meta = {b"neardup": json.dumps({"method": cfg.method, **_sig_params(cfg)}).encode()}
    # no dictionary encoding: ids and rows are distinct and MinHash slots nearly so, so Parquet would
    # build a dictionary per column chunk only to drop it (0.21 → 0.03 s for 20 k rows of 128 slots)
    pq.write_table(table.replace_schema_metadata(meta), path_or_file, use_dictionary=False)


def _sig_params(cfg: DedupConfig) -> dict:
    """The parameters a signature depends on (so a reader can tell whether two files compare)."""
    if cfg.method == "minhash":
        return {"num_perm": cfg.num_perm, "scheme": cfg.scheme, "seed": cfg.seed, "tokenizer": cfg.tokenizer,
                "ngram": cfg.ngram, "convert": cfg.convert}
    if cfg.method == "simhash":
        from ...text.dictionaries import file_keys  # noqa: PLC0415

        return {"tokenizer": cfg.tokenizer, "ngram": cfg.ngram, "weighting": cfg.weighting, "idf": cfg.idf,
                "user_dict": cfg.user_dict, "stop_words": cfg.stop_words, "top_n": cfg.top_n, "compat": cfg.compat,
                "convert": cfg.convert, **file_keys(cfg.idf, cfg.user_dict, cfg.stop_words)}
    return {"sentences": cfg.sentences, "convert": cfg.convert}


def write_signatures(inputs: list[str], output: str, cfg: DedupConfig, fmt: str) -> dict:
    """``neardup sign --format parquet|npy``: sign ``inputs`` on all cores into ``output`` (``-``:
    Parquet to standard output). Returns counts (documents, skipped rows, empty documents)."""
    if fmt not in ("parquet", "npy"):
        raise ConfigError(f"format (--format) must be parquet or npy here; got {fmt!r}")
    if output == "-" and fmt == "npy":
        raise ConfigError("--format npy writes two files (the matrix and its ids); give -o FILE.npy")
    if fmt == "npy" and not output.endswith(".npy"):
        raise ConfigError(f"--format npy: -o must name a .npy file; got {output!r}")
    if output != "-":
        for s in expand_inputs(list(inputs), cfg.input_format):
            if not s.pipe and os.path.exists(output) and os.path.samefile(s.path, output):
                raise OutputError(f"{output}: is an input; the signatures would replace it")
    values, empty, ids, rows, skipped, _ = sign_corpus(inputs, cfg)
    if values.ndim == 2 and cfg.method != "minhash":
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
        from ...dedup.records import id_json  # noqa: PLC0415

        with replacing(ids_path(output)) as tmp_ids, replacing(output) as tmp:
            with open(tmp, "wb") as fh:
                np.save(fh, np.ascontiguousarray(values))
            with open(tmp_ids, "w", encoding="utf-8", errors="backslashreplace") as fh:
                fh.writelines(f'{{"id": {id_json(i)}, "row": {int(r)}}}\n' for i, r in zip(ids, rows.tolist()))
    return {"documents": len(ids), "skipped": skipped, "empty": int(empty.sum())}
