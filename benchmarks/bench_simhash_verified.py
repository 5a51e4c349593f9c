#!/usr/bin/env python3
"""Verified SimHash against the classic rule and MinHash, on Chinese man pages and their traditional
versions converted back: the measurement behind ``--method simhash``'s defaults.

    .venv/bin/python benchmarks/bench_simhash_verified.py [--corpus benchmarks/data/manpages_zh.jsonl]

Corpus: every page of Debian's manpages-zh that is a file (not an alias) in both zh_CN and zh_TW (703
pages, 1,406 documents, 8.0 M characters): zh_CN/X as it is, zh_TW/X converted to simplified with
OpenCC ``tw2sp``. Built when missing by ``apt-get download manpages-zh`` (needs Debian's registry);
without it, ``--shared`` uses the 50-page sample of ../shared.

Measures (the issue's): same-page recall (both versions of a page in one cluster) and the
same-cluster pairs whose Jaccard of word 5-gram shingles is below 0.6; then wall time of the whole
``dedup`` (all cores, warm kernel cache) and index bytes per document (``dedup --index``). Also the
sweep that chose the defaults: candidate features × radius k_c × threshold t, by pairs (recall of the
same-page pairs within k_c and Jaccard ≥ t, candidates to check). Writes
benchmarks/out/simhash_verified.json and prints Markdown tables.
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np
from common import write_result

HERE = os.path.dirname(os.path.abspath(__file__))


def build(path: str) -> None:
    """The full corpus from Debian's manpages-zh package (apt-get download, dpkg -x)."""
    import opencc

    tmp = tempfile.mkdtemp(prefix="mzh-")
    subprocess.run(["apt-get", "download", "manpages-zh"], cwd=tmp, check=True, capture_output=True)
    deb = next(f for f in os.listdir(tmp) if f.endswith(".deb"))
    subprocess.run(["dpkg", "-x", deb, "x"], cwd=tmp, check=True)
    root = os.path.join(tmp, "x", "usr", "share", "man")
    conv = opencc.OpenCC("tw2sp")
    names = []
    for dirpath, _, files in os.walk(os.path.join(root, "zh_CN")):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), os.path.join(root, "zh_CN"))
            a, b = os.path.join(root, "zh_CN", rel), os.path.join(root, "zh_TW", rel)
            if not os.path.islink(a) and os.path.isfile(b) and not os.path.islink(b):
                names.append(rel)
    with open(path, "w", encoding="utf-8") as out:
        for rel in sorted(names):
            for side in ("zh_CN", "zh_TW"):
                text = gzip.open(os.path.join(root, side, rel), "rt", encoding="utf-8", errors="replace").read()
                text = text if side == "zh_CN" else conv.convert(text)
                out.write(json.dumps({"id": f"{side[3:]}/{rel}", "text": text}, ensure_ascii=False) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)


