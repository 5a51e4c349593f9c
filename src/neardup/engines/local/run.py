"""The local engine of ``neardup dedup``: a corpus in, the corpus without near-duplicates out — every row accounted for.

Pass 1 streams the inputs in batches, signs them on all cores (the batch kernels in worker
processes, at most 2 batches per worker in flight, so memory is bounded by the signatures, not the
text), and records id, length and the row's place for every document. The duplicates are found in
memory from the signatures (:func:`neardup.dedup.find.find_run`). Pass 2 re-reads each input and copies its
kept rows in its own format. Everything goes to a temporary folder inside OUTDIR and is renamed
into place at the end, ``report.json`` last: a run that stops early leaves no finished-looking output.

Accounting: input_rows = kept + removed (duplicates) + skipped (unreadable rows, blank lines).
With ``verify="borderline"`` (the default) the candidate pairs whose estimate lies near t are decided
on the shingle sets of their documents, whose texts are re-read from the inputs between the passes.
With ``verify="exact"`` the distinct shingle hashes of every document are kept too (8 bytes per
distinct shingle, about the size of the text for word 5-grams) to check candidates exactly.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from ...config import DedupConfig
from ...dedup import resume
from ...dedup.find import DuplicateResult, find_run
from ...dedup.finish import ROW_CONTAINED, ROW_HOW
from ...dedup.incremental import add_kept, check_ids, check_index_path, matched, opened_index, run_key
from ...dedup.methods import method_of
from ...dedup.plan import refusals
from ...dedup.progress import begin, reporting, shows_progress
from ...dedup.records import check_parquet_ids, duplicate_ids, write_clusters, write_pairs, write_rows
from ...dedup.report import (
    CONTAINERS_LISTED,
    INDEXED_TEXT,
    SKIPPED_LISTED,
    RunSummary,
    build_report,
    decisions_report,
    distance_counts,
    sample_ranks,
    similarity_counts,
    write_report,
)
from ...dedup.spans import edited, found_spans, run_spans, spans_beside, stage_config
from ...dedup.tables import Corpus
from ...errors import ConfigError, InputChangedError, InputFormatError, OutputError
from ...explain import compact_explanation
from ...io.compression import open_read
from ...io.formats import (
    check_fields_apply,
    check_stamp,
    line_text,
    parse_jsonl_line,
    raw_lines,
    read_block,
    read_rows,
    row_place,
)
from ...io.outdir import STDOUT, StagedOutput, is_write_error
from ...io.sources import expand_inputs, spool
from ...kernels.jsonl import line_spans
from .workers import read_and_sign, read_sets


def _spec_of_row(specs, corpus: Corpus, g: int):
    """The input holding global row ``g``."""
    start = 0
    for spec, n in zip(specs, corpus.row_source):
        if g < start + n:
            return spec
        start += n
    return specs[-1]


def doc_place(specs, corpus: Corpus, d: int) -> str:
    """Document ``d``'s place in its input, as error lines name it ("file: line N")."""
    return row_place(_spec_of_row(specs, corpus, corpus.doc_row[d]), corpus.doc_line[d])


def drop_duplicate_ids(specs, cfg: DedupConfig, corpus: Corpus, arrays: tuple) -> tuple:
    """Ids must name one row each. A repeated id stops the run naming both rows, or with
    ``--on-error skip`` the later rows become skipped rows (counted, listed) and leave the arrays."""
    dups = duplicate_ids(corpus.ids)
    if not dups:
        return arrays
    d, first = dups[0]
    if cfg.on_error != "skip":
        raise InputFormatError(f"{doc_place(specs, corpus, d)}: id {corpus.ids[d]!r} is already the id of "
                               f"{doc_place(specs, corpus, first)}; ids must be unique ({len(dups)} repeated; "
                               "--on-error skip skips the later rows)")
    drop = np.zeros(len(corpus.ids), dtype=bool)
    for d, first in dups:
        drop[d] = True
        corpus.skipped.append((corpus.doc_row[d], _spec_of_row(specs, corpus, corpus.doc_row[d]).label,
                               corpus.doc_line[d], f"{doc_place(specs, corpus, d)}: id {corpus.ids[d]!r} repeats the "
                               f"id of {doc_place(specs, corpus, first)}"))
    corpus.skipped.sort()
    keep = np.flatnonzero(~drop)
    corpus.n_chars -= sum(corpus.lengths[d] for d in np.flatnonzero(drop))
    for name in ("ids", "lengths", "keys", "doc_row"):
        old = getattr(corpus, name)
        setattr(corpus, name, [old[k] for k in keep])
    corpus.doc_line = array("q", (corpus.doc_line[k] for k in keep))
    corpus.payload_of_doc = keep if corpus.payload_of_doc is None else corpus.payload_of_doc[keep]
    values, empty, sizes, features = arrays
    if features is not None:
        features = features.subset(keep)
    return values[keep], empty[keep], (None if sizes is None else sizes[keep]), features


