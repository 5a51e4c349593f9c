"""The local engine's pass 1: every row read and every document signed, on all cores.

The inputs stream in batches (:mod:`neardup.io.formats`); JSON lines are parsed in the workers. Each
batch is signed by :func:`neardup.dedup.signing.make_signer` in a worker process, at most 2 batches
per worker in flight, so memory is bounded by the signatures, not the text. The main process
records every row in the run's :class:`~neardup.dedup.tables.Corpus` (documents and skipped rows).
Workers die with the run (``PR_SET_PDEATHSIG`` and a watcher thread), ignore Ctrl-C (the main
process handles it) and are killed, not waited for, when the run fails.
"""
from __future__ import annotations

import contextlib
import errno
import mmap
import os
import signal
import sys
import tempfile
import threading
import time
from array import array
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict
from itertools import repeat
from multiprocessing import get_context
from typing import NamedTuple

import numba
import numpy as np
from numba.np.ufunc import parallel

from ..._arrays import concatenate_freeing, keep_freed_memory
from ..._procs import kill_with_parent, signals_held
from ...config import DedupConfig, ResolvedConfig
from ...dedup.methods import method_of
from ...dedup.progress import begin, plain_size
from ...dedup.signing import Both, make_signer
from ...dedup.spans import TextSpool, edited, span_method
from ...dedup.tables import Corpus, Signed
from ...dedup.verify import append_sets, minhasher
from ...errors import ConfigError, InputFormatError, WorkerError
from ...features.shingles import Features
from ...io.formats import (
    InputSpec,
    block_lines,
    file_blocks,
    parse_jsonl_block,
    parse_jsonl_line,
    raw_blocks,
    read_block,
    read_rows,
)
from ...io.outdir import release_inherited_locks
from ...kernels.jsonl import gather_spans, line_cuts, line_spans

_SIGNER = None


_CFG = None


def _die_with_parent(parent: int) -> None:
    """A worker must not outlive the run: on Linux the kernel kills it when the parent dies
    (``PR_SET_PDEATHSIG``); everywhere a daemon thread checks the parent once a second, so a
    worker blocked on its task pipe still exits when the parent is killed with SIGKILL."""
    kill_with_parent()

    # forked: the run is the parent; from a fork server (see _worker_context) the parent is that
    # server, which exits with the run: either way the parent changing means the run has ended
    direct = os.getppid() == parent
    watched = os.getppid()

    def run_alive() -> bool:
        if direct:
            return True
        try:
            os.kill(parent, 0)
            return True
        except ProcessLookupError:
            return False
        except OSError:
            return True

    def watch():
        while True:
            if os.getppid() != watched or not run_alive():
                os._exit(1)
            time.sleep(1.0)

    if os.getppid() != watched or not run_alive():   # the parent died before the signal was armed
        os._exit(1)
    threading.Thread(target=watch, name="neardup-parent-watch", daemon=True).start()


def _worker_init(cfg_dict: dict, parent: int) -> None:
    global _SIGNER, _CFG
    _die_with_parent(parent)
    release_inherited_locks()
    # Ctrl-C and SIGTERM are the parent's to handle: it lets running batches finish (a worker
    # stopped halfway through sending a result would leave the pool's reader waiting forever)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    keep_freed_memory()
    _CFG = ResolvedConfig(**cfg_dict)       # (resolved in the parent: not checked again)
    _SIGNER = make_signer(_CFG)


class RowsMeta(NamedTuple):
    """What the run keeps of a batch's rows, as arrays (built where the rows were parsed)."""

    lines: np.ndarray        # int64: line / record number of every row
    doc: np.ndarray          # int64: positions of the rows that are documents
    chars: np.ndarray        # int64: characters of each document
    ids: list | None         # each document's id (None: ids are not read, a document's id is its row)
    keys: list | None        # each document's keep value (None: no keep field)
    replaced: int            # documents with invalid UTF-8 replaced
    errors: list             # (position, message, blank line) of the rows that are not documents


