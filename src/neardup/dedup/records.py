"""The record each input row gets in ``clusters.jsonl`` / ``clusters.parquet``, defined once for both
engines (the local one formats it in the main process, the Spark one on its executors).

A document's record: ``{"id", "cluster", "kept", "similarity", "status", "row", "empty"}`` — ``cluster``
is the kept representative's id, ``similarity`` the similarity to it rounded to 6 digits, ``status``
``kept`` or ``duplicate``. A duplicate's record goes on with ``"decided"``: how it was decided
(:data:`~neardup.dedup.finish.ROW_HOW`: ``identical``, ``estimate``, ``exact``, ``candidate``, or
``contained`` — removed by the directed containment rule, followed by ``"contained_in"``: the id of the
kept document that holds it); a row removed for a document of the index ends with ``"indexed": true``.
A skipped row's: ``{"id": null, "cluster": null, "kept": false, "similarity": null, "status": "skipped",
"row", "reason"}``. Each JSON line is exactly
``json.dumps(record, ensure_ascii=False)`` (written with lone surrogates as JSON escapes); the lines
of documents are formatted directly, each id encoded once (3× faster at a million rows).

Parquet holds ids as text (:func:`parquet_id_text`); two different ids with one text are refused
before anything is written (:func:`check_parquet_ids`).

The local engine's writers are here too: the kept rows of each input in its own format
(:func:`write_rows`, through :mod:`neardup.io.formats`), the records (:func:`write_clusters`) and
``pairs.parquet`` (:func:`write_pairs`), all from the run's :class:`~.tables.Corpus`.
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .._arrays import arrow_binaries, arrow_int64, int64_values
from ..config import DedupConfig
from ..errors import InputFormatError
from ..io.formats import output_name, write_edited, write_kept
from ..io.ids import id_json, parquet_id_text
from .finish import ROW_CONTAINED, ROW_HOW
from .progress import begin
from .tables import Corpus

if TYPE_CHECKING:
    from .result import DuplicateResult

PARQUET_COLUMNS = ("id", "cluster", "kept", "similarity", "status", "row", "reason", "empty", "decided",
                   "contained_in")


def decided_tail(decided: str | None, cluster_text: str) -> str:
    """What a duplicate's record says of its decision (before ``"indexed"``): ``, "decided": "…"`` and,
    for ``contained``, ``, "contained_in": <the kept document's id>``; nothing for a kept row."""
    if decided is None:
        return ""
    if decided == "contained":
        return f', "decided": "contained", "contained_in": {cluster_text}'
    return f', "decided": "{decided}"'


def document_line(id_text: str, cluster_text: str, kept: bool, similarity: float, row: int, empty: bool,
                  indexed: bool = False, decided: str | None = None) -> str:
    """The line of a document (ids already as JSON text), without its newline (see the module
    docstring); ``decided``: the duplicate's decision word (None for a kept row)."""
    tail = ', "indexed": true}' if indexed else "}"
    return (f'{{"id": {id_text}, "cluster": {cluster_text}, "kept": {"true" if kept else "false"}, '
            f'"similarity": {round(float(similarity), 6)!r}, "status": "{"kept" if kept else "duplicate"}", '
            f'"row": {row}, "empty": {"true" if empty else "false"}'
            f'{"" if kept else decided_tail(decided, cluster_text)}{tail}')


def skipped_line(row: int, reason: str) -> str:
    """The line of a skipped row, without its newline."""
    return json.dumps({"id": None, "cluster": None, "kept": False, "similarity": None, "status": "skipped",
                       "row": row, "reason": reason}, ensure_ascii=False)


def parquet_schema(indexed: bool = False):
    """The columns of clusters.parquet; with ``indexed`` (runs with ``--index``) a last boolean column
    ``indexed``: the row's cluster is a document of the index."""
    cols = [("id", pa.string()), ("cluster", pa.string()), ("kept", pa.bool_()),
            ("similarity", pa.float64()), ("status", pa.string()), ("row", pa.int64()),
            ("reason", pa.string()), ("empty", pa.bool_()), ("decided", pa.string()), ("contained_in", pa.string())]
    return pa.schema(cols + ([("indexed", pa.bool_())] if indexed else []))


