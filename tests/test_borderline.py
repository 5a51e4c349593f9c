"""``--verify borderline`` (dedup/verify.py): estimates far from t decide, pairs within
z·sqrt(J_t(1 − J_t)/k) of the threshold are decided exactly on shingles re-read from their texts.
The band's width comes from the theory (z from the number of candidates, the estimator's variance),
and the statistical test uses fixed seeds and a bound derived from it."""
from __future__ import annotations

import json
import os
import random
from statistics import NormalDist

import numpy as np
import pytest

from neardup import run_dedup
from neardup.config import DedupConfig
from neardup.dedup.verify import borderline_mask, borderline_z, decide_borderline
from neardup.features.shingles import Shingler
from neardup.similarity.estimates import containment_from_jaccard
from neardup.similarity.jaccard import exact_jaccard_pairs
from neardup.sketches.minhash import MinHasher, jaccard_rows


def test_z_from_the_number_of_candidates():
    for n in (1, 10, 1000, 10**6):
        z = borderline_z(n)
        expected_outside = n * 2 * (1 - NormalDist().cdf(z))
        assert z == 3.0 if n < 370 else expected_outside == pytest.approx(1.0, rel=1e-6)
    assert borderline_z(10**6) > borderline_z(10**3)


def test_band_edges_for_jaccard_and_containment():
    t, k, z = 0.8, 128, 3.0
    half = z * (t * (1 - t) / k) ** 0.5
    j = np.array([t - half - 1e-9, t - half + 1e-9, t, t + half - 1e-9, t + half + 1e-9])
    assert borderline_mask(j, None, None, t, k, "jaccard", z).tolist() == [False, True, True, True, False]
    # containment: the band is centred on the Jaccard at which the pair reaches t
    a, b = np.array([100.0, 50.0]), np.array([1000.0, 60.0])
    jt = np.minimum(t * a / (a + b - t * a), t * b / (a + b - t * b))
    c = np.maximum(containment_from_jaccard(jt, a, b), containment_from_jaccard(jt, b, a))
    assert np.allclose(c, t)
    assert borderline_mask(jt, a, b, t, k, "containment", z).all()
    far = jt + z * np.sqrt(jt * (1 - jt) / k) + 1e-6
    assert not borderline_mask(far, a, b, t, k, "containment", z).any()


def _pairs(rng: random.Random, n_pairs: int, size: int):
    """Documents 2i, 2i+1 with shared and own tokens: J uniform over [0.55, 1]."""
    texts = []
    for i in range(n_pairs):
        j = rng.uniform(0.55, 1.0)
        shared = round(size * 2 * j / (1 + j))         # |A∩B| for |A| = |B| = size
        common = [f"s{i}_{x}" for x in range(shared)]
        texts.append(" ".join(common + [f"a{i}_{x}" for x in range(size - shared)]))
        texts.append(" ".join(common + [f"b{i}_{x}" for x in range(size - shared)]))
    return texts


@pytest.mark.parametrize("scheme,seed", [("permutation", 3), ("oph", 11)])
def test_outside_the_band_few_are_misdecided_inside_none(scheme, seed):
    """2,000 pairs with known J. Inside the band the decision is exact, so never wrong; outside it a
    decision is wrong only when the estimate errs by more than z standard errors, which the choice
    of z makes an expected ≤ 1 event over all pairs (Poisson: more than 6 has probability < 10⁻³)."""
    rng = random.Random(seed)
    texts = _pairs(rng, 2000, 60)
    sh = Shingler(ngram=1)
    feats = sh.features(texts)
    hasher = MinHasher(num_perm=128, scheme=scheme, seed=seed, ngram=1)
    sigs = hasher.sign_features(feats)
    lo = np.arange(0, len(texts), 2)
    hi = lo + 1
    t = 0.8
    est = jaccard_rows(sigs.values, lo, hi, scheme)
    sim, info, _ = decide_borderline(est, sigs.values, lo, hi, None, sigs, t, "jaccard", 0, feats, None)
    exact = exact_jaccard_pairs(feats, lo, hi)
    band = borderline_mask(est, None, None, t, 128, "jaccard", borderline_z(lo.shape[0]))
    assert info["pairs"] == int(band.sum()) > 0
    assert np.array_equal(sim[band], exact[band])
    wrong = (sim >= t) != (exact >= t)
    assert not wrong[band].any()
    assert wrong[~band].sum() <= 6
    assert info["flipped"] == int(((est >= t) != (exact >= t))[band].sum())


