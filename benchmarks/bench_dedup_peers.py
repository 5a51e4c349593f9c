#!/usr/bin/env python3
"""End-to-end near-duplicate removal: neardup against peer tools, same corpus, same threshold.

Each tool runs as its own process, started from this script, and is timed from process start
(reading the JSONL) to process exit (its outputs written) — wall clock on this machine, all cores.
Target settings everywhere: Jaccard 0.8, 128 permutations, word 5-grams; where a tool tokenizes
differently, its own closest setting is used (see TOOLS below and benchmarks/DEDUP.md):

* ``neardup``         ``neardup dedup CORPUS -o OUT --id-field id -q --verify minhash`` (defaults but
                      for the verification: oph MinHash, LSH bands for 99 % recall at t, candidates
                      verified on the signatures — the default before ``--verify borderline`` —,
                      bounded linkage, keep first).
* ``neardup-borderline`` the same with ``--verify borderline``, the default (candidates near t checked
                      exactly on their re-read texts).
* ``neardup-exact``   the same with ``--verify exact`` (candidates checked on the shingle sets).
* ``neardup-exact-components``  ``--verify exact --linkage components`` (plain transitive closure of
                      the verified pairs, still with neardup's drift split) — an extra row showing
                      what bounded linkage costs in pair recall; not a default.
* ``text-dedup``      text-dedup 0.4.0 ``python -m text_dedup.minhash`` (own venv, Python 3.11):
                      ``--threshold 0.8 --num_perm 128 --ngram 5``, everything else default
                      (sha1 hashing, datasketch-optimal bands, no verification: every band collision
                      is a union-find edge; keeps the first document of each component).
                      Its tokens are ``re.split(r"\\W", text.lower())`` — single-character
                      splits, so runs of punctuation/whitespace leave empty tokens inside n-grams.
* ``datasketch``      a plain script (``--datasketch-worker`` mode of this file, run in
                      .bench-venv): ``re.findall(r"\\w+", text.lower())``, word 5-grams joined by
                      spaces, ``MinHash(num_perm=128).update_batch``, ``MinHashLSH(threshold=0.8,
                      num_perm=128)``, insert all, query each, union-find over the candidate pairs
                      (no verification), keep the first document of each component.

Ground truth (computed once, cached): neardup's word 5-gram shingles
(``neardup.Shingler(ngram=5).features``: NFKC + casefold, word tokens) and
``neardup.evaluate.exact_jaccard_truth(features, 0.75)`` — every pair with exact J ≥ 0.75.

Metrics — the same definitions for every tool. Every tool here yields clusters (neardup: the
``cluster`` column of clusters.jsonl; text-dedup: its union-find, dumped with ``--debug``;
datasketch script: its union-find), so both levels are reported for all:

* pair recall J≥0.80 / J≥0.85: share of true pairs with exact J ≥ 0.80 (0.85) whose two
  documents are in one cluster.
* impurity: share of all intra-cluster pairs (C(size, 2) summed over clusters) whose exact
  J < 0.75, i.e. that are not in the truth set.
* removal recall: share of documents that have a partner with J ≥ 0.8 earlier in the corpus
  which the tool removed.
* removal precision: share of removed documents that have a partner with J ≥ 0.75 that is
  kept or earlier in the corpus.
* pair coverage J≥0.80: share of true pairs with J ≥ 0.80 of which at least one document was
  removed — removal recall without the keep-first assumption (text-dedup 0.4.0's union-find keeps
  whichever member ends up as the union-by-rank root, often not the first; removal recall and
  precision above count "earlier" by corpus order, so they penalise that policy).
* removed: documents absent from the tool's kept output (read from the output itself).

Run (inside neardup's dev venv; the peers' venvs are found by path, see
benchmarks/peers/setup_dedup_peers.sh):
    .venv/bin/python benchmarks/bench_dedup_peers.py [--repeat N] [--tools neardup,text-dedup,...]
Prints a markdown table and writes benchmarks/out/dedup_peers.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ALL_TOOLS = ("neardup", "neardup-borderline", "neardup-exact", "neardup-exact-components", "text-dedup", "datasketch")


# ------------------------------------------------------------------------------------------------
# The plain datasketch pipeline (runs in .bench-venv, started by the timed subprocess).
# ------------------------------------------------------------------------------------------------
def datasketch_worker(corpus: str, out: str) -> None:
    import re

    from datasketch import MinHash, MinHashLSH

    word = re.compile(r"\w+")
    rows, mhs = [], []
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            rows.append(line)
            toks = word.findall(rec["text"].lower())
            shingles = {" ".join(toks[i:i + 5]).encode("utf-8") for i in range(len(toks) - 4)}
            if not shingles and toks:          # shorter than one 5-gram: the whole token run
                shingles = {" ".join(toks).encode("utf-8")}
            m = MinHash(num_perm=128)
            if shingles:
                m.update_batch(list(shingles))
                mhs.append(m)
            else:
                mhs.append(None)               # no tokens at all: never a duplicate
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    with lsh.insertion_session() as sess:
        for i, m in enumerate(mhs):
            if m is not None:
                sess.insert(i, m)
    parent = list(range(len(rows)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, m in enumerate(mhs):
        if m is None:
            continue
        for j in lsh.query(m):
            a, b = find(i), find(j)
            if a != b:                          # the smaller index becomes the root: keep first
                parent[max(a, b)] = min(a, b)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "kept.jsonl"), "w", encoding="utf-8") as fk, \
         open(os.path.join(out, "clusters.jsonl"), "w", encoding="utf-8") as fc:
        for i, line in enumerate(rows):
            root = find(i)
            if root == i:
                fk.write(line if line.endswith("\n") else line + "\n")
            fc.write(json.dumps({"row": i, "cluster": root}) + "\n")
    print(f"datasketch: b={lsh.b}, r={lsh.r}", file=sys.stderr)


# Read back text-dedup's output (runs in the text-dedup venv, untimed): kept ids + union-find.
TEXTDEDUP_READBACK = r"""
import json, pickle, sys
from datasets import load_from_disk
out, dst = sys.argv[1], sys.argv[2]
kept = list(load_from_disk(out)["id"])
try:
    with open(out + "/uf.pkl", "rb") as fh:
        uf = pickle.load(fh)
    roots = {str(k): str(uf.find(k)) for k in list(uf.parent)}
