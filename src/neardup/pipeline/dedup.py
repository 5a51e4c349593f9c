"""``neardup dedup``: a corpus in, the corpus without near-duplicates out — every row accounted for.

Pass 1 streams the inputs in batches, signs them on all cores (the batch kernels in worker
processes, at most 2 batches per worker in flight, so memory is bounded by the signatures, not the
text), and records id, length and the row's place for every document. The duplicates are found in
memory from the signatures (:mod:`neardup.pipeline.find`). Pass 2 re-reads each input and copies its
kept rows in its own format. Everything goes to a temporary folder inside OUTDIR and is renamed
into place at the end, ``report.json`` last: a run that stops early leaves no finished-looking output.

Accounting: input_rows = kept + removed (duplicates) + skipped (unreadable rows, blank lines).
With ``verify="borderline"`` (the default) the candidate pairs whose estimate lies near t are decided
on the shingle sets of their documents, whose texts are re-read from the inputs between the passes.
With ``verify="exact"`` the distinct shingle hashes of every document are kept too (8 bytes per
distinct shingle, about the size of the text for word 5-grams) to check candidates exactly.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from array import array
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field, replace
from multiprocessing import get_context
from typing import NamedTuple

import numpy as np

from ..config import DedupConfig
from ..errors import ConfigError, InputChangedError, InputFormatError, OutputError, WorkerError
from ..io.formats import (
    InputSpec,
    check_fields_apply,
    check_stamp,
    line_text,
    output_name,
    parse_jsonl_line,
    raw_lines,
    read_rows,
    row_place,
    write_edited,
    write_kept,
)
from ..io.outdir import StagedOutput, is_write_error, release_inherited_locks
from ..io.sources import expand_inputs, spool
from .find import DuplicateResult, find_equal_duplicates, find_minhash_duplicates
from .records import (
    document_line,
    id_json,
    json_default,
    pairs_schema,
    parquet_batch,
    parquet_id_text,
    parquet_schema,
    skipped_line,
)
from .report import SKIPPED_LISTED, RunSummary, build_report, distance_counts, sample_ranks, similarity_counts
from .spans import SPAN_METHODS

# -- signing (runs in worker processes) ----------------------------------------------------------
_SIGNER = None


class _Both(NamedTuple):
    """A batch's result with ``--spans``: the documents' signing result and the span step's payload."""

    doc: tuple
    span: tuple


def _minhasher(cfg: DedupConfig):
    """The run's MinHasher (its shingler also gives the shingle sets of exact checks)."""
    from ..sketches.minhash import MinHasher  # noqa: PLC0415
    from ..text.normalize import Normalizer  # noqa: PLC0415

    return MinHasher(num_perm=cfg.num_perm, scheme=cfg.scheme, seed=cfg.seed, tokenizer=cfg.tokenizer,
                     ngram=cfg.ngram, normalizer=Normalizer(convert=cfg.convert), user_dict=cfg.user_dict)


def _make_signer(cfg: DedupConfig):
    from ..sketches.sentences import SentenceSigner, exact_hash  # noqa: PLC0415
    from ..sketches.simhash import feature_signer  # noqa: PLC0415
    from ..text.normalize import Normalizer  # noqa: PLC0415

    if cfg.method in SPAN_METHODS:
        from .spans import make_signer  # noqa: PLC0415

        return make_signer(cfg)
    if cfg.spans is not None:    # --spans after: one read gives both the signatures and the units
        from .spans import make_signer, stage_config  # noqa: PLC0415

        doc_sign, span_sign = _make_signer(replace(cfg, spans=None)), make_signer(stage_config(cfg))
        return lambda texts: _Both(doc_sign(texts), span_sign(texts)[0])
    if cfg.method == "minhash":
        hasher = _minhasher(cfg)
        need_sizes = cfg.metric == "containment"
        exact = cfg.verify == "exact"

        def sign(texts):
            if hasher.scheme.startswith("datasketch"):
                if exact:
                    raise ValueError("verify='exact' works with the native schemes (oph, permutation)")
                sig = hasher.sign_batch(texts).values
                sizes = np.array([len(set(hasher.shingler.shingles(t))) for t in texts], dtype=np.int64)
                return sig, sizes == 0, sizes
            if not (exact or need_sizes):
                sigs, sizes = hasher.sign_batch_sizes(texts)
                return sigs.values, sizes == 0, sizes
            feats = hasher.shingler.features(texts)
            sig = hasher.sign_features(feats).values
            if exact:  # distinct shingle hashes travel along: 8 bytes per distinct shingle
                u = feats.unique()
                return sig, feats.sizes() == 0, u.sizes(), u.hashes
            return sig, feats.sizes() == 0, feats.unique().sizes()
        return sign
    if cfg.method == "simhash":
        features = feature_signer(cfg.tokenizer, cfg.ngram, cfg.weighting, cfg.idf, cfg.top_n, cfg.compat,
                                  cfg.convert, user_dict=cfg.user_dict, stop_words=cfg.stop_words)

        def sign(texts):
            fps, sizes = features(texts)
            return np.asarray(fps, dtype=np.uint64), np.asarray(sizes) == 0, None
        return sign
    if cfg.method == "sentences":
        ss = SentenceSigner(n=cfg.sentences, convert=cfg.convert)

        def sign(texts):
            sig = ss.sign_batch(texts)
            return sig, sig == 0, None
        return sign

    def sign(texts):
        norm = Normalizer(convert=cfg.convert)
        empty = np.array([not norm(t) for t in texts], dtype=bool)
        return np.array([exact_hash(t, norm) for t in texts], dtype=np.uint64), empty, None
    return sign


_CFG = None


