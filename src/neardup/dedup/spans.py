"""``neardup dedup --method lines|substrings``: repeated spans removed from inside documents, the
documents kept (CCNet's paragraph dedup; Lee et al. 2022's exact substrings).

Pass 1 (shared with the whole-document methods, :mod:`neardup.engines.local`) reads every row; the workers turn
each batch into line/paragraph units (:class:`~neardup.features.units.UnitHasher`, compiled) or
into its UTF-8 bytes (substrings). The main process decides what goes: every unit after the first
with the same normalised tokens (:func:`~neardup.features.units.repeated_units`), or every window
of ``min_length`` bytes seen before (:func:`~neardup.index.suffix.repeated_in_buffer`). Pass 2
re-reads each input and writes every row in its own format, a row with removals with its text
rewritten and every other field unchanged.

Outputs: ``kept/`` (the rows), ``edits.jsonl`` (one record per input row: what was removed, as byte
ranges of the original text's UTF-8 form with a hash of each removed span, so the edit can be
audited and undone from the input), ``report.json``/``report.html`` (most repeated spans, bytes
removed in total and per document). Accounting, checked at the end of every run:
input rows = documents + skipped; input bytes = kept bytes + removed bytes + bytes of dropped
documents (``--min-remaining``), bytes being those of the text field's UTF-8 form.
"""
from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from .._arrays import sorted_unique
from ..config import DedupConfig
from ..errors import InputChangedError
from ..features.units import UnitHasher, Units, pack_raw, repeated_units, utf8
from ..index.suffix import repeated_in_documents
from ..io.formats import check_stamp
from ..io.ids import id_json
from .progress import begin
from .records import row_documents, skipped_line, write_rows
from .report import SKIPPED_LISTED, RunSummary, build_report, similarity_edges, write_report

SPAN_METHODS = ("lines", "substrings")
TOP_SPANS = 50
SPAN_CHARS = 600


def make_signer(cfg: DedupConfig):
    """What a worker computes per batch: ((units or UTF-8 parts, bytes per document), empty, None)."""
    if cfg.method == "lines":
        hasher = UnitHasher(cfg.unit)

        def sign(texts):
            buf, off = pack_raw(texts)
            nbytes = np.diff(off)
            return (hasher.from_buffer(buf, off), nbytes), nbytes == 0, None
        return sign

    def sign(texts):
        buf, off = pack_raw(texts)
        nbytes = np.diff(off)
        return (buf[:int(off[-1])], nbytes), nbytes == 0, None
    return sign


class TextSpool:
    """The documents' UTF-8 bytes for ``substrings``, in the order pass 1 numbers them: each batch's
    buffer appended to one file of the run's work folder as it comes back from a worker (or held in
    memory when there is no work folder), so that the text is not held by the run as Python
    objects; read back as one map of the file (:meth:`buffer`)."""

    #: batches written in the background at most, beyond the one being added
    PENDING = 4

    def __init__(self, folder: str | None):
        self.folder = folder
        self.size = 0
        self.chunks: list = []
        self.fh = None
        self.pending: deque = deque()
        if folder is not None:
            fd, self.path = tempfile.mkstemp(dir=folder, prefix="text-", suffix=".utf8")
            self.fh = os.fdopen(fd, "wb")
            self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="neardup-spool")

    def add(self, buf: np.ndarray) -> None:
        """A batch's bytes appended: written by a thread (the write releases the GIL, so pass 1 goes
        on collecting); a failed write (no space left) raises here, at a later batch, or in
        :meth:`buffer`."""
        if self.fh is not None:
            while len(self.pending) >= self.PENDING:
                self.pending.popleft().result()
            self.pending.append(self.writer.submit(self.fh.write, memoryview(np.ascontiguousarray(buf))))
        else:
            self.chunks.append(buf)
        self.size += int(buf.shape[0])

    def _drain(self) -> None:
        try:
            while self.pending:
                self.pending.popleft().result()
        finally:
            self.writer.shutdown(wait=True, cancel_futures=True)

    def buffer(self) -> np.ndarray:
        """Every byte added, as a writable uint8 array (a private map of the file, removed once
        mapped: its space comes back with the map), never empty."""
        if self.fh is None:
            return np.concatenate([*self.chunks, np.zeros(1, dtype=np.uint8)])
        try:
            self._drain()
        finally:
            self.fh.close()
        if self.size == 0:
            os.unlink(self.path)
            return np.zeros(1, dtype=np.uint8)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            mm = mmap.mmap(fd, self.size, access=mmap.ACCESS_COPY)
        finally:
            os.close(fd)
            os.unlink(self.path)
        return np.frombuffer(mm, dtype=np.uint8)

    def close(self) -> None:
        """The file removed (a run that stops before :meth:`buffer`)."""
        if self.fh is not None and not self.fh.closed:
            with contextlib.suppress(Exception):
                self._drain()
            self.fh.close()
            with contextlib.suppress(OSError):
                os.unlink(self.path)