def _iter_texts(specs, cfg, corpus: Corpus, docs: set[int]):
    """(document, text) of the documents ``docs``, re-read from the inputs in input order (line
    formats parse only the wanted lines); a document whose text cannot be read again is absent."""
    if not docs:
        return
    want_rows = {corpus.doc_row[d]: d for d in docs}
    g = 0
    for si, (spec, n_rows) in enumerate(zip(specs, corpus.row_source)):
        lo, hi = g, g + n_rows
        wanted = {r - lo: d for r, d in want_rows.items() if lo <= r < hi}
        g = hi
        if not wanted:
            continue
        if spec.fmt == "jsonl" and corpus.blocks.get(si):
            yield from _texts_in_blocks(spec, cfg, corpus.blocks[si], wanted)
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


def _texts_in_blocks(spec, cfg, places: list, wanted: dict):
    """:func:`_iter_texts` of a JSON lines file that pass 1 cut into blocks (``places``: first line,
    byte offset, length, lines): only the blocks holding wanted lines are read, and only those lines
    parsed — a report's dozen samples at 10 M documents no longer read the file from its start."""

    lines = np.array(sorted(wanted), dtype=np.int64) + 1          # 1-based line numbers
    firsts = np.array([p[0] for p in places], dtype=np.int64)
    at = np.searchsorted(firsts, lines, side="right") - 1           # (ascending, as the lines are)
    blocks, starts = np.unique(at, return_index=True)
    ends = np.append(starts[1:], at.shape[0])
    for b, s, e in zip(blocks.tolist(), starts.tolist(), ends.tolist()):
        if b < 0:
            continue
        first, offset, length, n = places[b]
        mine = lines[s:e]
        mine = mine[mine < first + n]
        if not mine.shape[0]:
            continue
        block = read_block(spec, offset, length)
        spans = line_spans(np.frombuffer(block, dtype=np.uint8), len(block), mine - first)
        for i, (a, z) in zip(mine.tolist(), spans.tolist()):
            if a >= 0:
                yield wanted[i - 1], parse_jsonl_line(spec, i, block[a:z], cfg.text_field, None, None).text or ""


