#!/usr/bin/env python3
"""neardup's indexes against peer libraries, on the same signatures and fingerprints.

Corpus: the first ``--n-index`` (20,000) documents of benchmarks/data/corpus.jsonl are indexed
(keys 0..n-1). Two query sets:

* ``held-out`` — the next ``--n-held-out`` (2,000) documents after them, unedited: only 577 in the
  20,577-document corpus;
* ``edited``   — ``--n-edit`` (2,000) indexed documents drawn with a fixed seed, each with a few
  words (whitespace tokens) replaced by words of the corpus: 0.5, 1, 2 or 3 % of its words (at
  least one), the rate drawn per document. Word 5-gram Jaccard to the original is then about
  0.95, 0.90, 0.82 or 0.74, so the set straddles the 0.8 threshold.

MinHash (threshold 0.8, 128 slots, word 5-grams). Every document is signed once by
``MinHasher(num_perm=128, scheme="datasketch-legacy", seed=1, tokenizer="word", ngram=5)``; a
random sample is re-signed by datasketch itself (``MinHash(scheme="legacy", seed=1)`` fed
neardup's ``Shingler.shingles`` as UTF-8) and must be bit-identical. Timed, on those values:

* datasketch ``MinHashLSH(threshold=0.8, num_perm=128)`` (its own b×r): ``insert`` of all
  documents, ``query`` of each query; its candidates are unverified, so they are also reported
  after the filter ``MinHash.jaccard ≥ 0.8`` (``query+verify``). Sketches are ``LeanMinHash``
  objects made from the values (``scheme="legacy"``), built before the clock starts.
* rensa ``RMinHashLSH(0.8, 128, num_bands=16)``: rensa hashes tokens itself, so its signatures
  differ from the others; it gets the same token sets (``Shingler.shingles``), is signed
  by ``RMinHash.digest_matrix_from_token_sets`` (timed apart from the index), inserted with
  ``insert_matrix`` and queried with ``query_all`` (``RMinHash`` objects: rensa has no query that
  takes a digest matrix and returns keys); its candidates are unverified and are also reported
  after a vectorised NumPy filter on rensa's digests (share of equal slots ≥ 0.8, what
  ``RMinHash.jaccard`` computes). 16 bands (8 rows): rensa needs num_bands to divide num_perm,
  so datasketch's 9×13 is not available to it.
* neardup ``MinHashLSH(threshold=0.8, num_perm=128, scheme="datasketch-legacy")``:
  ``insert_batch`` + ``query_batch`` (verified on the full signature), with its default bands
  (recall ≥ 0.99 at t) and again with ``lsh_mode="datasketch"`` (datasketch's b×r: like for like).
* neardup ``DiskIndex`` (folder store, temporary directory): ``create`` + ``add_signatures``,
  then ``query_signatures``.

Agreement per query set: (query, key) pairs returned; overlap with neardup ``MinHashLSH``
(default bands); the all-pairs truth of the estimate (every indexed signature compared with every
query, estimate ≥ 0.8, empty signatures excluded); and the exact word-5-gram Jaccard of every pair
anyone returned (neardup ``Shingler`` features), counted ≥ 0.8.

SimHash (64 bits, Hamming ≤ 3). Fingerprints by neardup ``SimHasher()`` (its defaults: word
3-grams, tf weights). Timed on those fingerprints: simhash (1e0ng) ``SimhashIndex(objs, k=3)``
build + ``get_near_dups`` with ``Simhash(int(fp))`` objects (made before the clock starts);
neardup ``SimHashIndex(k=3)`` ``add_many`` + ``query_many``; neardup ``SimHashDiskIndex``
``create`` + ``add_signatures`` + ``query_signatures``. Agreement against brute force (every
pair's popcount): all should be identical.

Each timed step runs once on a small batch first (numba kernels load on first use), then
``--repeat`` times (fresh index each time); the best time is reported. Default threads
everywhere (numba, rensa's Rayon).

Run (peers live only in .bench-venv; ``bash benchmarks/setup_peers.sh`` creates it):

    .bench-venv/bin/python benchmarks/bench_index_peers.py [--repeat 3] [--n-index 20000] [--n-held-out 2000] [--n-edit 2000]

Prints Markdown tables and writes benchmarks/out/index_peers.json.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import shutil
import tempfile
import time
from importlib.metadata import version
from itertools import chain, count

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
THRESHOLD = 0.8
NUM_PERM = 128
SEED = 1
K_BITS = 3
EDIT_RATES = (0.005, 0.01, 0.02, 0.03)
WARM_N, WARM_Q = 256, 64
RENSA_BANDS = 16
CHUNK = 1000            # documents per rensa signing call (bounds the memory of Python shingle lists)


# ------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------
def load(path: str, n_index: int, n_held: int, n_edit: int, seed: int) -> tuple[list[str], dict[str, list[str]], dict]:
    texts = [json.loads(line)["text"] for line in open(path, encoding="utf-8")]
    if len(texts) <= n_index:
        raise SystemExit(f"{path} has {len(texts)} documents; need more than --n-index {n_index}")
    index = texts[:n_index]
    rng = random.Random(seed)
    vocab = sorted({w for t in index[:500] for w in t.split() if w.isalpha()})
    picked = sorted(rng.sample(range(n_index), n_edit))
    edited, rates = [], []
    for i in picked:
        words = index[i].split()
        rate = rng.choice(EDIT_RATES)
        rates.append(rate)
        for p in rng.sample(range(len(words)), min(len(words), max(1, round(rate * len(words))))):
            words[p] = rng.choice(vocab)
        edited.append(" ".join(words))
    queries = {"held-out": texts[n_index:n_index + n_held], "edited": edited}
    info = {"documents_in_file": len(texts), "indexed": n_index,
            "indexed_mb": sum(len(t.encode("utf-8")) for t in index) / 1e6,
            "held-out": len(queries["held-out"]), "edited": n_edit, "edited_from": picked,
            "edit_rates": {str(r): rates.count(r) for r in EDIT_RATES}}
    return index, queries, info


# ------------------------------------------------------------------------------------------------
# Timing
# ------------------------------------------------------------------------------------------------
def best(fn, repeat: int):
    """(best seconds, result of the last run) over ``repeat`` runs of ``fn()``."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def pairs_of(results, key=lambda k: k) -> set[tuple[int, int]]:
    return {(q, int(key(k))) for q, keys in enumerate(results) for k in keys}


