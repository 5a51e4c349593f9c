#!/usr/bin/env python3
"""The pair kernels of verification: exact set intersections and MinHash estimates of given pairs.

Run from the repository root::

    .venv/bin/python benchmarks/bench_pairs.py                  # 500 k sets, 2.5 M pairs
    .venv/bin/python benchmarks/bench_pairs.py --docs 4000000   # sets spread over 6.4 GB: random reads

Sets of about 200 sorted distinct 64-bit values (a document's shingle hashes) come in pairs of near
copies (a share of 0–25 % of the values replaced: J ≈ 0.6–1, what ``--verify borderline`` checks) and
in unrelated pairs (J ≈ 0). Pairs are sorted by their first row, their second row anywhere, as the
candidates are. Timed, best of ``--repeat``, warm:

* ``exact``: :func:`neardup.similarity.jaccard.range_stats` (all cores), near copies and unrelated;
* ``estimate``: :func:`neardup.sketches.minhash.jaccard_rows` over a k = 128 signature matrix of as
  many rows (all cores).

Written to benchmarks/out/bench_pairs.json.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import write_result


def _sets(n_docs: int, size: int, seed: int):
    """CSR of ``n_docs`` sets: document 2g + 1 is document 2g with a share of its values replaced."""
    rng = np.random.default_rng(seed)
    h = np.empty(n_docs * size, dtype=np.uint64)
    off = np.arange(n_docs + 1, dtype=np.int64) * size
    step = 100_000
    for s in range(0, n_docs, step):
        e = min(n_docs, s + step)
        block = rng.integers(0, 2**63, (e - s, size), dtype=np.uint64)
        copies = np.arange(s, e) % 2 == 1
        prev = np.flatnonzero(copies)
        block[prev] = block[prev - 1]          # the near copy of the document before it
        swap = (rng.random((prev.shape[0], size)) < rng.uniform(0, 0.25, (prev.shape[0], 1)))
        fresh = rng.integers(0, 2**63, (prev.shape[0], size), dtype=np.uint64)
        block[prev] = np.where(swap, fresh, block[prev])
        block.sort(axis=1)                      # (distinct but for a 2^-63-scale accident)
        h[s * size:e * size] = block.ravel()
    return h, off


def _best(fn, repeat: int) -> float:
    fn()                                        # warm: compiled and cached
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=500_000)
    ap.add_argument("--pairs", type=int, default=2_500_000)
    ap.add_argument("--size", type=int, default=200, help="values per set")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from neardup.similarity.jaccard import jaccard_of, range_stats
    from neardup.sketches.minhash import jaccard_rows

    h, off = _sets(args.docs, args.size, 1)
    rng = np.random.default_rng(2)
    g = rng.integers(0, args.docs // 2, args.pairs)
    near = (2 * g, 2 * g + 1)
    other = (np.sort(rng.integers(0, args.docs, args.pairs)), rng.integers(0, args.docs, args.pairs))
    order = rng.permutation(args.docs)          # copies scattered: the second row of a pair is anywhere
    place = np.empty(args.docs, dtype=np.int64)
    place[order] = np.arange(args.docs)
    h = h.reshape(args.docs, args.size)[order].ravel()
    a, b = place[near[0]], place[near[1]]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    by = np.argsort(lo, kind="stable")
    near = (lo[by], hi[by])
    first, stop = off[:-1], off[1:]
    j = jaccard_of(*range_stats(h, first, stop, *near))
    res = {"docs": args.docs, "pairs": args.pairs, "values_per_set": args.size, "sets_GB": round(h.nbytes / 1e9, 2),
           "near_copies_J_quantiles": [round(float(x), 3) for x in np.quantile(j, [0.05, 0.5, 0.95])]}
    for name, (x, y) in (("near copies", near), ("unrelated", other)):
        t = _best(lambda x=x, y=y, h=h: range_stats(h, first, stop, x, y), args.repeat)
        res[f"exact {name} s"] = round(t, 3)
        res[f"exact {name} us per pair"] = round(t / args.pairs * 1e6, 3)
    del h
    sig = np.random.default_rng(3).integers(0, 2**32, (args.docs, 128), dtype=np.uint32)
    t = _best(lambda: jaccard_rows(sig, other[0], other[1], "oph"), args.repeat)
    res["estimate s"] = round(t, 3)
    res["estimate us per pair"] = round(t / args.pairs * 1e6, 3)
    for k, v in res.items():
        print(f"{k}: {v}")
    print(write_result("bench_pairs.json", res))


if __name__ == "__main__":
    main()
