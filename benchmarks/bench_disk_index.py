#!/usr/bin/env python3
"""DiskIndex throughput and size on a real corpus, on ONE core::

    .venv/bin/python benchmarks/bench_disk_index.py [--docs 20000] [--batch 1000] [--queries 2000]

Corpus: the first ``--docs`` records of ``benchmarks/data/corpus.jsonl`` if it exists, otherwise
texts of ``/usr/share/doc/*/copyright``. Index: ``DiskIndex.create`` defaults (t = 0.8, k = 128,
oph, word 5-grams, recall-mode bands), a folder index (segments and log) in a fresh temporary
directory, synchronous=NORMAL unless a row says FULL.

Rows (each timed once, after a warm-up that compiles the kernels):

* ``add_batch`` — text → signature → band keys → one transaction per ``--batch`` docs;
* ``add_signatures`` — the same documents from precomputed signatures (storage cost only),
  NORMAL and FULL;
* ``add (one per transaction)`` — single-document adds, each its own commit;
* ``query`` — one text at a time; ``query_batch`` — ``--qbatch`` texts per call;
  ``query_signatures`` — lookup + verification only. Queries are stored documents (each finds
  at least itself) and, if the corpus has more, unseen ones.

Size: the index folder's bytes / documents after close, with a split by file (segment arrays by
name, the log, the manifest). Results: a table on stdout and ``benchmarks/out/disk_index.json``.
"""
from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
try:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
except (AttributeError, OSError):
    pass

import argparse
import glob
import json
import platform
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from neardup import __version__
from neardup.index.disk import DiskIndex

DEFAULT_CORPUS = os.path.join(HERE, "data", "corpus.jsonl")
DEFAULT_OUT = os.path.join(HERE, "out", "disk_index.json")