# ------------------------------------------------------------------------------------------------
# MinHash
# ------------------------------------------------------------------------------------------------
def check_datasketch_values(texts: list[str], sigs: np.ndarray, sample: int, seed: int) -> dict:
    """Re-sign a sample with datasketch (same shingle strings) and compare bit for bit; also check
    that the shingle strings given to the peers are neardup's features (same set sizes)."""
    from datasketch import MinHash

    from neardup import Shingler

    sh = Shingler(tokenizer="word", ngram=5)
    rows = sorted(random.Random(seed).sample(range(len(texts)), sample))
    feats = sh.features([texts[i] for i in rows]).unique()
    equal = same_size = 0
    for j, i in enumerate(rows):
        toks = set(sh.shingles(texts[i]))
        m = MinHash(num_perm=NUM_PERM, seed=SEED, scheme="legacy")
        m.update_batch([s.encode("utf-8") for s in toks])
        equal += bool(np.array_equal(m.hashvalues, sigs[i].astype(np.uint64)))
        same_size += len(toks) == feats.doc(j).shape[0]
    return {"sampled": sample, "datasketch_values_equal": equal, "shingle_set_sizes_equal": same_size}


def run_datasketch(sig: np.ndarray, qsigs: dict, repeat: int) -> dict:
    from datasketch import LeanMinHash, MinHashLSH

    def lean(values):
        return [LeanMinHash(seed=SEED, hashvalues=v, scheme="legacy") for v in values.astype(np.uint64)]

    t = time.perf_counter()
    objs = lean(sig)
    qobjs = {name: lean(q) for name, q in qsigs.items()}
    wrap_s = time.perf_counter() - t

    def build(n):
        lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
        for i in range(n):
            lsh.insert(i, objs[i])
        return lsh

    def verify(qo, cands):
        return [[k for k in c if m.jaccard(objs[k]) >= THRESHOLD] for m, c in zip(qo, cands)]

    warm = build(WARM_N)
    verify(qobjs["edited"][:WARM_Q], [warm.query(m) for m in qobjs["edited"][:WARM_Q]])
    insert_s, lsh = best(lambda: build(len(objs)), repeat)
    out = {"bands": f"{lsh.b}x{lsh.r}", "wrap_s": wrap_s, "insert_s": insert_s, "queries": {}}
    for name, qo in qobjs.items():
        query_s, cands = best(lambda qo=qo: [lsh.query(m) for m in qo], repeat)
        verify_s, kept = best(lambda qo=qo, cands=cands: verify(qo, cands), repeat)
        out["queries"][name] = {"query_s": query_s, "query_verify_s": query_s + verify_s,
                                "raw": pairs_of(cands), "verified": pairs_of(kept)}
    return out