except FileNotFoundError:
    roots = None
json.dump({"kept": kept, "roots": roots}, open(dst, "w"))
"""


# ------------------------------------------------------------------------------------------------
def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def timed(cmd: list[str], env: dict | None = None, cwd: str | None = None) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    secs = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({p.returncode}):\n{p.stdout[-4000:]}")
    return secs, p.stdout


def run_neardup(args, ids, work, extra: list[str]):
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [args.neardup, "dedup", args.corpus, "-o", out, "--id-field", "id", "-q", *extra]
    secs, log = timed(cmd)
    pos = {d: i for i, d in enumerate(ids)}
    kept, label = set(), [0] * len(ids)
    with open(os.path.join(out, "clusters.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            label[pos[r["id"]]] = pos[r["cluster"]]
            if r["kept"]:
                kept.add(pos[r["id"]])
    # cross-check against the rows actually written to kept/
    written = 0
    for name in os.listdir(os.path.join(out, "kept")):
        with open(os.path.join(out, "kept", name), encoding="utf-8") as fh:
            written += sum(1 for _ in fh)
    return secs, kept, label, {"command": " ".join(cmd), "kept_rows_written": written}


def run_textdedup(args, ids, work):
    py = os.path.join(args.textdedup_venv, "bin", "python")
    out = os.path.join(work, "out")
    cache = os.path.join(work, "hf-cache")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)           # fresh cache: JSON→Arrow conversion is timed
    env = dict(os.environ, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_DATASETS_CACHE=cache,
               HF_HOME=os.path.join(work, "hf-home"), TQDM_DISABLE="1")
    cmd = [py, "-m", "text_dedup.minhash", "--path", "json", "--data_files", args.corpus,
           "--split", "train", "--cache_dir", cache, "--output", out, "--column", "text",
           "--idx_column", "id", "--threshold", "0.8", "--num_perm", "128", "--ngram", "5",
           "--debug"]
    secs, log = timed(cmd, env=env, cwd=work)
    dst = os.path.join(work, "readback.json")
    subprocess.run([py, "-c", TEXTDEDUP_READBACK, out, dst], env=env, check=True)
    with open(dst, encoding="utf-8") as fh:
        rb = json.load(fh)
    pos = {d: i for i, d in enumerate(ids)}
    kept = {pos[d] for d in rb["kept"]}
    label = list(range(len(ids)))
    if rb["roots"] is not None:
        for d, root in rb["roots"].items():
            label[pos[d]] = pos[root]
    bands = [ln.strip() for ln in log.splitlines() if "b=" in ln or "Number of edges" in ln]
    return secs, kept, label, {"command": " ".join(cmd), "log_tail": log.strip().splitlines()[-12:],
                               "notes": bands}


def run_datasketch(args, ids, work):
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    py = os.path.join(args.bench_venv, "bin", "python")
    cmd = [py, os.path.abspath(__file__), "--datasketch-worker", args.corpus, out]
    secs, log = timed(cmd)
    kept, label = set(), [0] * len(ids)
    with open(os.path.join(out, "clusters.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            label[r["row"]] = r["cluster"]
            if r["row"] == r["cluster"]:
                kept.add(r["row"])
    return secs, kept, label, {"command": " ".join(cmd), "notes": log.strip().splitlines()[-3:]}


# ------------------------------------------------------------------------------------------------
def truth(args, texts):
    import numpy as np

    cache = os.path.join(HERE, "out", "dedup_peers_truth.npz")
    st = os.stat(args.corpus)
    key = f"{os.path.abspath(args.corpus)}:{st.st_size}:{int(st.st_mtime)}"
    if os.path.exists(cache):
        z = np.load(cache)
        if str(z["key"]) == key:
            return z["lo"], z["hi"], z["j"], float(z["secs"])
    import neardup
    from neardup.evaluate import exact_jaccard_truth

    t = time.perf_counter()
    feats = neardup.Shingler(ngram=5).features(texts)
    lo, hi, j = exact_jaccard_truth(feats, 0.75)
    secs = time.perf_counter() - t
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    np.savez(cache, lo=lo, hi=hi, j=j, secs=secs, key=key)
    return lo, hi, j, secs


def score(n, kept, label, lo, hi, jj) -> dict:
    import numpy as np

    label = np.asarray(label, dtype=np.int64)
    kept_m = np.zeros(n, dtype=bool)
    kept_m[list(kept)] = True
    removed = ~kept_m
    same = label[lo] == label[hi]
    _, c = np.unique(label, return_counts=True)
    intra = int((c * (c - 1) // 2).sum())
    good = int(same.sum())                              # intra-cluster pairs with J >= 0.75
    m80, m85 = jj >= 0.8, jj >= 0.85
    # removal recall: documents with a J >= 0.8 partner earlier in the corpus (hi of such a pair)
    need = np.zeros(n, dtype=bool)
    need[hi[m80]] = True
    # removal precision: removed documents with a J >= 0.75 partner kept or earlier
    ok = np.zeros(n, dtype=bool)
    ok[hi] = True                                       # lo is earlier than hi
    ok[lo[kept_m[hi]]] = True                           # hi is kept
    n_rm = int(removed.sum())
    first = np.zeros(n, dtype=bool)                     # earliest member of each cluster
    first[np.unique(label, return_index=True)[1]] = True
    return {
        "removed": n_rm,
        "clusters": int(len(c)),
        "pair_recall_J>=0.80": round(float(same[m80].mean()), 5),
        "pair_recall_J>=0.85": round(float(same[m85].mean()), 5),
        "intra_cluster_pairs": intra,
        "impurity_J<0.75": round((intra - good) / intra, 5) if intra else 0.0,
        "removal_recall": round(float(removed[need].mean()), 5),
        "removal_precision": round(float(ok[removed].mean()), 5) if n_rm else 1.0,
        "pair_coverage_J>=0.80": round(float((removed[lo] | removed[hi])[m80].mean()), 5),
        "pair_coverage_by_J": {f"[{a:.2f},{b:.2f})": round(float((removed[lo] | removed[hi])[(jj >= a) & (jj < b)].mean()), 4)
                               for a, b in ((0.75, 0.8), (0.8, 0.85), (0.85, 0.9), (0.9, 0.95), (0.95, 1.01))
                               if ((jj >= a) & (jj < b)).any()},
        "largest_cluster": int(c.max()),
        "kept_not_first_of_cluster": int((kept_m & ~first).sum()),
        "clusters_without_one_kept": int(len(c) - len(np.unique(label[kept_m]))),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasketch-worker", nargs=2, metavar=("CORPUS", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--corpus", default=os.path.join(HERE, "data", "corpus.jsonl"))
    ap.add_argument("--tools", default=",".join(ALL_TOOLS))
    ap.add_argument("--repeat", type=int, default=1, help="timed runs per tool (best and all reported)")
    ap.add_argument("--work", default="/tmp/neardup-dedup-peers")
    ap.add_argument("--neardup", default=os.path.join(ROOT, ".venv", "bin", "neardup"))
    ap.add_argument("--bench-venv", default=os.path.join(ROOT, ".bench-venv"))
    ap.add_argument("--textdedup-venv", default=os.environ.get("TEXTDEDUP_VENV", "/work/textdedup-venv"))
    ap.add_argument("--json", default=os.path.join(HERE, "out", "dedup_peers.json"))
    args = ap.parse_args()
    if args.datasketch_worker:
        datasketch_worker(*args.datasketch_worker)
        return
    args.corpus = os.path.abspath(args.corpus)

    ids, texts = [], []
    with open(args.corpus, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            ids.append(r["id"])
            texts.append(r["text"])
    n = len(ids)
    text_mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    file_mb = os.path.getsize(args.corpus) / 1e6

    runners = {
        "neardup": lambda w: run_neardup(args, ids, w, ["--verify", "minhash"]),
        "neardup-borderline": lambda w: run_neardup(args, ids, w, ["--verify", "borderline"]),
        "neardup-exact": lambda w: run_neardup(args, ids, w, ["--verify", "exact"]),
        "neardup-exact-components": lambda w: run_neardup(args, ids, w, ["--verify", "exact",
                                                                         "--linkage", "components"]),
        "text-dedup": lambda w: run_textdedup(args, ids, w),
        "datasketch": lambda w: run_datasketch(args, ids, w),
    }
    settings = {
        "neardup": "word 5-grams (NFKC+casefold), 128 perm oph, bands for 99% recall at 0.8, "
                   "verify on signatures, bounded linkage",
        "neardup-borderline": "as neardup, candidates near t verified exactly on re-read texts (the default)",
        "neardup-exact": "as neardup, candidates verified on exact shingle sets",
        "neardup-exact-components": "as neardup-exact, plain components (+ drift split)",
        "text-dedup": "re.split(r'\\W', lower) 5-grams, 128 perm sha1+universal hash, "
                      "datasketch-optimal (b,r), no verification, union-find",
        "datasketch": "re.findall(r'\\w+', lower) 5-grams, MinHash(128) sha1, MinHashLSH(0.8) "
                      "optimal (b,r), no verification, union-find",
    }
    results = {}
    for tool in [t for t in args.tools.split(",") if t]:
        work = os.path.join(args.work, tool)
        os.makedirs(work, exist_ok=True)
        runs = []
        try:
            for _ in range(args.repeat):
                la0 = loadavg()
                secs, kept, label, info = runners[tool](work)
                runs.append({"seconds": round(secs, 2), "loadavg_before": la0, "loadavg_after": loadavg()})
                print(f"{tool}: {secs:.1f} s, kept {len(kept)}, load {runs[-1]['loadavg_before']}", flush=True)
        except Exception as e:                          # a peer that cannot run: say why, go on
            print(f"{tool}: FAILED: {e}", flush=True)
            results[tool] = {"error": str(e)[-2000:]}
            continue
        results[tool] = {"settings": settings[tool], "seconds": min(r["seconds"] for r in runs),
                         "runs": runs, "kept": len(kept), **info,
                         "_kept": kept, "_label": label}

    lo, hi, jj, t_truth = truth(args, texts)
    print(f"ground truth: {len(lo)} pairs with J >= 0.75 ({int((jj >= 0.8).sum())} with J >= 0.8), "
          f"{t_truth:.1f} s", flush=True)
    for r in results.values():
        if "error" not in r:
            r.update(score(n, r.pop("_kept"), r.pop("_label"), lo, hi, jj))
            r["MB/s"] = round(text_mb / r["seconds"], 2)

    out = {"documents": n, "text_MB": round(text_mb, 2), "file_MB": round(file_mb, 2),
           "cpus": os.cpu_count(), "loadavg_end": loadavg(), "machine": platform.platform(),
           "python": platform.python_version(), "truth_pairs_J>=0.75": int(len(lo)),
           "truth_pairs_J>=0.80": int((jj >= 0.8).sum()), "truth_pairs_J>=0.85": int((jj >= 0.85).sum()),
           "tools": results}
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump(out, fh, indent=2)

    print(f"\n{n} documents, {text_mb:.1f} MB text; {os.cpu_count()} CPUs; load average at end "
          f"{out['loadavg_end']}\n")
    print("| tool | wall s | MB/s | removed | pair recall J≥0.80 | J≥0.85 | impurity J<0.75 "
          "| removal recall | removal precision | pair coverage J≥0.80 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for tool, r in results.items():
        if "error" in r:
            print(f"| {tool} | failed | | | | | | | | |")
            continue
        print(f"| {tool} | {r['seconds']:.1f} | {r['MB/s']:.2f} | {r['removed']} "
              f"| {r['pair_recall_J>=0.80']:.4f} | {r['pair_recall_J>=0.85']:.4f} "
              f"| {r['impurity_J<0.75']:.4f} | {r['removal_recall']:.4f} | {r['removal_precision']:.4f} "
              f"| {r['pair_coverage_J>=0.80']:.4f} |")


if __name__ == "__main__":
    main()