class _Ranges:
    """Removed byte ranges of the documents (CSR by document) with the XXH64 ``digests`` of their
    bytes; ``source`` (lines): per range the document of the unit's first occurrence; ``key``: what
    makes two removed spans "the same span" in the report (the unit hash, or the digest)."""

    def __init__(self, n_docs: int, docs, starts, ends, digests, source=None, key=None):
        self.docs, self.starts, self.ends, self.digests = docs, starts, ends, digests
        self.source = source
        self.key = digests if key is None else key
        self.off = np.searchsorted(docs, np.arange(n_docs + 1), side="left")

    def removed_bytes(self, n_docs: int) -> np.ndarray:
        return np.bincount(self.docs, weights=self.ends - self.starts, minlength=n_docs).astype(np.int64)

    def top(self, n: int) -> list[tuple[int, int, int]]:
        """The ``n`` spans that removed the most bytes: (first range of the span, times removed, bytes
        removed), ties by times removed then order of appearance."""
        if self.docs.shape[0] == 0:
            return []
        keys, first, inv, counts = np.unique(self.key, return_index=True, return_inverse=True, return_counts=True)
        total = np.bincount(inv, weights=self.ends - self.starts).astype(np.int64)
        order = np.lexsort((first, -counts, -total))[:n]
        return [(int(first[g]), int(counts[g]), int(total[g])) for g in order.tolist()]


def _find(cfg: DedupConfig, payloads: list, alive: np.ndarray, out_docs: np.ndarray,
          n_docs: int, text: TextSpool | None = None) -> tuple[_Ranges, dict]:
    """The ranges to remove among the documents ``alive`` (indices into what the workers gave, in
    order), which are documents ``out_docs`` of the run (``n_docs`` in all); ``text``: their bytes
    (``substrings``)."""
    total = sum(p[1].shape[0] for p in payloads)
    remap = np.full(total, -1, dtype=np.int64)
    remap[alive] = out_docs
    if cfg.method == "lines":
        parts, base = [], 0
        for u, nb in payloads:
            parts.append((base, u))
            base += nb.shape[0]
        units = Units.concat(parts)
        docs = remap[units.docs]
        units = replace(units, docs=docs).take(docs >= 0)
        if len(units) and (np.diff(units.docs) < 0).any():    # payloads not in corpus order (Spark's tables):
            units = units.take(np.argsort(units.docs, kind="stable"))   # each document's units keep their order
        removed, first = repeated_units(units, cfg.min_docs)
        r = np.flatnonzero(removed)
        distinct = int(sorted_unique(units.hashes).shape[0]) if len(units) else 0
        info = {"units": len(units), "distinct_units": distinct, "removed_units": int(r.shape[0])}
        return _Ranges(n_docs, units.docs[r], units.starts[r], units.ends[r], units.digests[r],
                       source=units.docs[first[r]], key=units.hashes[r]), info

    offsets = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(np.concatenate([nb for _, nb in payloads]) if payloads else [], out=offsets[1:])
    payloads.clear()
    buf = text.buffer()
    memory = None if cfg.max_memory is None else cfg.max_memory * 1_000_000
    spans = repeated_in_documents(buf, offsets, alive, cfg.min_length, memory, folder=text.folder)
    info = {"text_bytes": int((offsets[alive + 1] - offsets[alive]).sum()), "repeated_windows": spans.windows,
            "suffix_arrays": spans.parts, "copies_removed_whole": spans.copies}
    return _Ranges(n_docs, out_docs[spans.docs], spans.starts, spans.ends, spans.digests), info


def cut(b: bytes, starts, ends) -> bytes:
    """``b`` without the byte ranges [starts[i], ends[i]) (sorted, disjoint)."""
    pieces, pos = [], 0
    for a, e in zip(starts, ends):
        pieces.append(b[pos:a])
        pos = e
    pieces.append(b[pos:])
    return b"".join(pieces)