def run_rensa(index: list[str], queries: dict, repeat: int) -> dict:
    import rensa

    from neardup import Shingler

    sh = Shingler(tokenizer="word", ngram=5)
    R = rensa.RMinHash
    mats, sign_s = [], 0.0
    for s in range(0, len(index), CHUNK):                    # shingling is untimed: the same for all
        toks = [sh.shingles(t) for t in index[s:s + CHUNK]]
        t = time.perf_counter()
        mats.append(R.digest_matrix_from_token_sets(toks, NUM_PERM, SEED))
        sign_s += time.perf_counter() - t
    digests = np.concatenate([np.asarray(m.to_rows(), dtype=np.uint32) for m in mats])
    qtoks = {name: [sh.shingles(t) for t in q] for name, q in queries.items()}
    t = time.perf_counter()
    qobjs = {name: R.from_token_sets(toks, NUM_PERM, SEED) for name, toks in qtoks.items()}
    qsign_s = time.perf_counter() - t
    qdig = {name: np.asarray([o.digest() for o in objs], dtype=np.uint32) for name, objs in qobjs.items()}

    def build(chunks):
        lsh = rensa.RMinHashLSH(THRESHOLD, NUM_PERM, RENSA_BANDS)
        start = 0
        for m in chunks:
            lsh.insert_matrix(m, start)
            start += m.len()
        return lsh

    need = int(np.ceil(THRESHOLD * NUM_PERM - 1e-9))    # equal slots for an estimate ≥ the threshold

    def verify(qd, cands):                              # vectorised over all candidates of the batch
        sizes = np.fromiter(map(len, cands), np.int64, len(cands))
        flat = np.fromiter(chain.from_iterable(cands), np.int64, int(sizes.sum()))
        qi = np.repeat(np.arange(len(cands)), sizes)
        ok = (digests[flat] == qd[qi]).sum(axis=1) >= need
        return qi[ok], flat[ok]

    warm = rensa.RMinHashLSH(THRESHOLD, NUM_PERM, RENSA_BANDS)
    warm.insert_matrix(R.digest_matrix_from_token_sets(qtoks["edited"][:WARM_Q], NUM_PERM, SEED), 0)
    verify(qdig["edited"][:WARM_Q], warm.query_all(qobjs["edited"][:WARM_Q]))
    insert_s, lsh = best(lambda: build(mats), repeat)
    out = {"bands": f"{lsh.get_num_bands()}x{NUM_PERM // lsh.get_num_bands()}", "sign_s": sign_s,
           "query_sign_s": qsign_s, "insert_s": insert_s, "queries": {}}
    for name, qo in qobjs.items():
        query_s, cands = best(lambda qo=qo: lsh.query_all(qo), repeat)
        verify_s, (qi, ki) = best(lambda name=name, cands=cands: verify(qdig[name], cands), repeat)
        out["queries"][name] = {"query_s": query_s, "query_verify_s": query_s + verify_s,
                                "raw": pairs_of(cands), "verified": set(zip(qi.tolist(), ki.tolist()))}
    return out


def run_neardup_lsh(sig: np.ndarray, qsigs: dict, repeat: int, lsh_mode: str) -> dict:
    from neardup import MinHashLSH

    def build(values):
        lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM, scheme="datasketch-legacy", seed=SEED,
                         lsh_mode=lsh_mode)
        lsh.insert_batch(range(values.shape[0]), values)
        return lsh

    build(sig[:WARM_N]).query_batch(qsigs["edited"][:WARM_Q])
    insert_s, lsh = best(lambda: build(sig), repeat)
    out = {"bands": f"{lsh.b}x{lsh.r}", "insert_s": insert_s, "queries": {}}
    for name, q in qsigs.items():
        query_s, res = best(lambda q=q: lsh.query_batch(q), repeat)
        out["queries"][name] = {"query_verify_s": query_s, "verified": pairs_of(res)}
    return out


