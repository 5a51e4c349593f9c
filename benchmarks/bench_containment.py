#!/usr/bin/env python3
"""Containment search with planted passages: neardup ``ContainmentIndex`` against datasketch's
``MinHashLSHEnsemble`` and against Jaccard banding at the threshold, on the same signatures.

Data (real text, fixed seed). The documents of benchmarks/data/corpus.jsonl other than the
~16,600 ``gcloud`` man pages (one template: left in, a passage from one of them is contained in
every host that holds another, and the benchmark would measure that template) are shuffled and
split into two disjoint pools. For each of ``--pairs`` plantings:

* a passage of L_p words (whitespace tokens), L_p log-uniform in [50, 2000], cut from the
  passage pool (consecutive documents, never reused);
* a host of L_h = L_p / s words, the passage's share s log-uniform in [0.01, 1], L_h clipped to
  [200, 20000] (and ≥ L_p), made of filler-pool words (a stream that wraps around);
* into the host, at a random position, a contiguous span of the passage: all of it for half of
  the plantings, a fraction U(0.3, 1) of it for the others, so that true containments straddle
  the thresholds.

Query = passage, indexed = hosts, C = |Q ∩ X| / |Q| over distinct word 5-gram shingles
(``Shingler()`` defaults). The truth is the exact C of *every* (passage, host) pair, by an
inverted list of host shingles (accidental containment — licence boilerplate, related man pages —
counts). Recall is over pairs with C ≥ t + 0.05, binned by the size ratio |Q| / |X| of distinct
shingles (≈ the word share s); precision is the share of returned pairs with C ≥ t.

Methods, all on the same ``oph`` signatures (seed 1; ``MinHasher.sign_features``):

* neardup ``ContainmentIndex(threshold=t, num_perm=k)``: candidates (``candidates``), then the
  two checks — the MinHash estimate (``verify="minhash"``, index with ``keep_shingles=False``)
  and the exact one (``query_features`` on an index that keeps shingles; its build time includes
  signing, since ``add_features`` signs). ``mode="ensemble"`` (Zhu et al.'s FP + FN criterion
  per class) for comparison.
* datasketch 2.0 ``MinHashLSHEnsemble(threshold=t, num_perm=k)`` with its defaults
  (``num_part=16``, ``m=8``), given ``LeanMinHash`` objects holding the same values (made before
  the clock starts), in a subprocess of ``--peer-python`` (the peers live in .bench-venv, never in
  neardup's dependencies). Its answers are unverified candidates.
* Jaccard banding at t (what ``dedup --metric containment`` does today): neardup
  ``MinHashLSH(threshold=t, num_perm=k)`` (recall-mode bands for J = t), every candidate.

Times are wall seconds on one process (numba's threads as set by the environment); each method's
kernels run once on a small batch first. Prints Markdown tables and writes
benchmarks/out/bench_containment.json.

    .venv/bin/python benchmarks/bench_containment.py [--corpus PATH] [--pairs 1000]
        [--thresholds 0.5,0.7,0.8] [--num-perm 128,256] [--peer-python .bench-venv/bin/python]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SEED = 20250
RATIO_BINS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, np.inf)


# -- data ---------------------------------------------------------------------------------------
def plantings(corpus: str, n: int, seed: int = SEED) -> dict:
    """Hosts and passages (texts) with what was planted where."""
    docs = []
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if "gcloud" not in rec["id"]:
                docs.append(rec["text"].split())
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(docs))
    filler = [w for i in order[0::2] for w in docs[i]]
    source = [w for i in order[1::2] for w in docs[i]]
    hosts, passages, meta = [], [], []
    fpos = int(rng.integers(len(filler)))
    spos = 0
    for _ in range(n):
        lp = int(round(np.exp(rng.uniform(np.log(50), np.log(2000)))))
        share = float(np.exp(rng.uniform(np.log(0.01), np.log(1.0))))
        lh = int(min(max(round(lp / share), 200, lp), 20000))
        if spos + lp > len(source):
            raise SystemExit(f"the passage pool ran out after {len(passages)} passages; use fewer --pairs")
        passage = source[spos:spos + lp]
        spos += lp
        frac = 1.0 if rng.random() < 0.5 else float(rng.uniform(0.3, 1.0))
        plen = max(1, int(round(frac * lp)))
        p0 = int(rng.integers(0, lp - plen + 1))
        fill = []
        while len(fill) < lh - plen:
            take = min(lh - plen - len(fill), len(filler) - fpos)
            fill.extend(filler[fpos:fpos + take])
            fpos = (fpos + take) % len(filler)
        at = int(rng.integers(0, len(fill) + 1))
        host = fill[:at] + passage[p0:p0 + plen] + fill[at:]
        hosts.append(" ".join(host))
        passages.append(" ".join(passage))
        meta.append({"passage_words": lp, "host_words": len(host), "planted_fraction": plen / lp})
    return {"hosts": hosts, "passages": passages, "meta": meta, "documents": len(docs)}


def exact_containment(qf, hf, min_c: float = 0.3, block: int = 200_000):
    """(query, host, C) for every pair with C = |Q ∩ X| / |Q| ≥ ``min_c``, from a sorted list of
    (host shingle, host) — each query shingle finds its run of hosts by binary search."""
    hs = hf.hashes
    hid = np.repeat(np.arange(len(hf), dtype=np.int64), hf.sizes())
    o = np.argsort(hs, kind="stable")
    hs, hid = hs[o], hid[o]
    qs = qf.hashes
    qid = np.repeat(np.arange(len(qf), dtype=np.int64), qf.sizes())
    nh = np.int64(len(hf))
    codes = []
    for s in range(0, qs.shape[0], block):
        lo = np.searchsorted(hs, qs[s:s + block], "left")
        hi = np.searchsorted(hs, qs[s:s + block], "right")
        cnt = hi - lo
        if not cnt.sum():
            continue
        start = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
        at = start + np.arange(cnt.sum())
        codes.append(np.repeat(qid[s:s + block], cnt) * nh + hid[at])
    code = np.sort(np.concatenate(codes)) if codes else np.zeros(0, np.int64)
    uniq, first = np.unique(code, return_index=True)
    inter = np.diff(np.append(first, code.shape[0]))
    q, h = uniq // nh, uniq % nh
    c = inter / qf.sizes()[q]
    keep = c >= min_c
    return q[keep], h[keep], c[keep]


# -- scoring ------------------------------------------------------------------------------------
def score(pq, ph, truth: dict, t: float, ratio_of) -> dict:
    """Recall on pairs with C ≥ t + 0.05 (overall and per |Q|/|X| bin), precision against C ≥ t."""
    got = set(zip(np.asarray(pq).tolist(), np.asarray(ph).tolist()))
    want = [p for p, c in truth.items() if c >= t + 0.05]
    hit = np.array([p in got for p in want], dtype=bool)
    ratios = np.array([ratio_of(p) for p in want])
    bins = {}
    for lo, hi in zip(RATIO_BINS[:-1], RATIO_BINS[1:]):
        m = (ratios >= lo) & (ratios < hi)
        if m.any():
            bins[f"[{lo:g}, {hi:g})"] = {"pairs": int(m.sum()), "recall": float(hit[m].mean())}
    good = sum(1 for p in got if truth.get(p, 0.0) >= t)
    # the planted pairs alone (passage i in host i), binned the same way
    pl = np.array([p[0] == p[1] for p in want], dtype=bool)
    pbins = {}
    for lo, hi in zip(RATIO_BINS[:-1], RATIO_BINS[1:]):
        m = pl & (ratios >= lo) & (ratios < hi)
        if m.any():
            pbins[f"[{lo:g}, {hi:g})"] = {"pairs": int(m.sum()), "recall": float(hit[m].mean())}
    return {"returned": len(got), "want": len(want), "recall": float(hit.mean()) if want else None,
            "precision": good / len(got) if got else None, "recall_by_ratio": bins,
            "planted_want": int(pl.sum()), "planted_recall": float(hit[pl].mean()) if pl.any() else None,
            "planted_recall_by_ratio": pbins}


# -- datasketch in its own interpreter ------------------------------------------------------------
PEER = r"""
import json, sys, time
import numpy as np
from datasketch import LeanMinHash, MinHashLSHEnsemble
from importlib.metadata import version
src, dst = sys.argv[1], sys.argv[2]
d = np.load(src)
k = int(d["k"]); out = {"datasketch": version("datasketch"), "runs": {}}
hosts = [LeanMinHash(seed=1, hashvalues=v.astype(np.uint64), scheme="legacy") for v in d["hv"]]
queries = [LeanMinHash(seed=1, hashvalues=v.astype(np.uint64), scheme="legacy") for v in d["qv"]]
hs, qs = d["hs"].tolist(), d["qs"].tolist()
arrays = {}
for t in d["thresholds"].tolist():
    warm = MinHashLSHEnsemble(threshold=t, num_perm=k)
    warm.index([(i, hosts[i], hs[i]) for i in range(min(50, len(hosts)))])
    t0 = time.perf_counter()
    ens = MinHashLSHEnsemble(threshold=t, num_perm=k)
    ens.index([(i, hosts[i], hs[i]) for i in range(len(hosts)) if hs[i] > 0])
    t1 = time.perf_counter()
    pq, ph = [], []
    for a, (m, s) in enumerate(zip(queries, qs)):
        if s == 0:
            continue
        for key in ens.query(m, s):
            pq.append(a); ph.append(key)
    t2 = time.perf_counter()
    out["runs"][str(t)] = {"build_s": t1 - t0, "query_s": t2 - t1}
    arrays[f"q{t}"] = np.array(pq, dtype=np.int64); arrays[f"h{t}"] = np.array(ph, dtype=np.int64)