def sample(shared: str, path: str) -> None:
    import opencc

    conv = opencc.OpenCC("tw2sp")
    root = os.path.join(shared, "corpora", "manpages_zh_sample")
    with open(path, "w", encoding="utf-8") as out:
        for name in sorted(os.listdir(os.path.join(root, "zh_CN"))):
            for side in ("zh_CN", "zh_TW"):
                with open(os.path.join(root, side, name), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                text = text if side == "zh_CN" else conv.convert(text)
                out.write(json.dumps({"id": f"{side[3:]}/{name}", "text": text}, ensure_ascii=False) + "\n")


def quality(rows, sets, out: str):
    recs = {r["id"]: r for r in map(json.loads, open(os.path.join(out, "clusters.jsonl"), encoding="utf-8"))}
    names = sorted({r["id"][3:] for r in rows})
    same = sum(recs["CN/" + n]["cluster"] == recs["TW/" + n]["cluster"] for n in names) / len(names)
    by: dict = {}
    for i, r in recs.items():
        by.setdefault(r["cluster"], []).append(i)
    pairs = low = 0
    for m in by.values():
        for a, b in itertools.combinations(m, 2):
            pairs += 1
            low += len(sets[a] & sets[b]) / len(sets[a] | sets[b]) < 0.6
    return same, pairs, low


RUNS = [
    ("minhash (defaults)", {}),
    ("simhash --bits 3 (classic defaults: word 3-gram tf)", {"method": "simhash", "bits": 3}),
    ("simhash --compat yanyiwu (the seed's recipe)", {"method": "simhash", "compat": "yanyiwu"}),
    ("simhash jieba tf-idf top 20, --bits 3", {"method": "simhash", "tokenizer": "jieba", "idf": "jieba", "top_n": 20,
                                             "bits": 3}),
    ("simhash (verified defaults: unigram tf, k_c 9, t 0.8)", {"method": "simhash"}),
    ("simhash verified --candidate-bits 6", {"method": "simhash", "candidate_bits": 6}),
]


def sweep(rows, sets):
    """Candidate features × k_c × t by pairs: same-page recall (within k_c and J ≥ t) and candidates."""
    from neardup.index.simhash_index import all_pairs
    from neardup.sketches.simhash import feature_signer

    texts = [r["text"] for r in rows]
    ids = [r["id"] for r in rows]
    pos = {i: k for k, i in enumerate(ids)}
    page_pairs = [(pos["CN/" + n], pos["TW/" + n]) for n in sorted({i[3:] for i in ids})]

    def jac(a, b):
        return len(sets[ids[a]] & sets[ids[b]]) / len(sets[ids[a]] | sets[ids[b]])

    same_j = np.array([jac(a, b) for a, b in page_pairs])
    out = []
    for name, args in (("word 1-gram tf", ("word", 1, "tf")), ("word 2-gram tf", ("word", 2, "tf")),
                       ("word 3-gram tf", ("word", 3, "tf"))):
        fps = np.asarray(feature_signer(*args)(texts)[0], dtype=np.uint64)
        d = np.array([bin(int(fps[a]) ^ int(fps[b])).count("1") for a, b in page_pairs])
        for k in (4, 6, 8, 9, 10):
            i, _, _ = all_pairs(fps, k=k)
            for t in (0.7, 0.8):
                out.append({"features": name, "k_c": k, "t": t, "recall": round(float(((d <= k) & (same_j >= t)).mean()), 3),
                            "candidates": int(i.shape[0])})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.path.join(HERE, "data", "manpages_zh.jsonl"))
    ap.add_argument("--shared", default=None, help="use ../shared's 50-page sample instead of the full package")
    args = ap.parse_args()
    from neardup import DedupConfig, run_dedup
    from neardup.features.shingles import Shingler

    if args.shared:
        args.corpus = os.path.join(tempfile.mkdtemp(), "sample.jsonl")
        sample(args.shared, args.corpus)
    elif not os.path.exists(args.corpus):
        os.makedirs(os.path.dirname(args.corpus), exist_ok=True)
        build(args.corpus)
    rows = [json.loads(line) for line in open(args.corpus, encoding="utf-8")]
    u = Shingler().features([r["text"] for r in rows]).unique()
    sets = {r["id"]: set(u.hashes[u.offsets[j]:u.offsets[j + 1]].tolist()) for j, r in enumerate(rows)}
    mb = sum(len(r["text"].encode()) for r in rows) / 1e6
    results = []
    tmp = tempfile.mkdtemp(prefix="bench-simhash-")
    for name, cfg in RUNS:
        out = os.path.join(tmp, str(len(results)))
        run_dedup([args.corpus], out + "-warm", DedupConfig(id_field="id", quiet=True, html=False, **cfg))
        t0 = time.perf_counter()
        run_dedup([args.corpus], out, DedupConfig(id_field="id", quiet=True, html=False, **cfg))
        secs = time.perf_counter() - t0
        recall, pairs, low = quality(rows, sets, out)
        idx = os.path.join(tmp, f"idx{len(results)}")
        run_dedup([args.corpus], out + "-idx", DedupConfig(id_field="id", quiet=True, html=False, index=idx, **cfg))
        from neardup.index.disk import open_index

        with open_index(idx, readonly=True) as ix:
            st = ix.stats()
        results.append({"run": name, "recall": round(recall, 3), "same_cluster_pairs": pairs, "below_0.6": low,
                        "seconds": round(secs, 2), "mb_per_s": round(mb / secs, 1),
                        "index_bytes_per_doc": round(st["bytes"] / max(st["documents"], 1))})
    shutil.rmtree(tmp, ignore_errors=True)
    sw = sweep(rows, sets)
    write_result("simhash_verified.json", {"corpus": args.corpus, "documents": len(rows), "mb": round(mb, 2),
                                           "runs": results, "sweep": sw})
    print(f"{len(rows)} documents, {mb:.1f} MB\n")
    print("| run | same-page recall | same-cluster pairs | below J 0.6 | dedup s | MB/s | index B/doc |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['run']} | {r['recall']} | {r['same_cluster_pairs']} | {r['below_0.6']} "
              f"({r['below_0.6'] / max(r['same_cluster_pairs'], 1):.1%}) | {r['seconds']} | {r['mb_per_s']} | "
              f"{r['index_bytes_per_doc']} |")
    print("\n| candidate features | k_c | t | same-page recall | candidates |\n|---|---|---|---|---|")
    for r in sw:
        print(f"| {r['features']} | {r['k_c']} | {r['t']} | {r['recall']} | {r['candidates']} |")


if __name__ == "__main__":
    main()