class _Editor:
    """Applies the ranges to texts in pass 2; notes emptied and dropped documents and the bytes of
    the ranges the report shows (``wanted``: range → its bytes, filled when its document passes)."""

    def __init__(self, cfg: DedupConfig, ranges: _Ranges, nbytes: np.ndarray, where, wanted: dict):
        self.cfg, self.r, self.nbytes, self.where = cfg, ranges, nbytes, where
        n = nbytes.shape[0]
        self.dropped = np.zeros(n, dtype=bool)
        self.emptied = np.zeros(n, dtype=bool)
        self.wanted = wanted

    def __call__(self, d: int, text: str) -> str | None:
        b = utf8(text)
        if len(b) != self.nbytes[d]:
            raise InputChangedError(f"{self.where(d)}: the text has {len(b)} bytes in the second pass and had "
                                    f"{int(self.nbytes[d])} in the first: the input changed during the run "
                                    "(nothing was written)")
        r = self.r
        lo, hi = int(r.off[d]), int(r.off[d + 1])
        for i in self.wanted.keys() & range(lo, hi) if self.wanted else ():
            self.wanted[i] = b[int(r.starts[i]):int(r.ends[i])]
        new = cut(b, r.starts[lo:hi].tolist(), r.ends[lo:hi].tolist()).decode("utf-8", "surrogatepass")
        visible = len("".join(new.split()))
        if visible == 0:
            self.emptied[d] = True
        if visible < self.cfg.min_remaining:
            self.dropped[d] = True
            return None
        return new


def span_method(cfg: DedupConfig) -> str | None:
    """The method of a run's span step: ``lines``/``substrings`` (``--method``, or ``--spans`` beside a
    whole-document method), or None."""
    return cfg.method if cfg.method in SPAN_METHODS else cfg.spans


def stage_config(cfg: DedupConfig) -> DedupConfig | None:
    """The configuration of a run's span step: the run's own (``--method lines|substrings``), one
    with ``method`` set to ``--spans`` (a whole-document method with ``--spans``), or None."""
    if cfg.method in SPAN_METHODS:
        return cfg
    if cfg.spans is None:
        return None
    return replace(cfg, method=cfg.spans, spans=None)


def spans_beside(cfg: DedupConfig) -> DedupConfig | None:
    """The span step a whole-document run carries beside its own (``--spans``): its configuration; None
    without ``--spans``, and for a span method (whose span step is the whole run)."""
    return None if cfg.method in SPAN_METHODS else stage_config(cfg)