np.savez(dst, **arrays)
print(json.dumps(out))
"""


def run_datasketch(python: str, hv, hs, qv, qs, k: int, thresholds) -> dict | None:
    if not python or not os.path.exists(python):
        print(f"(datasketch skipped: no interpreter at {python!r})", file=sys.stderr)
        return None
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        np.savez(src, hv=hv, hs=hs, qv=qv, qs=qs, k=k, thresholds=np.asarray(thresholds, dtype=np.float64))
        res = subprocess.run([python, "-c", PEER, src, dst], capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"datasketch run failed:\n{res.stderr[-3000:]}")
        info = json.loads(res.stdout.strip().splitlines()[-1])
        with np.load(dst) as arr:
            for t in thresholds:
                info["runs"][str(t)]["pairs"] = (arr[f"q{t}"], arr[f"h{t}"])
    return info


# -- main ---------------------------------------------------------------------------------------
def main(argv=None) -> int:
    from common import CORPUS, write_result

    import neardup
    from neardup import ContainmentIndex, MinHasher, MinHashLSH, Shingler

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=CORPUS)
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--thresholds", default="0.5,0.7,0.8")
    ap.add_argument("--num-perm", default="128,256")
    ap.add_argument("--peer-python", default=os.path.join(ROOT, ".bench-venv", "bin", "python"))
    args = ap.parse_args(argv)
    thresholds = [float(x) for x in args.thresholds.split(",")]
    ks = [int(x) for x in args.num_perm.split(",")]

    t0 = time.perf_counter()
    data = plantings(args.corpus, args.pairs)
    hosts, passages = data["hosts"], data["passages"]
    sh = Shingler()
    hf, qf = sh.features(hosts).unique(), sh.features(passages).unique()
    hs, qs = hf.sizes(), qf.sizes()
    tq, th, tc = exact_containment(qf, hf)
    truth = {(int(a), int(b)): float(c) for a, b, c in zip(tq, th, tc)}
    planted = sum(1 for i in range(len(hosts)) if truth.get((i, i), 0.0) > 0)
    prep_s = time.perf_counter() - t0
    print(f"{len(hosts)} hosts ({int(hf.hashes.shape[0]):,} distinct shingles in all), {len(passages)} passages, "
          f"{len(truth):,} pairs with C ≥ 0.3 ({planted} planted); data + truth {prep_s:.1f} s", file=sys.stderr)

    def ratio_of(p):
        return qs[p[0]] / hs[p[1]]

    out = {"command": "benchmarks/bench_containment.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "neardup": neardup.__version__, "python": platform.python_version(), "numpy": np.__version__,
           "data": {"hosts": len(hosts), "passages": len(passages), "corpus_documents_used": data["documents"],
                    "host_words": {"min": min(m["host_words"] for m in data["meta"]),
                                   "max": max(m["host_words"] for m in data["meta"])},
                    "passage_words": {"min": min(m["passage_words"] for m in data["meta"]),
                                      "max": max(m["passage_words"] for m in data["meta"])},
                    "pairs_c_ge_0.3": len(truth), "prep_seconds": prep_s},
           "runs": {}}
    rows, planted_rows = [], []
    warm_f = sh.features(passages[:20]).unique()
    for k in ks:
        hv = MinHasher(num_perm=k, seed=1).sign_features(hf).values
        qv = MinHasher(num_perm=k, seed=1).sign_features(qf).values
        peer = run_datasketch(args.peer_python, hv, hs, qv, qs, k, thresholds)
        for t in thresholds:
            res = {}
            # warm-up: every kernel once on a small batch, and each mode's parameter table (computed
            # once per threshold and k, then cached for the process)
            for mode in ("recall", "ensemble"):
                w = ContainmentIndex(threshold=t, num_perm=k, mode=mode)
                w.add_features(range(20), warm_f)
                w.query_features(warm_f)

            t1 = time.perf_counter()
            idx = ContainmentIndex(threshold=t, num_perm=k, keep_shingles=False)
            idx.add_signatures(range(len(hosts)), hv, hs)
            t2 = time.perf_counter()
            cq, ch = idx.candidates(qv, qs)
            t3 = time.perf_counter()
            est = idx.query_signatures(qv, qs)
            t4 = time.perf_counter()
            res["neardup candidates"] = {**score(cq, ch, truth, t, ratio_of), "build_s": t2 - t1, "query_s": t3 - t2}
            eq = [a for a, ks_ in enumerate(est) for _ in ks_]
            eh = [h for ks_ in est for h in ks_]
            res["neardup + estimate check"] = {**score(eq, eh, truth, t, ratio_of), "build_s": t2 - t1,
                                               "query_s": t4 - t3}
            t5 = time.perf_counter()
            ex = ContainmentIndex(threshold=t, num_perm=k)
            ex.add_features(range(len(hosts)), hf)
            t6 = time.perf_counter()
            got = ex.query_features(qf)
            t7 = time.perf_counter()
            xq = [a for a, ks_ in enumerate(got) for _ in ks_]
            xh = [h for ks_ in got for h in ks_]
            res["neardup + exact check"] = {**score(xq, xh, truth, t, ratio_of), "build_s": t6 - t5,
                                            "query_s": t7 - t6}
            t8 = time.perf_counter()
            en = ContainmentIndex(threshold=t, num_perm=k, keep_shingles=False, mode="ensemble")
            en.add_signatures(range(len(hosts)), hv, hs)
            t9 = time.perf_counter()
            nq, nh = en.candidates(qv, qs)
            t10 = time.perf_counter()
            res["neardup mode=ensemble candidates"] = {**score(nq, nh, truth, t, ratio_of), "build_s": t9 - t8,
                                                       "query_s": t10 - t9}
            if peer is not None:
                pr = peer["runs"][str(t)]
                pq, ph = pr.pop("pairs")
                res["datasketch MinHashLSHEnsemble"] = {**score(pq, ph, truth, t, ratio_of), **pr}
            t11 = time.perf_counter()
            lsh = MinHashLSH(threshold=t, num_perm=k)
            lsh.insert_batch(list(range(len(hosts))), hv)
            t12 = time.perf_counter()
            jac = lsh.query_batch(qv, threshold=0.0)
            t13 = time.perf_counter()
            jq = [a for a, ks_ in enumerate(jac) for _ in ks_]
            jh = [h for ks_ in jac for h in ks_]
            res[f"Jaccard banding at t (b={lsh.b}, r={lsh.r})"] = {**score(jq, jh, truth, t, ratio_of),
                                                                  "build_s": t12 - t11, "query_s": t13 - t12}
            out["runs"][f"k={k} t={t}"] = res
            for name, r in res.items():
                rb, pb = r["recall_by_ratio"], r["planted_recall_by_ratio"]
                rows.append([k, t, name, r["returned"], f"{r['precision']:.3f}" if r["precision"] is not None else "—",
                             f"{r['recall']:.3f}", *[f"{rb[b]['recall']:.3f}" if b in rb else "—" for b in _bin_names()],
                             f"{r['build_s']:.2f}", f"{r['query_s']:.2f}"])
                planted_rows.append([k, t, name, f"{r['planted_recall']:.3f}",
                                     *[f"{pb[b]['recall']:.3f} ({pb[b]['pairs']})" if b in pb else "—"
                                       for b in _bin_names()]])
            print(f"k={k} t={t} done", file=sys.stderr)
    if ks and thresholds:
        want = out["runs"][f"k={ks[0]} t={thresholds[0]}"]["neardup candidates"]["recall_by_ratio"]
        out["pairs_per_ratio_bin_at_first_run"] = {b: v["pairs"] for b, v in want.items()}
    out["datasketch"] = peer["datasketch"] if peer else None
    path = write_result("bench_containment.json", out)
    heads = ["k", "t", "method", "pairs returned", "precision (C ≥ t)", "recall (C ≥ t + 0.05)",
             *[f"recall, |Q|/|X| in {b}" for b in _bin_names()], "build s", "query s"]
    print("| " + " | ".join(heads) + " |")
    print("|" + "|".join("---" for _ in heads) + "|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print("\nPlanted pairs only (passage i in host i, C ≥ t + 0.05): recall, and per |Q|/|X| bin recall (pairs)\n")
    heads = ["k", "t", "method", "planted recall", *[f"|Q|/|X| in {b}" for b in _bin_names()]]
    print("| " + " | ".join(heads) + " |")
    print("|" + "|".join("---" for _ in heads) + "|")
    for r in planted_rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print(f"\nwritten: {os.path.relpath(path, ROOT)}")
    return 0


def _bin_names():
    return [f"[{lo:g}, {hi:g})" for lo, hi in zip(RATIO_BINS[:-1], RATIO_BINS[1:])]


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    sys.exit(main())