def load_texts(path: str, limit: int) -> tuple[list[str], list[str], str]:
    if os.path.exists(path):
        ids, texts = [], []
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                ids.append(rec["id"])
                texts.append(rec["text"])
                if len(texts) >= limit:
                    break
        return ids, texts, path
    ids, texts = [], []
    for p in sorted(glob.glob("/usr/share/doc/*/copyright")):
        try:
            with open(p, encoding="utf-8", errors="replace") as fh:
                texts.append(fh.read())
            ids.append(p)
        except OSError:
            continue
        if len(texts) >= limit:
            break
    return ids, texts, "/usr/share/doc/*/copyright"


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def table_sizes(path: str) -> dict[str, int]:
    """Bytes of the index folder by file name (a segment's arrays summed over segments)."""
    out: dict[str, int] = {}
    for root, _, files in os.walk(path):
        for f in files:
            out[f] = out.get(f, 0) + os.path.getsize(os.path.join(root, f))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=DEFAULT_CORPUS)
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--qbatch", type=int, default=100)
    ap.add_argument("--single", type=int, default=500, help="documents added one per transaction")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()

    ids, texts, source = load_texts(args.corpus, args.docs + args.queries // 2)
    stored_ids, stored = ids[:args.docs], texts[:args.docs]
    unseen = texts[args.docs:]
    n = len(stored)
    mb = sum(len(t.encode("utf-8")) for t in stored) / 1e6
    print(f"corpus: {source}: {n} docs stored ({mb:.1f} MB), {len(unseen)} unseen for queries")

    rows, report = [], {}
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        # warm-up: compile/load the kernels outside the timings
        with DiskIndex.create(os.path.join(tmp, "warm.ndx")) as w:
            w.add_batch(["a", "b"], stored[:2])
            w.query_batch(stored[:2])

        path = os.path.join(tmp, "index.ndx")
        idx = DiskIndex.create(path)
        params = {"threshold": idx.threshold, "num_perm": idx.config["num_perm"], "scheme": idx.scheme,
                  "b": idx.b, "r": idx.r, "batch": args.batch}
        print(f"index: t={idx.threshold}, k={params['num_perm']}, {idx.scheme}, b={idx.b}, r={idx.r}, "
              f"batch {args.batch}")

        def add_all():
            for lo in range(0, n, args.batch):
                idx.add_batch(stored_ids[lo:lo + args.batch], stored[lo:lo + args.batch])

        sec = timed(add_all)
        rows.append(("add_batch (sign + store)", n, sec, "docs"))
        sign_sec = timed(lambda: idx.hasher.sign_batch(stored))
        rows.append(("  of which signing alone", n, sign_sec, "docs"))

        # queries: stored documents (spread over the corpus) and unseen ones
        nq_seen = min(n, args.queries - min(len(unseen), args.queries // 2))
        step = max(1, n // max(1, nq_seen))
        queries = stored[::step][:nq_seen] + unseen[:args.queries - nq_seen]
        hits = []
        sec = timed(lambda: hits.extend(idx.query(q) for q in queries))
        rows.append(("query (one at a time)", len(queries), sec, "queries"))
        batched = []
        sec = timed(lambda: [batched.extend(idx.query_batch(queries[i:i + args.qbatch]))
                             for i in range(0, len(queries), args.qbatch)])
        rows.append((f"query_batch ({args.qbatch} per call)", len(queries), sec, "queries"))
        assert batched == hits
        qsig = idx.hasher.sign_batch(queries).values
        sec = timed(lambda: [idx.query_signatures(qsig[i:i + args.qbatch])
                             for i in range(0, len(queries), args.qbatch)])
        rows.append(("query_signatures (lookup + verify)", len(queries), sec, "queries"))
        found_self = sum(any(k == stored_ids[i * step] for k, _ in hits[i]) for i in range(nq_seen))
        mean_hits = sum(len(h) for h in hits) / len(hits)
        idx.close()
        tables = table_sizes(path)
        db_bytes = sum(tables.values())

        # storage only: the same signatures again, NORMAL then FULL
        sigs = DiskIndex.open(path, readonly=True)
        values = sigs.hasher.sign_batch(stored).values
        sigs.close()
        for sync in ("NORMAL", "FULL"):
            p2 = os.path.join(tmp, f"sig-{sync}.ndx")
            with DiskIndex.create(p2, synchronous=sync) as i2:
                sec = timed(lambda: [i2.add_signatures(stored_ids[lo:lo + args.batch], values[lo:lo + args.batch])
                                     for lo in range(0, n, args.batch)])
            rows.append((f"add_signatures, synchronous={sync}", n, sec, "docs"))

        m = min(args.single, n)
        with DiskIndex.create(os.path.join(tmp, "single.ndx")) as i3:
            sec = timed(lambda: [i3.add(stored_ids[i], stored[i]) for i in range(m)])
        rows.append(("add (one per transaction)", m, sec, "docs"))

    print()
    print(f"{'operation':38s} {'count':>7s} {'seconds':>9s} {'per second':>12s}")
    for name, count, sec, unit in rows:
        print(f"{name:38s} {count:7d} {sec:9.2f} {count / sec:10.0f} {unit}/s")
    print()
    print(f"bytes on disk: {db_bytes / 1e6:.1f} MB for {n} docs = {db_bytes / n:.0f} bytes/doc")
    for name, size in sorted(tables.items(), key=lambda kv: -kv[1]):
        print(f"  {name:28s} {size / n:8.0f} bytes/doc")
    print(f"queries: {found_self}/{nq_seen} stored queries found themselves; {mean_hits:.2f} results per query")

    report = {
        "neardup": __version__, "python": platform.python_version(),
        "machine": platform.machine(), "corpus": {"source": source, "docs": n, "mb": mb, "unseen_queries": len(unseen)},
        "params": params,
        "rows": [{"operation": name, "count": count, "seconds": sec, "per_second": count / sec}
                 for name, count, sec, _ in rows],
        "bytes_on_disk": db_bytes, "bytes_per_doc": db_bytes / n,
        "table_bytes_per_doc": {name: size / n for name, size in tables.items()},
        "queries": {"count": len(queries), "stored": nq_seen, "found_self": found_self, "mean_results": mean_hits},
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(report, fh, indent=2)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
