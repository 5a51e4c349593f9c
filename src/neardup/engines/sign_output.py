"""The files of ``neardup sign --format parquet|npy``, signed on all cores by
:mod:`neardup.engines.local.sign`. Each file replaces its destination only when it is complete.

* Parquet: ``id`` (text; ``file:line`` without ``--id-field``), ``row`` (input row, from 0 across
  the inputs), ``empty`` (no token: the empty signature), and the signature — ``minhash`` a
  fixed-size list of k unsigned integers (uint32; uint64 for ``bottomk``), ``simhash`` or
  ``sentences`` one uint64; the signature's parameters in the schema's ``neardup`` metadata.
* ``.npy``: the signature matrix alone (n × k, or n for a 64-bit signature), memory-mappable, and
  beside it ``<name>.ids.jsonl``: one line per row with its ``id`` and ``row``.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .._arrays import arrow_bool, arrow_numeric, arrow_strings
from ..dedup.methods import method_of
from ..io.ids import id_json, parquet_id_text
from ..io.outfile import check_output_file, replacing
from ..text.dictionaries import word_files

FORMATS = ("jsonl", "parquet", "npy")


def ids_path(npy_path: str) -> str:
    """Where the ids of an ``.npy`` output go: ``sigs.npy`` → ``sigs.ids.jsonl``."""
    base = npy_path[:-4] if npy_path.endswith(".npy") else npy_path
    return base + ".ids.jsonl"


def check_sign_outputs(output: str, fmt: str, specs, cfg) -> None:
    """The files ``sign --format`` will write — ``output`` and, for ``.npy``, its ids beside it — checked
    by the one rule for output files (:func:`neardup.io.outfile.check_output_file`) against the inputs
    and the word files of ``cfg``."""
    files = word_files(cfg.idf, cfg.user_dict, cfg.stop_words)
    check_output_file(output, specs, files=files)
    if fmt == "npy":
        check_output_file(ids_path(output), specs, what=f"the ids file beside {output}", files=files)


def write_parquet(path_or_file, cfg, values, empty, ids, rows) -> None:
    method = method_of(cfg)
    name = method.column
    if values.ndim == 2 and method.slots(cfg) is not None:
        k = values.shape[1]
        sig = pa.FixedSizeListArray.from_arrays(arrow_numeric(np.ascontiguousarray(values).reshape(-1)), k)
    else:
        sig = arrow_numeric(np.ascontiguousarray(values).reshape(-1).astype(np.uint64))
    table = pa.table({"id": arrow_strings([parquet_id_text(v) for v in ids]),
                      "row": arrow_numeric(np.asarray(rows, dtype=np.int64)), "empty": arrow_bool(empty), name: sig})
    meta = {b"neardup": json.dumps({"method": cfg.method, **method.sig_params(cfg)}).encode()}
    # no dictionary encoding: ids and rows are distinct and MinHash slots nearly so, so Parquet would
    # build a dictionary per column chunk only to drop it (0.21 → 0.03 s for 20 k rows of 128 slots)
    pq.write_table(table.replace_schema_metadata(meta), path_or_file, use_dictionary=False)


def write_npy(output: str, values: np.ndarray, ids: list, rows: np.ndarray) -> None:
    """The matrix to ``output`` (``.npy``) and the ids beside it (:func:`ids_path`), each file
    replacing its destination only when both are written."""
    with replacing(ids_path(output)) as tmp_ids, replacing(output) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(values))
        with open(tmp_ids, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.writelines(f'{{"id": {id_json(i)}, "row": {int(r)}}}\n' for i, r in zip(ids, np.asarray(rows).tolist()))