def parquet_batch(rows, ids, clusters, kept, similarity, reasons, empty, decided, indexed=None):
    """One Arrow record batch of clusters.parquet. Per row: ``ids``/``clusters`` are id values (None
    for a skipped row), ``reasons`` the skip reason or None, ``decided`` the decision word (None for
    a kept or skipped row); the rest as in the JSON record."""
    skip = [r is not None for r in reasons]
    cols = [
        [None if s else parquet_id_text(v) for v, s in zip(ids, skip)],
        [None if s else parquet_id_text(v) for v, s in zip(clusters, skip)],
        [bool(k) and not s for k, s in zip(kept, skip)],
        [None if s else round(float(x), 6) for x, s in zip(similarity, skip)],
        ["skipped" if s else ("kept" if k else "duplicate") for k, s in zip(kept, skip)],
        [int(r) for r in rows],
        list(reasons),
        [None if s else bool(e) for e, s in zip(empty, skip)],
        [None if s or k else d for d, k, s in zip(decided, kept, skip)],
        [parquet_id_text(c) if d == "contained" and not s and not k else None
         for c, d, k, s in zip(clusters, decided, kept, skip)],
    ]
    if indexed is not None:
        cols.append([bool(x) for x in indexed])
    schema = parquet_schema(indexed is not None)
    return pa.RecordBatch.from_arrays([pa.array(c, schema.field(i).type) for i, c in enumerate(cols)],
                                      schema=schema)


def pairs_schema(same_cluster: bool = True):
    """The columns of pairs.parquet (``--pairs``), one row per verified pair, a before b in input order:
    ``id_a``/``id_b`` (ids as text, as in clusters.parquet), ``row_a``/``row_b`` (input rows; ``row_b``
    null where b is a document of the index, ``--index``), ``similarity`` (full precision),
    ``decided`` (``identical``, ``estimate``, ``exact`` or ``candidate``: see
    :data:`neardup.dedup.verify.HOW`) and ``same_cluster`` (False where bounded linkage kept the two
    apart; not in a join's, ``neardup pairs``). Rows of identical signatures appear as links from the
    first such row to each other one (in a join: as every pair among them)."""
    return pa.schema([("id_a", pa.string()), ("id_b", pa.string()), ("row_a", pa.int64()), ("row_b", pa.int64()),
                      ("similarity", pa.float64()), ("decided", pa.dictionary(pa.int8(), pa.string()))]
                     + ([("same_cluster", pa.bool_())] if same_cluster else []))


def id_key(v):
    """Equality of ids as they are written: 1, 1.0, True and "1" are four different ids."""
    t = type(v)
    if t in (str, int, float, bool):
        return (t.__name__, v)
    return ("json", json.dumps(v, sort_keys=True, ensure_ascii=False, default=str))


def duplicate_ids(ids: list) -> list[tuple[int, int]]:
    """(later document, first document with the same id) for every repeated id, in document order:
    ids hashed into an int64 array and sorted (a collision of hashes is confirmed by equality)."""
    n = len(ids)
    if n < 2:
        return []
    kinds = set(map(type, ids))
    v = int64_values(ids, kinds)
    if v is not None:                # integers alone (the common case): equal ids are equal numbers
        order = np.argsort(v, kind="stable")      # equal ids in document order
        vs = v[order]
        start = np.concatenate(([True], vs[1:] != vs[:-1]))
        first = order[np.flatnonzero(start)][np.cumsum(start) - 1]
        later = ~start
        pairs = np.stack([order[later], first[later]], axis=1)
        pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
        return [tuple(p) for p in pairs.tolist()]
    keys = ids if kinds == {str} else [id_key(v) for v in ids]     # strings: equal as their keys are
    h = np.fromiter(map(hash, keys), dtype=np.int64, count=n)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    same = np.flatnonzero(hs[1:] == hs[:-1])
    if same.shape[0] == 0:
        return []
    out = []
    first_of: dict = {}
    for j in np.unique(np.concatenate([same, same + 1])):
        d = int(order[j])
        k = keys[d]
        if k in first_of:
            out.append((d, first_of[k]))
        else:
            first_of[k] = d
    out.sort()
    return out


