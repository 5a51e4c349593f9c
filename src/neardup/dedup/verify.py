"""Stage 3, verification: candidate pairs → their similarities, and how each was decided (:data:`HOW`).

* **estimate** — the MinHash Jaccard estimate ĵ (variance J(1 − J)/k), or for containment the larger
  of the two containments derived from it: with |A ∩ B| = J (|A| + |B|) / (1 + J),
  C(A ⊆ B) = |A ∩ B| / |A|;
* **exact** — Jaccard / containment on the shingle sets (``verify="exact"``: every candidate);
* **borderline** (the default) — the estimate, except for the pairs whose estimate lies within
  z standard errors of the threshold (:func:`borderline_z`, :func:`borderline_mask`): those are
  decided exactly on the shingle sets of just their documents, re-read from the inputs.

One rule for both engines: the Spark engine calls these functions on its partitions.
"""
from __future__ import annotations

import contextlib
import errno
import mmap
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from statistics import NormalDist

import numpy as np

from .._arrays import concatenate_freeing, physical_memory, read_ahead, release_pages, sorted_unique
from ..config import DedupConfig, cpu_count
from ..features.shingles import Features
from ..kernels.jaccard import pair_order, pair_order_blocks
from ..kernels.lsh import merge_unique
from ..similarity.jaccard import jaccard_of, max_containment_of, range_stats
from ..sketches.minhash import MinHasher, jaccard_rows
from ..text.normalize import Normalizer

METRICS = ("jaccard", "containment")


VERIFY = ("minhash", "exact", "none", "borderline")


#: How a verified pair was decided (``DuplicateResult.pairs_how`` holds the index into this tuple):
#: equal signatures (or keys, or fingerprints), the sketch's estimate (MinHash Jaccard / containment,
#: SimHash Hamming distance), exact similarity on the shingle sets, or an unverified LSH candidate
#: (``verify="none"``).
HOW = ("identical", "estimate", "exact", "candidate")
IDENTICAL, ESTIMATE, EXACT, CANDIDATE = range(4)


def minhasher(cfg: DedupConfig) -> MinHasher:
    """The run's MinHasher (its shingler also gives the shingle sets of exact checks); signing uses it too."""
    return MinHasher(num_perm=cfg.num_perm, scheme=cfg.scheme, seed=cfg.seed, tokenizer=cfg.tokenizer,
                     ngram=cfg.ngram, normalizer=Normalizer(convert=cfg.convert), user_dict=cfg.user_dict)


def simhash_drift_bits(max_drift: float | None) -> int | None:
    """``--max-drift`` for SimHash, in whole bits of 64 (rounded)."""
    return None if max_drift is None else int(round(max_drift * 64))


def clustering_rule(cfg) -> tuple[float, float | None]:
    """(threshold, drift) of the clustering on the similarity scale: MinHash's and verified SimHash's as
    given (Jaccard); classic SimHash's in whole bits of 64 (1 − k/64, the drift rounded to bits).
    ``cfg``: a DedupConfig or its dict."""
    get = cfg.get if isinstance(cfg, dict) else lambda k: getattr(cfg, k, None)
    if get("method") == "simhash" and get("candidate_bits") is None:      # (verified SimHash: Jaccard, as MinHash)
        bits = simhash_drift_bits(get("max_drift"))
        return 1.0 - get("bits") / 64.0, (None if bits is None else bits / 64.0)
    return get("threshold"), get("max_drift")


def borderline_z(n_candidates: int) -> float:
    """The band's width in standard errors: z with n · P(|Z| > z) = 1 (normal approximation), so that
    among the n candidate pairs decided by their estimate alone, at most about one is expected to lie
    on the other side of t. A pair outside the band is misdecided only when its estimate errs by more
    than z standard errors (more still when its true J is farther from t). At least 3."""
    n = max(int(n_candidates), 1)
    return max(3.0, NormalDist().inv_cdf(1.0 - 0.5 / n))


def borderline_band(n_candidates: int, threshold: float, num_perm: int) -> dict:
    """What a report says of the band: z (:func:`borderline_z`) and its half-width at J = t."""
    z = borderline_z(n_candidates)
    t = float(threshold)
    return {"z": round(z, 3), "delta_at_t": round(z * (t * (1 - t) / num_perm) ** 0.5, 4)}