class SpanStage:
    """The span step of a run: the ranges decided over the documents ``consider`` (a mask over the
    run's documents; ``payload_of_doc[d]``: document d's place in what the workers gave), then pass 2's
    editor, edits.jsonl and the report's section."""

    def __init__(self, cfg: DedupConfig, corpus, payload_of_doc: np.ndarray, consider: np.ndarray, where):
        self.cfg = cfg
        n_docs = len(corpus.ids)
        payloads = corpus.spans
        nb_all = np.concatenate([p[1] for p in payloads]) if payloads else np.zeros(0, dtype=np.int64)
        self.nbytes = nb_all[payload_of_doc]
        t0 = time.perf_counter()
        self.ranges, self.info = _find(cfg, payloads, payload_of_doc[consider], np.flatnonzero(consider), n_docs,
                                       corpus.span_text)
        self.seconds = time.perf_counter() - t0
        corpus.spans = []
        corpus.span_text = None
        self.where = where
        self.editor: _Editor | None = None
        self.top: list = []

    def by_row(self, doc_row) -> dict:
        """Input row → (starts, ends) of its ranges, for the rows that have some."""
        r = self.ranges
        docs = sorted_unique(r.docs).tolist()
        return {int(doc_row[d]): (r.starts[r.off[d]:r.off[d + 1]].tolist(), r.ends[r.off[d]:r.off[d + 1]].tolist())
                for d in docs}

    def write(self, specs, run_cfg: DedupConfig, corpus, out: str, keep_doc: np.ndarray, step=None) -> list[dict]:
        """Pass 2 (inputs already checked unchanged): the rows of documents ``keep_doc``, with their
        ranges removed (``step``: the progress stage its rows count in, else a ``write`` stage)."""
        doc_row = np.asarray(corpus.doc_row, dtype=np.int64)
        keep_row = np.zeros(corpus.n_rows, dtype=bool)
        keep_row[doc_row[keep_doc]] = True
        touched_row = np.zeros(corpus.n_rows, dtype=bool)
        touched_row[doc_row[sorted_unique(self.ranges.docs)]] = True
        doc_of_row, _ = row_documents(corpus)
        self.top = self.ranges.top(TOP_SPANS)
        wanted = {i: b"" for i, _, _ in self.top}
        self.editor = editor = _Editor(self.cfg, self.ranges, self.nbytes, self.where, wanted)
        return write_rows(specs, run_cfg, corpus, out, keep_row, touched_row,
                          lambda g, text: editor(int(doc_of_row[g]), text), step)

    def write_edits(self, path: str, corpus, duplicate: np.ndarray | None = None) -> None:
        """edits.jsonl: per input row ``{"row", "id", "status", "bytes", "kept_bytes", "removed"}`` where
        status is ``kept`` (nothing removed), ``edited``, ``emptied`` (nothing but white space left),
        ``dropped`` (``--min-remaining``) or ``duplicate`` (removed whole by the document method), and
        ``removed`` lists ``[start, end, hash]`` — a byte range of the original text's UTF-8 form and
        the XXH64 (seed 0, hex) of its bytes — with, for ``lines``, the row of the unit's first
        occurrence as a fourth item. A skipped row's record is clusters.jsonl's."""
        ranges, editor = self.ranges, self.editor
        doc_row = np.asarray(corpus.doc_row, dtype=np.int64)
        doc_of_row, skipped = row_documents(corpus)
        lines_method = ranges.source is not None
        starts, ends, digests = ranges.starts, ranges.ends, ranges.digests
        source_row = doc_row[ranges.source] if lines_method else None
        nbytes = self.nbytes
        kept = nbytes - ranges.removed_bytes(nbytes.shape[0])
        with open(path, "w", encoding="utf-8", errors="backslashreplace", buffering=1 << 20) as fh:
            for g, d in enumerate(doc_of_row.tolist()):
                if d < 0:
                    fh.write(skipped_line(g, skipped[g]) + "\n")
                    continue
                lo, hi = int(ranges.off[d]), int(ranges.off[d + 1])
                status = ("duplicate" if duplicate is not None and duplicate[d] else "dropped" if editor.dropped[d]
                          else "emptied" if editor.emptied[d] else "edited" if hi > lo else "kept")
                if hi == lo:
                    removed = ""
                elif lines_method:
                    removed = ", ".join(f'[{a}, {e}, "{h:016x}", {src}]' for a, e, h, src in zip(
                        starts[lo:hi].tolist(), ends[lo:hi].tolist(), digests[lo:hi].tolist(),
                        source_row[lo:hi].tolist()))
                else:
                    removed = ", ".join(f'[{a}, {e}, "{h:016x}"]' for a, e, h in zip(
                        starts[lo:hi].tolist(), ends[lo:hi].tolist(), digests[lo:hi].tolist()))
                fh.write(f'{{"row": {g}, "id": {id_json(corpus.ids[d])}, "status": "{status}", '
                         f'"bytes": {int(nbytes[d])}, "kept_bytes": {int(kept[d])}, "removed": [{removed}]}}\n')

    def add_to_report(self, report: dict, corpus, duplicate: np.ndarray | None = None) -> None:
        """The byte counts (``counts``) and the ``spans`` section. Bytes per document: its input bytes
        are the removed spans' plus what is left, and what is left is kept, dropped
        (``--min-remaining``) or, for a document removed whole (``duplicate``), duplicate bytes."""
        n_docs = len(corpus.ids)
        r, editor = self.ranges, self.editor
        nb = self.nbytes
        left = nb - r.removed_bytes(n_docs)
        dup = np.zeros(n_docs, dtype=bool) if duplicate is None else duplicate
        dropped = editor.dropped & ~dup
        kept = ~dup & ~dropped
        edited = np.zeros(n_docs, dtype=bool)
        edited[r.docs] = True
        frac = np.where(nb > 0, (nb - left) / np.maximum(nb, 1), 0.0)[edited]
        hist, _ = np.histogram(frac, bins=20, range=(0.0, 1.0))
        c = report["counts"]
        input_bytes, removed_bytes = int(nb.sum()), int((nb - left).sum())
        kept_bytes, dropped_bytes = int(left[kept].sum()), int(left[dropped].sum())
        counts = {"dropped": int(dropped.sum()), "edited_documents": int(edited.sum()),
                  "emptied_documents": int(editor.emptied.sum()), "removed_spans": int(r.docs.shape[0]),
                  "input_bytes": input_bytes, "kept_bytes": kept_bytes, "removed_bytes": removed_bytes,
                  "dropped_bytes": dropped_bytes}
        if duplicate is not None:
            counts["duplicate_bytes"] = int(left[dup].sum())
        counts["removed_byte_rate"] = removed_bytes / input_bytes if input_bytes else 0.0
        c.update(counts)
        c["kept"] = int(kept.sum())
        c["accounted"] = bool(c["accounted"] and input_bytes == kept_bytes + removed_bytes + dropped_bytes
                              + counts.get("duplicate_bytes", 0)
                              and c["documents"] == c["kept"] + c["dropped"] + int(dup.sum()))
        report["spans"] = {
            "method": self.cfg.method,
            "unit": self.cfg.unit if self.cfg.method == "lines" else "bytes",
            **self.info,
            "top": [_top_span(corpus, r, editor.wanted[i], i, n, total) for i, n, total in self.top],
            "removed_fraction_histogram": {"edges": similarity_edges(), "counts": hist.tolist()},
        }