def _time_disk(create, values: np.ndarray, queries: dict, repeat: int, describe) -> dict:
    """A disk index made by ``create(path)`` and filled with ``values`` (warmed on a small one first,
    then the best of ``repeat`` fills), then each query set timed: insert time, bytes, verified pairs."""
    runs = count()
    idxs = []

    def build(vals):
        idx = create(next(runs))
        idx.add_signatures(range(vals.shape[0]), vals)
        return idx

    with build(values[:WARM_N]) as warm:
        warm.query_signatures(queries["edited"][:WARM_Q])

    def build_keep():
        idxs.append(build(values))
        return idxs[-1]

    insert_s, idx = best(build_keep, repeat)
    out = {**describe(idx), "insert_s": insert_s, "bytes": idx.stats()["bytes"], "queries": {}}
    for name, q in queries.items():
        query_s, res = best(lambda q=q: idx.query_signatures(q), repeat)
        out["queries"][name] = {"query_verify_s": query_s, "verified": pairs_of(res, key=lambda kv: kv[0])}
    for i in idxs:
        i.close()
    return out


def run_disk_index(sig: np.ndarray, qsigs: dict, repeat: int, tmp: str) -> dict:
    from neardup import DiskIndex

    def create(run):
        return DiskIndex.create(os.path.join(tmp, f"minhash-{run}"), threshold=THRESHOLD, num_perm=NUM_PERM,
                                scheme="datasketch-legacy", seed=SEED, tokenizer="word", ngram=5)

    return _time_disk(create, sig, qsigs, repeat, lambda idx: {"bands": f"{idx.b}x{idx.r}"})


def brute_force_estimate(sig: np.ndarray, q: np.ndarray, empty_value: int) -> set[tuple[int, int]]:
    """Every (query, key) whose estimate (share of equal slots) is ≥ the threshold; empty rows excluded."""
    need = int(np.ceil(THRESHOLD * NUM_PERM - 1e-9))
    live = ~np.all(sig == empty_value, axis=1)
    out = set()
    for s in range(0, q.shape[0], 8):
        block = q[s:s + 8]
        eq = (sig[None, :, :] == block[:, None, :]).sum(axis=2, dtype=np.uint16)
        qi, ki = np.nonzero((eq >= need) & live[None, :])
        for a, b in zip(qi.tolist(), ki.tolist()):
            if not np.all(block[a] == empty_value):
                out.add((s + a, b))
    return out


def exact_jaccard_of(index: list[str], qtexts: list[str], pairs: set[tuple[int, int]]) -> dict:
    from neardup import Shingler, exact_jaccard_pairs

    if not pairs:
        return {}
    used_k = sorted({k for _, k in pairs})
    pos = {k: i for i, k in enumerate(used_k)}
    feats = Shingler(tokenizer="word", ngram=5).features([index[k] for k in used_k] + qtexts)
    plist = sorted(pairs)
    ii = np.array([len(used_k) + q for q, _ in plist], dtype=np.int64)
    jj = np.array([pos[k] for _, k in plist], dtype=np.int64)
    return dict(zip(plist, exact_jaccard_pairs(feats, ii, jj).tolist()))


# ------------------------------------------------------------------------------------------------
# SimHash
# ------------------------------------------------------------------------------------------------
def run_simhash_lib(fps: np.ndarray, qfps: dict, repeat: int) -> dict:
    from simhash import Simhash, SimhashIndex

    quiet = logging.getLogger("bench_index_peers.simhash")
    quiet.setLevel(logging.ERROR)                # it logs a warning per bucket over 200 entries
    t = time.perf_counter()
    objs = [(str(i), Simhash(int(v))) for i, v in enumerate(fps.tolist())]
    qobjs = {name: [Simhash(int(v)) for v in q.tolist()] for name, q in qfps.items()}
    wrap_s = time.perf_counter() - t
    warm = SimhashIndex(objs[:WARM_N], k=K_BITS, log=quiet)
    [warm.get_near_dups(o) for o in qobjs["edited"][:WARM_Q]]
    build_s, idx = best(lambda: SimhashIndex(objs, k=K_BITS, log=quiet), repeat)
    out = {"wrap_s": wrap_s, "insert_s": build_s, "queries": {}}
    for name, qo in qobjs.items():
        query_s, res = best(lambda qo=qo: [idx.get_near_dups(o) for o in qo], repeat)
        out["queries"][name] = {"query_verify_s": query_s, "verified": pairs_of(res)}
    return out