def borderline_mask(j, size_a, size_b, threshold: float, num_perm: int, metric: str, z: float) -> np.ndarray:
    """Which pairs a MinHash estimate cannot decide: |ĵ − J_t| ≤ z · sqrt(J_t(1 − J_t)/k), where J_t is
    the Jaccard at which the pair reaches the threshold — t itself, or for containment of A in B
    (or B in A, whichever needs less) J_t = t|A| / (|A| + |B| − t|A|). The variance is the estimator's,
    J(1 − J)/k, taken at J_t: the pairs in question are those near it. The one rule both engines use."""
    j = np.asarray(j, dtype=np.float64)
    if metric == "jaccard":              # J_t = t for every pair: one width (0.5 s less at 1 M documents)
        t = float(threshold)
        return np.abs(j - t) <= z * np.sqrt(t * (1.0 - t) / num_perm)
    a = np.asarray(size_a, dtype=np.float64)
    b = np.asarray(size_b, dtype=np.float64)
    t = float(threshold)
    with np.errstate(divide="ignore", invalid="ignore"):
        ja = t * a / (a + b - t * a)
        jb = t * b / (a + b - t * b)
    jt = np.clip(np.nan_to_num(np.minimum(ja, jb), nan=1.0), 0.0, 1.0)
    return np.abs(j - jt) <= z * np.sqrt(jt * (1.0 - jt) / num_perm)


def known_similarity(similarity, lo, hi, sim, n: int, how=None):
    """``similarity_to`` for :func:`~neardup.clusters.build_clusters`: the exact similarity of a pair
    that was checked exactly (``how`` = EXACT; ``--verify borderline``: the estimate of a passage in a
    long document can be far off), ``similarity(a, b)`` for any other pair. Rows are 0 … n − 1."""
    if how is not None:
        exact = np.asarray(how) == EXACT
        lo, hi, sim = np.asarray(lo)[exact], np.asarray(hi)[exact], np.asarray(sim)[exact]
    lo = np.asarray(lo, dtype=np.int64)
    if lo.shape[0] == 0:
        return similarity
    hi = np.asarray(hi, dtype=np.int64)
    n = np.int64(max(int(n), 1))
    code = np.minimum(lo, hi) * n + np.maximum(lo, hi)
    order = np.argsort(code, kind="stable")
    code, known = code[order], np.asarray(sim, dtype=np.float64)[order]

    def similarity_to(a, b):
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        out = np.array(similarity(a, b), dtype=np.float64)
        c = np.minimum(a, b) * n + np.maximum(a, b)
        if c.shape[0] > 4096:    # looked up in sorted order: each search starts from the last one's
            order = np.argsort(c)  # place, in cache (3.7 M in 58.8 M codes: 6.4 → 1.0 s)
            pos = np.empty(c.shape[0], dtype=np.int64)
            pos[order] = np.searchsorted(code, c[order])
        else:
            pos = np.searchsorted(code, c)
        pos = np.minimum(pos, code.shape[0] - 1)
        hit = code[pos] == c
        out[hit] = known[pos[hit]]
        return out

    return similarity_to


def exact_similarity(features: Features, a, b, metric: str) -> np.ndarray:
    """A pair's exact similarity on its shingle sets (``verify="exact"``): Jaccard, or for containment
    the larger of the two containments. The one rule both engines use."""
    u = features.unique()
    return ranges_similarity(u.hashes, u.offsets[:-1], u.offsets[1:], a, b, metric)


def ranges_similarity(h, first, stop, a, b, metric: str) -> np.ndarray:
    """:func:`exact_similarity` of rows whose sets are ``h[first[r]:stop[r]]``, in any order (the
    band's sets, as the workers appended them)."""
    stats = range_stats(h, first, stop, a, b)
    return jaccard_of(*stats) if metric == "jaccard" else max_containment_of(*stats)