def check_parquet_ids(ids, place) -> None:
    """clusters.parquet holds ids as text, so two different ids with one text (``1`` and ``"1"``)
    would read the same there: refused, naming both rows (``place(d)``), before anything is written."""
    seen: dict = {}
    for d, v in enumerate(ids):
        text = parquet_id_text(v)
        first = seen.setdefault(text, (d, id_key(v)))
        if first[1] != id_key(v):
            raise InputFormatError(f"{place(d)}: id {v!r} and the id {ids[first[0]]!r} of {place(first[0])} are "
                                   f"different ids with the same text {text!r} in clusters.parquet; use --format "
                                   "jsonl (which keeps their types) or give the ids one type")


def write_rows(specs, cfg: DedupConfig, corpus: Corpus, out: str, keep_row: np.ndarray, touched_row=None,
               edit=None, step=None) -> list[dict]:
    """Pass 2: each input's kept rows (``keep_row``, per input row) into ``out/kept/`` in its own
    format; rows with ``touched_row`` get their text from ``edit(row, text)`` (None drops the row).
    ``step``: the progress stage its rows count in (else a ``write`` stage of its own). Returns the
    report's ``outputs``."""
    kept_dir = os.path.join(out, "kept")
    os.makedirs(kept_dir)
    used: set = set()
    outputs = []
    g = 0
    own = step is None
    if own:
        step = begin("write", corpus.n_rows)
    for spec, n_rows in zip(specs, corpus.row_source):
        name = output_name(spec, used)
        dest = os.path.join(kept_dir, name)
        if touched_row is None:
            written = write_kept(spec, keep_row[g:g + n_rows], dest)
        else:
            written = write_edited(spec, keep_row[g:g + n_rows], touched_row[g:g + n_rows],
                                   lambda k, text, lo=g: edit(lo + k, text), dest, cfg.text_field)
        outputs.append({"input": spec.label, "format": spec.fmt, "output": os.path.join("kept", name),
                        "rows": n_rows, "kept": written})
        g += n_rows
        step.update(n_rows)
    if own:
        step.end(files=len(specs), kept=sum(o["kept"] for o in outputs))
    return outputs


def row_documents(corpus: Corpus) -> tuple[np.ndarray, dict]:
    """Per input row its document index (−1 for a skipped row), and each skipped row's reason."""
    doc_of_row = np.full(corpus.n_rows, -1, dtype=np.int64)
    doc_of_row[np.asarray(corpus.doc_row, dtype=np.int64)] = np.arange(len(corpus.ids))
    return doc_of_row, {g: reason for g, _, _, reason in corpus.skipped}


def clusters_jsonl_lines(corpus: Corpus, clusters, empty, extra_ids=()):
    """The lines of clusters.jsonl (above), each id encoded once. Representatives from
    ``n`` on are indexed documents (``extra_ids``)."""
    doc_of_row, skipped = row_documents(corpus)
    ids = [id_json(v) for v in corpus.ids]
    n = len(ids)
    ids += [id_json(v) for v in extra_ids]
    rep = clusters.cluster.tolist()
    sim = clusters.similarity.astype(np.float64).tolist()
    words = decision_words(clusters)
    empty_l = empty.tolist()
    for g, d in enumerate(doc_of_row.tolist()):
        if d < 0:
            yield skipped_line(g, skipped[g]) + "\n"
        else:
            r = rep[d]
            yield document_line(ids[d], ids[r], r == d, sim[d], g, empty_l[d], r >= n, words[d]) + "\n"


def decision_words(clusters) -> list:
    """Per row its decision word (None for a kept row; ``estimate`` when the clusters record none)."""
    n = clusters.cluster.shape[0]
    decided = getattr(clusters, "decided", None)
    if decided is None:
        codes = np.where(clusters.cluster == np.arange(n), 255, 1)
    else:
        codes = np.where(clusters.cluster == np.arange(n), 255, np.asarray(decided))
    names = [*ROW_HOW] + [None] * (256 - len(ROW_HOW))
    return [names[c] for c in codes.tolist()]