def run_dedup(inputs: list[str], outdir: str, config: DedupConfig | None = None, command: str = "",
              stdout=None, warm=None) -> dict:
    """Deduplicate ``inputs`` into ``outdir``; returns the report (also written as report.json).
    ``warm(cfg, announce)``: called once parameters, inputs and OUTDIR are checked, before pass 1,
    returns the seconds it compiled kernels or None (the engine's entry,
    :func:`neardup.engines.local.run_dedup`, passes the one-time compile,
    :func:`.warmup.warm_up`, which itself runs small dedups through here without it).

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
    refusals(cfg, outdir)          # (what needs no input: before the inputs are looked at)
    t_start = time.perf_counter()
    specs = expand_inputs(list(inputs), cfg.input_format)
    check_fields_apply(specs, cfg.text_field, cfg.id_field)
    if cfg.index is not None:
        check_index_path(cfg.index, outdir, specs)

    resume.check_resumable(cfg, specs, outdir)
    if outdir == STDOUT:
        with reporting(cfg):
            return _run_to_stdout(specs, cfg, command, t_start, stdout, warm)
    checkpoint = resume.checkpoint_dir(outdir) if cfg.resume else None
    with reporting(cfg), StagedOutput(outdir, specs) as stage, opened_index(cfg) as index:
        report, _ = _staged_run(specs, cfg, stage.work, stage.out, stage.label, command, t_start, index, checkpoint,
                                warm)
        stage.commit()
    resume.remove(resume.checkpoint_dir(outdir))     # done: a checkpoint of this OUTDIR (any run's) is stale
    return report


def _staged_run(specs, cfg: DedupConfig, work: str, out: str, label: str, command: str, t_start: float,
                index=None, checkpoint: str | None = None, warm=None):
    # a first run compiles the kernels now (parameters, inputs and OUTDIR already checked), timed apart
    compiled = warm(cfg, announce=shows_progress(cfg)) if warm is not None else None
    try:
        specs = spool(specs, work)
        return _run(specs, cfg, out, command, t_start + (compiled or 0.0), index, compiled, checkpoint, work), specs
    except OSError as exc:
        if is_write_error(exc):
            raise OutputError(f"{label}: cannot write the outputs ({exc.strerror or exc}); nothing was "
                              "replaced") from None
        raise


def _run_to_stdout(specs, cfg: DedupConfig, command: str, t_start: float, stdout, warm=None) -> dict:
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
    with tempfile.TemporaryDirectory(prefix="neardup-") as tmp, opened_index(cfg) as index:
        work, out = os.path.join(tmp, "work"), os.path.join(tmp, "out")
        os.mkdir(work)
        os.mkdir(out)
        report, specs = _staged_run(specs, cfg, work, out, tmp, command, t_start, index, warm=warm)
        for spec, o in zip(specs, report["outputs"]):
            with open_read(os.path.join(out, o["output"]), spec.compression) as fh:
                shutil.copyfileobj(fh, stdout, 1 << 20)
        stdout.flush()
    return report


def _read(specs, cfg: DedupConfig, corpus: Corpus, edits=None, parts=None, spill: str | None = None) -> tuple:
    arrays = read_and_sign(specs, cfg, corpus, edits, parts, spill)
    if cfg.id_field is not None:
        arrays = drop_duplicate_ids(specs, cfg, corpus, arrays)
    if corpus.payload_of_doc is None:
        corpus.payload_of_doc = np.arange(len(corpus.ids), dtype=np.int64)
    return arrays


def resumed_pass1(checkpoint: str | None, cfg: DedupConfig, specs, timings: dict):
    """With ``--resume`` and a checkpoint of this very run (:mod:`neardup.dedup.resume`): pass 1's
    results read back, ((values, empty, sizes, features), corpus), the inputs checked unchanged;
    else None. Both engines."""
    if checkpoint is None:
        return None
    found = resume.load(checkpoint, cfg, specs)
    if found is None:
        return None
    t0 = time.perf_counter()
    step = begin("read+sign", unit="B")
    arrays, corpus = resume.restore(*found, Corpus)
    for spec in specs:
        check_stamp(spec)
    step.end(rows=corpus.n_rows, documents=len(corpus.doc_row), skipped=len(corpus.skipped), resumed=True)
    timings["resume_load"] = time.perf_counter() - t0     # (its presence: this run resumed)
    return arrays, corpus


def checkpoint_pass1(checkpoint: str | None, cfg: DedupConfig, specs, arrays: tuple, corpus: Corpus,
                     timings: dict) -> None:
    """With ``--resume``: pass 1's results kept for a run that stops later (a note when they cannot be).
    Both engines."""
    if checkpoint is None:
        return
    t0 = time.perf_counter()
    if not resume.save(checkpoint, cfg, specs, *arrays, corpus) and not cfg.quiet:
        print("neardup: --resume: ids or keep values that are not JSON values cannot be checkpointed; this run "
              "keeps no checkpoint", file=sys.stderr)
    timings["checkpoint"] = time.perf_counter() - t0


def _read_or_resume(specs, cfg: DedupConfig, corpus: Corpus, checkpoint: str | None, timings: dict,
                    work: str | None = None):
    """Pass 1 — or, with ``--resume`` and a checkpoint of this very run, its results read back
    (:mod:`neardup.dedup.resume`); a run with ``--resume`` checkpoints what it computed."""
    found = resumed_pass1(checkpoint, cfg, specs, timings)
    if found is not None:
        (values, empty, sizes, features), corpus = found
        return values, empty, sizes, features, corpus
    parts = resume.Parts(checkpoint, cfg, specs) if checkpoint is not None else None
    values, empty, sizes, features = _read(specs, cfg, corpus, parts=parts, spill=work)
    if parts is not None and parts.taken_rows:
        timings["resume_rows"] = parts.taken_rows     # (its presence: pass 1 went on from a stopped run's parts)
    checkpoint_pass1(checkpoint, cfg, specs, (values, empty, sizes, features), corpus, timings)
    return values, empty, sizes, features, corpus


def spans_before(specs, cfg: DedupConfig, read, timings: dict) -> tuple:
    """``--spans-order before``: the spans found over every document of a first read, then the documents
    read again and signed with them removed. ``read(config, edits)`` is an engine's pass 1 → (corpus,
    arrays); ``edits``: None, or (input row → its ranges, rows per input). Returns (the span stage,
    row → ranges, the second read's corpus and arrays). Both engines."""
    span_cfg = stage_config(cfg)
    first, _ = read(span_cfg, None)
    stage = found_spans(span_cfg, first, first.payload_of_doc, np.ones(len(first.ids), dtype=bool),
                        lambda d: doc_place(specs, first, d))
    timings["spans"] = stage.seconds
    for spec in specs:
        check_stamp(spec)
    by_row = stage.by_row(first.doc_row)
    corpus, arrays = read(replace(cfg, spans=None), (by_row, first.row_source))
    if not np.array_equal(np.asarray(corpus.doc_row, dtype=np.int64), np.asarray(first.doc_row, dtype=np.int64)):
        raise InputChangedError("the inputs changed between the two reads of --spans-order before "
                                f"({len(first.ids)} documents, then {len(corpus.ids)}); nothing was written")
    return stage, by_row, corpus, arrays


def _run(specs, cfg: DedupConfig, out: str, command: str, t_start: float, index=None,
         compiled: float | None = None, checkpoint: str | None = None, work: str | None = None) -> dict:
    timings = {} if compiled is None else {"compile": compiled}   # apart from the run's own "total"
    corpus = Corpus()
    t0 = time.perf_counter()
    span_cfg = spans_beside(cfg)
    stage, by_row = None, {}
    if span_cfg is not None and cfg.spans_order == "before":
        def read(c, edits):     # (the second read, with edits, keeps its signatures in memory, as it did)
            got = Corpus()
            return got, _read(specs, c, got, edits, spill=work if edits is None else None)
        stage, by_row, corpus, (values, empty, sizes, features) = spans_before(specs, cfg, read, timings)
    else:
        values, empty, sizes, features, corpus = _read_or_resume(specs, cfg, corpus, checkpoint, timings, work)
    timings["read_sign"] = time.perf_counter() - t0
    if method_of(cfg).spans:
        return run_spans(specs, cfg, out, corpus, command, t_start, timings, lambda d: doc_place(specs, corpus, d))
    return finish_run(specs, cfg, out, command, t_start, timings, corpus, (values, empty, sizes, features), index,
                      work, span_cfg, stage, by_row)


def finish_run(specs, cfg: DedupConfig, out: str, command: str, t_start: float, timings: dict, corpus: Corpus,
               signed: tuple, index=None, work: str | None = None, span_cfg=None, stage=None, by_row=None,
               engine: tuple = ("local", None)) -> dict:
    """Everything after pass 1, given its tables (``corpus``; ``signed`` = values, empty, sizes,
    features): the index's matches, the clusters (:func:`~neardup.dedup.find.find_run`, texts re-read
    for exact checks), pass 2 (kept rows, clusters, pairs), the report, the index's add. Both engines
    end here: the Spark engine when the signatures it computed fit its driver. ``engine``: the
    report's (name, its section). Returns the report."""
    values, empty, sizes, features = signed
    by_row = by_row or {}
    n_docs = len(corpus.ids)

    part = None
    if index is not None:   # the indexed documents the new rows match join the clustering, first
        t0 = time.perf_counter()
        step = begin("index", n_docs, unit="doc")
        check_ids(corpus.ids, lambda d: doc_place(specs, corpus, d))
        key = run_key(specs, cfg)
        part = matched(index, values, empty, cfg, key, sizes)
        step.end(n_docs, matched=len(part.keys))
        timings["index_query"] = time.perf_counter() - t0

    def texts_of(docs):   # for exact checks: the texts as they were signed
        for d, t in _iter_texts(specs, cfg, corpus, docs):
            g = corpus.doc_row[d]
            yield d, (edited(t, by_row[g]) if g in by_row else t)

    def sets_of(docs, take, path=None):    # JSON lines files: the band's sets re-read and shingled on all cores
        return read_sets(specs, cfg, corpus, docs, take, path)

    parallel = cfg.workers > 1 and not by_row and corpus.blocks
    result = find_run(values, empty, sizes, features, cfg, corpus, part, texts_of, sets_of if parallel else None,
                      spill=work)
    timings.update({k: v for k, v in result.timings.items()})
    clusters = result.clusters
    kept_doc = clusters.kept
    extra_ids = part.keys if part is not None else []

    # -- pass 2: kept rows in each input's format --------------------------------------------------
    t0 = time.perf_counter()
    for spec in specs:
        check_stamp(spec)
    if cfg.clusters_format == "parquet":
        check_parquet_ids(corpus.ids, lambda d: doc_place(specs, corpus, d))
    if span_cfg is not None and stage is None:      # --spans-order after: spans among the documents kept
        stage = found_spans(span_cfg, corpus, corpus.payload_of_doc, kept_doc, lambda d: doc_place(specs, corpus, d))
        timings["spans"] = stage.seconds
    step = begin("write", corpus.n_rows)
    if span_cfg is not None:
        outputs = stage.write(specs, cfg, corpus, out, kept_doc, step)
        stage.write_edits(os.path.join(out, "edits.jsonl"), corpus, duplicate=~kept_doc)
        write_clusters(os.path.join(out, f"clusters.{cfg.clusters_format}"), cfg, corpus, clusters, empty, extra_ids)
    else:
        keep_row = np.zeros(corpus.n_rows, dtype=bool)
        keep_row[np.asarray(corpus.doc_row, dtype=np.int64)[kept_doc]] = True
        # clusters.jsonl is built by Arrow and the kept rows are copied by system calls, both mostly
        # outside the GIL: written side by side (1 M documents: write 3.0 → 1.6 s, with WriteBehind)
        with ThreadPoolExecutor(1, thread_name_prefix="neardup-clusters") as pool:
            done = pool.submit(write_clusters, os.path.join(out, f"clusters.{cfg.clusters_format}"), cfg, corpus,
                               clusters, empty, extra_ids)
            outputs = write_rows(specs, cfg, corpus, out, keep_row, step=step)
            done.result()
    n_pairs = write_pairs(os.path.join(out, "pairs.parquet"), corpus, result, extra_ids) if cfg.pairs else None
    step.end(corpus.n_rows, files=len(specs), kept=int(kept_doc.sum()))
    timings["write"] = time.perf_counter() - t0

    # -- report ---------------------------------------------------------------------------------------
    step = begin("report", 2 if cfg.html else 1, unit="file")
    samples = sample_pairs(result, cfg.samples)
    texts = dict(texts_of({d for pair in samples for d in pair[:2] if d < n_docs}))     # (as signed)
    removed = int(n_docs - kept_doc.sum())
    index_info = None
    if part is not None:
        by_index = int((clusters.cluster >= n_docs).sum())
        index_info = {"path": os.path.abspath(cfg.index), "documents_before": part.documents,
                      "matched_documents": len(part.keys), "removed_by_index": by_index,
                      "added": 0 if part.rerun else int(kept_doc.sum()), "rerun": part.rerun}
    timings["total"] = time.perf_counter() - t_start
    report = run_report(cfg, specs, corpus, result, removed, empty, timings, samples, texts, outputs, command,
                        extra_ids, index_info, engine)
    if stage is not None:
        stage.add_to_report(report, corpus, duplicate=~kept_doc)
    if n_pairs is not None:
        report["pairs"] = {"output": "pairs.parquet", "pairs": n_pairs}
    write_report(report, out, cfg.html)
    step.end(2 if cfg.html else 1)
    if part is not None and not part.rerun:   # outputs staged in full: the index changes, then they go in place
        kept = np.flatnonzero(kept_doc)
        step = begin("index add", kept.shape[0], unit="doc")
        add_kept(index, [corpus.ids[d] for d in kept.tolist()], values[kept], empty[kept], key, cfg,
                 None if sizes is None else sizes[kept])
        step.end(kept.shape[0])
    return report


def sample_pairs(result: DuplicateResult, n: int) -> list[tuple[int, int, float]]:
    """(representative, removed document, similarity) of the report's samples (:func:`sample_ranks`)."""
    c = result.clusters
    removed = np.flatnonzero(~c.kept)
    order = removed[np.argsort(c.similarity[removed], kind="stable")]   # by (similarity, row)
    return [(int(c.cluster[d]), int(d), float(c.similarity[d]))
            for d in order[sample_ranks(order.shape[0], n)].tolist()]


def run_report(cfg, specs, corpus, result: DuplicateResult, removed, empty, timings, samples, texts, outputs, command,
               extra_ids=(), index_info=None, engine: tuple = ("local", None)):
    c = result.clusters
    sizes = c.sizes()
    ids = list(corpus.ids) + list(extra_ids)
    multi = sizes[sizes > 1]
    p = result.params           # (what the method's finder reports: LSH bands, SimHash fingerprints)
    lsh = (p["b"], p["r"], p["lsh_mode"]) if "b" in p else None
    return build_report(RunSummary(
        cfg=cfg, command=command, engine=engine[0], engine_info=engine[1], inputs=[s.label for s in specs],
        outputs=outputs,
        n_rows=corpus.n_rows, n_docs=len(corpus.ids), removed=removed, n_skipped=len(corpus.skipped),
        skipped=[(f, line, reason) for _, f, line, reason in corpus.skipped[:SKIPPED_LISTED]],
        empty=int(empty.sum()), replaced=corpus.replaced, chars=corpus.n_chars, candidates=int(result.candidates),
        verified=int(result.pairs_lo.shape[0]),
        cluster_sizes=dict(zip(*np.unique(multi, return_counts=True))) if multi.size else {},
        similarity_counts=similarity_counts(c.similarity[~c.kept]),
        samples=[(ids[k], ids[d], s, texts.get(k, INDEXED_TEXT if k >= len(corpus.ids) else ""), texts.get(d, ""))
                 for k, d, s in samples],
        timings=timings, lsh=lsh, index=index_info,
        simhash=(((p["accepted_distances"] if p.get("verified") else distance_counts(c.similarity[~c.kept])),
                  p["fingerprints"]) if "fingerprints" in p else None),
        decisions=_decisions(cfg, result, ids),
        extra={"borderline": result.params["borderline"]} if "borderline" in result.params else {}),
        explain=compact_explanation)


def _decisions(cfg, result: DuplicateResult, ids) -> dict:
    """The report's ``decisions`` (:func:`~neardup.dedup.report.decisions_report`) of the run's rows."""
    clusters = result.clusters

    n = clusters.cluster.shape[0]
    codes = np.asarray(clusters.decided if clusters.decided is not None else np.ones(n), dtype=np.int64)
    removed = codes[~clusters.kept]
    counts = {w: int(k) for w, k in zip(ROW_HOW, np.bincount(np.minimum(removed, len(ROW_HOW)),
                                                            minlength=len(ROW_HOW) + 1))}
    containment = cfg.metric == "containment"     # (MinHash's only: another method refuses --metric)
    top = []
    if containment:
        held = np.bincount(clusters.cluster[codes == ROW_CONTAINED], minlength=len(ids))
        order = np.lexsort((np.arange(held.shape[0]), -held))[:CONTAINERS_LISTED]
        top = [(ids[i], int(held[i])) for i in order.tolist() if held[i] > 0]
    over = result.params.get("containment", {}).get("keep_policy_overridden", 0)
    return decisions_report(counts, containment, over, top)
