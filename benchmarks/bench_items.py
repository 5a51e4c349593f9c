#!/usr/bin/env python3
"""Item sets signed in batches: ``neardup.sign_sets`` items/s on ONE core, against the one-at-a-time
``MinHash.update`` path and, in the peer venv, datasketch's ``MinHash.bulk`` and rensa's ``RMinHash``.

    .venv/bin/python benchmarks/bench_items.py [--sets 100000] [--mean-items 100] \\
        [--peer-python .bench-venv/bin/python]

Data: ``--sets`` sets of 1 … 2·mean − 1 items (uniform), items drawn from 10⁷ integer ids (and, for
the string rows, the same ids as decimal strings). Inputs are an Arrow ``large_list`` column (what
``pq.read_table(...).group_by(user).aggregate([(item, "distinct")])`` gives) and CSR numpy arrays.
Throughput counts items (with repeats) per wall second, best of 3, after one call that loads the
kernels. The slow paths run on the first ``--slow-sets`` sets and are scaled by items. k = 128.
Results go to ``benchmarks/out/items.json``.
"""
from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import json
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PEERS = r'''
import json, sys, time, numpy as np
data = np.load(sys.argv[1])
indptr, vals = data["indptr"], data["vals"]
sets = [[str(v).encode() for v in vals[indptr[i]:indptr[i + 1]]] for i in range(len(indptr) - 1)]
items = int(indptr[-1])
out = {}
from datasketch import MinHash
best = 1e9
for _ in range(3):
    t = time.perf_counter(); MinHash.bulk(sets, num_perm=128); best = min(best, time.perf_counter() - t)
out["datasketch MinHash.bulk (bytes)"] = items / best
from rensa import RMinHash
strs = [[s.decode() for s in row] for row in sets]
best = 1e9
for _ in range(3):
    t = time.perf_counter()
    for row in strs:
        m = RMinHash(128, 42); m.update(row); m.digest()
    best = min(best, time.perf_counter() - t)
out["rensa RMinHash loop (str)"] = items / best
print(json.dumps(out))
'''


def best_of(fn, repeat=3) -> float:
    fn()
    t = 1e9
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def main(argv=None) -> int:
    from neardup import MinHash, sign_sets

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", type=int, default=100_000)
    ap.add_argument("--mean-items", type=int, default=100)
    ap.add_argument("--slow-sets", type=int, default=2_000)
    ap.add_argument("--peer-python", default=os.path.join(ROOT, ".bench-venv", "bin", "python"))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 2 * args.mean_items, args.sets)
    indptr = np.zeros(args.sets + 1, np.int64)
    np.cumsum(sizes, out=indptr[1:])
    vals = rng.integers(0, 10**7, int(indptr[-1]))
    items = int(indptr[-1])
    ints = pa.LargeListArray.from_arrays(pa.array(indptr), pa.array(vals))
    strs = pa.LargeListArray.from_arrays(pa.array(indptr), pa.array(vals).cast(pa.string()))
    rows = []

    def row(name, seconds, n):
        rows.append({"what": name, "items_per_s": n / seconds})
        print(f"{name:48s} {n / seconds / 1e6:8.2f} M items/s")

    print(f"{args.sets:,} sets, {items:,} items, k = 128, one core")
    for scheme in ("oph", "permutation", "bottomk"):
        row(f"sign_sets Arrow int64, {scheme}", best_of(lambda s=scheme: sign_sets(ints, scheme=s)), items)
    row("sign_sets CSR numpy int64, oph", best_of(lambda: sign_sets(csr=(indptr, vals))), items)
    step = -(-args.sets // 100)
    chunked = pa.chunked_array([ints.slice(i, step) for i in range(0, args.sets, step)])
    row("sign_sets Arrow int64, 100 chunks, oph", best_of(lambda: sign_sets(chunked)), items)
    row("sign_sets Arrow string, oph", best_of(lambda: sign_sets(strs)), items)
    m = args.slow_sets
    sub_items = int(indptr[m])
    py_rows = [vals[indptr[i]:indptr[i + 1]].tolist() for i in range(m)]
    row("sign_sets Python lists of int, oph", best_of(lambda: sign_sets(py_rows)), sub_items)
    row("MinHash().update(list) one set at a time, oph",
        best_of(lambda: [MinHash(128).update(r).hashvalues for r in py_rows]), sub_items)
    row("sign_sets Arrow string, datasketch-affine32",
        best_of(lambda: sign_sets(strs.slice(0, m), scheme="datasketch-affine32"), 1), sub_items)
    if os.path.exists(args.peer_python):
        with tempfile.TemporaryDirectory() as tmp:
            np.savez(os.path.join(tmp, "d.npz"), indptr=indptr[:m + 1], vals=vals[:sub_items])
            script = os.path.join(tmp, "peers.py")
            with open(script, "w", encoding="utf-8") as fh:
                fh.write(PEERS)
            done = subprocess.run([args.peer_python, script, os.path.join(tmp, "d.npz")], capture_output=True,
                                  text=True, env=dict(os.environ, RAYON_NUM_THREADS="1"))
            if done.returncode == 0:
                for name, rate in json.loads(done.stdout).items():
                    rows.append({"what": name, "items_per_s": rate})
                    print(f"{name:48s} {rate / 1e6:8.2f} M items/s")
            else:
                print(f"peers failed: {done.stderr[-500:]}", file=sys.stderr)
    os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
    with open(os.path.join(HERE, "out", "items.json"), "w", encoding="utf-8") as fh:
        json.dump({"sets": args.sets, "items": items, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
