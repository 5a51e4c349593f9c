#!/usr/bin/env python3
"""``neardup sign`` through the command line against rensa's tokenise + ``RMinHash`` loop, in one run.

    .venv/bin/python benchmarks/bench_sign_cli.py [--corpus PATH] [--repeat 3] \\
        [--peer-python .bench-venv/bin/python]

Both sides start from the same JSONL file and end with one 128-slot MinHash signature per document
written to disk; both are timed as a user would see them, wall clock of a fresh process, start-up
included (interpreter, imports, JIT from numba's cache, reading the file, writing the result):

* neardup: ``neardup sign CORPUS -o OUT --format parquet|npy|jsonl`` (word 5-grams, k = 128, all
  cores — its default);
* rensa 0.5 (``RMinHash(128, 42)`` per document, ``update`` with the document's word 5-gram strings
  from ``re.findall(r"\\w+", text.lower())``, ``digest()``; the loop of rensa's README), saving the
  matrix with ``numpy.save`` — in a subprocess of the peer venv (``bash benchmarks/setup_peers.sh``).

Runs alternate (neardup formats, rensa, neardup, …) so that the machine's other load falls on both;
the table shows the median of ``--repeat`` runs and each side's MB/s of text. neardup's kernels are
compiled once before timing (its first-run warm-up, timed apart in a real first run). Results go to
``benchmarks/out/sign_cli.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_CORPUS = os.path.join(HERE, "data", "corpus.jsonl")

RENSA = r'''
import json, re, sys, numpy as np
from rensa import RMinHash
word = re.compile(r"\w+")
sigs = []
with open(sys.argv[1], encoding="utf-8") as fh:
    for line in fh:
        toks = word.findall(json.loads(line)["text"].lower())
        sh = [" ".join(toks[i:i + 5]) for i in range(max(len(toks) - 4, 1))] if toks else []
        m = RMinHash(128, 42)
        m.update(sh)
        sigs.append(m.digest())
np.save(sys.argv[2], np.asarray(sigs, dtype=np.uint32))
'''


def _timed(cmd: list[str], env=None) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return dt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=DEFAULT_CORPUS)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--peer-python", default=os.path.join(ROOT, ".bench-venv", "bin", "python"))
    ap.add_argument("--formats", default="parquet,npy,jsonl")
    args = ap.parse_args(argv)
    if not os.path.exists(args.corpus):
        raise SystemExit(f"{args.corpus}: not found (python benchmarks/build_corpus.py builds it)")
    neardup = os.path.join(os.path.dirname(sys.executable), "neardup")
    text_mb = 0
    with open(args.corpus, encoding="utf-8") as fh:
        docs = 0
        for line in fh:
            text_mb += len(json.loads(line)["text"].encode("utf-8"))
            docs += 1
    text_mb /= 1e6
    formats = [f for f in args.formats.split(",") if f]
    times: dict[str, list[float]] = {f"neardup sign --format {f}": [] for f in formats}
    have_peer = os.path.exists(args.peer_python)
    if have_peer:
        times["rensa RMinHash loop (1 core)"] = []
    env = dict(os.environ, NEARDUP_WARMUP="1")
    with tempfile.TemporaryDirectory() as tmp:
        ext = {"parquet": "parquet", "npy": "npy", "jsonl": "jsonl"}
        # compile once (a real first run does this, announced and timed apart)
        _timed([neardup, "sign", args.corpus, "-o", os.path.join(tmp, "warm.parquet"), "--format", "parquet"], env)
        script = os.path.join(tmp, "rensa_loop.py")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(RENSA)
        for rep in range(args.repeat):
            for f in formats:
                out = os.path.join(tmp, f"s{rep}.{ext[f]}")
                times[f"neardup sign --format {f}"].append(
                    _timed([neardup, "sign", args.corpus, "-o", out, "--format", f], env))
            if have_peer:
                times["rensa RMinHash loop (1 core)"].append(
                    _timed([args.peer_python, script, args.corpus, os.path.join(tmp, f"r{rep}.npy")]))
    med = {k: statistics.median(v) for k, v in times.items()}
    ref = med.get("rensa RMinHash loop (1 core)")
    rows = []
    print(f"{docs:,} documents, {text_mb:.1f} MB of text; {os.cpu_count()} cores; median of {args.repeat}")
    print(f"{'':40s} {'s':>7s} {'MB/s':>7s} {'x rensa':>8s}")
    for k, v in med.items():
        x = ref / v if ref else None
        rows.append({"what": k, "seconds": round(v, 3), "runs": [round(t, 3) for t in times[k]],
                     "mb_per_s": round(text_mb / v, 1), "x_rensa": None if x is None else round(x, 2)})
        print(f"{k:40s} {v:7.2f} {text_mb / v:7.1f} {'' if x is None else f'{x:8.2f}'}")
    os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
    with open(os.path.join(HERE, "out", "sign_cli.json"), "w", encoding="utf-8") as fh:
        json.dump({"corpus": args.corpus, "documents": docs, "text_mb": round(text_mb, 2), "cores": os.cpu_count(),
                   "machine": platform.machine(), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