_ROWS_AT_ONCE = 1 << 16      # rows per Arrow call: its memory, reused from chunk to chunk, stays small


def _id_texts(ids) -> object:
    """Every id as its JSON text (:func:`id_json`), UTF-8 with a lone surrogate as its escape, in an
    Arrow binary array; integer ids are formatted by Arrow (the same digits as ``str``)."""
    v = int64_values(ids)
    if v is not None:
        return arrow_int64(v).cast(pa.large_string()).cast(pa.large_binary())
    return arrow_binaries([id_json(v).encode("utf-8", "backslashreplace") for v in ids])


def write_clusters_jsonl(fh, corpus: Corpus, clusters, empty, extra_ids=()) -> None:
    """clusters.jsonl into the binary file ``fh``: the bytes of :func:`clusters_jsonl_lines` (as a
    UTF-8 file writes them, a lone surrogate as its escape), assembled by Arrow 65,536 rows at a
    time — the ids formatted once, the similarities once per distinct value, every line joined from
    its pieces in one call — instead of a Python f-string per row (1 M rows: 1.3 → 0.4 s). Arrow
    arrays are made from buffers (:func:`~neardup._arrays.arrow_int64`), never by ``pa.array``
    or ``pa.scalar``, which import pandas."""
    import pyarrow.compute as pc  # noqa: PLC0415  (pyarrow.compute: 41 ms of start-up, measured)

    doc_of_row, skipped = row_documents(corpus)
    n = len(corpus.ids)
    ids = _id_texts(corpus.ids)
    if len(extra_ids):
        ids = pa.concat_arrays([ids, _id_texts(list(extra_ids))])
    rep = np.asarray(clusters.cluster, dtype=np.int64)
    sim = np.asarray(clusters.similarity, dtype=np.float64)
    bits, first, which = np.unique(sim.view(np.int64), return_index=True, return_inverse=True)  # (−0.0 ≠ 0.0)
    sims = arrow_binaries([repr(round(float(x), 6)).encode() for x in sim[first].tolist()])
    empty = np.asarray(empty, dtype=bool)
    decided = getattr(clusters, "decided", None)
    codes = np.where(rep == np.arange(rep.shape[0]), 255, 1 if decided is None else np.asarray(decided, dtype=np.int64))

    tails = arrow_binaries([f', "decided": "{w}"'.encode() if i != ROW_CONTAINED else b', "decided": "contained", '
                            b'"contained_in": ' for i, w in enumerate(ROW_HOW)] + [b""])
    ids_or_blank = pa.concat_arrays([ids.cast(pa.large_binary()), arrow_binaries([b""]).cast(pa.large_binary())])

    def either(mask, yes: bytes, no: bytes):
        return arrow_binaries([no, yes]).take(arrow_int64(mask))

    def same(m: int, piece: bytes):
        return arrow_binaries([piece]).take(arrow_int64(np.zeros(m, dtype=np.int64)))

    for lo in range(0, corpus.n_rows, _ROWS_AT_ONCE):
        d_of = doc_of_row[lo:lo + _ROWS_AT_ONCE]
        at = np.flatnonzero(d_of >= 0)
        docs = d_of[at]
        r = rep[docs]
        kept = r == docs
        m = docs.shape[0]
        lines = pc.binary_join_element_wise(
            same(m, b'{"id": '), ids.take(arrow_int64(docs)), same(m, b', "cluster": '), ids.take(arrow_int64(r)),
            either(kept, b', "kept": true, "similarity": ', b', "kept": false, "similarity": '),
            sims.take(arrow_int64(which[docs])),
            either(kept, b', "status": "kept", "row": ', b', "status": "duplicate", "row": '),
            arrow_int64(at + lo).cast(pa.large_string()).cast(pa.large_binary()),
            either(empty[docs], b', "empty": true', b', "empty": false'),
            tails.take(arrow_int64(np.where(kept, len(ROW_HOW), np.minimum(codes[docs], len(ROW_HOW))))),
            ids_or_blank.take(arrow_int64(np.where(~kept & (codes[docs] == ROW_CONTAINED), r, len(ids)))),
            either(r >= n, b', "indexed": true}\n', b'}\n'), same(m, b""))
        if m < d_of.shape[0]:              # skipped rows: their lines put in their places
            gone = np.flatnonzero(d_of < 0)
            extra = arrow_binaries([(skipped_line(g, skipped[g]) + "\n").encode("utf-8", "backslashreplace")
                                    for g in (gone + lo).tolist()])
            place = np.empty(d_of.shape[0], dtype=np.int64)
            place[at] = np.arange(m)
            place[gone] = m + np.arange(gone.shape[0])
            lines = pa.concat_arrays([lines, extra]).take(arrow_int64(place))
        if len(lines):
            _, off, data = lines.buffers()
            o = np.frombuffer(off, dtype=np.int64, count=len(lines) + 1, offset=8 * lines.offset)
            fh.write(memoryview(data)[int(o[0]):int(o[-1])])


