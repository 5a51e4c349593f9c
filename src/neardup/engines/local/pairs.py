"""``neardup pairs``: a similarity join — every pair of documents at or above the threshold, no clusters.

The rows are read and signed as ``neardup dedup`` reads them (same parameters, same signatures,
same verification: ``--verify borderline`` checks the pairs near t exactly from their re-read
texts), and :func:`~neardup.dedup.find.join_pairs` turns the verified pairs into the join:
documents with identical signatures give every pair among them, and a verified pair of two such
groups gives the product of the groups. Nothing is removed and nothing is clustered, so a pair is
in the output exactly when its own similarity passed (no transitive links).

Writes ``OUTDIR/pairs.parquet`` (:func:`~neardup.dedup.records.pairs_schema` without
``same_cluster``) and ``OUTDIR/report.json`` in a staged folder (:mod:`neardup.io.outdir`), so a
wrong or foreign OUTDIR is refused and a failed run leaves the previous outputs whole. Accounting:
input_rows = documents + skipped.
"""
from __future__ import annotations

import datetime as _dt
import os
import time
from dataclasses import asdict, replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..._arrays import sorted_unique
from ..._version import __version__
from ...config import _DOCUMENTS, DedupConfig, check_banded
from ...dedup.find import HOW, TooManyPairsError, find_run, join_pairs
from ...dedup.methods import method_of
from ...dedup.progress import begin, reporting, shows_progress
from ...dedup.records import pairs_schema
from ...dedup.report import write_report
from ...dedup.tables import Corpus
from ...errors import ConfigError, OutputError
from ...io.formats import check_fields_apply
from ...io.ids import parquet_id_text
from ...io.outdir import StagedOutput, is_write_error
from ...io.sources import expand_inputs, spool
from .run import _iter_texts, _read
from .warmup import warm_up

#: Parameters of ``neardup dedup`` that the join does not use: which row is kept, how clusters are
#: cut, and what dedup writes besides the pairs.
NOT_USED = ("keep", "keep_field", "linkage", "max_drift", "spans", "spans_order", "min_remaining", "unit",
            "min_docs", "min_length", "clusters_format", "pairs", "samples", "html", "index", "resume")
DEFAULT_MAX_PAIRS = 100_000_000


def run_pairs(inputs: list[str], outdir: str, config: DedupConfig | None = None, command: str = "",
              max_pairs: int | None = DEFAULT_MAX_PAIRS) -> dict:
    """The similarity join of ``inputs`` into ``outdir`` (pairs.parquet, report.json); returns the
    report. Checks as ``run_dedup``: parameters, inputs, then the output folder, before any row is
    read. ``max_pairs``: refuse (before writing) a join with more pairs (None: no limit)."""
    raw = config or DedupConfig()
    unset = {name: DedupConfig.__dataclass_fields__[name].default for name in NOT_USED}
    cfg = raw.resolved()
    # what the user set: neither unset nor what resolution fills in by itself (a resolved config given)
    filled = DedupConfig(**{**asdict(raw), **unset}).resolved()
    set_ = [name for name in NOT_USED if getattr(raw, name) not in (unset[name], getattr(filled, name))]
    check_banded(cfg)
    if method_of(cfg).spans:
        raise ConfigError(f"method (--method) must be one of {', '.join(_DOCUMENTS)} for a join of documents; "
                          f"got {cfg.method!r}")
    if set_:
        raise ConfigError(f"not used by neardup pairs: {', '.join(set_)}")
    if max_pairs is not None and (isinstance(max_pairs, bool) or not isinstance(max_pairs, int) or max_pairs < 0):
        raise ConfigError(f"max_pairs (--max-pairs) must be an integer >= 0; got {max_pairs!r}")
    if outdir == "-":
        raise ConfigError("neardup pairs writes OUTDIR/pairs.parquet; give an output folder, not -")
    t_start = time.perf_counter()
    specs = expand_inputs(list(inputs), cfg.input_format)
    check_fields_apply(specs, cfg.text_field, cfg.id_field)
    with reporting(cfg), StagedOutput(outdir, specs) as stage:
        try:
            report = _run(specs, cfg, stage.work, stage.out, command, t_start, max_pairs)
        except TooManyPairsError as exc:
            raise ConfigError(f"{exc}; raise --max-pairs, or use neardup dedup --pairs (one link per copy)") from None
        except OSError as exc:
            if is_write_error(exc):
                raise OutputError(f"{stage.label}: cannot write the outputs ({exc.strerror or exc}); nothing was "
                                  "replaced") from None
            raise
        stage.commit()
    return report