def test_a_run_reports_the_band_and_beats_the_estimate(tmp_path):
    """Planted near-duplicates around t: borderline decides like --verify exact on every pair it checks,
    and reports what it did."""
    rng = random.Random(5)
    texts = _pairs(rng, 300, 80)
    src = tmp_path / "p.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
    reps = {}
    for verify in ("minhash", "borderline", "exact"):
        reps[verify] = run_dedup([str(src)], str(tmp_path / verify),
                                 DedupConfig(verify=verify, ngram=1, linkage="components", max_drift=None,
                                             id_field="id", html=False, quiet=True, workers=1))
    b = reps["borderline"]["borderline"]
    assert b["pairs"] > 0 and b["documents"] > 0 and b["z"] >= 3.0
    assert "borderline" not in reps["minhash"]
    feats = Shingler(ngram=1).features(texts)
    lo = np.arange(0, len(texts), 2)
    truth = exact_jaccard_pairs(feats, lo, lo + 1) >= 0.8

    def together(verify):
        recs = {r["id"]: r["cluster"] for r in map(json.loads, (tmp_path / verify / "clusters.jsonl").read_text()
                                                   .splitlines())}
        return np.array([recs[int(i)] == recs[int(i) + 1] for i in lo])

    wrong = {v: int((together(v) != truth).sum()) for v in reps}
    assert wrong["borderline"] <= wrong["minhash"] and wrong["borderline"] <= 2, wrong


def test_borderline_with_an_index_keeps_the_estimate_for_indexed_documents(tmp_path, days):
    cfg = dict(id_field="id", html=False, quiet=True, workers=1, index=str(tmp_path / "idx"), verify="borderline")
    run_dedup([str(days / "day1.jsonl")], str(tmp_path / "d1"), DedupConfig(**cfg))
    rep = run_dedup([str(days / "day2.jsonl")], str(tmp_path / "d2"), DedupConfig(**cfg))
    assert rep["index"]["removed_by_index"] > 0 and rep["counts"]["accounted"]


@pytest.mark.parametrize("block", [None, 16])
def test_distinct_sets_equal_unique_on_random_batches(monkeypatch, block):
    """The per-document sort behind the exact check and ``unique`` gives NumPy's sorted distinct values
    and counts, whatever the sizes (the size classes, a document larger than a sort block; with a
    block of 16 values, blocks of many documents end at every place)."""
    from neardup.features import shingles
    from neardup.features.shingles import Features

    if block is not None:
        monkeypatch.setattr(shingles, "_BLOCK", block)

    rng = np.random.default_rng(7)
    for n_docs in (0, 1, 3, 50, 301):
        sizes = rng.integers(0, 40, n_docs)
        sizes[::7] = 0                                   # empty documents among them
        off = np.zeros(n_docs + 1, dtype=np.int64)
        np.cumsum(sizes, out=off[1:])
        h = rng.integers(0, 30, int(off[-1])).astype(np.uint64)   # many repeats within a document
        h[::5] = np.uint64(2**64 - 1)                    # the padding value is a hash like any other
        h[::11] = rng.integers(0, 2**63, h[::11].shape[0]).astype(np.uint64) * np.uint64(2)
        d = Features(h, off).distinct_sets()
        u = Features(h, off).unique()
        assert d.offsets.shape == off.shape and u.offsets.tolist() == d.offsets.tolist()
        for i in range(n_docs):
            want, cnt = np.unique(h[off[i]:off[i + 1]], return_counts=True)
            assert d.doc(i).tolist() == want.tolist() == u.doc(i).tolist()
            assert u.counts[u.offsets[i]:u.offsets[i + 1]].tolist() == cnt.tolist()
    big = rng.integers(0, 2**64 - 1, 3 << 20, dtype=np.uint64)      # one document past a sort block
    one = Features(np.concatenate([big, big[:10]]), np.array([0, big.shape[0] + 10])).unique()
    assert one.hashes.tolist() == np.unique(big).tolist() and one.counts.sum() == big.shape[0] + 10


