#!/usr/bin/env python3
"""How time and memory of `neardup dedup` grow with the corpus: 100 k to 10 M synthetic documents.

Builds the synthetic corpora if missing (benchmarks/build_synthetic.py), runs the CLI on each with
all cores, and reports wall time, throughput and the peak resident memory of the run (the largest
process: `neardup` itself or a signing worker). Also checks the planted truth: the share of planted
copies removed, by edit rate e. A fraction e of words edited touches about 1 − (1 − e)^5 of the word
5-grams, so J ≈ (1 − e)^5 / (2 − (1 − e)^5): e = 1 % → J ≈ 0.91, 2 % → 0.82, 3 % → 0.75, 5 % → 0.63;
at t = 0.8 copies with e ≤ 1 % should all go and copies with e ≥ 4 % mostly stay.
Each run's peak is its own (``os.wait4``: the largest of the run and its signing workers, file pages it
maps included), and beside it the main process's largest anonymous memory (RssAnon, sampled): the
run's own data, without the pages of files it reads through a memory map, which the system can drop;
"bytes per document" is that over the documents. A corpus of N documents is the first N lines of
a larger one when that exists (build_synthetic.py is sequential and deterministic: the 1 M corpus is
the first million lines of the 10 M one). The kept rows are deleted after each run (8 GB at 10 M).
Usage: python benchmarks/bench_dedup_scale.py [--sizes 100000 1000000 3000000 10000000]
       [--verify borderline minhash]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import threading
import time

from common import OUT, neardup_cli, synthetic, write_result


def _peak_anon(pid: int) -> list:
    """The largest anonymous resident memory (RssAnon: the run's own data, not file pages it maps,
    which the system can drop) of the run's main process, sampled every 0.2 s until it ends."""
    peak = [0.0]

    def watch():
        while True:
            try:
                with open(f"/proc/{pid}/status") as fh:
                    for line in fh:
                        if line.startswith("RssAnon:"):
                            peak[0] = max(peak[0], int(line.split()[1]) / 1024)
            except OSError:
                return
            if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z":
                return
            time.sleep(0.2)

    threading.Thread(target=watch, daemon=True).start()
    return peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    ap.add_argument("--verify", nargs="+", default=["borderline"], help="--verify of each run (borderline: the default)")
    args = ap.parse_args()
    rows = []
    neardup = neardup_cli()
    for n, verify in itertools.product(args.sizes, args.verify):
        path = synthetic(n)
        out = os.path.join(OUT, f"dedup_synthetic_{n}")
        t = time.perf_counter()
        proc = subprocess.Popen([neardup, "dedup", path, "-o", out, "--id-field", "id", "-q", "--no-html",
                                 "--verify", verify])
        anon = _peak_anon(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t
        if proc.returncode:
            raise SystemExit(f"neardup dedup failed ({proc.returncode})")
        peak = usage.ru_maxrss / 1024
        shutil.rmtree(os.path.join(out, "kept"), ignore_errors=True)
        rep = json.load(open(os.path.join(out, "report.json")))
        # planted truth: removal rate of planted copies by edit rate
        edges = [0.0, 0.0001, 0.01, 0.02, 0.03, 0.05, 0.101]
        seen, gone = [0] * (len(edges) - 1), [0] * (len(edges) - 1)
        with open(path, encoding="utf-8") as src, open(os.path.join(out, "clusters.jsonl"), encoding="utf-8") as cl:
            for line, rec in zip(src, cl):
                head = line[: line.index(', "text"')] + "}"
                meta = json.loads(head)
                if "origin" in meta:
                    b = next(i for i in range(len(edges) - 1) if meta["edit_rate"] < edges[i + 1])
                    seen[b] += 1
                    gone[b] += not json.loads(rec)["kept"]
        labels = ["exact", "<1%", "1-2%", "2-3%", "3-5%", "5-10%"]  # build_synthetic draws e from U(1%, 10%)
        by_edit = {lab: round(g / s_, 4) for lab, g, s_ in zip(labels, gone, seen) if s_}  # empty buckets left out
        mb = os.path.getsize(path) / 1e6
        row = {"documents": n, "verify": verify, "MB": round(mb), "wall_s": round(wall, 1),
               "MB_per_s": round(mb / wall, 1), "peak_rss_MB": round(peak),
               "peak_anon_MB": round(anon[0]), "bytes_per_document": round(anon[0] * 2**20 / n),
               "removed": rep["counts"]["removed"],
               "removed_by_edit_rate": by_edit, "timings": rep["timings"]}
        rows.append(row)
        print(json.dumps(row))
    write_result("dedup_scale.json", rows)
    print("\n| documents | MB | --verify | wall s | peak RSS MB (anonymous) | bytes/doc | read+sign | LSH | verify (band) "
          "| clusters | write | copies removed, by edit rate |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        edits = ", ".join(f"{k}: {v:.3f}" for k, v in r["removed_by_edit_rate"].items())
        t = r["timings"]
        band = f" ({t['borderline']:.1f})" if "borderline" in t else ""
        print(f"| {r['documents']:,} | {r['MB']} | {r['verify']} | {r['wall_s']} | {r['peak_rss_MB']} "
              f"({r['peak_anon_MB']}) | "
              f"{r['bytes_per_document']} | {t['read_sign']:.1f} | {t['identical'] + t['candidates']:.1f} | "
              f"{t['verify']:.1f}{band} | {t['clusters']:.1f} | {t['write']:.1f} | {edits} |")


if __name__ == "__main__":
    main()