def _run(specs, cfg: DedupConfig, work: str, out: str, command: str, t_start: float, max_pairs) -> dict:
    compiled = warm_up(cfg, announce=shows_progress(cfg))
    t_start += compiled or 0.0
    timings = {} if compiled is None else {"compile": compiled}
    specs = spool(specs, work)
    corpus = Corpus()
    t0 = time.perf_counter()
    values, empty, sizes, features = _read(specs, cfg, corpus)
    timings["read_sign"] = time.perf_counter() - t0
    n = len(corpus.ids)

    def texts_of(docs):
        return _iter_texts(specs, cfg, corpus, docs)

    # components linkage: the cheapest clustering; the join ignores the clusters
    result = find_run(values, empty, sizes, features, replace(cfg, linkage="components"), corpus, None, texts_of)
    timings.update(result.timings)
    t0 = time.perf_counter()
    step = begin("join", int(result.pairs_lo.shape[0]), unit="pair")
    a, b, sim, how = join_pairs(result, n, max_pairs)
    step.end(int(result.pairs_lo.shape[0]), pairs=int(a.shape[0]))
    timings["join"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    step = begin("write", int(a.shape[0]), unit="pair")
    write_join(os.path.join(out, "pairs.parquet"), corpus, a, b, sim, how)
    step.end(int(a.shape[0]))
    timings["write"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start
    report = {
        "neardup_version": __version__, "command": command,
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "engine": "local",
        "inputs": [s.label for s in specs], "outputs": [{"output": "pairs.parquet", "pairs": int(a.shape[0])}],
        "parameters": {k: v for k, v in vars(cfg).items()
                       if k not in NOT_USED and k not in ("quiet", "progress")} | _lsh(result),
        "counts": {"input_rows": corpus.n_rows, "documents": n, "skipped_records": len(corpus.skipped),
                   "empty_documents": int(np.asarray(empty).sum()), "invalid_utf8_replaced": corpus.replaced,
                   "candidate_pairs": int(result.candidates), "verified_pairs": int(result.pairs_lo.shape[0]),
                   "pairs": int(a.shape[0]),
                   "pairs_by_decision": {h: int((how == k).sum()) for k, h in enumerate(HOW) if (how == k).any()},
                   "documents_in_pairs": int(sorted_unique(np.concatenate([a, b])).shape[0]),
                   "accounted": corpus.n_rows == n + len(corpus.skipped)},
        "skipped": [{"file": f, "line": line, "reason": reason} for _, f, line, reason in corpus.skipped[:1000]],
        "timings": {k: round(v, 4) for k, v in timings.items()},
    }
    if "borderline" in result.params:
        report["borderline"] = result.params["borderline"]
    write_report(report, out, html=False)
    return report


def _lsh(result) -> dict:
    p = result.params
    return {k: p[k] for k in ("b", "r", "lsh_mode") if k in p}


def write_join(path: str, corpus, a, b, sim, how) -> None:
    """pairs.parquet of a join: ids as text, input rows, similarity, decision; written in slices."""


    schema = pairs_schema(same_cluster=False)
    ids = [parquet_id_text(v) for v in corpus.ids]
    doc_row = np.asarray(corpus.doc_row, dtype=np.int64)
    names = pa.array(list(HOW), pa.string())
    step = 1 << 18
    with pq.ParquetWriter(path, schema) as writer:
        for lo in range(0, max(a.shape[0], 1), step):
            pa_, pb = a[lo:lo + step], b[lo:lo + step]
            writer.write_batch(pa.record_batch([
                pa.array([ids[i] for i in pa_.tolist()], pa.string()),
                pa.array([ids[i] for i in pb.tolist()], pa.string()),
                pa.array(doc_row[pa_], pa.int64()), pa.array(doc_row[pb], pa.int64()),
                pa.array(sim[lo:lo + step], pa.float64()),
                pa.DictionaryArray.from_arrays(pa.array(how[lo:lo + step].astype(np.int8), pa.int8()), names)],
                schema=schema))


__all__ = ["DEFAULT_MAX_PAIRS", "run_pairs", "write_join"]
