#!/usr/bin/env python3
"""All pairs within Hamming distance k among 1 M SimHash fingerprints, on ONE core.

    .venv/bin/python benchmarks/bench_simhash_index.py [--n 1000000] [--k 3] [--repeat 3]

Data: ``--n`` random 64-bit fingerprints (``numpy.random.default_rng(--seed)``), then
``--planted`` of them overwritten by near copies of others: distance 1..k (must be found) and
k+1 (must not).  All values are distinct, so the answer is the same whether a tool works on
indices or on values (seomoz/simhash-py's ``find_all`` takes a set of values).

Timed (wall clock, after a warm-up that compiles the kernels; best of ``--repeat``):

* neardup ``all_pairs(fps, k)`` with the plan ``plan_tables`` picks for this n, and with the
  fixed layout of 5 blocks (simhash-py's benchmark setting) for a like-for-like row;
* seomoz/simhash-py ``find_all(list_of_ints, blocks, k)`` for each of ``--peer-blocks``, run
  in its own venv (``--peer-venv``, default /work/simhashpy-venv) through a subprocess on the
  same fingerprints, timed the way its ``bench.py`` does (the call on a Python list).  Its
  answer is compared with ours as a set of value pairs (SHA-1 of the sorted pairs).  If the
  venv is missing, the row shows the figure from simhash-py's README instead: "Ran Find all
  in 1.595416s" for ``bench.py --random 1000000 --blocks 5 --bits 3`` (single core, 2015
  MacBook Pro in a vagrant VM).
* the online ``SimHashIndex``: ``add`` one at a time, ``add_many`` for the rest, ``query``
  one at a time (half near copies of stored fingerprints, half random), ``query_many`` over
  all fingerprints, and ``remove``.

How the peer venv was made (PyPI simhash-py 0.4.0 does not build on Python 3.11 as shipped:
its pre-generated ``simhash.cpp`` includes ``longintrepr.h``, removed in 3.11)::

    python3 -m venv /work/simhashpy-venv
    /work/simhashpy-venv/bin/pip install numpy six wheel setuptools "cython<3"
    /work/simhashpy-venv/bin/pip download --no-deps --no-binary :all: simhash-py   # sdist
    # unpack; delete simhash/simhash.cpp so Cython regenerates it; the sdist also lacks
    # simhash/simhash.pxd: write one declaring Simhash::hash_t, match_t, match_t_hash,
    # matches_t, num_differing_bits, compute and find_all from simhash-cpp/include/simhash.h
    /work/simhashpy-venv/bin/pip install --no-build-isolation ./simhash-py-0.4.0

Results: a table on stdout and ``benchmarks/out/simhash_index.json``.
"""
from __future__ import annotations

import os

# One core, no hidden thread pools: set before numpy/numba are imported.
for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
try:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
except (AttributeError, OSError):
    pass

import argparse
import hashlib
import json
import platform
import subprocess
import sys
import tempfile
import time

import numba
import numpy as np

from neardup.index.simhash_index import SimHashIndex, all_pairs, layout, plan_tables

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "out", "simhash_index.json")
README_ANCHOR_S = 1.595416   # simhash-py README: find_all, 1 M random hashes, 5 blocks, 3 bits

PEER_SCRIPT = r"""
import array, hashlib, json, sys, time
import simhash
with open(sys.argv[1], "rb") as fh:
    fps = array.array("Q")
    fps.frombytes(fh.read())
blocks = [int(b) for b in sys.argv[2].split(",")]
k = int(sys.argv[3])
repeat = int(sys.argv[4])
hashes = fps.tolist()
simhash.find_all(hashes[:10000], blocks[0], k)          # warm-up
out = {}
for b in blocks:
    best = None
    for _ in range(repeat):
        t = time.perf_counter()
        res = simhash.find_all(hashes, b, k)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    flat = array.array("Q", [v for a, c in sorted((min(a, c), max(a, c)) for a, c in res)
                             for v in (a, c)])
    out[b] = {"seconds": best, "pairs": len(res), "sha1": hashlib.sha1(flat.tobytes()).hexdigest()}
print(json.dumps(out))
"""