def fixed_aliases(same: np.ndarray, fixed: int) -> np.ndarray:
    """Per row the row whose text stands for it in an exact check: itself, or for a fixed row (an
    index's document, whose text is not at hand) the first new row with an identical signature
    (−1: none). Identical k-slot signatures are identical shingle sets but for a 2⁻³²ᵏ-scale
    accident, so the new row's set is the fixed row's."""
    n = same.shape[0]
    out = np.arange(n, dtype=np.int64)
    if fixed:
        out[:fixed] = -1
        r = np.arange(fixed, n, dtype=np.int64)
        f = same[fixed:]
        m = f < fixed
        firsts, at = np.unique(f[m], return_index=True)
        out[firsts] = r[m][at]
    return out


def decide_borderline(sim, values, lo, hi, sizes, sigs, threshold, metric, fixed, features, exact_pairs,
                       same=None, j=None, copy=True, done=None):
    """``verify="borderline"``: the pairs within the band get their exact similarity (in a copy of
    ``sim``, or with ``copy=False`` in ``sim`` itself: 0.9 GB less at 10 M documents). Returns the
    similarities and what was done (z, band width at t, pairs, documents re-read, decisions changed).
    A fixed row is checked through the new row identical to it (:func:`fixed_aliases`); without one
    its pairs keep the estimate. Third value: a mask of the pairs checked exactly. ``j``: the
    pairs' Jaccard estimates when the caller has them (``sim`` itself for the Jaccard metric).
    ``done(n)``: progress, the pairs outside the band once it is found, the band's once decided."""
    t0 = time.perf_counter()
    done = done or (lambda n: None)
    if j is None:
        j = jaccard_rows(values, lo, hi, sigs.scheme)
    z = borderline_z(lo.shape[0])
    za = sizes[lo] if metric != "jaccard" else None       # (set sizes matter to containment only)
    zb = sizes[hi] if metric != "jaccard" else None
    mask = borderline_mask(j, za, zb, threshold, sigs.num_perm, metric, z)
    ea, eb = lo, hi
    if fixed:                                        # an index's documents have no text here
        alias = fixed_aliases(same if same is not None else np.arange(values.shape[0]), fixed)
        ea, eb = alias[lo], alias[hi]
        mask &= (ea >= 0) & (eb >= 0) & (hi >= fixed)
    idx = np.flatnonzero(mask)
    n_idx = int(idx.shape[0])
    done(lo.shape[0] - n_idx)
    if copy:
        sim = sim.copy()
    docs = flipped = 0
    parts = None
    if n_idx:
        a, b = ea[idx], eb[idx]
        del idx                   # (found again below: 8 bytes a pair less while the band is decided)
        if exact_pairs is None:
            docs = int(_distinct(a, b).shape[0])
            ex = exact_similarity(features, a, b, metric)
        else:
            release_pages(values)        # (a mapped signature matrix: not read while the band is decided)
            ex = np.asarray(exact_pairs(a, b), dtype=np.float64)
            read_ahead(values)           # (and wanted again soon, by the clusters' linkage)
            # the documents re-read, as the caller counted them (exact_pairs_from_texts: 2.6 s of sorting
            # at 10 M documents not done twice)
            docs = getattr(exact_pairs, "documents", None)
            if docs is None:
                docs = int(_distinct(a, b).shape[0])
            parts = getattr(exact_pairs, "seconds", None)      # (where the time went: re-read, pairs)
        del a, b
        idx = np.flatnonzero(mask)
        flipped = int(((ex >= threshold) != (sim[idx] >= threshold)).sum())
        sim[idx] = ex
        del idx, ex
        done(n_idx)
    return sim, {**borderline_band(lo.shape[0], threshold, sigs.num_perm), "pairs": n_idx,
                 "documents": docs, "flipped": flipped, "seconds": time.perf_counter() - t0,
                 **({"seconds_sets": parts[0], "seconds_pairs": parts[1]} if parts else {})}, mask


def _distinct(lo, hi) -> np.ndarray:
    """The sorted distinct values of two int64 arrays: each sorted apart and merged (not NumPy 2.4's
    hash-based ``np.unique``, nor one sort of both: 1.9 GB of temporaries at 10 M documents). The two
    sorts run side by side when there are two CPUs (NumPy's sort releases the GIL)."""
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    if lo.shape[0] < 1 << 20 or cpu_count() < 2:
        return merge_unique(sorted_unique(lo), sorted_unique(hi))

    with ThreadPoolExecutor(2, thread_name_prefix="neardup-sort") as pool:
        a, b = pool.map(sorted_unique, (lo, hi))
    return merge_unique(a, b)