def run_simhash_index(fps: np.ndarray, qfps: dict, repeat: int) -> dict:
    from neardup import SimHashIndex

    def build(values):
        idx = SimHashIndex(k=K_BITS, expected_n=fps.shape[0])
        idx.add_many(range(values.shape[0]), values)
        return idx

    build(fps[:WARM_N]).query_many(qfps["edited"][:WARM_Q])
    build_s, idx = best(lambda: build(fps), repeat)
    out = {"layout": idx.plan.describe(), "insert_s": build_s, "queries": {}}
    for name, q in qfps.items():
        query_s, res = best(lambda q=q: idx.query_many(q), repeat)
        out["queries"][name] = {"query_verify_s": query_s, "verified": pairs_of(res, key=lambda kv: kv[0])}
    return out


def run_simhash_disk(fps: np.ndarray, qfps: dict, repeat: int, tmp: str) -> dict:
    from neardup import SimHashDiskIndex

    def create(run):
        return SimHashDiskIndex.create(os.path.join(tmp, f"simhash-{run}"), max_distance=K_BITS)

    return _time_disk(create, fps, qfps, repeat, lambda idx: {"layout": idx.config["layout"]})


def brute_force_hamming(fps: np.ndarray, q: np.ndarray) -> set[tuple[int, int]]:
    out = set()
    for s in range(0, q.shape[0], 256):
        d = np.bitwise_count(q[s:s + 256, None] ^ fps[None, :])
        qi, ki = np.nonzero(d <= K_BITS)
        out.update(zip((qi + s).tolist(), ki.tolist()))
    return out


