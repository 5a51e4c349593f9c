"""Parquet (``.parquet``): streamed by record batch through pyarrow; a null text is an empty
document, a non-string text column is an error row, a null or NaN id is an error row. Kept rows
are written with the input's own Arrow schema. Any error pyarrow raises (not a Parquet file, a
corrupt page) names the file."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import InputFormatError
from .base import Fields, Format, InputSpec, Row, check_count, id_problem, keep_value, key_problem
from .delimited import check_columns


@contextlib.contextmanager
def _named(spec: InputSpec):
    """pyarrow's errors (ArrowInvalid, OSError) as an InputFormatError naming the file."""
    try:
        yield
    except InputFormatError:
        raise
    except (OSError, ValueError, TypeError, KeyError, IndexError) as exc:
        raise InputFormatError(f"{spec.label}: cannot read as Parquet ({exc})") from None


def open_parquet(spec: InputSpec):
    with _named(spec):
        return pq.ParquetFile(spec.path)


class Parquet(Format):
    name = "parquet"
    suffix = ".parquet"

    def read(self, spec: InputSpec, fields: Fields) -> Iterator[Row]:
        pf = open_parquet(spec)
        with _named(spec):
            names = pf.schema_arrow.names
        check_columns(spec.label, names, fields.text, fields.id, fields.key)
        cols = list(dict.fromkeys([fields.text] + [c for c in (fields.id, fields.key) if c is not None]))
        row_no = 0
        batches = pf.iter_batches(columns=cols, batch_size=8192)
        while True:
            with _named(spec):
                batch = next(batches, None)
                if batch is None:
                    return
                data = {c: batch.column(j).to_pylist() for j, c in enumerate(cols)}
            texts = data[fields.text]
            ids = data.get(fields.id) if fields.id is not None else None
            keys = data.get(fields.key) if fields.key is not None else None
            for k, t in enumerate(texts):
                row_no += 1
                if t is not None and not isinstance(t, str):
                    yield Row(row_no, None, None,
                              error=f"{spec.label}: row {row_no}: column {fields.text!r} is not text")
                    continue
                rid = None
                if ids is not None:
                    rid = ids[k]
                    problem = id_problem(rid)
                    if problem is not None:
                        yield Row(row_no, None, None, error=f"{spec.label}: row {row_no}: id column {fields.id!r} "
                                                           f"{problem}")
                        continue
                key = None
                if keys is not None:
                    key, problem = keep_value(keys[k])
                    if problem is not None:
                        yield Row(row_no, None, None, error=key_problem(f"{spec.label}: row {row_no}", fields.key,
                                                                          problem))
                        continue
                yield Row(row_no, rid, "" if t is None else t, key=key)

    def write_edited(self, spec: InputSpec, keep: np.ndarray, touched: np.ndarray, edit, dest: str,
                     text_field: str) -> int:
        pf = open_parquet(spec)
        written = start = 0
        with pq.ParquetWriter(dest, pf.schema_arrow) as w:
            batches = pf.iter_batches(batch_size=8192)
            while True:
                with _named(spec):
                    batch = next(batches, None)
                if batch is None:
                    break
                lo, start = start, start + batch.num_rows
                m = keep[lo:start].copy()
                if m.shape[0] != batch.num_rows:
                    continue              # more rows than pass 1 saw: check_count reports it
                t = None if touched is None else touched[lo:start] & m
                if t is not None and t.any():
                    j = batch.schema.get_field_index(text_field)
                    texts = batch.column(j).to_pylist()
                    for k in np.flatnonzero(t).tolist():
                        new = edit(lo + k, texts[k] or "")
                        if new is None:
                            m[k] = False
                        else:
                            texts[k] = new
                    cols = list(batch.columns)
                    cols[j] = pa.array(texts, type=batch.schema.field(j).type)
                    batch = pa.RecordBatch.from_arrays(cols, schema=batch.schema)
                if m.any():
                    w.write_table(pa.Table.from_batches([batch.filter(pa.array(m))]))
                    written += int(m.sum())
        check_count(spec, keep.shape[0], start)
        return written
