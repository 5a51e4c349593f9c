"""DiskIndex / SimHashDiskIndex: answers, persistence, config checks, crash safety, isolation."""
import json
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from neardup import MinHasher, SimHasher
from neardup.index import DiskIndex
from neardup.index.disk import IndexConfigError, SimHashDiskIndex
from neardup.index.segments import manifest_bytes
from neardup.index.store import DuplicateKeyError, NotAnIndexError, ReadOnlyError
from neardup.kernels.lsh import band_keys
from neardup.sketches.simhash import hamming_array

VOCAB = [f"w{i}" for i in range(3000)]


def make_corpus(n_base=350, n_dup=150, seed=7):
    """Random-word documents plus edited copies of some of them (1-12 word edits)."""
    rng = np.random.default_rng(seed)
    docs = [list(rng.choice(VOCAB, size=int(rng.integers(60, 120)))) for _ in range(n_base)]
    for _ in range(n_dup):
        words = list(docs[int(rng.integers(0, n_base))])
        for _ in range(int(rng.integers(1, 13))):
            pos = int(rng.integers(0, len(words)))
            op = int(rng.integers(0, 3))
            if op == 0:
                words[pos] = str(rng.choice(VOCAB))
            elif op == 1:
                words.insert(pos, str(rng.choice(VOCAB)))
            elif len(words) > 10:
                del words[pos]
        docs.append(words)
    return [" ".join(d) for d in docs]


@pytest.fixture(scope="module")
def corpus():
    return make_corpus()


def brute_force(index, stored_vals, stored_keys, query_vals, t):
    """Exhaustive scan: every stored doc sharing a band with the query and estimate >= t,
    sorted as the index sorts (estimate desc, then insertion order)."""
    sb = band_keys(stored_vals, index.b, index.r)
    qb = band_keys(query_vals, index.b, index.r)
    both = np.concatenate([query_vals, stored_vals])
    nq, ns = len(query_vals), len(stored_vals)
    qi = np.repeat(np.arange(nq), ns)
    si = np.tile(np.arange(ns), nq)
    est = index._scores(query_vals, stored_vals, qi, si).reshape(nq, ns)
    shares = (qb[:, None, :] == sb[None, :, :]).any(axis=2)
    empty = np.all(both == index._empty, axis=1)
    out = []
    for q in range(nq):
        hits = np.flatnonzero(shares[q] & (est[q] >= t) & ~empty[nq:] & ~empty[q])
        hits = sorted(hits, key=lambda s: (-est[q, s], s))
        out.append([(stored_keys[s], float(est[q, s])) for s in hits])
    return out, est


# ---------------------------------------------------------------------------------------------
# basics
# ---------------------------------------------------------------------------------------------

def test_add_query_remove(tmp_path, corpus):
    path = tmp_path / "a.ndx"
    with DiskIndex.create(path, threshold=0.7) as idx:
        idx.add("first", corpus[0])
        idx.add_batch(["second", 3, b"bytes-key"], corpus[1:4])
        assert len(idx) == 4 and "first" in idx and 3 in idx and b"bytes-key" in idx
        assert "3" not in idx and "missing" not in idx
        assert idx.query(corpus[0]) == [("first", 1.0)]
        assert idx.query_batch([corpus[1], corpus[2]]) == [[("second", 1.0)], [(3, 1.0)]]
        # an edited copy is found with its estimate; unrelated text is not
        edited = corpus[0].replace(corpus[0].split()[5], "zzz", 1)
        hits = idx.query(edited)
        assert [k for k, _ in hits] == ["first"] and 0.7 <= hits[0][1] < 1.0
        assert idx.query("nothing like any stored document at all here") == []
        # duplicates: an error, nothing of the batch added; replace=True overwrites
        with pytest.raises(DuplicateKeyError, match="first"):
            idx.add_batch(["new", "first"], [corpus[5], corpus[6]])
        with pytest.raises(DuplicateKeyError, match="within the batch"):
            idx.add_batch(["x", "x"], [corpus[5], corpus[6]])
        assert len(idx) == 4 and "new" not in idx
        idx.add("first", corpus[7], replace=True)
        assert idx.query(corpus[0]) == [] and idx.query(corpus[7]) == [("first", 1.0)]
        # remove
        idx.remove("second")
        assert "second" not in idx and len(idx) == 3 and idx.query(corpus[1]) == []
        with pytest.raises(KeyError):
            idx.remove("second")
        # empty documents are stored but never match (and have no band rows)
        idx.add("empty", "")
        assert "empty" in idx and idx.query("") == [] and idx.query("   ") == []
        # precomputed signatures give the same answers as texts
        sigs = idx.hasher.sign_batch(corpus[10:12])
        idx.add_signatures(["s10", "s11"], sigs)
        assert idx.query(corpus[10]) == [("s10", 1.0)]
        assert idx.query_signatures(sigs.values[1:]) == [[("s11", 1.0)]]
        with pytest.raises(IndexConfigError):
            idx.add_signatures(["p"], MinHasher(scheme="permutation").sign_batch(corpus[:1]))
        with pytest.raises(TypeError):
            idx.add(1.5, "float keys are refused")
        report = idx.check()
        assert report["docs"] == report["count"] == len(idx) == 6
        assert report["band_rows"] == 5 * idx.b
        assert report["orphans"] == report["missing"] == report["extra"] == 0
    with pytest.raises(ValueError, match="closed"):
        len(idx)