@pytest.mark.parametrize("spill", [False, True])
def test_band_sets_take_batches_in_any_order_and_leave_unread_rows_empty(tmp_path, spill):
    """Batches come in any order, held in memory, appended to the file here, or appended by a worker
    (``take`` then gets where they start); each row's range holds its set, a row never read is empty,
    and a document twice or not among the rows is a bug that stops the run."""
    from neardup.dedup.verify import BandSets, append_sets, row_ranges

    rows = np.array([1, 3, 5, 7, 9])
    with BandSets(str(tmp_path) if spill else None) as band:
        band.take(np.array([7, 9]), np.array([70, 71, 90], np.uint64), np.array([2, 1]))
        if spill:       # as a worker does: its own descriptor, then only the start is sent
            fd = os.open(band.path, os.O_WRONLY | os.O_APPEND)
            start = append_sets(fd, np.array([10, 50, 51, 52], np.uint64))
            os.close(fd)
            band.take(np.array([1, 5]), start, np.array([1, 3]))
        else:
            band.take(np.array([1, 5]), np.array([10, 50, 51, 52], np.uint64), np.array([1, 3]))
        h, first, stop = band.ranges(rows)
        assert [h[a:b].tolist() for a, b in zip(first, stop)] == [[10], [], [50, 51, 52], [70, 71], [90]]
        path = band.path
    assert path is None or not os.path.exists(path)
    first, stop = row_ranges(rows, [], [], [])
    assert first.tolist() == stop.tolist() == [0] * 5
    for docs in ([np.array([1, 1])], [np.array([2])], [np.array([11])]):     # a caller's bug, never silent
        with pytest.raises(RuntimeError, match="repeated, or not among the rows"):
            row_ranges(rows, docs, [np.zeros(len(docs[0]), np.int64)], [np.ones(len(docs[0]), np.int64)])


def _append_many(path: str, tag: int, n: int) -> list:
    from neardup.dedup.verify import append_sets

    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    out = []
    for i in range(n):
        batch = np.full(1 + (i * 7919 + tag) % 5000, tag * 1_000_000 + i, dtype=np.uint64)
        out.append((append_sets(fd, batch), batch.shape[0], tag * 1_000_000 + i))
    os.close(fd)
    return out


def test_processes_appending_band_sets_at_once_each_learn_where_theirs_landed(tmp_path):
    """Two processes append batches to one file at the same time (as the signing workers do): every
    batch is found whole where its writer was told it starts."""
    from concurrent.futures import ProcessPoolExecutor

    path = str(tmp_path / "sets.u64")
    open(path, "wb").close()
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(_append_many, [path, path], [1, 2], [400, 400]))
    values = np.fromfile(path, dtype=np.uint64)
    total = 0
    for got in results:
        for start, size, value in got:
            assert np.all(values[start:start + size] == value)
            total += size
    assert values.shape[0] == total


