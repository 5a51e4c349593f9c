#!/usr/bin/env python3
"""End-to-end signing throughput (text -> signature) on ONE core, plus MinHash accuracy.

Run inside the benchmark venv (``bash benchmarks/setup_peers.sh``)::

    .bench-venv/bin/python benchmarks/bench_signing.py [--limit-mb N] [--corpus PATH]

What is timed, per method, is the whole path from a list of Python ``str``
documents to a signature per document: normalisation/tokenisation,
shingling, hashing and the sketch.  Throughput is UTF-8 bytes of text
divided by wall seconds; each method gets one warm-up run (on a small
slice: it only has to trigger JIT compilation and first-touch imports)
and then the best of ``--repeat`` (default 3) full runs.

Methods (k = 128, word 5-gram shingles unless said otherwise):

* neardup ``MinHasher(scheme=...)`` for every scheme in ``neardup.SCHEMES``;
* neardup ``SimHasher()`` with its defaults;
* datasketch 2.0.0 ``MinHash(num_perm=128)`` (default scheme, affine32),
  via ``MinHash.generator`` (datasketch's bulk path: one permutation set,
  ``copy()`` + ``update_batch`` per document) on UTF-8 shingle bytes;
* rensa 0.5 ``RMinHash(128, seed)`` per document, ``update(shingles)``;
  and, as an extra row, rensa's batch API ``digest_matrix_from_token_sets``;
* simhash 2.1.2 ``Simhash(text)`` with its own default features.

The peers' shingles come from a plain Python tokenizer, timed as part of
their run: ``re.findall(r"\\w+", text.lower())``, 5 consecutive words joined
by a space, as a set; a document of 1-4 words is one shingle of all of them
(neardup's convention).

Results are printed as a table and written to ``benchmarks/out/signing.json``.
"""

from __future__ import annotations

import os

# One core, no hidden thread pools: set before numpy/numba are imported.
for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ[_var] = "1"
try:
    os.sched_setaffinity(0, {0})
except (AttributeError, OSError):  # not Linux, or CPU 0 not allowed
    pass

import argparse
import gc
import json
import platform
import re
import sys
import time
from importlib.metadata import PackageNotFoundError, version

import numpy as np
from common import corpus

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.join(HERE, "data", "corpus.jsonl")
DEFAULT_OUT = os.path.join(HERE, "out", "signing.json")

NUM_PERM = 128
SEED = 1
NGRAM = 5

_WORD = re.compile(r"\w+")


def peer_shingles(text: str) -> set[str]:
    """Word 5-gram shingles with a plain regex tokenizer (the peers' input)."""
    w = _WORD.findall(text.lower())
    n = len(w)
    if n == 0:
        return set()
    if n < NGRAM:
        return {" ".join(w)}
    return {" ".join(w[i:i + NGRAM]) for i in range(n - NGRAM + 1)}


# --------------------------------------------------------------------------
# corpus
# --------------------------------------------------------------------------

