#!/usr/bin/env python3
"""Top-k by the in-memory LSH Forest against brute-force exact Jaccard, on the real corpus.

Corpus: benchmarks/data/corpus.jsonl (20,543 real documents, 92 MB). Every document is signed
(MinHash k = 128, word 5-grams) and inserted into :class:`neardup.MinHashLSH`; ``--queries``
documents, drawn with a fixed seed, are looked up with ``top_k(k=10)``. Truth: the exact Jaccard of
the query's shingle set with every document's. recall@10 = the share of the true top 10 found,
where a returned document counts when its exact Jaccard reaches the 10th true value (ties at
J = 1, frequent in this corpus, are interchangeable). Speed: queries per second on one core.

    python benchmarks/bench_topk.py [--queries 300] [--trees 8] [--exact] [--candidates N]

``--exact``: the documents' shingles are kept (``insert_batch(..., features=)``) and the forest's
candidates (default max(20k, 200)) are ranked by exact Jaccard with the query's shingles
(``top_k(..., features=)``); the query's shingling is timed as part of each query.

Writes benchmarks/out/topk.json.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
from common import corpus, write_result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=None, help="default: benchmarks/data/corpus.jsonl (built when missing)")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--trees", type=int, default=8)
    ap.add_argument("--candidates", type=int, default=None)
    ap.add_argument("--exact", action="store_true")
    args = ap.parse_args()
    import numba

    numba.set_num_threads(1)
    from neardup import MinHasher, MinHashLSH, Shingler
    from neardup.kernels.jaccard import pair_stats

    texts = [json.loads(line)["text"] for line in open(args.corpus or corpus(), encoding="utf-8")]
    n = len(texts)
    sigs = MinHasher(num_perm=128, scheme="oph", seed=1).sign_batch(texts)
    feats = Shingler(tokenizer="word", ngram=5).features(texts).unique()
    lsh = MinHashLSH(num_perm=128, trees=args.trees)
    shingler = Shingler(tokenizer="word", ngram=5)
    t = time.perf_counter()
    lsh.insert_batch(range(n), sigs.values, features=feats if args.exact else None)
    insert_s = time.perf_counter() - t
    rng = np.random.default_rng(7)
    qs = rng.choice(n, size=args.queries, replace=False)

    def query(q):
        f = shingler.features([texts[q]]) if args.exact else None
        return lsh.top_k(sigs[q], k=10, candidates=args.candidates, features=f)

    query(int(qs[0]))                                  # builds the forest (and loads the kernels)
    t = time.perf_counter()
    got = [query(int(q)) for q in qs]
    qps = args.queries / (time.perf_counter() - t)
    recalls = []
    for q, res in zip(qs.tolist(), got):
        inter, na, nb = pair_stats(feats.hashes, feats.offsets[:-1], feats.offsets[1:], np.full(n, q, np.int64), np.arange(n, dtype=np.int64))
        union = na + nb - inter
        j = np.where((na > 0) & (nb > 0), inter / np.maximum(union, 1), 0.0)
        kth = np.sort(j)[::-1][9]
        if kth <= 0:
            continue
        recalls.append(sum(1 for key, _ in res if j[key] >= kth) / 10)
    out = {"documents": n, "queries": len(recalls), "trees": args.trees, "exact": args.exact,
           "candidates": args.candidates, "recall_at_10": round(float(np.mean(recalls)), 4),
           "queries_per_s_one_core": round(qps, 1), "insert_s": round(insert_s, 2)}
    print(json.dumps(out))
    write_result("topk.json", out)


if __name__ == "__main__":
    main()