def test_reopen_gives_same_answers(tmp_path, corpus):
    path = tmp_path / "r.ndx"
    keys = [f"d{i}" for i in range(300)]
    with DiskIndex.create(path, threshold=0.6, num_perm=64, seed=3) as idx:
        for lo in range(0, 300, 100):
            idx.add_batch(keys[lo:lo + 100], corpus[lo:lo + 100])
        idx.remove("d5")
        before = idx.query_batch(corpus)
    for readonly in (False, True):
        with DiskIndex.open(path, readonly=readonly) as idx:
            assert len(idx) == 299 and idx.threshold == 0.6 and idx.config["num_perm"] == 64
            assert idx.query_batch(corpus) == before
            assert [idx.query(t) for t in corpus[:20]] == before[:20]
    with DiskIndex.open(path, readonly=True) as idx:
        with pytest.raises(ReadOnlyError):
            idx.add("z", corpus[0])
        with pytest.raises(ReadOnlyError):
            idx.remove("d1")


def test_config_is_stored_and_checked(tmp_path, corpus):
    path = tmp_path / "c.ndx"
    DiskIndex.create(path, threshold=0.8, num_perm=64, scheme="oph", seed=2, ngram=3).close()
    with DiskIndex.open(path, num_perm=64, scheme="oph", seed=2, ngram=3, threshold=0.8) as idx:
        cfg = idx.config
        got = tuple(cfg[name] for name in ("num_perm", "scheme", "seed", "ngram", "tokenizer"))
        assert got == (64, "oph", 2, 3, "word")
        assert (cfg["b"], cfg["r"]) == (idx.b, idx.r) and cfg["neardup"]
    for wrong in ({"scheme": "permutation"}, {"num_perm": 128}, {"seed": 1}, {"ngram": 5},
                  {"tokenizer": "char"}, {"threshold": 0.5}, {"b": 1, "r": 1}):
        with pytest.raises(IndexConfigError, match=next(iter(wrong))):
            DiskIndex.open(path, **wrong)
    with pytest.raises(TypeError):
        DiskIndex.open(path, no_such_parameter=1)
    with pytest.raises(FileExistsError):
        DiskIndex.create(path)
    with pytest.raises(IndexConfigError, match="num_perm"):
        DiskIndex.create(path, num_perm=128, ngram=3, seed=2, exist_ok=True)
    DiskIndex.create(path, threshold=0.8, num_perm=64, seed=2, ngram=3, exist_ok=True).close()

    # files that are not (our) indexes
    with pytest.raises(FileNotFoundError):
        DiskIndex.open(tmp_path / "absent.ndx")
    (tmp_path / "text.ndx").write_text("just some text\n" * 100)
    with pytest.raises(NotAnIndexError):
        DiskIndex.open(tmp_path / "text.ndx")
    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("CREATE TABLE t (x)")
    other.commit()
    other.close()
    with pytest.raises(NotAnIndexError, match="application_id"):
        DiskIndex.open(tmp_path / "other.db")
    SimHashDiskIndex.create(tmp_path / "s.ndx").close()
    with pytest.raises(IndexConfigError, match="SimHashDiskIndex"):
        DiskIndex.open(tmp_path / "s.ndx")

    # an index whose stored signatures no longer match what this neardup computes
    m = json.loads((path / "MANIFEST").read_text())
    probe = json.loads(m["meta"]["probe"])
    probe["signature"] = "00" * (len(probe["signature"]) // 2)
    m["meta"]["probe"] = json.dumps(probe)
    (path / "MANIFEST").write_bytes(manifest_bytes(m))
    with pytest.raises(IndexConfigError, match="probe"):
        DiskIndex.open(path)


# ---------------------------------------------------------------------------------------------
# answers equal an exhaustive scan
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scheme", ["oph", "permutation"])
def test_query_equals_exhaustive_scan(tmp_path, corpus, scheme):
    stored = list(range(0, 500, 5)) + list(range(1, 500, 5)) + list(range(2, 500, 5)) + list(range(350, 500))
    stored = sorted(set(stored))
    keys = [f"doc{i}" for i in stored]
    with DiskIndex.create(tmp_path / f"{scheme}.ndx", threshold=0.7, scheme=scheme) as idx:
        for lo in range(0, len(stored), 64):
            idx.add_batch(keys[lo:lo + 64], [corpus[i] for i in stored[lo:lo + 64]])
        stored_vals = idx.hasher.sign_batch([corpus[i] for i in stored]).values
        query_vals = idx.hasher.sign_batch(corpus).values
        for t in (0.7, 0.5, 0.9):
            expected, est = brute_force(idx, stored_vals, keys, query_vals, t)
            assert idx.query_batch(corpus, threshold=t) == expected
        # the planted near-duplicates are there, and banding loses (almost) none of them
        expected, est = brute_force(idx, stored_vals, keys, query_vals, 0.7)
        other = np.array([[k != f"doc{q}" for k in keys] for q in range(len(corpus))])
        above = int(((est >= 0.7) & other).sum())
        found = sum(k != f"doc{q}" for q, e in enumerate(expected) for k, _ in e)
        assert above > 50 and found >= 0.97 * above, (found, above)
        assert [idx.query(corpus[q]) for q in range(0, 500, 37)] == expected[::37]


def test_simhash_index_is_exact(tmp_path, corpus):
    rng = np.random.default_rng(11)
    base = rng.integers(0, 2**63, size=200, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    near = base[rng.integers(0, 200, size=300)].copy()
    for i in range(near.shape[0]):   # flip 0-6 distinct bits
        for bit in rng.choice(64, size=int(rng.integers(0, 7)), replace=False):
            near[i] ^= np.uint64(1) << np.uint64(int(bit))
    fps = np.concatenate([base, near])
    keys = list(range(len(fps)))
    with SimHashDiskIndex.create(tmp_path / "s.ndx", max_distance=3) as idx:
        idx.add_signatures(keys[:350], fps[:350])
        got = idx.query_signatures(fps)
        for q in range(len(fps)):
            d = hamming_array(np.full(350, fps[q], dtype=np.uint64), fps[:350])
            hits = sorted(np.flatnonzero(d <= 3), key=lambda s: (d[s], s))
            assert got[q] == [(keys[s], int(d[s])) for s in hits]
        assert idx.query_signatures(fps[:5], max_distance=0) == [[(i, 0)] for i in range(5)]
        with pytest.raises(ValueError):
            idx.query_signatures(fps[:1], max_distance=4)
        # texts: the stored fingerprint of a document is its SimHash
        idx.add_batch(["t0", "t1"], corpus[:2])
        assert idx.query(corpus[0])[0] == ("t0", 0)
        assert idx.query_batch([corpus[1]])[0][0] == ("t1", 0)
        assert SimHasher().sign(corpus[0]) == idx.hasher.sign(corpus[0])
    with SimHashDiskIndex.open(tmp_path / "s.ndx", max_distance=3) as idx:
        assert idx.query_signatures(fps) == got
        assert len(idx) == 352
    with pytest.raises(IndexConfigError):
        SimHashDiskIndex.open(tmp_path / "s.ndx", max_distance=2)


def test_simhash_planned_layout_is_exact(tmp_path):
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**63, size=100, dtype=np.int64).astype(np.uint64) << np.uint64(1)
    near = base[rng.integers(0, 100, size=200)].copy()
    for i in range(near.shape[0]):
        for bit in rng.choice(64, size=int(rng.integers(0, 5)), replace=False):
            near[i] ^= np.uint64(1) << np.uint64(int(bit))
    fps = np.concatenate([base, near])
    with SimHashDiskIndex.create(tmp_path / "p.ndx", max_distance=3, expected_n=10**7) as idx:
        assert len(idx.config["masks"]) > 4   # more tables with longer keys than the 4 x 16-bit default
        idx.add_signatures(range(len(fps)), fps)
        got = idx.query_signatures(fps)
    for q in range(len(fps)):
        d = hamming_array(np.full(len(fps), fps[q], dtype=np.uint64), fps)
        assert got[q] == [(int(s), int(d[s])) for s in sorted(np.flatnonzero(d <= 3), key=lambda s: (d[s], s))]


# ---------------------------------------------------------------------------------------------
# crash safety and isolation (separate processes)
# ---------------------------------------------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys, time
    from neardup.index.disk import DiskIndex

    path, size, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

    def batch(i):
        return ([f"b{i}-{j}" for j in range(size)],
                [f"batch {i} document {j} " + " ".join(f"w{(i * 7919 + j * 104729 + t * 31) % 5000}"
                 for t in range(80)) for j in range(size)])

    idx = DiskIndex.open(path)
    idx.add_batch(["warm"], ["warm up the kernels"])
    idx.remove("warm")
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(batches):
        idx.add_batch(*batch(i))       # small batches: each one record of the log, then segments by merges
        print("committed", i, flush=True)
        time.sleep(0.01)
    print("done", flush=True)
""")


def test_reader_never_sees_half_a_batch(tmp_path):
    """A read-only reader of the folder index, reading while another process adds batches (logged,
    flushed into segments): every snapshot holds whole batches, and batch i's first document is
    found exactly when all of batch i is counted."""
    path = tmp_path / "iso"
    size, batches = 40, 25
    probe = [f"batch {i} document 0 " + " ".join(f"w{(i * 7919 + t * 31) % 5000}" for t in range(80))
             for i in range(batches)]
    DiskIndex.create(path, threshold=0.8).close()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    proc = subprocess.Popen([sys.executable, str(script), str(path), str(size), str(batches)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    counts = []
    try:
        assert proc.stdout.readline().strip() == "ready"
        with DiskIndex.open(path, readonly=True) as idx:

            def check_snapshot():
                with idx.snapshot():
                    n = len(idx)
                    found = idx.query_batch(probe)
                assert n % size == 0, n
                assert [(f"b{i}-0", 1.0) in f for i, f in enumerate(found)] == [i < n // size for i in range(batches)]
                counts.append(n)

            check_snapshot()
            proc.stdin.write("go\n")
            proc.stdin.flush()
            while proc.poll() is None:
                check_snapshot()
            check_snapshot()
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert counts[0] == 0 and counts[-1] == size * batches
    assert counts == sorted(counts)


@pytest.mark.parametrize("kind", ["minhash", "containment"])
def test_merges_of_deleted_rows_and_compaction_leave_no_folders(tmp_path, kind):
    """A merge whose rows were all deleted drops its segments (it used to fail on an empty reshape,
    and every later bulk add, flush and compact with it); compaction removes the log's segment it
    folded in, so the folder holds exactly what the manifest names."""
    import json

    from neardup import ContainmentDiskIndex

    cls = ContainmentDiskIndex if kind == "containment" else DiskIndex
    ix = cls.create(tmp_path / "ix")
    for i in range(24):
        ix.add_batch([f"k{i}"], [f"text number {i} with some words"], bulk=True)
    for i in range(24):
        ix.remove(f"k{i}")
    ix.add_batch(["new"], ["a fresh document with words"], bulk=True)
    assert len(ix) == 1 and ix.query("a fresh document with words")[0][0] == "new"
    ix.add_batch(["a", "b"], ["one two three four five six", "seven eight nine ten eleven"])
    ix.remove("a")
    ix.remove("b")
    ix.compact()
    ix.add_batch(["c"], ["x y z w v u t s"])
    ix.compact()
    assert sorted(k for k, _ in ix.query("x y z w v u t s")) == ["c"] and len(ix) == 2
    manifest = json.loads((tmp_path / "ix" / "MANIFEST").read_text())
    named = {s["dir"] for s in manifest["segments"]}
    assert {p.name for p in (tmp_path / "ix").iterdir() if p.name.startswith("seg-")} == named
    ix.close()
    again = cls.open(tmp_path / "ix", readonly=True)
    assert len(again) == 2


@pytest.mark.parametrize("cls", [DiskIndex, SimHashDiskIndex])
def test_get_gives_the_stored_signature(tmp_path, corpus, cls):
    """``get(key)``: the signature the index signed, the same after reopening read-only; a key never
    added, or removed, is a KeyError."""
    with cls.create(tmp_path / "folder") as idx:
        idx.add_batch([f"d{i}" for i in range(10)], corpus[:10])
        idx.remove("d3")
        signed, _ = idx._sign([corpus[i] for i in (0, 5, 9)])
        got = [idx.get(f"d{i}") for i in (0, 5, 9)]
        assert all(np.array_equal(a, b.reshape(a.shape)) for a, b in zip(got, signed))
        for absent in ("d3", "nope"):
            with pytest.raises(KeyError):
                idx.get(absent)
    with cls.open(tmp_path / "folder", readonly=True) as idx:
        again = [idx.get(f"d{i}") for i in (0, 5, 9)]
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(got, again))