def load_corpus(path: str, limit_mb: float | None):
    """All records, or a seeded random subset of about ``limit_mb`` MB of text.

    The subset is made of random blocks of 64 consecutive records (kept in
    corpus order) rather than a prefix, so a small run still mixes copyright
    files, licences and man pages, while neighbours in path order -- where
    most near duplicates live (``gcloud_compute_*``, ``libxcb-*``) -- stay
    together and the accuracy pairs still reach high Jaccard.
    """
    recs = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            recs.append((r["id"], r["text"], r.get("source", "")))
    if limit_mb is not None:
        limit = int(limit_mb * 1e6)
        block = 64
        order = np.random.default_rng(0).permutation(-(-len(recs) // block))
        keep, total = [], 0
        for blk in order:
            for i in range(blk * block, min((blk + 1) * block, len(recs))):
                nb = len(recs[i][1].encode("utf-8"))
                if total + nb > limit:
                    continue
                keep.append(i)
                total += nb
            if total >= limit * 0.999:
                break
        recs = [recs[i] for i in sorted(keep)]
    ids = [r[0] for r in recs]
    texts = [r[1] for r in recs]
    sources = [r[2] for r in recs]
    return ids, texts, sources


# --------------------------------------------------------------------------
# methods: each maps list[str] -> result (signature matrix or fingerprints)
# --------------------------------------------------------------------------

def _patch_simhash_for_numpy2(Simhash) -> None:
    """Let simhash 2.1.2 run under NumPy 2, with NumPy 1 results.

    simhash 2.1.2 multiplies a uint8 bit array by a feature's count for
    features seen more than 50 times; NumPy 1 silently widened the result,
    NumPy 2 (NEP 50) raises OverflowError once a count reaches 256 (common
    in long man pages).  We widen only that array; the batched path (every
    other feature) keeps the library's own code.
    """
    if int(np.__version__.split(".")[0]) < 2 or getattr(Simhash, "_nd_patched", False):
        return
    orig = Simhash._bitarray_from_bytes

    def _sum_hashes(self, digests):
        return np.sum(np.reshape(orig(b"".join(digests)), (-1, self.f)), 0)

    Simhash._sum_hashes = _sum_hashes
    Simhash._bitarray_from_bytes = staticmethod(lambda b: orig(b).astype(np.int64))
    Simhash._nd_patched = True


def make_methods():
    import neardup

    methods = []  # (name, family, fn)
    for scheme in neardup.SCHEMES:
        hasher = neardup.MinHasher(num_perm=NUM_PERM, scheme=scheme, seed=SEED,
                                   tokenizer="word", ngram=NGRAM)
        methods.append((f"neardup minhash {scheme}", "minhash",
                        lambda texts, h=hasher: h.sign_batch(texts)))
    sim = neardup.SimHasher()
    methods.append(("neardup simhash", "simhash", lambda texts: sim.sign_batch(texts)))

    def regex_shingles_only(texts):
        return [peer_shingles(t) for t in texts]

    methods.append(("(peers' regex shingling alone)", "baseline", regex_shingles_only))

    try:
        from datasketch import MinHash

        def datasketch_minhash(texts):
            shingles = ([s.encode("utf-8") for s in peer_shingles(t)] for t in texts)
            out = np.empty((len(texts), NUM_PERM), dtype=np.uint64)
            for i, m in enumerate(MinHash.generator(shingles, num_perm=NUM_PERM, seed=SEED)):
                out[i] = m.hashvalues
            return out

        methods.append(("datasketch MinHash", "minhash", datasketch_minhash))
    except ImportError:
        print("datasketch not installed: skipped", file=sys.stderr)

    try:
        from rensa import RMinHash

        def rensa_minhash(texts):
            out = np.empty((len(texts), NUM_PERM), dtype=np.uint32)
            for i, t in enumerate(texts):
                m = RMinHash(NUM_PERM, SEED)
                m.update(list(peer_shingles(t)))
                out[i] = m.digest()
            return out

        def rensa_batch(texts):
            # the digest matrix itself; it is turned into an array (via
            # to_rows, Python lists) only after the timed region, by as_matrix
            return RMinHash.digest_matrix_from_token_sets(
                (peer_shingles(t) for t in texts), NUM_PERM, SEED)

        methods.append(("rensa RMinHash", "minhash", rensa_minhash))
        methods.append(("rensa batch (digest_matrix)", "minhash", rensa_batch))
    except ImportError:
        print("rensa not installed: skipped", file=sys.stderr)

    try:
        from simhash import Simhash

        _patch_simhash_for_numpy2(Simhash)

        def simhash_peer(texts):
            return np.array([Simhash(t).value for t in texts], dtype=np.uint64)

        methods.append(("simhash Simhash", "simhash", simhash_peer))
    except ImportError:
        print("simhash not installed: skipped", file=sys.stderr)
    return methods


def as_matrix(result) -> np.ndarray:
    if hasattr(result, "to_rows"):  # rensa.RMinHashDigestMatrix
        return np.array(result.to_rows(), dtype=np.uint32)
    vals = getattr(result, "values", result)
    return np.asarray(vals)


def time_method(fn, texts, warm_texts, repeat):
    fn(warm_texts)  # JIT compile / first-use costs, excluded
    best = float("inf")
    result = None
    for _ in range(repeat):
        result = None
        gc.collect()
        t0 = time.perf_counter()
        result = fn(texts)
        best = min(best, time.perf_counter() - t0)
    return best, result


# --------------------------------------------------------------------------
# accuracy: pair sampling and exact Jaccard
# --------------------------------------------------------------------------

def candidate_pairs(ids, sources, feats, rng, n_random=2000, n_rare=20000):
    """Candidate document pairs likely to span the whole Jaccard range.

    * name neighbours: within a source, sort by id and pair each document with
      the next one (``gcloud_compute_instances_create`` / ``..._delete``,
      ``libxcb-glx0`` / ``libxcb-present0``): mostly medium to high overlap;
    * length neighbours: within a source, sort by text length and pair
      neighbours: finds exact duplicates and same-template documents;
    * rare shared shingle: pairs of documents that share a shingle occurring in
      only 2-20 documents of the set: from barely overlapping to identical;
    * random pairs: the bulk of real pairs, Jaccard near 0.
    """
    n = len(ids)
    pairs = set()
    src = np.array(sources)
    sizes = feats.sizes()
    for s in np.unique(src):
        idx = np.flatnonzero(src == s)
        by_name = idx[np.argsort(np.array(ids, dtype=object)[idx], kind="stable")]
        by_len = idx[np.argsort(sizes[idx], kind="stable")]
        for order in (by_name, by_len):
            for a, b in zip(order[:-1], order[1:]):
                pairs.add((int(min(a, b)), int(max(a, b))))
    uf = feats.unique()
    doc = np.repeat(np.arange(n), np.diff(uf.offsets))
    order = np.argsort(uf.hashes, kind="stable")
    h, d = uf.hashes[order], doc[order]
    starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
    counts = np.diff(np.r_[starts, h.size])
    rare = starts[(counts >= 2) & (counts <= 20)]
    rare_counts = counts[(counts >= 2) & (counts <= 20)]
    if rare.size:
        pick = rng.choice(rare.size, size=min(n_rare, rare.size), replace=False)
        for p in pick:
            members = d[rare[p]:rare[p] + rare_counts[p]]
            a, b = rng.choice(members, size=2, replace=False)
            if a != b:
                pairs.add((int(min(a, b)), int(max(a, b))))
    for _ in range(n_random):
        a, b = rng.integers(0, n, size=2)
        if a != b:
            pairs.add((int(min(a, b)), int(max(a, b))))
    pairs = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def stratified(exact, rng, total):
    """Indices of ~total pairs spread evenly over Jaccard bins
    [0,.1), [.1,.2), ..., [.9,1) and exactly 1."""
    bins = np.minimum((exact * 10).astype(np.int64), 9)
    bins[exact >= 1.0] = 10
    per = -(-total // 11)
    chosen = []
    for b in range(11):
        idx = np.flatnonzero(bins == b)
        if idx.size:
            chosen.append(rng.choice(idx, size=min(per, idx.size), replace=False))
    chosen = np.concatenate(chosen)
    if chosen.size < total:  # top up from what is left
        rest = np.setdiff1d(np.arange(exact.size), chosen)
        extra = rng.choice(rest, size=min(total - chosen.size, rest.size), replace=False)
        chosen = np.concatenate([chosen, extra])
    return np.sort(chosen)


def equal_fraction(values: np.ndarray, ii, jj) -> np.ndarray:
    return (values[ii] == values[jj]).mean(axis=1)


# --------------------------------------------------------------------------

def pkg_version(name):
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=DEFAULT_CORPUS)
    ap.add_argument("--limit-mb", type=float, default=None,
                    help="use a seeded random subset of about this many MB (default: whole corpus)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup-mb", type=float, default=1.0,
                    help="size of the warm-up slice (default 1 MB)")
    ap.add_argument("--pairs", type=int, default=3000, help="accuracy: number of document pairs")
    ap.add_argument("--acc-seeds", type=int, default=5,
                    help="accuracy: seeds per estimator, MAE averaged over them (default 5)")
    ap.add_argument("--only", default=None,
                    help="comma-separated substrings: run only matching methods")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args(argv)

    import neardup

    corpus(args.corpus)
    ids, texts, sources = load_corpus(args.corpus, args.limit_mb)
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    warm, wb = [], 0
    for t in texts:
        if wb >= args.warmup_mb * 1e6:
            break
        warm.append(t)
        wb += len(t.encode("utf-8"))
    print(f"corpus: {len(texts)} docs, {nbytes / 1e6:.1f} MB "
          f"(affinity {sorted(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'})",
          flush=True)

    methods = make_methods()
    if args.only:
        keys = [k.strip() for k in args.only.split(",")]
        methods = [m for m in methods if any(k in m[0] for k in keys)]

    results = {}
    sigs = {}
    for name, family, fn in methods:
        secs, res = time_method(fn, texts, warm, args.repeat)
        mbs = nbytes / 1e6 / secs
        results[name] = {"family": family, "seconds": secs, "mb_per_s": mbs}
        print(f"  {name:34s} {secs:8.2f} s  {mbs:8.2f} MB/s", flush=True)
        if family == "minhash":
            sigs[name] = res
        del res
        gc.collect()

    # ---- ratios
    def ratio(name, ref):
        if ref in results:
            return results[name]["mb_per_s"] / results[ref]["mb_per_s"]
        return None

    for name, r in results.items():
        if r["family"] == "minhash":
            r["vs_datasketch"] = ratio(name, "datasketch MinHash")
            r["vs_rensa"] = ratio(name, "rensa RMinHash")
            r["vs_rensa_batch"] = ratio(name, "rensa batch (digest_matrix)")
        elif r["family"] == "simhash":
            r["vs_simhash"] = ratio(name, "simhash Simhash")

    # ---- accuracy
    # Estimation error of one seed is strongly correlated across pairs (many
    # pairs share boilerplate, and all of them share the same 128 hash
    # functions), so a single seed's mean error is mostly that seed's luck.
    # Each estimator is therefore re-run with --acc-seeds seeds on the
    # documents of the sampled pairs, and its MAE is averaged over seeds.
    rng = np.random.default_rng(12345)
    feats = neardup.Shingler(tokenizer="word", ngram=NGRAM).features(texts)
    ci, cj = candidate_pairs(ids, sources, feats, rng)
    cex = np.asarray(neardup.exact_jaccard_pairs(feats, ci, cj), dtype=np.float64)
    sel = stratified(cex, rng, args.pairs)
    ii, jj, exact = ci[sel], cj[sel], cex[sel]
    docs = np.unique(np.r_[ii, jj])
    sub = [texts[d] for d in docs]
    a_idx = np.searchsorted(docs, ii)
    b_idx = np.searchsorted(docs, jj)
    # the peers' own exact Jaccard (regex shingles), to show the two shingle
    # definitions agree on these pairs
    peer_sets = [peer_shingles(t) for t in sub]
    peer_exact = np.array([
        (len(peer_sets[a] & peer_sets[b]) / len(peer_sets[a] | peer_sets[b]))
        if (peer_sets[a] or peer_sets[b]) else 1.0
        for a, b in zip(a_idx.tolist(), b_idx.tolist())])
    bins = np.where(exact >= 1, 10, np.minimum((exact * 10).astype(int), 9))
    hist = np.bincount(bins, minlength=11).tolist()
    hi = exact >= 0.5
    seeds = list(range(SEED, SEED + args.acc_seeds))
    accuracy = {"pairs": int(ii.size), "candidates": int(ci.size), "docs": int(docs.size),
                "seeds": seeds, "jaccard_histogram_0.1_bins_plus_1": hist,
                "mean_abs_diff_neardup_vs_regex_exact": float(np.abs(exact - peer_exact).mean()),
                "methods": {}}

    def estimator(name):
        if name.startswith("neardup minhash "):
            scheme = name[len("neardup minhash "):]
            return lambda seed: np.asarray(
                neardup.MinHasher(num_perm=NUM_PERM, scheme=scheme, seed=seed, tokenizer="word",
                                  ngram=NGRAM).sign_batch(sub).jaccard_pairs(a_idx, b_idx), dtype=np.float64)
        if name == "datasketch MinHash":
            from datasketch import MinHash

            def ds(seed):
                sh = ([s.encode("utf-8") for s in ps] for ps in peer_sets)
                m = np.array([x.hashvalues for x in MinHash.generator(sh, num_perm=NUM_PERM, seed=seed)])
                return equal_fraction(m, a_idx, b_idx)
            return ds
        if name.startswith("rensa"):
            from rensa import RMinHash
            # both rensa entry points give the same digests (checked below on
            # the timed run), so one of them serves for accuracy
            return lambda seed: equal_fraction(
                as_matrix(RMinHash.digest_matrix_from_token_sets(peer_sets, NUM_PERM, seed)), a_idx, b_idx)
        return None

    if "rensa RMinHash" in sigs and "rensa batch (digest_matrix)" in sigs:
        accuracy["rensa_batch_equals_per_object"] = bool(np.array_equal(
            as_matrix(sigs["rensa RMinHash"]), as_matrix(sigs["rensa batch (digest_matrix)"])))
    for name in list(sigs):
        est_fn = estimator(name)
        if est_fn is None:
            continue
        per_seed = []
        for seed in seeds:
            err = est_fn(seed) - exact
            per_seed.append((np.abs(err), err))
        abs_err = np.mean([e[0] for e in per_seed], axis=0)  # per pair, averaged over seeds
        maes = [float(e[0].mean()) for e in per_seed]
        accuracy["methods"][name] = {
            "mae": float(abs_err.mean()),
            "mae_per_seed": maes,
            "mae_j_ge_0.5": float(abs_err[hi].mean()) if hi.any() else None,
            "bias_per_seed": [float(e[1].mean()) for e in per_seed],
            "per_bin_mae": [
                {"bin": b, "n": int((bins == b).sum()), "mae": float(abs_err[bins == b].mean())}
                for b in range(11) if (bins == b).any()],
        }
        results[name]["mae"] = accuracy["methods"][name]["mae"]
        del sigs[name]  # free the timed run's signatures as we go
    del sigs

    # ---- compatibility check: neardup's datasketch-* schemes should equal
    # datasketch's own values for the same shingles (neardup's shingle
    # strings, encoded as UTF-8) and seed
    try:
        from datasketch import MinHash

        few = texts[:300]
        sh = neardup.Shingler(tokenizer="word", ngram=NGRAM)
        toks = [[s.encode("utf-8") for s in sh.shingles(t)] for t in few]
        compat = {}
        for scheme in ("affine32", "legacy"):
            ours = as_matrix(neardup.MinHasher(num_perm=NUM_PERM, scheme="datasketch-" + scheme,
                                               seed=SEED).sign_batch(few)).astype(np.uint64)
            theirs = np.array([m.hashvalues for m in MinHash.generator(
                toks, num_perm=NUM_PERM, seed=SEED, scheme=scheme)]).astype(np.uint64)
            compat[scheme] = float((ours == theirs).all(axis=1).mean())
        accuracy["datasketch_bit_exact_fraction"] = compat
    except ImportError:
        pass

    # ---- print table
    print()
    print(f"{'method':34s} {'MB/s':>8s} {'x datasketch':>12s} {'x rensa':>8s} "
          f"{'x rensa-batch':>13s} {'x simhash':>9s} {'MAE':>7s}")

    def fmt(v, spec):
        return format(v, spec) if v is not None else "-"

    for name, r in results.items():
        print(f"{name:34s} {r['mb_per_s']:8.2f} {fmt(r.get('vs_datasketch'), '12.1f')} "
              f"{fmt(r.get('vs_rensa'), '8.2f')} {fmt(r.get('vs_rensa_batch'), '13.2f')} "
              f"{fmt(r.get('vs_simhash'), '9.1f')} {fmt(r.get('mae'), '7.4f')}")
    print()
    print(f"accuracy: {ii.size} pairs over {docs.size} docs (from {ci.size} candidates), "
          f"seeds {seeds[0]}..{seeds[-1]}; exact-Jaccard bins [0,.1)..[.9,1),1 = {hist}")
    print(f"  mean |neardup exact - regex-shingle exact| = "
          f"{accuracy['mean_abs_diff_neardup_vs_regex_exact']:.4f}")
    for name, a in accuracy["methods"].items():
        print(f"  {name:34s} MAE {a['mae']:.4f} (per seed {min(a['mae_per_seed']):.4f}-"
              f"{max(a['mae_per_seed']):.4f})  MAE(J>=0.5) {fmt(a['mae_j_ge_0.5'], '.4f')}")
    if "rensa_batch_equals_per_object" in accuracy:
        print(f"  rensa batch digests == per-object digests: {accuracy['rensa_batch_equals_per_object']}")
    if "datasketch_bit_exact_fraction" in accuracy:
        print(f"  neardup datasketch-* == datasketch 2.0.0 (fraction of 300 docs bit-exact): "
              f"{accuracy['datasketch_bit_exact_fraction']}")

    report = {
        "corpus": {"path": os.path.abspath(args.corpus), "docs": len(texts), "mb": nbytes / 1e6,
                   "limit_mb": args.limit_mb},
        "params": {"num_perm": NUM_PERM, "seed": SEED, "ngram": NGRAM, "repeat": args.repeat,
                   "warmup_mb": args.warmup_mb, "threads": 1, "pairs": args.pairs,
                   "acc_seeds": args.acc_seeds},
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpu_count": os.cpu_count(),
                    "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None},
        "versions": {p: pkg_version(p) for p in ("neardup", "numpy", "numba", "datasketch", "rensa", "simhash")},
        "results": results,
        "accuracy": accuracy,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(report, fh, indent=2)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
