"""The first run on a machine: numba compiles the kernels a run needs (about 15–25 s on the
reference machine) and caches them on disk, so later runs start at once. Rather than let that
happen inside the run, unannounced and counted as the run's own time, a run whose method has not
run here before (no stamp beside the kernel cache) first deduplicates a few built-in documents
with the same parameters: every kernel the run needs is compiled then, in this process (the signing
workers, forked after it, inherit them), a one-line message says so when progress is shown, and
the seconds go to the report's ``timings.compile``, apart from ``timings.total``.

The stamp is keyed by neardup's version, numba's version and the machine type; numba itself checks
its cache against the sources and the CPU, so a stale stamp only skips the message, never a compile.
``NEARDUP_WARMUP=0`` turns the step off (the kernels then compile inside the run, as they must). A
warm-up that fails for any reason is forgotten: the run itself reports its own errors.
"""
from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import replace

import numba
import numpy as np

from ..._cache import KERNELS, compile_noticed
from ..._version import __version__
from ...clusters import cluster
from ...config import DedupConfig
from ...dedup.methods import method_of
from ...dedup.progress import begin
from ...dedup.spans import spans_beside
from ...dedup.verify import minhasher
from ...errors import stop_cause
from ...features.units import utf8
from ...index.disk import open_index
from ...index.suffix import IN_MEMORY_FACTOR, join, repeated_in_buffer, repeated_in_parts
from ...io.formats import InputSpec, parse_jsonl_block
from ...kernels.jaccard import pair_stats, pair_stats_parallel
from .run import run_dedup
from .workers import wanted_lines

_WARMING = False
_LONG = ("Permission is hereby granted free of charge to any person obtaining a copy of this software and "
         "associated documentation files to deal in the software without restriction including the rights "
         "to use copy modify merge publish distribute {} and sell copies of the software and to permit persons "
         "to whom it is furnished")
DOCS = ["The quick brown fox jumps over the lazy dog near the river bank today.\nA second line here.\n",
        "The quick brown fox jumps over the lazy dog near the river bank today!\nA second line here.\n",
        "Completely different words make up this third and final English document.\n",
        # (㎏: a character whose NFKC the word kernel leaves to Python, so that path compiles too)
        "中文文本也要测试一下，看看分词和签名是否正常工作，重 5 ㎏。\nA second line here.\n",
        # 53 words, then the same with one word changed: word 5-gram Jaccard (53 − 9)/(53 + 1) ≈ 0.81,
        # a borderline pair at the default threshold, so the exact check's kernels compile here too
        _LONG.format("licence"), _LONG.format("license")]


def stamp_path(cfg: DedupConfig) -> str:
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(KERNELS, "__pycache__")
    what = cfg.method + (f"+{cfg.spans}" if cfg.spans else "")
    key = f"{__version__}-numba{numba.__version__}-{platform.machine()}-{what}"
    return os.path.join(base, f"neardup-warm-{key}.stamp")


def _warm_index(small: DedupConfig, tmp: str, run_dedup) -> None:
    """The persistent index's kernels too (``neardup warmup`` only: a first ``dedup --index`` and a
    service's first requests then start at full speed — the segment probe alone is 4 s to compile):
    the documents are indexed by one run and probed by a second, which finds them all, then checked
    and added as the service does (the log's probe, then a segment's)."""
    src = os.path.join(tmp, "warm-ids.jsonl")
    with open(src, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(DOCS))
    path = os.path.join(tmp, "idx")
    ix = replace(small, index=path, id_field="id")
    run_dedup([src], os.path.join(tmp, "out-index-1"), ix)
    run_dedup([src], os.path.join(tmp, "out-index-2"), ix)
    with open_index(path) as idx:          # (its kind: the run's — MinHash, SimHash or verified SimHash)
        for flush in (False, True):
            idx.check_and_add([f"w{flush}{i}" for i in range(len(DOCS))], DOCS)
            idx.query_batch(DOCS)
            if not flush:
                idx.flush()