def make_fps(n: int, planted: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    src = rng.choice(n, planted, replace=False)
    dst = rng.choice(np.setdiff1d(np.arange(n), src), planted, replace=False)
    dist = np.where(np.arange(planted) % 5 == 4, k + 1, 1 + np.arange(planted) % k)
    for a, b, d in zip(src, dst, dist):
        mask = 0
        for bit in rng.choice(64, d, replace=False):
            mask |= 1 << int(bit)
        fps[b] = fps[a] ^ np.uint64(mask)
    # keep values distinct (a collision in 1 M random 64-bit values is ~3e-8 likely)
    assert np.unique(fps).size == n
    return fps, src, dst, dist


def value_pair_sha1(fps, i, j) -> str:
    a, b = fps[i], fps[j]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((hi, lo))
    arr = np.stack([lo[order], hi[order]], axis=1).astype(np.uint64)
    return hashlib.sha1(arr.tobytes()).hexdigest()


def best_of(fn, repeat: int):
    best, out = None, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, out


def run_peer(args, fps):
    py = os.path.join(args.peer_venv, "bin", "python")
    if not os.path.exists(py):
        return None, f"no peer venv at {args.peer_venv}"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fps.u64")
        fps.tofile(path)          # native byte order, read back as array("Q")
        try:
            proc = subprocess.run([py, "-c", PEER_SCRIPT, path, args.peer_blocks, str(args.k),
                                   str(args.repeat)], capture_output=True, text=True,
                                  timeout=3600, env={**os.environ, "PYTHONPATH": ""})
        except subprocess.TimeoutExpired:
            return None, "simhash-py timed out"
    if proc.returncode != 0:
        return None, "simhash-py failed: " + proc.stderr.strip().splitlines()[-1][:200]
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--planted", type=int, default=20_000)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20070508)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--peer-venv", default="/work/simhashpy-venv")
    ap.add_argument("--peer-blocks", default="4,5,6")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--online-single", type=int, default=200_000,
                    help="how many add()/query()/remove() calls to time one by one")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    k, n = args.k, args.n

    fps, src, dst, dist = make_fps(n, args.planted, k, args.seed)
    print(f"{n:,} fingerprints, {args.planted:,} planted near copies, k={k}, "
          f"cpu affinity {sorted(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}")

    # warm-up: compile / load every kernel on a small input
    all_pairs(fps[:20000], k)
    all_pairs(fps[:20000], k, layout(64, k, (5,)))
    w = SimHashIndex(k=k, expected_n=1000)
    w.add(0, 1)
    w.add_many([1, 2], fps[:2])
    w.query(1)
    w.query_many(fps[:2])
    w.remove(0)

    rows = []
    results = {}
    plan = plan_tables(64, k, n)
    t_auto, (i, j, d) = best_of(lambda: all_pairs(fps, k), args.repeat)
    sha_ours = value_pair_sha1(fps, i, j)
    found = set(zip(i.tolist(), j.tolist()))
    near = dist <= k
    missed = sum((min(a, b), max(a, b)) not in found for a, b in zip(src[near], dst[near]))
    wrong = sum((min(a, b), max(a, b)) in found for a, b in zip(src[~near], dst[~near]))
    assert missed == 0 and wrong == 0, (missed, wrong)
    results["neardup_all_pairs"] = {"seconds": t_auto, "pairs": int(i.size), "plan": plan.describe(),
                                    "sha1": sha_ours, "planted_found": int(near.sum())}
    rows.append(("neardup all_pairs (auto plan)", plan.describe().split(":")[0] + f", {plan.n_tables} tables",
                 t_auto, i.size))
    p5 = layout(64, k, (5,), n)
    t5, (i5, _, _) = best_of(lambda: all_pairs(fps, k, p5), args.repeat)
    results["neardup_all_pairs_5_blocks"] = {"seconds": t5, "pairs": int(i5.size)}
    rows.append(("neardup all_pairs (5 blocks)", f"one-level B=5, {p5.n_tables} tables", t5, i5.size))

    peer, why = (None, "--no-peer") if args.no_peer else run_peer(args, fps)
    if peer is not None:
        results["simhash_py_find_all"] = peer
        for b, r in peer.items():
            same = r["sha1"] == sha_ours
            rows.append((f"simhash-py find_all ({b} blocks)", "same pairs" if same else "DIFFERENT pairs",
                         r["seconds"], r["pairs"]))
            results["simhash_py_find_all"][b]["same_pairs_as_neardup"] = same
    else:
        results["simhash_py_find_all"] = {"unavailable": why, "readme_anchor_seconds": README_ANCHOR_S}
        rows.append(("simhash-py find_all (README)", f"not run here: {why}", README_ANCHOR_S, None))

    # ---- online index
    m = min(args.online_single, n)
    fl = fps.tolist()
    idx = SimHashIndex(k=k, expected_n=n)
    t = time.perf_counter()
    for key in range(m):
        idx.add(key, fl[key])
    t_add = time.perf_counter() - t
    t = time.perf_counter()
    idx.add_many(range(m, n), fps[m:])
    t_add_many = time.perf_counter() - t
    rng = np.random.default_rng(args.seed + 1)
    qn = m
    near_q = fps[rng.integers(0, n, qn // 2)] ^ (np.uint64(1) << rng.integers(0, 64, qn // 2).astype(np.uint64))
    queries = np.concatenate([near_q, rng.integers(0, 2**64, qn - qn // 2, dtype=np.uint64)]).tolist()
    t = time.perf_counter()
    hits = 0
    for q in queries:
        hits += len(idx.query(q))
    t_query = time.perf_counter() - t
    t = time.perf_counter()
    res_many = idx.query_many(fps)
    t_query_many = time.perf_counter() - t
    n_self_pairs = sum(len(r) for r in res_many) - n
    assert n_self_pairs == 2 * i.size, (n_self_pairs, i.size)   # every pair seen from both ends
    t = time.perf_counter()
    for key in range(m):
        idx.remove(key)
    t_remove = time.perf_counter() - t
    results["online"] = {
        "plan": idx.plan.describe(), "n": n, "single_ops": m,
        "add_per_s": m / t_add, "add_many_per_s": (n - m) / t_add_many,
        "query_per_s": qn / t_query, "query_hits": hits, "query_many_per_s": n / t_query_many,
        "remove_per_s": m / t_remove,
        "index_bytes": idx.nbytes,
    }

    # ---- report
    print()
    print(f"{'method':34} {'layout / note':42} {'seconds':>8} {'pairs':>8}")
    for name, note, sec, pairs in rows:
        print(f"{name:34} {note:42} {sec:8.3f} {'' if pairs is None else f'{pairs:,}':>8}")
    o = results["online"]
    print(f"\nonline SimHashIndex ({o['plan'].split(',')[0]}), n={n:,}:")
    print(f"  add()        {o['add_per_s']:>12,.0f} /s   ({m:,} one at a time)")
    print(f"  add_many()   {o['add_many_per_s']:>12,.0f} /s")
    print(f"  query()      {o['query_per_s']:>12,.0f} /s   ({qn:,}: half near copies, half random)")
    print(f"  query_many() {o['query_many_per_s']:>12,.0f} /s")
    print(f"  remove()     {o['remove_per_s']:>12,.0f} /s")
    print(f"  index arrays {o['index_bytes'] / 2**20:,.0f} MiB (+ Python key dict)")

    meta = {
        "command": " ".join([os.path.relpath(sys.executable, os.getcwd()), *sys.argv]),
        "n": n, "k": k, "planted": args.planted, "seed": args.seed, "repeat": args.repeat,
        "python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
        "machine": platform.machine(), "processor": platform.processor() or platform.uname().machine,
        "cpu_count": os.cpu_count(),
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"meta": meta, "results": results}, fh, indent=2)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
