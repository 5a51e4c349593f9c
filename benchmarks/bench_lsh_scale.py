"""Candidates + verification + clusters for 1 M MinHash signatures (k = 128) on one core.

Signatures are synthetic but shaped like a real corpus: 70 % distinct documents, 20 % near
duplicates of another row (each slot kept with probability s ~ U(0.7, 1.0), i.e. Jaccard ≈ s),
10 % exact copies. Run: python benchmarks/bench_lsh_scale.py [--n 1000000]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("NUMBA_NUM_THREADS", "1")


def make(n: int, k: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vals = rng.integers(0, 2**32, (n, k), dtype=np.uint64).astype(np.uint32)
    kind = rng.random(n)
    src = rng.integers(0, n, n)
    near = np.flatnonzero((kind >= 0.7) & (kind < 0.9))
    s = rng.uniform(0.7, 1.0, near.shape[0])
    keep = rng.random((near.shape[0], k)) < s[:, None]
    vals[near] = np.where(keep, vals[src[near]], vals[near])
    exact = np.flatnonzero(kind >= 0.9)
    vals[exact] = vals[src[exact]]
    return vals


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--threshold", type=float, default=0.8)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    from neardup import Signatures
    from neardup.dedup import find_minhash_duplicates

    find_minhash_duplicates(Signatures(make(2000, 128, 1), "oph", 1), args.threshold)  # warm-up (JIT cache load)
    vals = make(args.n, 128)
    t = time.perf_counter()
    res = find_minhash_duplicates(Signatures(vals, "oph", 1), args.threshold)
    wall = time.perf_counter() - t
    out = {"n": args.n, "k": 128, "threshold": args.threshold, "b": res.params["b"], "r": res.params["r"],
           "seconds": round(wall, 3), "stages": {k: round(v, 3) for k, v in res.timings.items()},
           "candidates": res.candidates, "verified_pairs": int(res.pairs_lo.shape[0]),
           "kept": int(res.clusters.kept.sum()),
           "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    print(json.dumps(out, indent=2))
    Path(__file__).with_name("out").mkdir(exist_ok=True)
    (Path(__file__).with_name("out") / "lsh_scale.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