def exact_pairs_from_texts(cfg: DedupConfig, texts_of, offset: int, sets_of=None, spill: str | None = None):
    """``verify="borderline"``: the exact similarity of given pairs (rows from ``offset`` on are this
    run's documents), from their texts re-read from the inputs and shingled as when they were signed.
    ``sets_of(docs, take, path)``, when the engine has it, gives the sets of some documents (an
    array) itself: calls ``take(documents, hashes, sizes)`` per batch, ``hashes`` being where the
    batch starts when it was appended to the file ``path`` (:func:`append_sets`; None: no file, the
    hashes themselves); returns the array of documents left to ``texts_of``.
    ``spill``: a folder where the sets are written as they come and read back through a memory map
    (:class:`BandSets`), so that the band's sets — 9 GB at 10 M documents — are pages the system can
    drop, not memory of the run. The function returned keeps in ``documents`` how many documents its
    last call re-read."""
    shingler = minhasher(cfg).shingler

    def exact(lo, hi):
        # texts arrive one by one and are shingled a batch at a time: what stays is each batch's
        # distinct shingle hashes (8 bytes each), never all the texts at once
        t0 = time.perf_counter()
        rows = _distinct(lo, hi)
        exact.documents = int(rows.shape[0])
        docs: list = []
        texts: list = []
        with BandSets(spill) as band:
            def flush():
                u = shingler.features(texts).distinct_sets()
                band.take(np.asarray(docs, dtype=np.int64), u.hashes, np.diff(u.offsets))
                docs.clear()
                texts.clear()

            wanted = rows - offset
            if sets_of is not None:
                wanted = sets_of(wanted, lambda d, h, z: band.take(d + offset, h, z), band.path)
            for d, text in texts_of(set(wanted.tolist())):
                docs.append(d + offset)
                texts.append(text)
                if len(docs) >= 8192:
                    flush()
            if docs:
                flush()
            budget = band_buffer_bytes()
            h, first, stop = band.ranges(rows, map_limit=budget)
            t1 = time.perf_counter()
            # each row's place among the band's rows, by lookup: a binary search per pair in the
            # pairs' order (random) missed the cache at every step — 42 s of the band at 10 M
            # documents, against 2.4 s for a lookup table of 8 bytes per row up to the last
            place = np.full(int(rows[-1]) + 1 if rows.shape[0] else 0, -1, dtype=np.int64)
            place[rows] = np.arange(rows.shape[0], dtype=np.int64)
            out = np.empty(lo.shape[0], dtype=np.float64)
            if isinstance(h, SetsFile):
                similarity_by_blocks(h, first, stop, lo, hi, place, out, cfg.metric, budget // 8)
            else:
                order = pair_order(lo, hi, place, rows.shape[0])       # (each set read while it is hot)
                _similarity_in_order(h, first, stop, lo, hi, place, order, out, cfg.metric)
                del order
            del h, place
        exact.seconds = (round(t1 - t0, 3), round(time.perf_counter() - t1, 3))
        return out
    return exact


def verification_config(cfg: DedupConfig) -> DedupConfig:
    """What verified SimHash checks its candidates on: the Jaccard of word 5-gram shingles (MinHash's
    default sets), of the text as the run normalised it (``--convert``)."""
    return replace(cfg, method="minhash", tokenizer="word", ngram=5, user_dict=None, num_perm=128, scheme="oph",
                   metric="jaccard", bits=None, candidate_bits=None, weighting=None, idf=None, stop_words=None,
                   top_n=None, compat=None)      # (SimHash's own: a MinHash configuration that resolves)


def band_features(cfg: DedupConfig, texts_of, n: int, offset: int = 0):
    """``sets_of(rows)`` for verified SimHash: a :class:`Features` over ``n`` rows holding the sorted
    distinct shingle hashes (:func:`verification_config`) of ``rows`` — re-read from the inputs a batch
    at a time (``texts_of``: (document, text) pairs; row = ``offset`` + document) — and no hash for
    any other row."""
    shingler = minhasher(verification_config(cfg)).shingler

    def sets_of(rows):
        rows = np.asarray(rows, dtype=np.int64)
        docs = rows[rows >= offset] - offset
        got: dict = {}
        parts: list = []
        texts: list = []
        order: list = []

        def flush():
            parts.append(shingler.features(texts).distinct_sets())
            texts.clear()

        for d, text in texts_of(set(docs.tolist())):
            got[d] = text
        for d in docs.tolist():          # in row order: the sets concatenated in the order of the rows
            order.append(d)
            texts.append(got.pop(d, ""))
            if len(texts) >= 8192:
                flush()
        if texts:
            flush()
        sizes = np.zeros(n, dtype=np.int64)
        hashes = np.concatenate([p.hashes for p in parts]) if parts else np.zeros(0, np.uint64)
        if parts:
            sizes[np.asarray(order, dtype=np.int64) + offset] = np.concatenate([p.sizes() for p in parts])
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return Features.distinct(hashes, offsets)
    return sets_of


_PAIRS_AT_ONCE = 1 << 21     # pairs decided at once: 2 M × 72 bytes of positions, counts and temporaries

#: the band's sets file is mapped whole up to this size (or a fifth of the machine's memory, if less);
#: above it, it is read in blocks into a buffer of that size (:func:`similarity_by_blocks`)
_BAND_BLOCK_BYTES = 4 << 30


def band_buffer_bytes() -> int:
    """:data:`_BAND_BLOCK_BYTES`, or a fifth of physical memory where that is less (the buffer is the
    run's own memory, which a mapped file is not). The band's results do not depend on it."""
    phys = physical_memory()
    return min(_BAND_BLOCK_BYTES, phys // 5) if phys > 0 else _BAND_BLOCK_BYTES


#: blocks per group in :func:`similarity_by_blocks`: a group takes 7/8 of the buffer, one block the rest
_BLOCKS_PER_GROUP = 7


def _similarity_in_order(h, first, stop, lo, hi, place, order, out, metric) -> None:
    """``out[p]`` = the exact similarity of pair p, whose sets are ``h[first[r]:stop[r]]`` for
    r = ``place[lo[p]]``, ``place[hi[p]]``; the pairs taken in ``order``, a stretch at a time."""
    for s in range(0, order.shape[0], _PAIRS_AT_ONCE):        # (the kernel's arrays: per stretch)
        p = order[s:s + _PAIRS_AT_ONCE]
        out[p] = ranges_similarity(h, first, stop, place[lo[p]], place[hi[p]], metric)


def block_cuts(first, stop, total: int, block_values: int) -> np.ndarray:
    """Where the blocks of a sets file of ``total`` values begin and end: about equal stretches of at
    most ``block_values`` values (a set longer than that makes its block longer), each cut at the
    start of a set, so that every set lies in one block."""
    starts = np.sort(first[stop > first])
    nb = max(1, -(-total // max(1, block_values)))
    want = np.arange(1, nb, dtype=np.int64) * total // nb
    at = np.searchsorted(starts, want)
    cut = np.full(want.shape[0], total, dtype=np.int64)
    inside = at < starts.shape[0]
    cut[inside] = starts[at[inside]]
    return np.unique(np.concatenate(([0], cut, [total])).astype(np.int64))


def similarity_by_blocks(sets, first, stop, lo, hi, place, out, metric, buffer_values: int) -> None:
    """The band's pairs decided with their sets read from the file into one buffer of about
    ``buffer_values`` values, not mapped whole (8.6 GB at 10 M documents, more than the rest of the
    run's memory): a block nested-loop join. The file is cut into blocks of 1/8 of the buffer
    (:func:`block_cuts`), taken in groups of 7. For each group in turn, the group is read into the
    buffer and its own pairs decided; then each later block is read into the buffer's last eighth
    and the pairs between it and the group decided. Every pair lies in one group, or between a
    group and a later block, so each is decided once (:func:`~neardup.kernels.jaccard.pair_order_blocks`
    sorts them so, each group of pairs in the pairs' own order, by first row). Reads: the file once
    for the groups and, for each group, the part of the file after it — 15 GB for an 8.6 GB file in
    a 4 GB buffer, copied from the page cache while the file is there (about 3 GB/s on this machine)."""
    g = _BLOCKS_PER_GROUP
    block = max(1, buffer_values // (g + 1))
    cuts = block_cuts(first, stop, sets.values, block)
    nb = cuts.shape[0] - 1
    held = stop > first
    blk = np.clip(np.searchsorted(cuts, first, side="right") - 1, 0, nb - 1).astype(np.int32)
    order, offsets = pair_order_blocks(lo, hi, place, blk, nb, g)
    sizes = np.diff(cuts)
    buf = None
    for gi in range(-(-nb // g)):
        b0, b1 = gi * g, min(nb, gi * g + g)
        base = gi * (nb + 1)
        later = [y for y in range(b1, nb) if offsets[base + y + 1] > offsets[base + y]]
        if offsets[base + nb + 1] == offsets[base + nb] and not later:
            continue
        span = int(cuts[b1] - cuts[b0])
        if buf is None:           # (the largest group and the largest block)
            buf = np.empty(int(max(cuts[min(nb, x + g)] - cuts[x] for x in range(0, nb, g)) + sizes.max()),
                           dtype=np.uint64)
        sets.read(int(cuts[b0]), buf[:span])
        # a row's place in the buffer: the group's rows from 0, a later block's rows from ``span``
        # (one later block is held at a time, so they may all start there)
        at = span - cuts[:-1]
        at[b0:b1] = -cuts[b0]
        f = np.where(held, first + at[blk], 0)
        e = np.where(held, stop + at[blk], 0)
        _similarity_in_order(buf, f, e, lo, hi, place, order[offsets[base + nb]:offsets[base + nb + 1]], out, metric)
        for y in later:
            sets.read(int(cuts[y]), buf[span:span + int(sizes[y])])
            _similarity_in_order(buf, f, e, lo, hi, place, order[offsets[base + y]:offsets[base + y + 1]], out,
                                 metric)
        del f, e
    del order


class SetsFile:
    """The band's sets file, read by value ranges into arrays (:func:`similarity_by_blocks`)."""

    def __init__(self, path: str, values: int):
        self.path = path
        self.values = values

    def read(self, start: int, out: np.ndarray) -> None:
        """``out[:]`` = values ``start:start + len(out)``, read in two halves on two threads (a copy
        from the page cache runs at one core's memory bandwidth)."""
        view = memoryview(out).cast("B")
        half = (view.nbytes // 2) & ~7
        fd = os.open(self.path, os.O_RDONLY)
        try:
            if view.nbytes < 64 << 20:
                _pread_all(fd, view, start * 8)
                return

            with ThreadPoolExecutor(2) as pool:
                done = [pool.submit(_pread_all, fd, view[:half], start * 8),
                        pool.submit(_pread_all, fd, view[half:], start * 8 + half)]
                for d in done:
                    d.result()
        finally:
            os.close(fd)


def _pread_all(fd: int, view: memoryview, offset: int) -> None:
    """Fills ``view`` from ``offset`` of ``fd`` (reads of over 2 GB come back short on Linux)."""
    got = 0
    while got < view.nbytes:
        n = os.preadv(fd, [view[got:]], offset + got)
        if n <= 0:
            raise OSError(errno.EIO, f"band sets: the file ended {view.nbytes - got} bytes early")
        got += n


class BandSets:
    """The borderline band's shingle sets as batches come in (documents, hashes, sizes), kept in
    memory, or with ``folder`` appended to a file there (``path``; removed at the end, and with the
    run's work folder if the run dies) and read back through a read-only memory map: clean file
    pages, which the system reclaims under memory pressure instead of failing the run. The signing
    workers append their batches to that file themselves (:func:`append_sets`) and send only where
    they start: 9 GB at 10 M documents no longer pass through pipes and this process."""

    def __init__(self, folder: str | None):
        self.docs: list = []
        self.sizes: list = []
        self.starts: list = []
        self.hashes: list = []
        self.held = 0                    # values held in memory
        self.path = self.fd = self.map = None
        if folder is not None:
            fd, self.path = tempfile.mkstemp(dir=folder, prefix="band-sets-", suffix=".u64")
            os.close(fd)
            self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def take(self, docs, hashes, sizes) -> None:
        """A batch: its documents, their sets' hashes concatenated and the sets' sizes; ``hashes`` an
        integer when the batch is in the file already, from that value on (:func:`append_sets`)."""
        sizes = np.asarray(sizes, dtype=np.int64)
        if isinstance(hashes, (int, np.integer)):
            start = int(hashes)
        elif self.fd is None:
            start = self.held
            self.held += int(hashes.shape[0])
            self.hashes.append(hashes)
        else:
            start = append_sets(self.fd, hashes)
        self.docs.append(np.asarray(docs, dtype=np.int64))
        self.sizes.append(sizes)
        self.starts.append(start + np.cumsum(sizes) - sizes)

    def ranges(self, rows: np.ndarray, map_limit: int | None = None):
        """(values, first, stop): the set of ``rows[i]`` (sorted) is values[first[i]:stop[i]]; a row
        no batch holds (its text could not be read) gets an empty set. ``values``: an array, or a
        :class:`SetsFile` when the file is larger than ``map_limit`` bytes."""
        size = os.fstat(self.fd).st_size if self.fd is not None else 0
        if self.fd is None:
            h = (self.hashes[0] if len(self.hashes) == 1 else concatenate_freeing(self.hashes) if self.hashes
                 else np.zeros(0, np.uint64))                       # (freed as copied)
        elif map_limit is not None and size > map_limit:
            h = SetsFile(self.path, size // 8)
        else:
            h = np.zeros(0, np.uint64)
            if size:
                fd = os.open(self.path, os.O_RDONLY)
                try:
                    self.map = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
                finally:
                    os.close(fd)
                h = np.frombuffer(self.map, dtype=np.uint64)
        return (h, *row_ranges(rows, self.docs, self.starts, self.sizes))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.hashes.clear()
        if self.map is not None:
            try:
                self.map.close()
            except BufferError:        # an array still reads it: the map closes with that array
                pass
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


def append_sets(fd: int, hashes: np.ndarray) -> int:
    """Appends ``hashes`` (uint64) to the file open as ``fd`` with ``O_APPEND`` and returns the value
    at which they start. An appending write lands whole at the file's end and leaves this
    descriptor's offset just past it (POSIX), so processes appending through their own descriptors
    never come between a write and its place. A short write (a full disk) is an error, not a gap."""
    data = memoryview(np.ascontiguousarray(hashes, dtype=np.uint64)).cast("B")
    if not data.nbytes:
        return 0
    n = os.write(fd, data)
    if n != data.nbytes:
        os.write(fd, data[n:])         # raises the reason (no space, a file size limit)
        raise OSError(errno.EIO, f"band sets: a write was cut short ({n} of {data.nbytes} bytes)")
    return (os.lseek(fd, 0, os.SEEK_CUR) - n) // 8


def row_ranges(rows: np.ndarray, docs: list, starts: list, sizes: list) -> tuple[np.ndarray, np.ndarray]:
    """(first, stop) per row of ``rows`` (sorted) from batches of (documents, where each set starts,
    set sizes), in any order; a row no batch holds gets first = stop = 0."""
    d = np.concatenate(docs) if docs else np.zeros(0, np.int64)
    st = np.concatenate(starts) if starts else np.zeros(0, np.int64)
    z = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    at = np.searchsorted(rows, d)
    first = np.zeros(rows.shape[0], dtype=np.int64)
    stop = np.zeros(rows.shape[0], dtype=np.int64)
    if d.shape[0]:
        if (np.any(at >= rows.shape[0]) or np.any(rows[np.minimum(at, rows.shape[0] - 1)] != d)
                or np.bincount(at, minlength=rows.shape[0]).max() > 1):
            raise RuntimeError("row_ranges: a document repeated, or not among the rows")   # a bug, never input
        first[at] = st
        stop[at] = st + z
    return first, stop