def _die_with_parent(parent: int) -> None:
    """A worker must not outlive the run: on Linux the kernel kills it when the parent dies
    (``PR_SET_PDEATHSIG``); everywhere a daemon thread checks the parent once a second, so a
    worker blocked on its task pipe still exits when the parent is killed with SIGKILL."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes  # noqa: PLC0415

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

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
    _CFG = DedupConfig(**cfg_dict)
    _SIGNER = _make_signer(_CFG)


def _row_meta(row) -> tuple:
    """What the run keeps of a row: (line, id, characters, key, replaced, error, blank)."""
    return (row.line, row.id, None if row.text is None else len(row.text), row.key, row.replaced, row.error,
            row.blank)


def _run_job(job, cfg: DedupConfig, sign):
    """One batch: ``("texts", texts)`` (rows already read by the main process) or
    ``("jsonl", spec, [(line, raw bytes), …], edits)``, parsed here so that JSON decoding runs in the
    worker processes too; ``edits`` (``--spans-order before``: line → byte ranges) are removed from
    the texts before they are signed. Returns (row metadata or None, signing result or None)."""
    if job[0] == "texts":
        meta, texts = None, job[1]
    else:
        _, spec, lines, edits = job
        key_field = cfg.keep_field if cfg.keep == "key" else None
        rows = [parse_jsonl_line(spec, i, raw, cfg.text_field, cfg.id_field, key_field) for i, raw in lines]
        meta = [_row_meta(r) for r in rows]
        texts = [r.text if r.line not in edits else _edited(r.text, edits[r.line])
                 for r in rows if r.error is None]
    return meta, (sign(texts) if texts else None)


def _edited(text: str, ranges) -> str:
    from .spans import cut  # noqa: PLC0415

    return cut(text.encode("utf-8", "surrogatepass"), *ranges).decode("utf-8", "surrogatepass")


def _worker_job(job):
    return _run_job(job, _CFG, _SIGNER)


# -- the run ---------------------------------------------------------------------------------------
@dataclass
class _Corpus:
    ids: list = field(default_factory=list)
    lengths: list = field(default_factory=list)
    keys: list = field(default_factory=list)
    doc_row: list = field(default_factory=list)       # global row index of each document
    doc_line: array = field(default_factory=lambda: array("q"))   # its line / record number in its input
    row_source: list = field(default_factory=list)    # per input: number of rows read
    skipped: list = field(default_factory=list)       # (global row, file, line, reason)
    spans: list = field(default_factory=list)         # span step: what the workers gave per batch
    payload_of_doc: np.ndarray | None = None          # its index there per document (after id checks)
    replaced: int = 0
    n_rows: int = 0
    n_chars: int = 0


def _shows_progress(cfg: DedupConfig) -> bool:
    """Progress (bars, the first-run message) goes to stderr: when it is a terminal, unless told."""
    return (sys.stderr.isatty() if cfg.progress is None else cfg.progress) and not cfg.quiet


def _progress(cfg: DedupConfig, total: int | None, desc: str, unit: str = "B"):
    from tqdm import tqdm  # noqa: PLC0415

    enabled = _shows_progress(cfg)
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, disable=not enabled, file=sys.stderr,
                leave=False)


def _read_and_sign(specs: list[InputSpec], cfg: DedupConfig, corpus: _Corpus, edits: tuple | None = None):
    """Pass 1: every row read, every document signed. ``edits`` = (input row → byte ranges, rows per
    input of an earlier read): ranges removed from those rows' texts before they are signed
    (``--spans-order before``)."""
    sigs, empties, sizes, shingles = [], [], [], []
    edits, bases = (edits[0], [sum(edits[1][:k]) for k in range(len(specs))]) if edits else ({}, [0] * len(specs))
    # progress in characters against the file sizes: exact for plain UTF-8 ASCII text, close for
    # the rest; no total (no ETA) when an input is compressed or binary
    plain = all(s.fmt in ("jsonl", "lines", "csv") and s.compression is None for s in specs)
    total = sum(os.path.getsize(s.path) for s in specs) if plain else None
    bar = _progress(cfg, total, "read+sign", unit="char")
    rows_of = [0] * len(specs)
    key_field = cfg.keep_field if cfg.keep == "key" else None

    def jobs():
        """(input index, job, row metadata known here or None, bytes for the progress bar). When
        reading fails (a truncated file, a missing column), the rows read before still come out
        first, so that an earlier bad row is reported before the read error."""
        for si, spec in enumerate(specs):
            base = bases[si]
            if spec.fmt == "jsonl":  # raw lines: parsed where the batch is signed
                lines, nbytes = [], 0

                def job(lines, base=base, spec=spec):
                    return "jsonl", spec, lines, ({i: edits[base + i - 1] for i, _ in lines if base + i - 1 in edits}
                                                  if edits else {})
                try:
                    for i, raw in raw_lines(spec):
                        lines.append((i, raw))
                        nbytes += len(raw)
                        if len(lines) >= cfg.batch_size:
                            batch, lines, nbytes0, nbytes = lines, [], nbytes, 0
                            yield si, job(batch), None, nbytes0
                except Exception:
                    if lines:
                        yield si, job(lines), None, nbytes
                    raise
                if lines:
                    yield si, job(lines), None, nbytes
                continue
            meta, texts = [], []
            try:
                for k, row in enumerate(read_rows(spec, cfg.text_field, cfg.id_field, key_field)):
                    meta.append(_row_meta(row))
                    if row.error is None:
                        texts.append(row.text if base + k not in edits else _edited(row.text, edits[base + k]))
                        if len(texts) >= cfg.batch_size:
                            batch_meta, batch, meta, texts = meta, texts, [], []
                            yield si, ("texts", batch), batch_meta, sum(len(t) for t in batch)
            except Exception:
                if meta:
                    yield si, ("texts", texts), meta, sum(len(t) for t in texts)
                raise
            if meta:
                yield si, ("texts", texts), meta, sum(len(t) for t in texts)

    def collect(si, meta, res, nbytes):
        spec = specs[si]
        for line, rid, chars, key, replaced, error, blank in meta:
            g = corpus.n_rows
            corpus.n_rows += 1
            rows_of[si] += 1
            if error is not None:
                if blank or cfg.on_error == "skip":
                    corpus.skipped.append((g, spec.label, line, error))
                    continue
                raise InputFormatError(error)
            corpus.ids.append(rid if rid is not None else g)
            corpus.doc_line.append(line)
            corpus.lengths.append(chars)
            corpus.n_chars += chars
            corpus.keys.append(key)
            corpus.doc_row.append(g)
            corpus.replaced += replaced
        bar.update(nbytes)
        if res is None:
            return
        if isinstance(res, _Both):
            corpus.spans.append(res.span)
            res = res.doc
        s, e, z = res[:3]
        sigs.append(s)
        empties.append(e)
        if z is not None:
            sizes.append(z)
        if len(res) > 3:
            shingles.append(res[3])

    if cfg.workers <= 1:
        sign = _make_signer(cfg)
        for si, job, meta, nbytes in jobs():
            parsed, res = _run_job(job, cfg, sign)
            collect(si, meta if meta is not None else parsed, res, nbytes)
    else:
        with _worker_pool(cfg) as pool:
            window: deque = deque()

            def collect_oldest():
                si, meta, nbytes, fut = window.popleft()
                parsed, res = fut.result()
                collect(si, meta if meta is not None else parsed, res, nbytes)

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
                window.append((si, meta, nbytes, pool.submit(_worker_job, job)))
                if len(window) >= 2 * cfg.workers:
                    collect_oldest()
            while window:
                collect_oldest()
    corpus.row_source.extend(rows_of)
    bar.close()
    if cfg.method in SPAN_METHODS:   # documents numbered here; what the workers found is in corpus.spans
        corpus.spans = sigs
        empty = np.concatenate(empties) if empties else np.zeros(0, dtype=bool)
        return np.arange(empty.shape[0], dtype=np.int64), empty, None, None
    features = None
    if sigs:
        values = np.concatenate(sigs)
        empty = np.concatenate(empties)
        size = np.concatenate(sizes) if sizes else None
        if shingles:
            from ..features.shingles import Features  # noqa: PLC0415

            offsets = np.zeros(size.shape[0] + 1, dtype=np.int64)
            np.cumsum(size, out=offsets[1:])
            features = Features.distinct(np.concatenate(shingles), offsets)
    else:
        width = (cfg.num_perm,) if cfg.method == "minhash" else ()
        values = np.zeros((0, *width), dtype=np.uint32 if cfg.method == "minhash" else np.uint64)
        empty = np.zeros(0, dtype=bool)
        size = None
    return values, empty, size, features


def _worker_context():
    """How signing workers start. ``fork`` on Linux (they inherit the compiled kernels at once),
    unless this process has already started numba's thread pool (a parallel kernel ran here: an
    earlier call in the same Python session, or a run's own probe). A child forked after that
    inherits a pool it cannot use — with GNU OpenMP it aborts, or computes wrong values, silently.
    Then ``forkserver``: workers start from a clean process (each loads the cached kernels once,
    about a second)."""
    if not sys.platform.startswith("linux"):
        return get_context()
    import numba  # noqa: PLC0415
    from numba.np.ufunc import parallel  # noqa: PLC0415

    started = getattr(parallel, "_is_initialized", True)
    if not (started and numba.threading_layer() == "omp"):
        return get_context("fork")
    ctx = get_context("forkserver")
    ctx.set_forkserver_preload(["neardup.pipeline.dedup"])   # the server imports neardup once, not each worker
    return ctx


@contextlib.contextmanager
def _worker_pool(cfg: DedupConfig):
    """The signing processes. On any exception (a bad row, Ctrl-C, SIGTERM turned into SystemExit)
    queued batches are cancelled and the workers are killed at once, not waited for."""
    ctx = _worker_context()
    pool = ProcessPoolExecutor(cfg.workers, mp_context=ctx, initializer=_worker_init,
                               initargs=(asdict(cfg), os.getpid()))
    try:
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


def _id_key(v):
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
    keys = [_id_key(v) for v in ids]
    h = np.fromiter((hash(k) for k in keys), dtype=np.int64, count=n)
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


def _spec_of_row(specs, corpus: _Corpus, g: int):
    """The input holding global row ``g``."""
    start = 0
    for spec, n in zip(specs, corpus.row_source):
        if g < start + n:
            return spec
        start += n
    return specs[-1]


def _where(specs, corpus: _Corpus, d: int) -> str:
    return row_place(_spec_of_row(specs, corpus, corpus.doc_row[d]), corpus.doc_line[d])


def _drop_duplicate_ids(specs, cfg: DedupConfig, corpus: _Corpus, arrays: tuple) -> tuple:
    """Ids must name one row each. A repeated id stops the run naming both rows, or with
    ``--on-error skip`` the later rows become skipped rows (counted, listed) and leave the arrays."""
    dups = duplicate_ids(corpus.ids)
    if not dups:
        return arrays
    d, first = dups[0]
    if cfg.on_error != "skip":
        raise InputFormatError(f"{_where(specs, corpus, d)}: id {corpus.ids[d]!r} is already the id of "
                               f"{_where(specs, corpus, first)}; ids must be unique ({len(dups)} repeated; "
                               "--on-error skip skips the later rows)")
    drop = np.zeros(len(corpus.ids), dtype=bool)
    for d, first in dups:
        drop[d] = True
        corpus.skipped.append((corpus.doc_row[d], _spec_of_row(specs, corpus, corpus.doc_row[d]).label,
                               corpus.doc_line[d], f"{_where(specs, corpus, d)}: id {corpus.ids[d]!r} repeats the "
                               f"id of {_where(specs, corpus, first)}"))
    corpus.skipped.sort()
    keep = np.flatnonzero(~drop)
    corpus.n_chars -= sum(corpus.lengths[d] for d in np.flatnonzero(drop))
    for name in ("ids", "lengths", "keys", "doc_row"):
        old = getattr(corpus, name)
        setattr(corpus, name, [old[k] for k in keep])
    corpus.doc_line = array("q", (corpus.doc_line[k] for k in keep))
    corpus.payload_of_doc = keep
    values, empty, sizes, features = arrays
    if features is not None:
        features = features.subset(keep)
    return values[keep], empty[keep], (None if sizes is None else sizes[keep]), features


def _exact_pairs(cfg: DedupConfig, texts_of, offset: int):
    """``verify="borderline"``: the exact similarity of given pairs (rows from ``offset`` on are this
    run's documents), from their texts re-read from the inputs and shingled as when they were signed."""
    from .find import exact_similarity  # noqa: PLC0415

    shingler = _minhasher(cfg).shingler

    def exact(lo, hi):
        # texts arrive one by one and are shingled a batch at a time: what stays is each batch's
        # distinct shingle hashes (8 bytes each) in one array, never all the texts at once
        rows = np.unique(np.concatenate([lo, hi]))
        docs: list = []
        texts: list = []
        got_docs, got_hashes, got_sizes = [], [], []

        def flush():
            u = shingler.features(texts).distinct_sets()
            got_docs.append(np.asarray(docs, dtype=np.int64))
            got_hashes.append(u.hashes)
            got_sizes.append(np.diff(u.offsets))
            docs.clear()
            texts.clear()

        for d, text in texts_of({d - offset for d in rows.tolist()}):
            docs.append(d + offset)
            texts.append(text)
            if len(docs) >= 8192:
                flush()
        if docs:
            flush()
        feats = _rows_csr(rows, got_docs, got_hashes, got_sizes)
        return exact_similarity(feats, np.searchsorted(rows, lo), np.searchsorted(rows, hi), cfg.metric)
    return exact


def _rows_csr(rows: np.ndarray, docs: list, hashes: list, sizes: list):
    """The sets of ``rows`` (sorted) as one CSR, from batches of (documents, their sets' hashes
    concatenated, their sizes); a row no batch holds (its text could not be read) gets no hashes."""
    from ..features.shingles import Features  # noqa: PLC0415

    empty = np.zeros(0, np.uint64)
    d = np.concatenate(docs) if docs else np.zeros(0, np.int64)
    h = np.concatenate(hashes) if hashes else empty
    z = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    if d.shape[0] > 1 and np.any(d[1:] < d[:-1]):       # batches out of row order: reorder the CSR
        old_start = np.cumsum(z) - z
        order = np.argsort(d, kind="stable")
        d, old_start, z = d[order], old_start[order], z[order]
        new_start = np.cumsum(z) - z
        h = h[np.repeat(old_start - new_start, z) + np.arange(int(z.sum()), dtype=np.int64)]
    at = np.searchsorted(rows, d)
    if d.shape[0] and (np.any(d[1:] == d[:-1]) or at[-1] >= rows.shape[0] or np.any(rows[np.minimum(
            at, rows.shape[0] - 1)] != d)):
        raise ValueError("_rows_csr: a document repeated, or not among the rows")   # a bug, never input
    per_row = np.zeros(rows.shape[0], dtype=np.int64)
    per_row[at] = z
    off = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(per_row, out=off[1:])
    return Features.distinct(h, off)


def _find(values, empty, sizes, features, cfg: DedupConfig, corpus: _Corpus, part=None,
          texts_of=None) -> DuplicateResult:
    """Clusters of the documents; with ``part`` (indexed documents the new rows matched) those come
    first as fixed rows, and the result is given back over the new documents only, an indexed
    representative p appearing as document n + p. ``texts_of(docs)``: (document, text) of documents,
    for ``--verify borderline``."""
    lengths = np.asarray(corpus.lengths, dtype=np.int64)
    keys = None
    if cfg.keep == "key":   # numbers already (the readers refuse a row whose key is not one)
        keys = np.asarray(corpus.keys, dtype=np.float64)
    m = 0 if part is None else len(part.keys)
    if m:
        values = np.concatenate([part.values.astype(values.dtype), values])
        empty = np.concatenate([np.zeros(m, dtype=bool), empty])
        lengths = np.concatenate([np.zeros(m, dtype=np.int64), lengths])
        keys = None if keys is None else np.concatenate([np.zeros(m), keys])
    exact = (_exact_pairs(cfg, texts_of, m) if cfg.method == "minhash" and cfg.verify == "borderline"
             and texts_of is not None else None)
    result = _find_all(values, empty, sizes, features, cfg, lengths, keys, m, exact)
    return _without_fixed(result, m) if m else result


def _without_fixed(result: DuplicateResult, m: int) -> DuplicateResult:
    from ..clusters import Clusters  # noqa: PLC0415

    n = result.clusters.cluster.shape[0] - m

    def move(x):
        x = np.asarray(x, dtype=np.int64)
        return np.where(x >= m, x - m, n + x)

    c = Clusters(move(result.clusters.cluster[m:]), result.clusters.similarity[m:])
    return DuplicateResult(c, move(result.pairs_lo), move(result.pairs_hi), result.pairs_sim, result.candidates,
                           result.params, result.timings, result.pairs_how)


def _find_all(values, empty, sizes, features, cfg: DedupConfig, lengths, keys, fixed: int,
              exact_pairs=None) -> DuplicateResult:
    if cfg.method == "minhash":
        from ..index.lsh import choose_params  # noqa: PLC0415
        from ..sketches.minhash import Signatures  # noqa: PLC0415

        sigs = Signatures(values, cfg.scheme, cfg.seed)
        lsh = choose_params(cfg.threshold, cfg.num_perm, cfg.lsh_mode, cfg.recall, cfg.bands, cfg.rows)
        return find_minhash_duplicates(sigs, cfg.threshold, lsh=lsh, metric=cfg.metric, sizes=sizes,
                                       verify=cfg.verify, features=features, keep=cfg.keep, lengths=lengths, keys=keys,
                                       linkage=cfg.linkage, max_drift=cfg.max_drift, fixed=fixed,
                                       exact_pairs=exact_pairs)
    if cfg.method == "simhash":
        from .find import find_simhash_duplicates  # noqa: PLC0415

        drift_bits = None if cfg.max_drift is None else int(round(cfg.max_drift * 64))
        return find_simhash_duplicates(values, cfg.bits, valid=~empty, keep=cfg.keep, lengths=lengths, keys=keys,
                                       linkage=cfg.linkage, max_drift_bits=drift_bits, fixed=fixed)
    return find_equal_duplicates(values, valid=~empty, keep=cfg.keep, lengths=lengths, user_keys=keys)


def _sample_pairs(result: DuplicateResult, n: int) -> list[tuple[int, int, float]]:
    """(representative, removed document, similarity) of the report's samples (:func:`.report.sample_ranks`)."""
    c = result.clusters
    removed = np.flatnonzero(~c.kept)
    order = removed[np.argsort(c.similarity[removed], kind="stable")]   # by (similarity, row)
    return [(int(c.cluster[d]), int(d), float(c.similarity[d]))
            for d in order[sample_ranks(order.shape[0], n)].tolist()]


def _fetch_texts(specs, cfg, corpus: _Corpus, docs: set[int]) -> dict[int, str]:
    """Texts of a few documents (for the report), re-read from the inputs; line formats parse
    only the wanted lines."""
    return dict(_iter_texts(specs, cfg, corpus, docs))


def _iter_texts(specs, cfg, corpus: _Corpus, docs: set[int]):
    """(document, text) of the documents ``docs``, re-read from the inputs in input order (line
    formats parse only the wanted lines); a document whose text cannot be read again is absent."""
    if not docs:
        return
    want_rows = {corpus.doc_row[d]: d for d in docs}
    g = 0
    for spec, n_rows in zip(specs, corpus.row_source):
        lo, hi = g, g + n_rows
        wanted = {r - lo: d for r, d in want_rows.items() if lo <= r < hi}
        g = hi
        if not wanted:
            continue
        if spec.fmt in ("jsonl", "lines"):
            left = len(wanted)
            for i, raw in raw_lines(spec):
                d = wanted.get(i - 1)
                if d is None:
                    continue
                if spec.fmt == "jsonl":  # parsed exactly as when it was read
                    yield d, parse_jsonl_line(spec, i, raw, cfg.text_field, None, None).text or ""
                else:
                    yield d, line_text(i, raw)[0]
                left -= 1
                if left == 0:
                    break
            continue
        for k, row in enumerate(read_rows(spec, cfg.text_field, None)):
            if k in wanted and row.text is not None:
                yield wanted[k], row.text


STDOUT = "-"
INDEXED_TEXT = "(a document of the index: its text is not stored there)"


def check_index_path(index: str, outdir: str, specs) -> None:
    """``--index`` must not be the output folder, inside it or around it, nor an input."""
    from ..io.outdir import _is_within  # noqa: PLC0415

    ipath = os.path.realpath(index)
    if outdir != STDOUT:
        opath = os.path.realpath(outdir)
        if _is_within(ipath, opath) or _is_within(opath, ipath):
            raise ConfigError(f"index (--index) must be a folder apart from the output folder {outdir}; "
                              f"got {index!r}")
    for s in specs:
        if not getattr(s, "pipe", False) and _is_within(os.path.realpath(s.path), ipath):
            raise ConfigError(f"index (--index) must not hold an input ({s.label}); got {index!r}")


def run_dedup(inputs: list[str], outdir: str, config: DedupConfig | None = None, command: str = "",
              stdout=None) -> dict:
    """Deduplicate ``inputs`` into ``outdir``; returns the report (also written as report.json).

    Parameters are checked first, then the inputs (they exist, can be read, none is named twice),
    then the output folder (:class:`~neardup.io.outdir.StagedOutput`: never a folder holding
    anything neardup did not write, nor one related to an input) — all before any row is read.
    ``outdir="-"``: the kept rows go to ``stdout`` (default: standard output), uncompressed, in
    input order, and nothing else is written (inputs must be JSONL or text lines, or one CSV).

    Signing workers are forked, except in a process that has already run one of neardup's
    parallel kernels (numba's OpenMP pool cannot be forked): they then start from a fork server,
    which imports the calling script again, as ``multiprocessing`` does on macOS and Windows — a
    script must then keep its top-level work under ``if __name__ == "__main__":``."""
    cfg = (config or DedupConfig()).resolved()
    t_start = time.perf_counter()
    specs = expand_inputs(list(inputs), cfg.input_format)
    check_fields_apply(specs, cfg.text_field, cfg.id_field)
    if cfg.index is not None:
        check_index_path(cfg.index, outdir, specs)
    from . import resume  # noqa: PLC0415

    resume.check_resumable(cfg, specs, outdir)
    if outdir == STDOUT:
        if cfg.pairs:
            raise ConfigError("pairs (--pairs) writes OUTDIR/pairs.parquet, and -o - writes nothing but the kept "
                              "rows; give an output folder")
        return _run_to_stdout(specs, cfg, command, t_start, stdout)
    checkpoint = resume.checkpoint_dir(outdir) if cfg.resume else None
    with StagedOutput(outdir, specs) as stage, _open_index(cfg) as index:
        report, _ = _staged_run(specs, cfg, stage.work, stage.out, stage.label, command, t_start, index, checkpoint)
        stage.commit()
    resume.remove(resume.checkpoint_dir(outdir))     # done: a checkpoint of this OUTDIR (any run's) is stale
    return report


@contextlib.contextmanager
def _open_index(cfg: DedupConfig):
    """The run's index (``--index``), held for writing for the whole run; None without one."""
    if cfg.index is None:
        yield None
        return
    from .incremental import open_index  # noqa: PLC0415

    made = not os.path.lexists(cfg.index)
    index = open_index(cfg)
    try:
        yield index
    except BaseException:
        empty = made and len(index) == 0 and not index.store.segments()
        index.close()
        if empty:     # a failed first run leaves no index behind (it would fix the parameters)
            shutil.rmtree(cfg.index, ignore_errors=True)
        raise
    else:
        index.close()


def _staged_run(specs, cfg: DedupConfig, work: str, out: str, label: str, command: str, t_start: float,
                index=None, checkpoint: str | None = None):
    from .warmup import warm_up  # noqa: PLC0415

    # a first run compiles the kernels now (parameters, inputs and OUTDIR already checked), timed apart
    compiled = warm_up(cfg, announce=_shows_progress(cfg))
    try:
        specs = spool(specs, work)
        return _run(specs, cfg, out, command, t_start + (compiled or 0.0), index, compiled, checkpoint), specs
    except OSError as exc:
        if is_write_error(exc):
            raise OutputError(f"{label}: cannot write the outputs ({exc.strerror or exc}); nothing was "
                              "replaced") from None
        raise


def _run_to_stdout(specs, cfg: DedupConfig, command: str, t_start: float, stdout) -> dict:
    from ..io.compression import open_read  # noqa: PLC0415

    csvs = [s for s in specs if s.fmt == "csv"]
    other = [s for s in specs if s.fmt not in ("jsonl", "lines", "csv")]
    if other or (csvs and len(specs) > 1):
        what = other[0] if other else csvs[0]
        among = "" if other else " among several inputs"
        raise ConfigError(f"-o - writes the kept rows to standard output, one stream: JSONL or text-line inputs, "
                          f"or a single CSV; {what.label} is {what.fmt}{among}")
    if stdout is None:
        if sys.stdout is None or getattr(sys.stdout, "closed", False):
            raise OutputError("-o -: standard output is closed, so the kept rows have nowhere to go")
        stdout = sys.stdout.buffer
    with tempfile.TemporaryDirectory(prefix="neardup-") as tmp, _open_index(cfg) as index:
        work, out = os.path.join(tmp, "work"), os.path.join(tmp, "out")
        os.mkdir(work)
        os.mkdir(out)
        report, specs = _staged_run(specs, cfg, work, out, tmp, command, t_start, index)
        for spec, o in zip(specs, report["outputs"]):
            with open_read(os.path.join(out, o["output"]), spec.compression) as fh:
                shutil.copyfileobj(fh, stdout, 1 << 20)
        stdout.flush()
    return report


def _read(specs, cfg: DedupConfig, corpus: _Corpus, edits=None) -> tuple:
    arrays = _read_and_sign(specs, cfg, corpus, edits)
    if cfg.id_field is not None:
        arrays = _drop_duplicate_ids(specs, cfg, corpus, arrays)
    if corpus.payload_of_doc is None:
        corpus.payload_of_doc = np.arange(len(corpus.ids), dtype=np.int64)
    return arrays


def _read_or_resume(specs, cfg: DedupConfig, corpus: _Corpus, checkpoint: str | None, timings: dict):
    """Pass 1 — or, with ``--resume`` and a checkpoint of this very run, its results read back
    (:mod:`neardup.pipeline.resume`); a run with ``--resume`` checkpoints what it computed."""
    from . import resume  # noqa: PLC0415

    if checkpoint is not None:
        found = resume.load(checkpoint, cfg, specs)
        if found is not None:
            t0 = time.perf_counter()
            (values, empty, sizes, features), corpus = resume.restore(*found, _Corpus)
            for spec in specs:
                check_stamp(spec)
            timings["resume_load"] = time.perf_counter() - t0     # (its presence: this run resumed)
            return values, empty, sizes, features, corpus
    values, empty, sizes, features = _read(specs, cfg, corpus)
    if checkpoint is not None:
        t0 = time.perf_counter()
        if not resume.save(checkpoint, cfg, specs, values, empty, sizes, features, corpus) and not cfg.quiet:
            print("neardup: --resume: ids or keep values that are not JSON values cannot be checkpointed; this run "
                  "keeps no checkpoint", file=sys.stderr)
        timings["checkpoint"] = time.perf_counter() - t0
    return values, empty, sizes, features, corpus


def _run(specs, cfg: DedupConfig, out: str, command: str, t_start: float, index=None,
         compiled: float | None = None, checkpoint: str | None = None) -> dict:
    from .spans import SpanStage, run_spans, stage_config  # noqa: PLC0415

    timings = {} if compiled is None else {"compile": compiled}   # apart from the run's own "total"
    corpus = _Corpus()
    t0 = time.perf_counter()
    span_cfg = stage_config(cfg) if cfg.method not in SPAN_METHODS else None
    stage, by_row = None, {}
    if span_cfg is not None and cfg.spans_order == "before":
        # the spans first (one read), then the documents signed with them removed (a second read)
        _read(specs, span_cfg, corpus)
        stage = SpanStage(span_cfg, corpus, corpus.payload_of_doc, np.ones(len(corpus.ids), dtype=bool),
                          lambda d: _where(specs, corpus, d))
        timings["spans"] = stage.seconds
        first, corpus = corpus, _Corpus()
        for spec in specs:
            check_stamp(spec)
        by_row = stage.by_row(first.doc_row)
        values, empty, sizes, features = _read(specs, replace(cfg, spans=None), corpus, (by_row, first.row_source))
        if corpus.doc_row != first.doc_row:
            raise InputChangedError("the inputs changed between the two reads of --spans-order before "
                                    f"({len(first.ids)} documents, then {len(corpus.ids)}); nothing was written")
    else:
        values, empty, sizes, features, corpus = _read_or_resume(specs, cfg, corpus, checkpoint, timings)
    timings["read_sign"] = time.perf_counter() - t0
    if cfg.method in SPAN_METHODS:
        return run_spans(specs, cfg, out, corpus, command, t_start, timings, lambda d: _where(specs, corpus, d))
    n_docs = len(corpus.ids)

    part = None
    if index is not None:   # the indexed documents the new rows match join the clustering, first
        from .incremental import check_ids, matched, run_key  # noqa: PLC0415

        t0 = time.perf_counter()
        check_ids(corpus.ids, lambda d: _where(specs, corpus, d))
        key = run_key(specs, cfg)
        part = matched(index, values, empty, cfg, key)
        timings["index_query"] = time.perf_counter() - t0

    def texts_of(docs):   # for exact checks: the texts as they were signed
        for d, t in _iter_texts(specs, cfg, corpus, docs):
            g = corpus.doc_row[d]
            yield d, (_edited(t, by_row[g]) if g in by_row else t)

    result = _find(values, empty, sizes, features, cfg, corpus, part, texts_of)
    timings.update({k: v for k, v in result.timings.items()})
    clusters = result.clusters
    kept_doc = clusters.kept
    extra_ids = part.keys if part is not None else []

    # -- pass 2: kept rows in each input's format --------------------------------------------------
    t0 = time.perf_counter()
    for spec in specs:
        check_stamp(spec)
    if cfg.clusters_format == "parquet":
        check_parquet_ids(corpus.ids, lambda d: _where(specs, corpus, d))
    if span_cfg is not None:
        if stage is None:   # --spans-order after: spans among the documents kept
            stage = SpanStage(span_cfg, corpus, corpus.payload_of_doc, kept_doc, lambda d: _where(specs, corpus, d))
            timings["spans"] = stage.seconds
        outputs = stage.write(specs, cfg, corpus, out, kept_doc)
        stage.write_edits(os.path.join(out, "edits.jsonl"), corpus, duplicate=~kept_doc)
    else:
        keep_row = np.zeros(corpus.n_rows, dtype=bool)
        keep_row[np.asarray(corpus.doc_row, dtype=np.int64)[kept_doc]] = True
        outputs = write_rows(specs, cfg, corpus, out, keep_row)
    _write_clusters(os.path.join(out, f"clusters.{cfg.clusters_format}"), cfg, corpus, clusters, empty, extra_ids)
    n_pairs = write_pairs(os.path.join(out, "pairs.parquet"), corpus, result, extra_ids) if cfg.pairs else None
    timings["write"] = time.perf_counter() - t0

    # -- report ---------------------------------------------------------------------------------------
    samples = _sample_pairs(result, cfg.samples)
    texts = _fetch_texts(specs, cfg, corpus, {d for pair in samples for d in pair[:2] if d < n_docs})
    removed = int(n_docs - kept_doc.sum())
    index_info = None
    if part is not None:
        by_index = int((clusters.cluster >= n_docs).sum())
        index_info = {"path": os.path.abspath(cfg.index), "documents_before": part.documents,
                      "matched_documents": len(part.keys), "removed_by_index": by_index,
                      "added": 0 if part.rerun else int(kept_doc.sum()), "rerun": part.rerun}
    timings["total"] = time.perf_counter() - t_start
    report = _report(cfg, specs, corpus, result, removed, empty, timings, samples, texts, outputs, command,
                     extra_ids, index_info)
    if stage is not None:
        stage.add_to_report(report, corpus, duplicate=~kept_doc)
    if n_pairs is not None:
        report["pairs"] = {"output": "pairs.parquet", "pairs": n_pairs}
    write_report(report, out, cfg.html)
    if part is not None and not part.rerun:   # outputs staged in full: the index changes, then they go in place
        from .incremental import add_kept  # noqa: PLC0415

        kept = np.flatnonzero(kept_doc)
        add_kept(index, [corpus.ids[d] for d in kept.tolist()], values[kept], empty[kept], key, cfg)
    return report


def write_rows(specs, cfg: DedupConfig, corpus: _Corpus, out: str, keep_row: np.ndarray, touched_row=None,
               edit=None) -> list[dict]:
    """Pass 2: each input's kept rows (``keep_row``, per input row) into ``out/kept/`` in its own
    format; rows with ``touched_row`` get their text from ``edit(row, text)`` (None drops the row).
    Returns the report's ``outputs``."""
    kept_dir = os.path.join(out, "kept")
    os.makedirs(kept_dir)
    used: set = set()
    outputs = []
    g = 0
    bar = _progress(cfg, len(specs), "write", unit="file")
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
        bar.update(1)
    bar.close()
    return outputs


def write_report(report: dict, folder: str, html: bool) -> None:
    """report.json (and report.html) in ``folder``; a lone surrogate in a text, an id or a file name is
    written as its JSON escape ``\\udXXX`` (valid JSON that reads back to the same string)."""
    with open(os.path.join(folder, "report.json"), "w", encoding="utf-8", errors="backslashreplace") as fh:
        json.dump(report, fh, indent=2, ensure_ascii=False, default=json_default)
        fh.write("\n")
    if html:
        try:
            from ..report import write_html  # noqa: PLC0415
        except ImportError:
            return
        write_html(report, os.path.join(folder, "report.html"))


def _row_documents(corpus: _Corpus) -> tuple[np.ndarray, dict]:
    """Per input row its document index (−1 for a skipped row), and each skipped row's reason."""
    doc_of_row = np.full(corpus.n_rows, -1, dtype=np.int64)
    doc_of_row[np.asarray(corpus.doc_row, dtype=np.int64)] = np.arange(len(corpus.ids))
    return doc_of_row, {g: reason for g, _, _, reason in corpus.skipped}


def _clusters_jsonl_lines(corpus: _Corpus, clusters, empty, extra_ids=()):
    """The lines of clusters.jsonl (:mod:`.records`), each id encoded once. Representatives from
    ``n`` on are indexed documents (``extra_ids``)."""
    doc_of_row, skipped = _row_documents(corpus)
    ids = [id_json(v) for v in corpus.ids]
    n = len(ids)
    ids += [id_json(v) for v in extra_ids]
    rep = clusters.cluster.tolist()
    sim = clusters.similarity.astype(np.float64).tolist()
    empty_l = empty.tolist()
    for g, d in enumerate(doc_of_row.tolist()):
        if d < 0:
            yield skipped_line(g, skipped[g]) + "\n"
        else:
            r = rep[d]
            yield document_line(ids[d], ids[r], r == d, sim[d], g, empty_l[d], r >= n) + "\n"


def write_pairs(path: str, corpus: _Corpus, result: DuplicateResult, extra_ids=()) -> int:
    """pairs.parquet (:func:`.records.pairs_schema`): every verified pair of ``result``; documents from
    ``n`` on are the index's (``extra_ids``). Returns the number of pairs."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

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


def check_parquet_ids(ids, place) -> None:
    """clusters.parquet holds ids as text, so two different ids with one text (``1`` and ``"1"``)
    would read the same there: refused, naming both rows (``place(d)``), before anything is written."""
    seen: dict = {}
    for d, v in enumerate(ids):
        text = parquet_id_text(v)
        first = seen.setdefault(text, (d, _id_key(v)))
        if first[1] != _id_key(v):
            raise InputFormatError(f"{place(d)}: id {v!r} and the id {ids[first[0]]!r} of {place(first[0])} are "
                                   f"different ids with the same text {text!r} in clusters.parquet; use --format "
                                   "jsonl (which keeps their types) or give the ids one type")


def _write_clusters(path: str, cfg: DedupConfig, corpus: _Corpus, clusters, empty, extra_ids=()) -> None:
    if cfg.clusters_format == "jsonl":   # lone surrogates in ids → JSON escapes (see write_report)
        with open(path, "w", encoding="utf-8", errors="backslashreplace", buffering=1 << 20) as fh:
            fh.writelines(_clusters_jsonl_lines(corpus, clusters, empty, extra_ids))
        return
    import pyarrow.parquet as pq  # noqa: PLC0415

    doc_of_row, skipped = _row_documents(corpus)
    ids, rep, sim = list(corpus.ids) + list(extra_ids), clusters.cluster, clusters.similarity
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
                None if indexed is not None else [d >= 0 and r >= n for d, r in zip(part, reps)]))


def _report(cfg, specs, corpus, result: DuplicateResult, removed, empty, timings, samples, texts, outputs, command,
            extra_ids=(), index_info=None):
    c = result.clusters
    sizes = c.sizes()
    ids = list(corpus.ids) + list(extra_ids)
    multi = sizes[sizes > 1]
    lsh = (result.params["b"], result.params["r"], result.params["lsh_mode"]) if cfg.method == "minhash" else None
    return build_report(RunSummary(
        cfg=cfg, command=command, engine="local", inputs=[s.label for s in specs], outputs=outputs,
        n_rows=corpus.n_rows, n_docs=len(corpus.ids), removed=removed, n_skipped=len(corpus.skipped),
        skipped=[(f, line, reason) for _, f, line, reason in corpus.skipped[:SKIPPED_LISTED]],
        empty=int(empty.sum()), replaced=corpus.replaced, chars=corpus.n_chars, candidates=int(result.candidates),
        verified=int(result.pairs_lo.shape[0]),
        cluster_sizes=dict(zip(*np.unique(multi, return_counts=True))) if multi.size else {},
        similarity_counts=similarity_counts(c.similarity[~c.kept]),
        samples=[(ids[k], ids[d], s, texts.get(k, INDEXED_TEXT if k >= len(corpus.ids) else ""), texts.get(d, ""))
                 for k, d, s in samples],
        timings=timings, lsh=lsh, index=index_info,
        simhash=((distance_counts(c.similarity[~c.kept]), result.params["fingerprints"]) if cfg.method == "simhash"
                 else None),
        extra={"borderline": result.params["borderline"]} if "borderline" in result.params else {}))