def write_clusters(path: str, cfg: DedupConfig, corpus: Corpus, clusters, empty, extra_ids=()) -> None:
    if cfg.clusters_format == "jsonl":   # lone surrogates in ids → JSON escapes (see write_report)
        with open(path, "wb", buffering=1 << 20) as fh:
            write_clusters_jsonl(fh, corpus, clusters, empty, extra_ids)
        return

    doc_of_row, skipped = row_documents(corpus)
    ids, rep, sim = list(corpus.ids) + list(extra_ids), clusters.cluster, clusters.similarity
    words = decision_words(clusters)
    n = len(corpus.ids)
    indexed = [] if not len(extra_ids) else None
    with pq.ParquetWriter(path, parquet_schema(indexed is None)) as writer:
        for lo in range(0, max(corpus.n_rows, 1), 65536):   # an empty input still gets the schema
            part = doc_of_row[lo:lo + 65536].tolist()
            reps = [int(rep[d]) if d >= 0 else -1 for d in part]
            writer.write_batch(parquet_batch(
                range(lo, lo + len(part)),
                [ids[d] if d >= 0 else None for d in part],
                [ids[r] if r >= 0 else None for r in reps],
                [d >= 0 and r == d for d, r in zip(part, reps)],
                [float(sim[d]) if d >= 0 else 0.0 for d in part],
                [skipped[lo + k] if d < 0 else None for k, d in enumerate(part)],
                [bool(empty[d]) if d >= 0 else False for d in part],
                [words[d] if d >= 0 else None for d in part],
                None if indexed is not None else [d >= 0 and r >= n for d, r in zip(part, reps)]))


def write_pairs(path: str, corpus: Corpus, result: DuplicateResult, extra_ids=()) -> int:
    """pairs.parquet (:func:`pairs_schema`): every verified pair of ``result``; documents from
    ``n`` on are the index's (``extra_ids``). Returns the number of pairs."""

    table = result.pairs()
    n = len(corpus.ids)
    ids = [parquet_id_text(v) for v in list(corpus.ids) + list(extra_ids)]
    doc_row = np.asarray(corpus.doc_row, dtype=np.int64)
    with pq.ParquetWriter(path, pairs_schema()) as writer:
        for lo in range(0, max(table.num_rows, 1), 1 << 18):   # no pairs: the schema alone
            part = table.slice(lo, 1 << 18)
            a = part["a"].to_numpy()
            b = part["b"].to_numpy()
            writer.write_batch(pa.record_batch([
                pa.array([ids[i] for i in a.tolist()], pa.string()),
                pa.array([ids[i] for i in b.tolist()], pa.string()),
                pa.array(doc_row[np.minimum(a, max(n - 1, 0))] if n else a, pa.int64(), mask=a >= n),
                pa.array(doc_row[np.minimum(b, max(n - 1, 0))] if n else b, pa.int64(), mask=b >= n),
                part["similarity"].combine_chunks(), part["decided"].combine_chunks(),
                part["same_cluster"].combine_chunks()], schema=pairs_schema()))
    return table.num_rows