def _warm_band(src: str, small: DedupConfig) -> None:
    """What the band of ``--verify borderline`` compiles with several workers and a large band, which
    the one-worker run above does not reach: the re-read of the band's documents (the wanted lines
    cut from a block, parsed at once, their sets shingled from one packed buffer: the kernels that
    find the documents with non-ASCII bytes, flag those NFKC would change and splice their new text
    back in; missed, these compiled inside a first real run: 6.0 s against 2.1 on the benchmark corpus), its
    sets as the workers leave them (a read-only map of the spill file), and the pair kernel on all
    threads."""

    with open(src, "rb") as fh:
        sub, first = wanted_lines(fh.read(), 1, np.array([2, 4], dtype=np.int64))   # line 4: CJK and ㎏
    texts = parse_jsonl_block(InputSpec(src, "jsonl"), first, sub, small.text_field, None).texts
    minhasher(small.resolved()).shingler.features(texts).distinct_sets()
    two = np.zeros(2, dtype=np.int64)
    off = np.array([0, 1, 1], dtype=np.int64)
    mapped = np.zeros(1, dtype=np.uint64)
    mapped.flags.writeable = False      # the band's sets as several workers leave them: a read-only map
    for h in (np.zeros(1, dtype=np.uint64), mapped):
        pair_stats(h, off[:-1], off[1:], two, two + 1)
        pair_stats_parallel(h, off[:-1], off[1:], two, two + 1, 2)


def _warm_linkage(src: str, tmp: str, small: DedupConfig, run_dedup) -> None:
    """Bounded linkage on all threads (``kernels.clusters.bounded_components_parts``), which a run
    takes from :data:`~neardup.clusters.cluster.PARALLEL_LINKAGE_EDGES` verified pairs on: the same
    small run again with that limit at one pair, so that it compiles for the run's own types."""
    limit = cluster.PARALLEL_LINKAGE_EDGES
    cluster.PARALLEL_LINKAGE_EDGES = 1
    try:
        run_dedup([src], os.path.join(tmp, "out-linkage"), small)
    finally:
        cluster.PARALLEL_LINKAGE_EDGES = limit


def _warm_stretches() -> None:
    """What ``--method substrings`` compiles above 16 MB of text, which the small run above does not
    reach: the cross-check of stretches sorted apart (two, as on a large corpus), documents equal to
    earlier ones, and text larger than its memory budget, sorted a stretch at a time."""

    parts = [utf8(t) for t in DOCS]
    text, starts = join(parts)
    repeated_in_buffer(text, starts, 20, parts=2)
    repeated_in_parts(parts + parts[:2], 20, memory=IN_MEMORY_FACTOR * text.shape[0] // 4)


def warm_up(cfg: DedupConfig, announce: bool, force: bool = False, explicit: bool = False) -> float | None:
    """Seconds spent compiling ``cfg``'s kernels, or None when this machine has run its method before.

    ``explicit`` (the ``neardup warmup`` command): run even with ``NEARDUP_WARMUP=0``, and let a
    failure raise; ``force``: run even when the stamp exists."""
    global _WARMING
    if _WARMING or (not explicit and os.environ.get("NEARDUP_WARMUP", "1") == "0"):
        return None
    path = stamp_path(cfg)
    if os.path.exists(path) and not force:
        return None

    compile_noticed()              # (this step says so itself when progress is shown, not the library's notice)
    if announce:
        print(f"neardup: first --method {cfg.method} run here: compiling its kernels once (cached for later runs)…",
              file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    step = begin("compile", unit="run", bar=False)    # (a JSON event; a terminal has the message)
    small = replace(cfg, workers=1, quiet=True, progress="none", index=None, replace=False, id_field=None,
                    text_field="text", input_format="jsonl", on_error="raise",
                    keep="longest" if cfg.keep == "key" else cfg.keep, keep_field=None, batch_size=2)
    _WARMING = True
    try:
        with tempfile.TemporaryDirectory(prefix="neardup-warmup-") as tmp:
            src = os.path.join(tmp, "warm.jsonl")
            with open(src, "w", encoding="utf-8") as fh:
                fh.writelines(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in DOCS)
            run_dedup([src], os.path.join(tmp, "out"), small)
            steps = {"linkage": lambda: _warm_linkage(src, tmp, small, run_dedup),
                     "band": lambda: _warm_band(src, small), "stretches": _warm_stretches,
                     "index": lambda: _warm_index(small, tmp, run_dedup)}
            beside = spans_beside(cfg)
            for name in (*method_of(cfg).warm_ups(cfg, explicit),
                         *(method_of(beside).warm_ups(beside, explicit) if beside is not None else ())):
                steps[name]()
    except Exception as exc:       # only a head start: the run reports its own errors
        if explicit or stop_cause(exc) is not None:     # (but a Ctrl-C inside a kernel's load stops)
            raise
        step.end(0, failed=True)
        return None
    finally:
        _WARMING = False
    seconds = time.perf_counter() - t0
    step.end(1)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f"compiled in {seconds:.1f} s\n")
    except OSError:
        pass                       # a read-only cache folder: the message shows again next time
    if announce:
        print(f"neardup: kernels compiled in {seconds:.1f} s", file=sys.stderr, flush=True)
    return seconds
