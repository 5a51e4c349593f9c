#!/usr/bin/env python3
"""Quality of finding near-duplicates on the real corpus, against exact Jaccard for all pairs.

Corpus: benchmarks/data/corpus.jsonl (~20k copyright files + man pages; build_corpus.py).
Word 5-grams, k = 128, t = 0.8. Ground truth: every pair with exact Jaccard ≥ 0.75 (prefix-filtered
sparse product, neardup.evaluate.exact_jaccard_truth) — so for any clustering we know exactly
* recall(J ≥ 0.85): the share of true pairs with J ≥ 0.85 that end up in one cluster;
* impurity: the share of all pairs inside clusters whose J < 0.75 (every intra-cluster pair not in
  the J ≥ 0.75 truth set), the chaining cost of transitive clusters.
Rows: neardup (oph and permutation schemes; recall-target bands; verification on the signature
estimate or on the exact shingle sets; plain components with the drift split, or bounded linkage —
the default — with t − δ = 0.75), the same with datasketch's (b, r) choice, and datasketch 2.0.0's MinHashLSH itself with default parameters on the
SAME signature values (candidates joined into clusters, as a datasketch script does), plus SimHash
(k = 3) against Hamming and Jaccard ground truth. Run inside .bench-venv (datasketch installed):
    .bench-venv/bin/python benchmarks/bench_lsh_quality.py [--limit N]
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from common import corpus, write_result, zh_pages

HERE = os.path.dirname(os.path.abspath(__file__))


def intra_pairs(labels: np.ndarray) -> int:
    _, c = np.unique(labels, return_counts=True)
    return int((c * (c - 1) // 2).sum())


def score(labels, truth_lo, truth_hi, truth_j) -> dict:
    same = labels[truth_lo] == labels[truth_hi]
    hi_mask = truth_j >= 0.85
    total = intra_pairs(labels)
    good = int(same.sum())                       # intra-cluster pairs with J >= 0.75
    return {"recall_J>=0.85": round(float(same[hi_mask].mean()) if hi_mask.any() else 1.0, 5),
            "recall_J>=0.80": round(float(same[truth_j >= 0.8].mean()), 5),
            "clustered_pairs": total,
            "share_clustered_pairs_J<0.75": round((total - good) / total, 5) if total else 0.0,
            "kept": int(len(np.unique(labels)))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.path.join(HERE, "data", "corpus.jsonl"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--chinese", action="store_true",
                    help="the 100 Chinese man pages of ../shared instead, traditional ones converted (tw2sp)")
    args = ap.parse_args()
    import neardup
    from neardup.dedup import find_minhash_duplicates, find_simhash_duplicates
    from neardup.evaluate import exact_jaccard_truth, labels_from_pairs
    from neardup.index.lsh import choose_params

    texts = []
    if args.chinese:
        from neardup.text.normalize import _converter

        conv = _converter("tw2sp").convert
        texts = [conv(t) for t in zh_pages()]
    else:
        with open(corpus(args.corpus), encoding="utf-8") as fh:
            for line in fh:
                texts.append(json.loads(line)["text"])
                if args.limit and len(texts) >= args.limit:
                    break
    n = len(texts)
    feats = neardup.Shingler(ngram=5).features(texts)
    t = time.perf_counter()
    lo, hi, jj = exact_jaccard_truth(feats, 0.75)
    t_truth = time.perf_counter() - t
    print(f"{n} documents; {lo.shape[0]} pairs with J >= 0.75 ({(jj >= 0.85).sum()} with J >= 0.85), "
          f"ground truth in {t_truth:.1f} s")
    rows = {}
    variants = [  # (scheme, k, band choice, verification, linkage)
        ("oph", 128, "recall", "minhash", "components"),
        ("oph", 128, "recall", "minhash", "bounded"),          # neardup's default
        ("oph", 128, "recall", "exact", "components"),
        ("oph", 128, "recall", "exact", "bounded"),
        ("oph", 128, "recall", "borderline", "components"),
        ("oph", 128, "recall", "borderline", "bounded"),
        ("oph", 128, "datasketch", "minhash", "bounded"),
        ("oph", 256, "recall", "minhash", "bounded"),
        ("permutation", 128, "recall", "minhash", "bounded"),
        ("permutation", 128, "recall", "exact", "bounded"),
    ]
    signed = {}
    for scheme, k, mode, verify, linkage in variants:
        if (scheme, k) not in signed:
            signed[scheme, k] = neardup.MinHasher(num_perm=k, scheme=scheme, seed=1, ngram=5).sign_features(feats)
        sigs = signed[scheme, k]
        lsh = choose_params(0.8, k, mode)
        t = time.perf_counter()
        res = find_minhash_duplicates(sigs, 0.8, lsh=lsh, verify=verify, features=feats, linkage=linkage,
                                      max_drift=0.05)
        secs = time.perf_counter() - t
        link = "components + drift split" if linkage == "components" else "bounded linkage"
        name = f"neardup {scheme} k={k}, bands {mode} (b={lsh.b}, r={lsh.r}), verify {verify}, {link}"
        rows[name] = {**score(res.clusters.cluster, lo, hi, jj), "candidates": res.candidates,
                      "seconds": round(secs, 3), **({"borderline": res.params["borderline"]}
                                                    if "borderline" in res.params else {})}
    oph_values = signed["oph", 128].values
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError:
        print("datasketch not importable: run inside .bench-venv for the datasketch row")
    else:
        t = time.perf_counter()
        lsh = MinHashLSH(threshold=0.8, num_perm=128)
        mhs = []
        for i in range(n):
            m = MinHash(num_perm=128, hashvalues=oph_values[i].astype(np.uint64), scheme="legacy")
            mhs.append(m)
            lsh.insert(i, m)
        pairs = set()
        for i in range(n):
            for j in lsh.query(mhs[i]):
                if j != i:
                    pairs.add((min(i, j), max(i, j)))
        secs = time.perf_counter() - t
        pl = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
        labels = labels_from_pairs(n, pl)
        rows[f"datasketch MinHashLSH default (b={lsh.b}, r={lsh.r}), same oph signatures, unverified"] = {
            **score(labels, lo, hi, jj), "candidates": len(pairs), "seconds": round(secs, 3)}
    fps = neardup.SimHasher(ngram=3).sign_batch(texts)
    for linkage in ("components", "bounded"):
        res_l = find_simhash_duplicates(fps, 3, linkage=linkage)
        rows[f"neardup SimHash (word 3-grams, tf, k=3), {linkage}"] = {
            **score(res_l.clusters.cluster, lo, hi, jj), "verified_pairs": int(res_l.pairs_lo.shape[0])}
    res = res_l
    # SimHash against its own (Hamming) ground truth: brute force on a sample of documents
    rng = np.random.default_rng(0)
    sample = rng.choice(n, min(n, 4000), replace=False)
    x = fps[sample][:, None] ^ fps[sample][None, :]
    dist = np.unpackbits(x.view(np.uint8), axis=-1).reshape(len(sample), len(sample), 64).sum(-1)
    iu = np.triu_indices(len(sample), 1)
    truth_h = dist[iu] <= 3
    same = res.clusters.cluster[sample][iu[0]] == res.clusters.cluster[sample][iu[1]]
    direct = truth_h
    rows["neardup SimHash bounded vs Hamming<=3 truth (4000-doc sample, direct pairs)"] = {
        "recall": round(float(same[direct].mean()) if direct.any() else 1.0, 5),
        "precision_direct": round(float(direct[same].mean()) if same.any() else 1.0, 5)}
    out = {"documents": n, "truth_pairs_J>=0.75": int(lo.shape[0]), "truth_seconds": round(t_truth, 2),
           "rows": rows}
    write_result("lsh_quality_zh.json" if args.chinese else "lsh_quality.json", out)
    print("\n| method | recall J≥0.85 | recall J≥0.80 | clustered pairs | share with J<0.75 | kept |\n|---|---|---|---|---|---|")
    for name, r in rows.items():
        if "recall_J>=0.85" in r:
            print(f"| {name} | {r['recall_J>=0.85']:.4f} | {r['recall_J>=0.80']:.4f} | {r['clustered_pairs']:,} | "
                  f"{r['share_clustered_pairs_J<0.75']:.4f} | {r['kept']:,} |")
        else:
            print(f"| {name} | recall {r['recall']:.4f}, precision (direct pairs) {r['precision_direct']:.4f} |")


if __name__ == "__main__":
    main()