def rows_meta(rows, keys: bool) -> RowsMeta:
    """:class:`RowsMeta` of parsed :class:`~neardup.io.formats.Row` records (``keys``: a keep field is
    read). ``ids`` is None when no document of the batch has one (its id is then its row)."""
    lines = np.fromiter((r.line for r in rows), dtype=np.int64, count=len(rows))
    doc, chars, errors = [], [], []
    replaced = 0
    for k, r in enumerate(rows):
        if r.error is not None:
            errors.append((k, r.error, r.blank))
            continue
        doc.append(k)
        chars.append(len(r.text))
        replaced += r.replaced
    ids = [rows[k].id for k in doc]
    return RowsMeta(lines, np.asarray(doc, dtype=np.int64), np.asarray(chars, dtype=np.int64),
                    None if all(i is None for i in ids) else ids, [rows[k].key for k in doc] if keys else None,
                    replaced, errors)


def _run_job(job, cfg: DedupConfig, sign):
    """One batch: ``("texts", texts)`` (rows already read by the main process) or
    ``("jsonl", spec, first line, raw bytes of whole lines or their (offset, length) in the file, edits)``,
    read, split and parsed here so that
    JSON decoding runs in the worker processes too; ``edits`` (``--spans-order before``: line → byte
    ranges) are removed from the texts before they are signed. Returns (:class:`RowsMeta` or None,
    signing result or None)."""
    if job[0] == "texts":
        meta, texts = None, job[1]
    else:
        _, spec, first, block, edits = job
        if isinstance(block, tuple):        # (offset, length) in an uncompressed file
            block = read_block(spec, *block)
        key_field = cfg.keep_field if cfg.keep == "key" else None
        if key_field is None and not edits:
            fast = parse_jsonl_block(spec, first, block, cfg.text_field, cfg.id_field)
            if fast is not None:
                n = len(fast.texts)
                meta = RowsMeta(np.arange(first, first + n, dtype=np.int64), np.arange(n, dtype=np.int64), fast.chars,
                                fast.ids, None, 0, [])
                return meta, (sign(fast.texts) if n else None)
        rows = [parse_jsonl_line(spec, i, raw, cfg.text_field, cfg.id_field, key_field)
                for i, raw in block_lines(first, block)]
        meta = rows_meta(rows, key_field is not None)
        texts = [r.text if r.line not in edits else edited(r.text, edits[r.line])
                 for r in rows if r.error is None]
    return meta, (sign(texts) if texts else None)


def _worker_job(job):
    if job[0] == "rows":           # MinHash slots written at their rows of the run's signature file
        _, path, row0, inner = job
        meta, res = _run_job(inner, _CFG, _SIGNER)
        if res is not None:
            write_rows_at(_sink(path), row0, meta.doc, res[0])
            res = (None, *res[1:])
        return meta, res
    return _run_job(job, _CFG, _SIGNER)


def _sink(path: str, append: bool = False) -> int:
    """This process's own descriptor for writing into ``path`` (with ``append``: ``O_APPEND``, see
    :func:`~neardup.dedup.verify.append_sets`), opened once per process, never a parent's."""
    key = (os.getpid(), path)
    if key not in _SINKS:
        _SINKS[key] = os.open(path, os.O_WRONLY | (os.O_APPEND if append else 0))
    return _SINKS[key]