# ------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------
def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def agreement(pairs: set, ref: set, truth: set, exact: dict) -> dict:
    return {"pairs": len(pairs), "common_with_ref": len(pairs & ref), "only_here": len(pairs - ref),
            "only_ref": len(ref - pairs), "truth_found": len(pairs & truth),
            "exact_ge_t": sum(exact.get(p, 0.0) >= THRESHOLD for p in pairs),
            "exact_lt_0.7": sum(exact.get(p, 0.0) < 0.7 for p in pairs),
            "exact_min": min((exact.get(p, 0.0) for p in pairs), default=None)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=os.path.join(HERE, "data", "corpus.jsonl"))
    ap.add_argument("--n-index", type=int, default=20_000)
    ap.add_argument("--n-held-out", type=int, default=2_000, help="at most this many documents after the indexed")
    ap.add_argument("--n-edit", type=int, default=2_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--check-sample", type=int, default=200)
    ap.add_argument("--out", default=os.path.join(HERE, "out", "index_peers.json"))
    args = ap.parse_args()
    t_all = time.perf_counter()

    import numba

    from neardup import MinHasher, SimHasher

    index, queries, info = load(args.corpus, args.n_index, args.n_held_out, args.n_edit, args.seed)
    n = len(index)
    qsizes = {name: len(q) for name, q in queries.items()}
    print(f"corpus: {n} indexed ({info['indexed_mb']:.1f} MB), queries {qsizes}", flush=True)

    # ---- MinHash ------------------------------------------------------------------------------
    hasher = MinHasher(num_perm=NUM_PERM, scheme="datasketch-legacy", seed=SEED, tokenizer="word", ngram=5)
    hasher.sign_batch(index[:WARM_N])
    t = time.perf_counter()
    sig = hasher.sign_batch(index).values
    sign_s = time.perf_counter() - t
    qsig = {name: hasher.sign_batch(q).values for name, q in queries.items()}
    empty = int(np.iinfo(sig.dtype).max)
    checks = {"minhash": check_datasketch_values(index, sig, args.check_sample, args.seed),
              "empty_signatures": {"indexed": int(np.all(sig == empty, axis=1).sum()),
                                   **{k: int(np.all(v == empty, axis=1).sum()) for k, v in qsig.items()}}}
    print(f"checks: {checks}", flush=True)

    tmp = tempfile.mkdtemp(prefix="bench_index_peers-")
    try:
        mh = {}
        for label, fn in (("datasketch MinHashLSH", lambda: run_datasketch(sig, qsig, args.repeat)),
                          ("rensa RMinHashLSH", lambda: run_rensa(index, queries, args.repeat)),
                          ("neardup MinHashLSH", lambda: run_neardup_lsh(sig, qsig, args.repeat, "recall")),
                          ("neardup MinHashLSH lsh=datasketch",
                           lambda: run_neardup_lsh(sig, qsig, args.repeat, "datasketch")),
                          ("neardup DiskIndex", lambda: run_disk_index(sig, qsig, args.repeat, tmp))):
            t = time.perf_counter()
            mh[label] = fn()
            print(f"  {label}: {time.perf_counter() - t:.1f} s", flush=True)

        # ---- SimHash --------------------------------------------------------------------------
        sim = SimHasher()
        sim.sign_batch(index[:WARM_N])
        t = time.perf_counter()
        fps = np.asarray(sim.sign_batch(index), dtype=np.uint64)
        simsign_s = time.perf_counter() - t
        qfps = {name: np.asarray(sim.sign_batch(q), dtype=np.uint64) for name, q in queries.items()}
        sh = {}
        for label, fn in (("simhash SimhashIndex", lambda: run_simhash_lib(fps, qfps, args.repeat)),
                          ("neardup SimHashIndex", lambda: run_simhash_index(fps, qfps, args.repeat)),
                          ("neardup SimHashDiskIndex", lambda: run_simhash_disk(fps, qfps, args.repeat, tmp))):
            t = time.perf_counter()
            sh[label] = fn()
            print(f"  {label}: {time.perf_counter() - t:.1f} s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # ---- agreement ------------------------------------------------------------------------------
    ref_label = "neardup MinHashLSH"
    mh_agree: dict = {}
    for name in queries:
        truth = brute_force_estimate(sig, qsig[name], empty)
        union = set(truth)
        for r in mh.values():
            union |= r["queries"][name].get("raw", set()) | r["queries"][name]["verified"]
        exact = exact_jaccard_of(index, queries[name], union)
        ref = mh[ref_label]["queries"][name]["verified"]
        rows = {"truth_estimate_ge_t": len(truth),
                "exact_ge_t_in_union": sum(v >= THRESHOLD for v in exact.values())}
        for label, r in mh.items():
            qr = r["queries"][name]
            rows[label] = {"verified": agreement(qr["verified"], ref, truth, exact)}
            if "raw" in qr:
                rows[label]["raw"] = agreement(qr["raw"], ref, truth, exact)
        mh_agree[name] = rows
    sh_agree: dict = {}
    for name in queries:
        truth = brute_force_hamming(fps, qfps[name])
        sh_agree[name] = {"truth_hamming_le_k": len(truth),
                          **{label: {"pairs": len(r["queries"][name]["verified"]),
                                     "equal_to_brute_force": r["queries"][name]["verified"] == truth,
                                     "missing": len(truth - r["queries"][name]["verified"]),
                                     "extra": len(r["queries"][name]["verified"] - truth)}
                             for label, r in sh.items()}}

    # ---- tables -----------------------------------------------------------------------------------
    names = list(queries)
    print(f"\nMinHash, t = {THRESHOLD}, k = {NUM_PERM}: {n} indexed, queries {qsizes}; best of {args.repeat}")
    print(f"neardup signing (datasketch-legacy, {n} docs): {rate(n, sign_s):,.0f} docs/s; "
          f"bit-identical to datasketch on {checks['minhash']['datasketch_values_equal']}/"
          f"{checks['minhash']['sampled']} sampled docs\n")
    head = " | ".join(f"{q}: q/s raw | {q}: q/s verified" for q in names)
    print(f"| index | b×r | insert docs/s | {head} |")
    print("|---|---|---:|" + "---:|---:|" * len(names))
    for label, r in mh.items():
        cells = []
        for q in names:
            qr = r["queries"][q]
            raw = f"{rate(qsizes[q], qr['query_s']):,.0f}" if "query_s" in qr else "—"
            cells += [raw, f"{rate(qsizes[q], qr['query_verify_s']):,.0f}"]
        print(f"| {label} | {r['bands']} | {rate(n, r['insert_s']):,.0f} | " + " | ".join(cells) + " |")
    rs = mh["rensa RMinHashLSH"]
    print(f"\n(rensa's own signing, not in the table: {rate(n, rs['sign_s']):,.0f} docs/s for the index "
          f"with digest_matrix_from_token_sets, token lists given; datasketch LeanMinHash wrapping: "
          f"{rate(n + sum(qsizes.values()), mh['datasketch MinHashLSH']['wrap_s']):,.0f} objects/s)")
    for q in names:
        a = mh_agree[q]
        print(f"\nMinHash agreement, {q} ({qsizes[q]} queries): all-pairs truth (estimate ≥ {THRESHOLD}, "
              f"datasketch-legacy values) = {a['truth_estimate_ge_t']} pairs; pairs anyone returned with exact "
              f"J ≥ {THRESHOLD} = {a['exact_ge_t_in_union']}; ref = {ref_label}\n")
        print("| index | result | pairs | ∩ ref | only here | only ref | ∩ truth | exact J ≥ t |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for label in mh:
            for kind in ("raw", "verified"):
                if kind in a[label]:
                    g = a[label][kind]
                    what = "candidates" if kind == "raw" else "est ≥ t"
                    print(f"| {label} | {what} | {g['pairs']} | {g['common_with_ref']} | {g['only_here']} | "
                          f"{g['only_ref']} | {g['truth_found']} | {g['exact_ge_t']} |")
    print(f"\nSimHash, Hamming ≤ {K_BITS}, 64 bits: neardup SimHasher() {rate(n, simsign_s):,.0f} docs/s\n")
    head = " | ".join(f"{q}: q/s | {q}: pairs (brute force) | {q}: = brute force" for q in names)
    print(f"| index | build docs/s | {head} |")
    print("|---|---:|" + "---:|---:|---|" * len(names))
    for label, r in sh.items():
        cells = []
        for q in names:
            g = sh_agree[q][label]
            cells += [f"{rate(qsizes[q], r['queries'][q]['query_verify_s']):,.0f}",
                      f"{g['pairs']} ({sh_agree[q]['truth_hamming_le_k']})",
                      "yes" if g["equal_to_brute_force"] else f"no (−{g['missing']} +{g['extra']})"]
        print(f"| {label} | {rate(n, r['insert_s']):,.0f} | " + " | ".join(cells) + " |")
    total_s = time.perf_counter() - t_all
    print(f"\ntotal {total_s:.0f} s")

    # ---- JSON -------------------------------------------------------------------------------------
    def strip(r):
        return {k: (strip(v) if isinstance(v, dict) else v) for k, v in r.items() if not isinstance(v, set)}

    report = {
        "parameters": {"threshold": THRESHOLD, "num_perm": NUM_PERM, "seed": SEED, "scheme": "datasketch-legacy",
                       "tokenizer": "word", "ngram": 5, "simhash_k": K_BITS, "rensa_bands": RENSA_BANDS,
                       "repeat": args.repeat, "data_seed": args.seed},
        "corpus": {k: v for k, v in info.items() if k != "edited_from"},
        "environment": {"python": platform.python_version(), "machine": platform.machine(),
                        "cpus": os.cpu_count(), "numba_threads": numba.config.NUMBA_NUM_THREADS,
                        **{p: version(p) for p in ("neardup", "numpy", "numba", "datasketch", "rensa", "simhash")}},
        "checks": checks,
        "minhash": {"sign_docs_per_s": rate(n, sign_s),
                    "indexes": {label: {**strip(r), "insert_docs_per_s": rate(n, r["insert_s"]),
                                        "queries_per_s": {q: {"raw": rate(qsizes[q], r["queries"][q]["query_s"])
                                                              if "query_s" in r["queries"][q] else None,
                                                              "verified": rate(qsizes[q],
                                                                               r["queries"][q]["query_verify_s"])}
                                                          for q in names}}
                                for label, r in mh.items()},
                    "agreement": mh_agree},
        "simhash": {"sign_docs_per_s": rate(n, simsign_s),
                    "indexes": {label: {**strip(r), "build_docs_per_s": rate(n, r["insert_s"]),
                                        "queries_per_s": {q: rate(qsizes[q], r["queries"][q]["query_verify_s"])
                                                          for q in names}}
                                for label, r in sh.items()},
                    "agreement": sh_agree},
        "total_s": total_s,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, default=float)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
