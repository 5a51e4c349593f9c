#!/usr/bin/env python3
"""The persistent index at scale: `dedup --index` of new documents against an index of 1 M.

Corpus: benchmarks/data/synthetic_1100000.jsonl (built by build_synthetic.py --n 1100000 when
missing: 60 % fresh documents, 30 % near copies of earlier ones, 10 % exact copies). The first
``--base`` rows are "day 1", the next ``--new`` rows "day 2" (whose planted copies point back into
day 1 as often as into day 2).

Steps, per method (MinHash k = 128, SimHash k = 3 bits), each a fresh `neardup` process timed with
/usr/bin/time (wall, peak RSS of the largest process):

1. day 1: ``neardup dedup day1 -o OUT1 --index IDX`` (creates the index from the kept rows);
2. the index on disk: bytes per indexed document; opening it read-only in a fresh process;
3. day 2: ``neardup dedup day2 -o OUT2 --index IDX`` — the target: ≤ 10 s, memory not growing
   with the index;
4. the same day 2 without the index, for the cost of the index lookups;
5. with --check-union: one run over day 1 ∪ day 2, and how many kept rows differ.

    python benchmarks/bench_index.py [--base 1000000] [--new 100000] [--methods minhash simhash]

Writes benchmarks/out/index.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from common import neardup_cli, synthetic, timed, write_result

NEARDUP = neardup_cli()


def split(corpus: str, base: int, new: int, folder: str) -> tuple[str, str]:
    a, b = os.path.join(folder, "day1.jsonl"), os.path.join(folder, "day2.jsonl")
    with open(corpus, encoding="utf-8") as src, open(a, "w", encoding="utf-8") as fa, \
            open(b, "w", encoding="utf-8") as fb:
        for i, line in enumerate(src):
            if i < base:
                fa.write(line)
            elif i < base + new:
                fb.write(line)
            else:
                break
    return a, b


def kept_ids(out: str) -> set:
    with open(os.path.join(out, "clusters.jsonl"), encoding="utf-8") as fh:
        return {r["id"] for r in map(json.loads, fh) if r["kept"]}


def du(path: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=None, help="default: the synthetic corpus of BASE + NEW documents")
    ap.add_argument("--base", type=int, default=1_000_000)
    ap.add_argument("--new", type=int, default=100_000)
    ap.add_argument("--methods", nargs="+", default=["minhash", "simhash"])
    ap.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--check-union", action="store_true",
                    help="also run one dedup over day 1 ∪ day 2 and compare the kept rows")
    args = ap.parse_args()
    args.corpus = args.corpus or synthetic(args.base + args.new)
    work = args.work or tempfile.mkdtemp(prefix="neardup-bench-index-")
    os.makedirs(work, exist_ok=True)
    day1, day2 = split(args.corpus, args.base, args.new, work)
    results = {"base": args.base, "new": args.new, "corpus": os.path.basename(args.corpus), "methods": {}}
    common = ["--id-field", "id", "-q", "--no-html"]
    for method in args.methods:
        idx = os.path.join(work, f"idx_{method}")
        shutil.rmtree(idx, ignore_errors=True)
        r: dict = {}
        r["day1"] = timed([NEARDUP, "dedup", day1, "-o", os.path.join(work, f"{method}_d1"), "--index", idx,
                           "--method", method, *common])
        rep1 = json.load(open(os.path.join(work, f"{method}_d1", "report.json")))
        size = du(idx)
        docs = rep1["counts"]["kept"]
        r["index"] = {"documents": docs, "bytes": size, "bytes_per_document": round(size / docs, 1)}
        cls = "DiskIndex" if method == "minhash" else "SimHashDiskIndex"
        code = (f"import time; t = time.perf_counter(); from neardup.index.disk import {cls}; t1 = time.perf_counter(); "
                f"i = {cls}.open({idx!r}, readonly=True); n = len(i); t2 = time.perf_counter(); "
                "print(round(t2 - t1, 3), round(t1 - t, 3), n)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        r["open_s"], r["import_s"] = float(out[0]), float(out[1])
        r["day2"] = timed([NEARDUP, "dedup", day2, "-o", os.path.join(work, f"{method}_d2"), "--index", idx,
                           "--method", method, *common])
        rep2 = json.load(open(os.path.join(work, f"{method}_d2", "report.json")))
        r["day2"].update({"removed": rep2["counts"]["removed"], "removed_by_index": rep2["index"]["removed_by_index"],
                          "timings": rep2["timings"]})
        r["day2_without_index"] = timed([NEARDUP, "dedup", day2, "-o", os.path.join(work, f"{method}_d2x"),
                                         "--method", method, *common])
        if args.check_union:   # the defining equality, at scale: day 1 then day 2 vs one run over both
            both = os.path.join(work, "both.jsonl")
            if not os.path.exists(both):
                with open(both, "w", encoding="utf-8") as out:
                    for part in (day1, day2):
                        with open(part, encoding="utf-8") as src:
                            shutil.copyfileobj(src, out)
            r["union"] = timed([NEARDUP, "dedup", both, "-o", os.path.join(work, f"{method}_u"), "--method", method,
                                *common])
            kept_union = kept_ids(os.path.join(work, f"{method}_u"))
            kept_days = kept_ids(os.path.join(work, f"{method}_d1")) | kept_ids(os.path.join(work, f"{method}_d2"))
            r["union"].update({"kept_union": len(kept_union), "kept_days": len(kept_days),
                               "only_union": len(kept_union - kept_days), "only_days": len(kept_days - kept_union)})
        results["methods"][method] = r
        print(json.dumps({method: r}), flush=True)
    write_result("index.json", results)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