def write_rows_at(fd: int, row0: int, rows: np.ndarray, values: np.ndarray) -> None:
    """``values[i]`` (one uint32 row each) written at row ``row0 + rows[i]`` of the matrix file ``fd``,
    each run of consecutive rows in one ``pwrite``. A short write is retried; one that writes nothing
    raises (a full disk raises on its own)."""
    if values.dtype != np.uint32:
        raise RuntimeError(f"write_rows_at: uint32 slots expected, got {values.dtype}")    # a bug, never input
    values = np.ascontiguousarray(values)
    if not values.shape[0]:
        return
    width = values.shape[1] * 4
    rows = np.asarray(rows, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    for a, b in zip(np.concatenate([[0], breaks]).tolist(), np.concatenate([breaks, [rows.shape[0]]]).tolist()):
        data = memoryview(values[a:b]).cast("B")
        at = (row0 + int(rows[a])) * width
        while data.nbytes:
            n = os.pwrite(fd, data, at)
            if n <= 0:
                raise OSError(errno.EIO, f"signature file: a write at byte {at} wrote nothing")
            data, at = data[n:], at + n


_SINKS: dict = {}


def _sets_job(job):
    """The distinct shingle sets of some lines of a block of a JSON lines file, shingled as when
    they were signed: (documents, their sets' hashes concatenated, set sizes); with a file to append
    them to (the job's last item), where they start in it instead of the hashes."""

    spec, first, place, (lines, docs_of), sink = job
    block = read_block(spec, *place)
    sub, sub_first = wanted_lines(block, first, lines)
    whole = parse_jsonl_block(spec, sub_first, sub, _CFG.text_field, None)
    if whole is not None:                  # the wanted lines parsed at once, in order
        docs, texts = docs_of, whole.texts
    else:
        want = dict(zip(lines.tolist(), docs_of.tolist()))
        docs, texts = [], []
        for i, raw in block_lines(first, block):
            d = want.get(i)
            if d is not None:
                row = parse_jsonl_line(spec, i, raw, _CFG.text_field, None, None)
                if row.error is None:
                    docs.append(d)
                    texts.append(row.text)
    u = minhasher(_CFG).shingler.features(texts).distinct_sets()
    if sink is None:
        return np.asarray(docs, dtype=np.int64), u.hashes, np.diff(u.offsets)
    return np.asarray(docs, dtype=np.int64), append_sets(_sink(sink, append=True), u.hashes), np.diff(u.offsets)


def wanted_lines(block: bytes, first: int, lines: np.ndarray) -> tuple[bytes, int]:
    """The lines numbered ``lines`` (sorted) of a block whose first line is ``first``, as one block
    for :func:`~neardup.io.formats.parse_jsonl_block`, and the number to give it as its first line:
    only line 1 may start with a byte-order mark to skip. The block itself when every line is wanted.
    Only the wanted lines are parsed: the band re-reads a few documents of most blocks."""
    lines = np.asarray(lines, dtype=np.int64)
    buf = np.frombuffer(block, dtype=np.uint8)
    spans = line_spans(buf, buf.shape[0], lines - first)
    if spans.shape[0] and (spans[0, 0] == 0 and spans[-1, 1] == buf.shape[0]
                           and lines[-1] - lines[0] == lines.shape[0] - 1):
        return block, first                # every line of the block
    if spans.shape[0] and spans[-1, 0] < 0:
        raise RuntimeError("wanted_lines: a line past the block's end")      # a bug, never input
    return gather_spans(buf, spans).tobytes(), (1 if lines[0] == 1 else 2)


def read_sets(specs: list[InputSpec], cfg: DedupConfig, corpus: Corpus, docs: np.ndarray, take,
              sink: str | None = None) -> np.ndarray:
    """``--verify borderline``: the shingle sets of documents ``docs`` (an array), their lines re-read,
    parsed and shingled in the signing processes, for the JSON lines files pass 1 cut into blocks
    (``corpus.blocks``); ``take(documents, hashes, sizes)`` receives them a block at a time, in order
    (with ``sink``, a file the workers append the hashes to: where each block's start instead).
    Returns the documents left to the caller (other inputs). Arrays throughout: 5.6 M documents at
    10 M, whose tuples and sets took 1.6 GB."""
    docs = np.asarray(docs, dtype=np.int64)
    rows = np.asarray(corpus.doc_row, dtype=np.int64)[docs]
    order = np.argsort(rows, kind="stable")
    rows, docs = rows[order], docs[order]
    jobs, rest = [], []
    g = 0
    for si, (spec, n_rows) in enumerate(zip(specs, corpus.row_source)):
        a, b = np.searchsorted(rows, g), np.searchsorted(rows, g + n_rows)
        lines, mine = rows[a:b] - g + 1, docs[a:b]
        g += n_rows
        if a == b:
            continue
        if si not in corpus.blocks:
            rest.append(mine)
            continue
        for first, offset, length, n in corpus.blocks[si]:
            x, y = np.searchsorted(lines, first), np.searchsorted(lines, first + n)
            if x < y:
                jobs.append((spec, first, (offset, length), (lines[x:y], mine[x:y]), sink))
    if jobs:
        with worker_pool(cfg) as pool:
            for d, h, z in pool.map(_sets_job, jobs):
                take(d, h, z)
    return np.concatenate(rest) if rest else np.zeros(0, dtype=np.int64)


def _take_part(arrays: dict, state: dict, corpus: Corpus, chunks: tuple, rows_of: list) -> tuple:
    """A checkpoint part of pass 1 (:class:`~neardup.dedup.resume.Parts`) added to the run's corpus
    and result chunks, as :func:`read_and_sign`'s ``collect`` added its batches. Returns where reading
    goes on: (input, rows taken from it, byte offset after them or −1)."""
    sigs, empties, sizes, shingles = chunks
    if state["row0"] != corpus.n_rows:
        raise ConfigError(f"resume (--resume): a checkpoint part starts at row {state['row0']}, after row "
                          f"{corpus.n_rows}; remove the checkpoint to start over")
    corpus.skipped.extend(tuple(x) for x in state["skipped"])
    corpus.n_rows += state["n_rows"]
    if "ids" in arrays and isinstance(corpus.ids, array):
        corpus.ids.frombytes(arrays["ids"].astype(np.int64).tobytes())
    else:
        if isinstance(corpus.ids, array):
            corpus.ids = corpus.ids.tolist()
        corpus.ids.extend(arrays["ids"].tolist() if "ids" in arrays else state["ids"])
    for name in ("doc_line", "lengths", "doc_row"):
        getattr(corpus, name).frombytes(arrays[name].astype(np.int64).tobytes())
    corpus.n_chars += state["n_chars"]
    corpus.keys.extend(state["keys"])
    corpus.replaced += state["replaced"]
    for si, places in state["blocks"].items():
        corpus.blocks.setdefault(int(si), []).extend(tuple(p) for p in places)
    rows_of[:] = state["rows_of"]
    if "values" in arrays:
        sigs.append(arrays["values"])
        empties.append(arrays["empty"])
    if "sizes" in arrays:
        sizes.append(arrays["sizes"])
    if "shingles" in arrays:
        shingles.append(arrays["shingles"])
    return tuple(state["position"])


class SignatureFile:
    """Pass 1's MinHash matrix as a file in the run's work folder (``spill``), one row per input row:
    the signing workers write each block's slots at its rows themselves, so the matrix never passes
    through a pipe, is never concatenated, and is read back through a private memory map — file pages
    that the system can drop and read again, not memory of the run (5.1 GB at 10 M documents), which
    :func:`~neardup._arrays.release_pages` gives back while a stage does not read them. Used when
    every input is a JSON lines file read in blocks and several workers sign (not with ``--resume``,
    whose checkpoint parts carry their slots)."""

    def __init__(self, folder: str, width: int):
        fd, self.path = tempfile.mkstemp(dir=folder, prefix="signatures-", suffix=".u32")
        os.close(fd)
        self.width = width
        self.rows = 0

    @staticmethod
    def wanted(specs: list[InputSpec], cfg: DedupConfig, spill: str | None, parts) -> bool:
        return (spill is not None and parts is None and cfg.workers > 1 and cfg.method == "minhash"
                and cfg.scheme != "bottomk" and cfg.spans is None and hasattr(os, "pwrite")   # (uint32 slots)
                and all(s.fmt == "jsonl" and s.compression is None and os.path.isfile(s.path) for s in specs))

    def grow(self, rows: int) -> None:
        """Room for ``rows`` rows (a sparse extension: no block is written here)."""
        if rows > self.rows:
            os.truncate(self.path, rows * self.width * 4)
            self.rows = rows

    def values(self, corpus: Corpus) -> np.ndarray:
        """The documents' rows: the map itself when every row is a document, else a copy of theirs.
        The file is removed once mapped (the map keeps it until it is closed: its space comes back
        with the map, at once when the rows were copied)."""
        n = corpus.n_rows
        if n == 0:
            os.unlink(self.path)
            return np.zeros((0, self.width), dtype=np.uint32)
        self.grow(n)
        fd = os.open(self.path, os.O_RDONLY)
        try:       # private, so writable for the kernels (a read-only array is compiled apart), never written
            mm = mmap.mmap(fd, n * self.width * 4, access=mmap.ACCESS_COPY)
        finally:
            os.close(fd)
            os.unlink(self.path)
        table = np.frombuffer(mm, dtype=np.uint32).reshape(n, self.width)
        if len(corpus.doc_row) == n:
            return table
        out = table[np.asarray(corpus.doc_row, dtype=np.int64)]
        del table
        mm.close()
        return out


def read_and_sign(specs: list[InputSpec], cfg: DedupConfig, corpus: Corpus, edits: tuple | None = None,
                  parts=None, spill: str | None = None):
    """Pass 1: every row read, every document signed. ``edits`` = (input row → byte ranges, rows per
    input of an earlier read): ranges removed from those rows' texts before they are signed
    (``--spans-order before``). ``parts`` (:class:`~neardup.dedup.resume.Parts`, ``--resume``): the
    parts a killed run left are taken first and reading goes on after them; new parts are written
    as the run goes. ``spill``: the run's work folder, where the MinHash matrix may be written
    (:class:`SignatureFile`)."""
    sigs, empties, sizes, shingles = [], [], [], []
    matrix = SignatureFile(spill, cfg.num_perm) if SignatureFile.wanted(specs, cfg, spill, parts) else None
    next_row = 0
    edits, bases = (edits[0], [sum(edits[1][:k]) for k in range(len(specs))]) if edits else ({}, [0] * len(specs))
    # progress in characters against the file sizes: exact for plain UTF-8 ASCII text, close for
    # the rest; no total (no ETA) when an input is compressed or binary
    bar = begin("read+sign", plain_size(specs), unit="B")
    rows_of = [0] * len(specs)
    key_field = cfg.keep_field if cfg.keep == "key" else None
    start = (0, 0, -1)             # (input, its rows already taken, byte offset after them or −1)
    if parts is not None:
        for arrays, state in parts.load():
            start = _take_part(arrays, state, corpus, (sigs, empties, sizes, shingles), rows_of)
            bar.update(state["bytes"], rows=state["n_rows"])
        parts.taken_rows = corpus.n_rows
        if corpus.n_rows and not cfg.quiet:
            print(f"neardup: --resume: pass 1 goes on after row {corpus.n_rows:,} ({parts.count} checkpoint parts "
                  "of the stopped run)", file=sys.stderr, flush=True)
    mark = _Mark.of(corpus, (sigs, sizes, shingles))

    def skipped_rows(si):
        return start[1] if si == start[0] else 0

    def jobs():
        """(input index, job, row metadata known here or None, bytes for the progress bar). When
        reading fails (a truncated file, a missing column), the rows read before still come out
        first, so that an earlier bad row is reported before the read error."""
        nonlocal next_row
        for si, spec in enumerate(specs):
            if si < start[0]:
                continue                 # read before the run was stopped (its checkpoint parts)
            base, skip = bases[si], skipped_rows(si)
            if spec.fmt == "jsonl":  # blocks of whole lines: split and parsed where the batch is signed
                def line_edits(first, n, base=base):
                    return {i: edits[base + i - 1] for i in range(first, first + n) if base + i - 1 in edits}

                if spec.compression is None and os.path.isfile(spec.path) and (skip == 0 or start[2] >= 0):
                    places = corpus.blocks.setdefault(si, [])     # (kept: the band's re-read finds its lines)
                    at = (start[2], skip + 1) if skip else (0, 1)
                    for first, offset, length, n in file_blocks(spec, cfg.batch_size, start=at):
                        places.append((first, offset, length, n))      # the worker reads the block
                        job = ("jsonl", spec, first, (offset, length), line_edits(first, n) if edits else {})
                        if matrix is not None:
                            matrix.grow(next_row + n)
                            job = ("rows", matrix.path, next_row, job)
                            next_row += n
                        yield si, job, None, length
                    continue
                for first, block, n in raw_blocks(spec, cfg.batch_size):
                    if first + n - 1 <= skip:
                        continue
                    if first <= skip:    # a resumed run: the lines already taken are dropped
                        m = skip - first + 1
                        cut = int(line_cuts(np.frombuffer(block, dtype=np.uint8), len(block), m)[1][0])
                        first, block, n = skip + 1, block[cut:], n - m
                    yield si, ("jsonl", spec, first, block, line_edits(first, n) if edits else {}), None, len(block)
                continue
            rows, texts = [], []

            def batch(rows, texts, si=si):
                return si, ("texts", texts), rows_meta(rows, key_field is not None), sum(len(t) for t in texts)
            try:
                for k, row in enumerate(read_rows(spec, cfg.text_field, cfg.id_field, key_field)):
                    if k < skip:
                        continue
                    rows.append(row)
                    if row.error is None:
                        texts.append(row.text if base + k not in edits else edited(row.text, edits[base + k]))
                        if len(texts) >= cfg.batch_size:
                            yield batch(rows, texts)
                            rows, texts = [], []
            except Exception:
                if rows:
                    yield batch(rows, texts)
                raise
            if rows:
                yield batch(rows, texts)

    spool = TextSpool(spill) if span_method(cfg) == "substrings" else None    # (its payload: the texts' bytes)
    corpus.span_text = spool
    spanned = method_of(cfg).spans

    def keep_span(payload):
        """A batch's span payload: units, or (UTF-8 bytes, bytes per document) whose bytes go to the
        text spool."""
        if spool is not None:
            spool.add(payload[0])
            payload = (None, payload[1])
        corpus.spans.append(payload)

    def collect(si, meta: RowsMeta, res, nbytes, job=None):
        _collect(si, meta, res, nbytes)
        if parts is not None:
            mark.bytes += nbytes
            if mark.bytes >= parts.part_bytes:
                after = sum(job[3]) if job is not None and job[0] == "jsonl" and isinstance(job[3], tuple) else -1
                mark.write(parts, corpus, (sigs, empties, sizes, shingles), rows_of, (si, rows_of[si], after))

    def _collect(si, meta: RowsMeta, res, nbytes):
        spec = specs[si]
        g0 = corpus.n_rows
        for k, error, blank in meta.errors:
            if blank or cfg.on_error == "skip":
                corpus.skipped.append((g0 + k, spec.label, int(meta.lines[k]), error))
                continue
            raise InputFormatError(error)
        n = meta.lines.shape[0]
        corpus.n_rows += n
        rows_of[si] += n
        rows = meta.doc + g0
        if meta.ids is None and isinstance(corpus.ids, array):
            corpus.ids.frombytes(rows.tobytes())
        else:       # ids of their own (an id field, a folder's file names): a list from now on
            if isinstance(corpus.ids, array):
                corpus.ids = corpus.ids.tolist()
            if meta.ids is None:
                corpus.ids.extend(rows.tolist())
            else:                               # (a row without an id has its row)
                corpus.ids.extend(i if i is not None else g for i, g in zip(meta.ids, rows.tolist()))
        corpus.doc_line.frombytes(meta.lines[meta.doc].tobytes())
        corpus.lengths.frombytes(meta.chars.tobytes())
        corpus.n_chars += int(meta.chars.sum())
        if meta.keys is None:
            corpus.keys.extend(repeat(None, rows.shape[0]))
        else:
            corpus.keys.extend(meta.keys)
        corpus.doc_row.frombytes(rows.tobytes())
        corpus.replaced += meta.replaced
        bar.update(nbytes, rows=n)
        if res is None:
            return
        if isinstance(res, Both):
            keep_span(res.span)
            res = res.doc
        s, e, z = res[:3]
        if spanned:
            keep_span(s)
        elif s is not None:                # (None: the worker wrote them into the signature file)
            sigs.append(s)
        empties.append(e)
        if z is not None:
            sizes.append(z)
        if len(res) > 3:
            shingles.append(res[3])

    try:
        if cfg.workers <= 1:
            sign = make_signer(cfg)
            for si, job, meta, nbytes in jobs():
                parsed, res = _run_job(job, cfg, sign)
                collect(si, meta if meta is not None else parsed, res, nbytes, job)
        else:
            with worker_pool(cfg) as pool:
                window: deque = deque()

                def collect_oldest():
                    si, meta, nbytes, job, fut = window.popleft()
                    parsed, res = fut.result()
                    collect(si, meta if meta is not None else parsed, res, nbytes, job)

                it = jobs()
                while True:
                    try:
                        si, job, meta, nbytes = next(it)
                    except StopIteration:
                        break
                    except Exception:  # a read error: the batches read before it are accounted first,
                        while window:  # and an earlier bad row raises instead
                            collect_oldest()
                        raise
                    window.append((si, meta, nbytes, job, pool.submit(_worker_job, job)))
                    if len(window) >= 2 * cfg.workers:
                        collect_oldest()
                while window:
                    collect_oldest()
    except BaseException:
        if spool is not None:
            spool.close()
        if parts is not None:            # the part being written finishes (or fails) before the run ends
            with contextlib.suppress(Exception):
                parts.close()
        raise
    if parts is not None:
        parts.close()
    corpus.row_source.extend(rows_of)
    bar.end(rows=corpus.n_rows, documents=len(corpus.doc_row), skipped=len(corpus.skipped))
    if spanned:   # documents numbered here; what the workers found is in corpus.spans
        empty = np.concatenate(empties) if empties else np.zeros(0, dtype=bool)
        return Signed(np.arange(empty.shape[0], dtype=np.int64), empty, None, None)
    features = None
    if empties and (matrix is not None or sigs):
        values = matrix.values(corpus) if matrix is not None else concatenate_freeing(sigs)
        empty = np.concatenate(empties)
        size = np.concatenate(sizes) if sizes else None
        if shingles:
            offsets = np.zeros(size.shape[0] + 1, dtype=np.int64)
            np.cumsum(size, out=offsets[1:])
            features = Features.distinct(concatenate_freeing(shingles), offsets)
    else:
        values = method_of(cfg).no_values(cfg)
        empty = np.zeros(0, dtype=bool)
        size = None
    return Signed(values, empty, size, features)


class _Mark:
    """Where the last checkpoint part of pass 1 ended: lengths of the corpus's columns and of the
    result chunks then, and the input bytes read since."""

    def __init__(self, **at):
        self.__dict__.update(at)
        self.bytes = 0

    @classmethod
    def of(cls, corpus: Corpus, chunks: tuple) -> _Mark:
        return cls(docs=len(corpus.doc_row), skipped=len(corpus.skipped), n_rows=corpus.n_rows,
                   n_chars=corpus.n_chars, replaced=corpus.replaced, keys=len(corpus.keys),
                   chunks=tuple(len(c) for c in chunks),
                   blocks={si: len(v) for si, v in corpus.blocks.items()})

    def write(self, parts, corpus: Corpus, chunks: tuple, rows_of: list, position: tuple) -> None:
        """The rows and results since the mark as the next part, then the mark moved to now."""
        sigs, empties, sizes, shingles = chunks
        d0, d1 = self.docs, len(corpus.doc_row)
        arrays = {"doc_line": np.asarray(corpus.doc_line[d0:d1], dtype=np.int64),
                  "lengths": np.asarray(corpus.lengths[d0:d1], dtype=np.int64),
                  "doc_row": np.asarray(corpus.doc_row[d0:d1], dtype=np.int64)}
        if sigs[self.chunks[0]:]:          # (lists of the batches' arrays: written one after another)
            arrays.update(values=sigs[self.chunks[0]:], empty=empties[self.chunks[0]:])
        if sizes[self.chunks[1]:]:
            arrays["sizes"] = sizes[self.chunks[1]:]
        if shingles[self.chunks[2]:]:
            arrays["shingles"] = shingles[self.chunks[2]:]
        state = {"row0": self.n_rows, "n_rows": corpus.n_rows - self.n_rows,
                 "n_chars": corpus.n_chars - self.n_chars, "replaced": corpus.replaced - self.replaced,
                 "skipped": [list(x) for x in corpus.skipped[self.skipped:]], "keys": corpus.keys[self.keys:],
                 "rows_of": list(rows_of), "position": list(position),
                 "bytes": self.bytes, "ids": None, "blocks": {}}
        if isinstance(corpus.ids, array):
            arrays["ids"] = np.asarray(corpus.ids[d0:d1], dtype=np.int64)
        else:
            state["ids"] = corpus.ids[d0:d1]
        for si, places in corpus.blocks.items():   # blocks handed out but not yet taken stay for the next part
            done = [p for p in places[self.blocks.get(si, 0):] if p[0] + p[3] - 1 <= rows_of[si]]
            if done:
                state["blocks"][str(si)] = [list(p) for p in done]
        parts.write(arrays, state)
        new = _Mark.of(corpus, (sigs, sizes, shingles))
        for si in corpus.blocks:
            new.blocks[si] = self.blocks.get(si, 0) + len(state["blocks"].get(str(si), ()))
        self.__dict__.update(new.__dict__)



def _worker_context():
    """How signing workers start. ``fork`` on Linux (they inherit the compiled kernels at once),
    unless this process has already started numba's thread pool (a parallel kernel ran here: an
    earlier call in the same Python session, or a run's own probe). A child forked after that
    inherits a pool it cannot use — with GNU OpenMP it aborts, or computes wrong values, silently.
    Then ``forkserver``: workers start from a clean process (each loads the cached kernels once,
    about a second)."""
    if not sys.platform.startswith("linux"):
        return get_context()

    started = getattr(parallel, "_is_initialized", True)
    if not (started and numba.threading_layer() == "omp"):
        return get_context("fork")
    ctx = get_context("forkserver")
    ctx.set_forkserver_preload(["neardup.engines.local.workers"])   # the server imports neardup once, not each worker
    return ctx


def _noop():
    return None


@contextlib.contextmanager
def worker_pool(cfg: DedupConfig):
    """The signing processes. On any exception (a bad row, Ctrl-C, SIGTERM turned into SystemExit)
    queued batches are cancelled and the workers are killed at once, not waited for."""
    ctx = _worker_context()
    pool = ProcessPoolExecutor(cfg.workers, mp_context=ctx, initializer=_worker_init,
                               initargs=(asdict(cfg), os.getpid()))
    try:
        with signals_held():     # the workers start (fork) at the first submission
            pool.submit(_noop)
        yield pool
    except BaseException as exc:
        # queued batches are dropped; running ones finish and are sent whole, then the workers exit.
        # Only a worker still busy after 10 s is killed (a kill halfway through sending a result
        # would leave the pool's reader thread waiting forever)
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + 10.0
        for p in procs:
            with contextlib.suppress(Exception):
                p.join(max(0.0, deadline - time.monotonic()))
        for p in procs:
            with contextlib.suppress(Exception):
                if p.is_alive():
                    p.kill()
                    p.join(1)
        if isinstance(exc, BrokenProcessPool):
            raise WorkerError("a signing worker process died (killed by a signal, or by the system for lack of "
                              "memory: try fewer --workers or a smaller --batch-size); nothing was written") from None
        raise
    pool.shutdown(wait=True)