def found_spans(cfg: DedupConfig, corpus, payload, keep: np.ndarray, where) -> SpanStage:
    """:class:`SpanStage` of the documents ``keep``, reported as the progress stage ``spans``."""
    step = begin("spans", int(keep.sum()), unit="doc")
    stage = SpanStage(cfg, corpus, payload, keep, where)
    step.end(int(keep.sum()))
    return stage


def run_spans(specs, cfg: DedupConfig, out: str, corpus, command: str, t_start: float, timings: dict,
              where, engine: tuple = ("local", None)) -> dict:
    """Pass 2 and the outputs of a span method (``corpus`` from pass 1; ``where(d)``: a row's place;
    ``engine``: the report's (name, its section)). Both engines."""

    n_docs = len(corpus.ids)
    stage = found_spans(cfg, corpus, corpus.payload_of_doc, np.ones(n_docs, dtype=bool), where)
    timings["find"] = stage.seconds
    t0 = time.perf_counter()
    for spec in specs:
        check_stamp(spec)
    outputs = stage.write(specs, cfg, corpus, out, np.ones(n_docs, dtype=bool))
    stage.write_edits(os.path.join(out, "edits.jsonl"), corpus)
    timings["write"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start
    report = build_report(RunSummary(
        cfg=cfg, command=command, engine=engine[0], engine_info=engine[1], inputs=[s.label for s in specs],
        outputs=outputs,
        n_rows=corpus.n_rows, n_docs=n_docs, removed=0, n_skipped=len(corpus.skipped),
        skipped=[(f, line, reason) for _, f, line, reason in corpus.skipped[:SKIPPED_LISTED]],
        empty=int((stage.nbytes == 0).sum()), replaced=corpus.replaced, chars=corpus.n_chars, candidates=0,
        verified=0, cluster_sizes={}, similarity_counts=[0] * 20, samples=[], timings=timings))
    for k in ("cluster_sizes", "similarity_histogram", "samples"):
        report.pop(k, None)
    for k in ("clusters", "candidate_pairs", "verified_pairs", "duplicate_rate", "removed"):
        report["counts"].pop(k, None)
    stage.add_to_report(report, corpus)
    write_report(report, out, cfg.html)
    return report


def _top_span(corpus, ranges: _Ranges, b: bytes, i: int, n: int, total: int) -> dict:
    """A line of the report's table of most repeated spans (range ``i``: its first removal)."""
    out = {"text": b.decode("utf-8", "replace")[:SPAN_CHARS], "bytes": len(b), "removed": n, "bytes_removed": total,
           "first_removed_from": corpus.ids[int(ranges.docs[i])]}
    if ranges.source is not None:
        out["first_occurrence"] = corpus.ids[int(ranges.source[i])]
    return out



def edited(text: str, ranges) -> str:
    """``text`` without the byte ranges (starts, ends) of its UTF-8 form (``--spans-order before``)."""
    return cut(text.encode("utf-8", "surrogatepass"), *ranges).decode("utf-8", "surrogatepass")

__all__ = ["SPAN_METHODS", "SpanStage", "TextSpool", "cut", "edited", "make_signer", "run_spans", "span_method",
           "stage_config"]