def test_the_band_read_on_all_cores_equals_the_band_read_here(tmp_path):
    """With workers, the band's lines of a JSON lines file are re-read, parsed and shingled in the
    signing processes (by pass 1's blocks); other inputs (a gzip file, a CSV) in the main process.
    Outputs are byte-identical to the one-process run, and the band is the same."""
    import csv
    import gzip

    rng = random.Random(9)
    texts = _pairs(rng, 400, 80)
    parts = [texts[0::3], texts[1::3], texts[2::3]]
    a = tmp_path / "a.jsonl"
    a.write_text("".join(json.dumps({"text": t}) + "\n" for t in parts[0]) + "\n")      # and a blank line
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as fh:
        fh.write("".join(json.dumps({"text": t}) + "\n" for t in parts[1]))
    with open(tmp_path / "c.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["text"])
        w.writerows([t] for t in parts[2])
    inputs = [str(tmp_path / n) for n in ("a.jsonl", "b.jsonl.gz", "c.csv")]
    outs = {}
    for workers, batch in ((1, 4096), (2, 7)):           # small batches: many blocks, several per worker
        out = tmp_path / f"w{workers}"
        rep = run_dedup(inputs, str(out), DedupConfig(verify="borderline", ngram=1, html=False, quiet=True,
                                                      workers=workers, batch_size=batch))
        outs[workers] = ((out / "clusters.jsonl").read_bytes(), rep["borderline"], rep["counts"])
    assert outs[1][1]["pairs"] > 20 and outs[1][2]["skipped_records"] == 1
    assert outs[1][0] == outs[2][0]
    assert {k: v for k, v in outs[1][1].items() if k != "seconds"} == \
        {k: v for k, v in outs[2][1].items() if k != "seconds"}


def test_band_sets_spilled_to_a_file_equal_those_in_memory(tmp_path):
    """The band's sets written to a file under the run's work folder and read back through a memory
    map give the same exact similarities as sets kept in memory; the file is gone afterwards."""
    from neardup.dedup.verify import exact_pairs_from_texts

    rng = random.Random(11)
    texts = _pairs(rng, 300, 60)
    cfg = DedupConfig(ngram=2).resolved()

    def texts_of(docs):
        return ((d, texts[d]) for d in sorted(docs))

    lo = np.array([0, 2, 4, 4, 10, 250], dtype=np.int64)
    hi = np.array([1, 3, 5, 9, 299, 251], dtype=np.int64)
    spill = tmp_path / "work"
    spill.mkdir()
    kept = exact_pairs_from_texts(cfg, texts_of, 0)(lo, hi)
    spilled = exact_pairs_from_texts(cfg, texts_of, 0, spill=str(spill))(lo, hi)
    feats = Shingler(ngram=2).features(texts)
    assert np.array_equal(kept, spilled) and np.allclose(kept, exact_jaccard_pairs(feats, lo, hi))
    assert list(spill.iterdir()) == []


def test_pair_order_groups_each_rows_partners():
    """The band's pairs are decided in an order that reads each set while it is hot
    (kernels.jaccard.pair_order): a permutation of the pairs in which the pairs whose first row has
    the same anchor (the smallest of it and its partners) are consecutive, groups in anchor order,
    each in its own order; a function of the pairs alone."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from neardup.kernels.jaccard import pair_order

    @settings(max_examples=200, deadline=None)
    @given(st.integers(1, 40), st.lists(st.tuples(st.integers(0, 39), st.integers(0, 39)), max_size=120),
           st.integers(0, 2**31))
    def check(m, raw, seed):
        pairs = [(min(a % m, b % m), max(a % m, b % m)) for a, b in raw if a % m != b % m]
        rows = np.sort(np.random.default_rng(seed).choice(1000, m, replace=False)).astype(np.int64)
        place = np.full(1000, -1, dtype=np.int64)
        place[rows] = np.arange(m)
        lo = rows[[a for a, _ in pairs]] if pairs else np.zeros(0, np.int64)
        hi = rows[[b for _, b in pairs]] if pairs else np.zeros(0, np.int64)
        order = pair_order(lo, hi, place, m)
        assert order.tolist() == pair_order(lo, hi, place, m).tolist()
        assert sorted(order.tolist()) == list(range(len(pairs)))
        anchor = list(range(m))
        for a, b in pairs:
            anchor[a], anchor[b] = min(anchor[a], b), min(anchor[b], a)
        group = [anchor[a] for a, _ in pairs]
        assert [group[p] for p in order.tolist()] == sorted(group)          # grouped, groups by anchor
        for g in set(group):                                                # each group in its own order
            mine = [p for p in order.tolist() if group[p] == g]
            assert mine == sorted(mine)

    check()


def test_pair_order_blocks_groups_pairs_by_the_blocks_that_hold_their_sets():
    """kernels.jaccard.pair_order_blocks: a permutation of the pairs, grouped by key — a pair whose
    rows' blocks x ≤ y share a group of g blocks has key G(x)·(nb + 1) + nb, else G(x)·(nb + 1) + y —
    keys ascending, each key's pairs in their own order (stable)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from neardup.kernels.jaccard import pair_order_blocks

    @settings(max_examples=200, deadline=None)
    @given(st.integers(2, 30), st.integers(1, 9), st.integers(1, 4),
           st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=150), st.integers(0, 2**31))
    def check(m, nb, g, raw, seed):
        rng = np.random.default_rng(seed)
        pairs = [(min(a % m, b % m), max(a % m, b % m)) for a, b in raw if a % m != b % m]
        rows = np.sort(rng.choice(500, m, replace=False)).astype(np.int64)
        place = np.full(500, -1, dtype=np.int64)
        place[rows] = np.arange(m)
        blk = rng.integers(0, nb, m).astype(np.int32)
        lo = rows[[a for a, _ in pairs]] if pairs else np.zeros(0, np.int64)
        hi = rows[[b for _, b in pairs]] if pairs else np.zeros(0, np.int64)
        order, offsets = pair_order_blocks(lo, hi, place, blk, nb, g)
        assert sorted(order.tolist()) == list(range(len(pairs)))
        keys = []
        for a, b in pairs:
            x, y = sorted((int(blk[a]), int(blk[b])))
            keys.append((x // g) * (nb + 1) + (nb if x // g == y // g else y))
        assert offsets.shape[0] == -(-nb // g) * (nb + 1) + 1 and offsets[0] == 0 and offsets[-1] == len(pairs)
        for c in range(offsets.shape[0] - 1):
            mine = order[offsets[c]:offsets[c + 1]].tolist()
            assert all(keys[p] == c for p in mine) and mine == sorted(mine)

    check()


@pytest.mark.parametrize("metric", ["jaccard", "containment"])
@pytest.mark.parametrize("budget", [8, 600, 4096, 1 << 20])
def test_band_sets_read_a_block_at_a_time_equal_the_mapped_file(tmp_path, monkeypatch, metric, budget):
    """Above ``_BAND_BLOCK_BYTES`` the band's sets file is not mapped but read into one buffer a block
    at a time (verify.similarity_by_blocks: groups of blocks, then each later block against the
    group). Every pair gets the similarity it gets from the mapped file or from memory, for buffers
    smaller than one set (each block one set), a few sets, and larger than the file; rows whose text
    never came (empty sets) score 0; the file is gone afterwards."""
    import neardup.dedup.verify as verify
    from neardup.dedup.verify import exact_pairs_from_texts

    rng = random.Random(17)
    texts = _pairs(rng, 160, 40) + [""]          # (an empty document: an empty set)
    cfg = DedupConfig(ngram=2, metric=metric).resolved()
    missing = {7, 91}                                     # rows whose text cannot be read: empty sets

    def texts_of(docs):
        order = sorted(docs)
        random.Random(len(order)).shuffle(order)          # (the file's order: not the rows')
        return ((d, texts[d]) for d in order if d not in missing)

    nprng = np.random.default_rng(3)
    a = nprng.integers(0, len(texts), 3000)
    b = nprng.integers(0, len(texts), 3000)
    keep = a != b
    lo, hi = np.minimum(a, b)[keep].astype(np.int64), np.maximum(a, b)[keep].astype(np.int64)
    want = exact_pairs_from_texts(cfg, texts_of, 0)(lo, hi)
    spill = tmp_path / "work"
    spill.mkdir()
    reads = []
    real = verify.SetsFile.read
    monkeypatch.setattr(verify.SetsFile, "read", lambda self, start, out: reads.append(out.shape[0]) or
                        real(self, start, out))
    monkeypatch.setattr(verify, "_BAND_BLOCK_BYTES", budget)
    got = exact_pairs_from_texts(cfg, texts_of, 0, spill=str(spill))(lo, hi)
    assert np.array_equal(got, want)
    assert got[np.isin(lo, list(missing)) | np.isin(hi, list(missing))].max() == 0.0 and want.max() > 0.9
    assert list(spill.iterdir()) == []
    if budget < 1 << 20:
        # reads of at most the buffer: 8 blocks, a block grown past 1/8 of it only by one set
        largest = int(Shingler(ngram=2).features(texts).unique().sizes().max())
        assert len(reads) > 1 and max(reads) <= max(budget // 8, 7 * (budget // 64 + largest))
    else:
        assert reads == []                               # a file within the budget is mapped whole


def test_a_run_whose_band_is_read_in_blocks_writes_the_same_outputs(tmp_path, monkeypatch):
    """A whole run (two workers appending the band's sets) with a band buffer of a few sets writes
    byte-identical clusters and kept rows to a run that maps the band's file."""
    import neardup.dedup.verify as verify

    rng = random.Random(23)
    texts = _pairs(rng, 500, 60)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    cfg = DedupConfig(verify="borderline", ngram=1, html=False, quiet=True, workers=2, batch_size=53)
    first = run_dedup([str(src)], str(tmp_path / "mapped"), cfg)
    blocks = []
    real = verify.similarity_by_blocks
    monkeypatch.setattr(verify, "similarity_by_blocks", lambda *a: blocks.append(1) or real(*a))
    monkeypatch.setattr(verify, "_BAND_BLOCK_BYTES", 2048)
    second = run_dedup([str(src)], str(tmp_path / "blocks"), cfg)
    assert blocks == [1] and first["borderline"]["pairs"] > 20
    for name in ("clusters.jsonl", "kept/in.jsonl"):
        assert (tmp_path / "mapped" / name).read_bytes() == (tmp_path / "blocks" / name).read_bytes()
    assert first["counts"] == second["counts"]


def test_the_band_buffer_is_at_most_a_fifth_of_memory(monkeypatch):
    """verify.band_buffer_bytes: 4 GiB, or a fifth of physical memory on a smaller machine, and the
    4 GiB when the system does not say."""
    import neardup.dedup.verify as verify

    pages = {"SC_PAGE_SIZE": 4096}

    def sysconf(name):
        if name not in pages:
            raise ValueError(f"unrecognized configuration name {name!r}")      # (as os.sysconf says it)
        return pages[name]

    monkeypatch.setattr(verify.os, "sysconf", sysconf)
    pages["SC_PHYS_PAGES"] = (8 << 30) // 4096                    # 8 GiB
    assert verify.band_buffer_bytes() == (8 << 30) // 5
    pages["SC_PHYS_PAGES"] = (64 << 30) // 4096
    assert verify.band_buffer_bytes() == 4 << 30
    del pages["SC_PHYS_PAGES"]
    assert verify.band_buffer_bytes() == 4 << 30


def test_sets_file_reads_whole_ranges_and_refuses_a_file_cut_short(tmp_path):
    """verify.SetsFile.read: a range of values read whole, small (one pread) and large (two halves on
    two threads, past 64 MB); a file shorter than the range asked for (cut short under the run) is
    an error that says so, not a buffer left half filled."""
    from neardup.dedup.verify import SetsFile

    values = np.arange(9 << 20, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)     # 72 MB
    path = tmp_path / "band-sets.u64"
    path.write_bytes(values.tobytes())
    sets = SetsFile(str(path), values.shape[0])
    for start, count in ((0, 10), (12345, 1000), (3, (9 << 20) - 7)):
        out = np.zeros(count, dtype=np.uint64)
        sets.read(start, out)
        assert np.array_equal(out, values[start:start + count])
    with open(path, "r+b") as fh:
        fh.truncate(8 * 1000)
    with pytest.raises(OSError, match="ended .* bytes early"):
        sets.read(990, np.zeros(20, dtype=np.uint64))
    with pytest.raises(OSError, match="ended .* bytes early"):
        sets.read(0, np.zeros(9 << 20, dtype=np.uint64))


@pytest.mark.parametrize("queries", [50, 20_000])
def test_exactly_checked_pairs_override_the_estimate_in_either_order(queries):
    """``known_similarity``: a pair checked exactly gets its exact value whichever way round it is
    asked for, any other pair the estimate; the same for a small batch (searched as given) and a
    large one (searched in sorted order)."""
    from neardup.dedup.verify import EXACT, known_similarity

    rng = np.random.default_rng(7)
    n = 5_000
    lo = rng.integers(0, n, 30_000)
    hi = rng.integers(0, n, 30_000)
    keep = lo != hi
    lo, hi = lo[keep], hi[keep]
    sim = rng.random(lo.shape[0])
    how = np.where(rng.random(lo.shape[0]) < 0.5, EXACT, 0)
    truth = {}
    for a, b, s, h in zip(lo.tolist(), hi.tolist(), sim.tolist(), how.tolist()):
        if h == EXACT:
            truth.setdefault((min(a, b), max(a, b)), s)        # (stable sort: the first given wins)
    estimate = lambda a, b: -(np.asarray(a) * n + np.asarray(b)).astype(np.float64)  # noqa: E731
    look = known_similarity(estimate, lo, hi, sim, n, how)
    pick = rng.integers(0, lo.shape[0], queries // 2)
    a = np.concatenate([lo[pick], rng.integers(0, n, queries - queries // 2)])
    b = np.concatenate([hi[pick], rng.integers(0, n, queries - queries // 2)])
    swap = rng.random(queries) < 0.5
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    got = look(a, b)
    want = [truth.get((min(x, y), max(x, y)), -(x * n + y)) for x, y in zip(a.tolist(), b.tolist())]
    assert got.tolist() == want
