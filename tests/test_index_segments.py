"""The folder store (``neardup.index.segments``): segments + manifest + write-ahead log. Each test
states a guarantee of the module's docstring and tries to break it: torn logs, killed writers,
a second writer, readers during writes, merges, foreign folders."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from neardup.index import probe as probe_module
from neardup.index import segments
from neardup.index.disk import DiskIndex, SimHashDiskIndex
from neardup.index.segments import SegmentStore
from neardup.index.store import DuplicateKeyError, IndexCorruptError, IndexStoreError, NotAnIndexError, ReadOnlyError


def _text(i: int, j: int = 0, n: int = 60) -> str:
    return f"doc {i} " + " ".join(f"w{(i * 7919 + t * 31 + j) % 5000}" for t in range(n))


def _brute(idx: DiskIndex, texts: dict, q: str, t: float) -> list:
    """Every stored key whose estimate against q is ≥ t, best first — from the signatures alone."""
    sig = idx.hasher.sign_batch([q] + list(texts.values())).values
    from neardup.sketches.minhash import jaccard_rows

    n = len(texts)
    j = jaccard_rows(sig, np.zeros(n, np.int64), np.arange(1, n + 1), idx.scheme)
    keys = list(texts)
    return sorted([(keys[i], float(j[i])) for i in range(n) if j[i] >= t], key=lambda x: -x[1])


def test_online_adds_survive_reopen_flush_and_compact(tmp_path):
    path = tmp_path / "idx"
    texts = {f"k{i}": _text(i) for i in range(30)}
    with DiskIndex.create(path, threshold=0.5) as idx:
        for k in list(texts)[:20]:
            idx.add(k, texts[k])                              # one log record each
        idx.add_batch(list(texts)[20:], list(texts.values())[20:])
        assert len(idx) == 30 and idx.stats()["segments"] == 0
    with DiskIndex.open(path) as idx:                          # replayed from the log
        assert len(idx) == 30 and "k7" in idx and "k99" not in idx
        near = _text(7, 1)
        assert idx.query(near) == _brute(idx, texts, near, 0.5)
        idx.flush()
        assert idx.stats()["segments"] == 1 and idx.store.check()["log_documents"] == 0
        idx.remove("k7")
        del texts["k7"]
        assert "k7" not in idx and len(idx) == 29
        assert idx.query(near) == _brute(idx, texts, near, 0.5)
        idx.compact()
        assert idx.stats()["segments"] == 1 and len(idx) == 29
        assert idx.query(near) == _brute(idx, texts, near, 0.5)
        with pytest.raises(KeyError):
            idx.remove("k7")
    with DiskIndex.open(path, readonly=True) as idx:
        assert len(idx) == 29 and idx.query(_text(3))[0] == ("k3", 1.0)
        with pytest.raises(ReadOnlyError):
            idx.add("x", "some text")


def test_keys_of_every_type_and_duplicates(tmp_path):
    with DiskIndex.create(tmp_path / "i") as idx:
        idx.add_batch(["a", 1, b"a", -5, "ü\udcff"], [_text(i) for i in range(5)])
        assert all(k in idx for k in ("a", 1, b"a", -5, "ü\udcff")) and "1" not in idx
        with pytest.raises(DuplicateKeyError):
            idx.add("a", "x y z")
        with pytest.raises(DuplicateKeyError):
            idx.add_batch(["n", "n"], ["x", "y"])
        assert len(idx) == 5
        idx.add("a", _text(9), replace=True)
        assert len(idx) == 5 and idx.query(_text(9))[0] == ("a", 1.0)
        big = [f"bulk{i}" for i in range(5000)]                     # a segment at once
        idx.add_batch(big, [_text(i + 100) for i in range(5000)])
        assert idx.stats()["segments"] >= 1 and len(idx) == 5005
        with pytest.raises(DuplicateKeyError):
            idx.add_batch(big[:4096] + ["zz"], [_text(i) for i in range(4097)])
        assert len(idx) == 5005
        assert idx.query(_text(4100))[0] == ("bulk4000", 1.0)
    with pytest.raises(TypeError):
        DiskIndex.create(tmp_path / "j").add(1.5, "x")


def test_torn_log_tail_is_dropped_and_earlier_records_kept(tmp_path):
    path = tmp_path / "idx"
    with DiskIndex.create(path) as idx:
        for i in range(5):
            idx.add(f"k{i}", _text(i))
    wal = path / json.loads((path / "MANIFEST").read_text())["wal"]
    data = wal.read_bytes()
    for cut in (len(data) - 1, len(data) - 37, len(data) - 500):
        wal.write_bytes(data[:cut])                               # the last record torn
        with DiskIndex.open(path, readonly=True) as idx:
            assert len(idx) == 4 and "k4" not in idx and "k3" in idx
    wal.write_bytes(data[:-10] + b"\x00" * 10)                    # same length, its end never written
    with DiskIndex.open(path) as idx:                              # the writer truncates the tail
        assert len(idx) == 4
        idx.add("k4", _text(4))
    with DiskIndex.open(path) as idx:
        assert len(idx) == 5 and idx.query(_text(4))[0] == ("k4", 1.0)


WAL_RECORDS = 40


def _logged_index(path, n=WAL_RECORDS):
    with DiskIndex.create(path) as idx:
        for i in range(n):
            idx.add(f"k{i}", _text(i))
    wal = path / json.loads((path / "MANIFEST").read_text())["wal"]
    return wal, wal.read_bytes()


@pytest.mark.parametrize("where", [0.5, 0.1, 0.9, 0.999])
def test_a_damaged_log_record_refuses_to_open_and_is_never_folded_away(tmp_path, where):
    """One byte flipped anywhere in the log — a record with acknowledged records after it, or the
    last one — is damage, not a torn tail: readers and writers refuse naming the file, the record
    and its offset, and nothing is truncated or folded into a segment."""
    path = tmp_path / "idx"
    wal, data = _logged_index(path)
    at = int(len(data) * where)
    bad = data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1:]
    wal.write_bytes(bad)
    for readonly in (True, False):
        with pytest.raises(IndexCorruptError, match=r"wal-0\.log: record \d+ at byte \d+ is damaged"):
            DiskIndex.open(path, readonly=readonly)
    assert wal.read_bytes() == bad and len(list(path.glob("seg-*"))) == 0
    wal.write_bytes(data)                                          # put back: everything is there
    with DiskIndex.open(path) as idx:
        assert len(idx) == WAL_RECORDS


def test_log_records_moved_repeated_or_from_another_log_are_damage(tmp_path):
    wal, data = _logged_index(tmp_path / "a", 6)
    ends = [0]
    from neardup.index import wal as walmod

    salt = json.loads((tmp_path / "a" / "MANIFEST").read_text())["wal_salt"]
    records, torn = walmod.read_log(data, "x", salt)
    assert torn is None and len(records) == 6
    ends += [e for e, _ in records]
    rec = [data[ends[i]:ends[i + 1]] for i in range(6)]
    cases = {"swapped": (rec[0] + rec[2] + rec[1] + b"".join(rec[3:]), 2),
             "repeated": (b"".join(rec[:3]) + rec[2] + b"".join(rec[3:]), 4),
             "missing": (b"".join(rec[:2]) + b"".join(rec[3:]), 3)}
    for bad, number in cases.values():
        wal.write_bytes(bad)
        with pytest.raises(IndexCorruptError, match=f"record {number} at byte"):
            DiskIndex.open(tmp_path / "a", readonly=True)
    wal2, data2 = _logged_index(tmp_path / "b", 6)      # the same record numbers, another salt
    wal.write_bytes(b"".join(rec[:3]) + data2[ends[3]:])
    with pytest.raises(IndexCorruptError, match="record 4 at byte"):
        DiskIndex.open(tmp_path / "a", readonly=True)


def test_files_of_a_crashed_publish_are_removed_and_nothing_else(tmp_path):
    """A writer killed inside a publish (the new segment written, the manifest not yet renamed)
    leaves files that the next writer removes — the names its PENDING record lists — while
    entries of the same shape that neardup did not make stay, whatever their names."""
    path = tmp_path / "idx"
    with DiskIndex.create(path) as idx:
        idx.add_batch([f"k{i}" for i in range(5000)], [_text(i) for i in range(5000)])
    before = {p.name for p in path.iterdir()}
    script = tmp_path / "crash.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, sys
        import neardup.index.segments as seg
        from neardup.index.disk import DiskIndex
        orig = seg.write_new
        def w(p, data, *a):
            if p.name.startswith(".MANIFEST."):
                orig(p, data, *a)
                os.kill(os.getpid(), signal.SIGKILL)
            return orig(p, data, *a)
        seg.write_new = w
        with DiskIndex.open({str(path)!r}) as idx:
            idx.add_batch([f"n{{i}}" for i in range(5000)], [f"new text {{i}} " * 5 for i in range(5000)])
    """))
    res = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=300)
    assert res.returncode == -signal.SIGKILL, res.stderr[-2000:]
    left = {p.name for p in path.iterdir()} - before
    assert any(n.startswith("seg-") for n in left) and "PENDING" in left
    foreign = {"seg-99-abcdef": "dir", "wal-99.log": b"x", "deleted-99.npy": b"x", "seg-1-000000-w": "dir",
               ".MANIFEST.1-000000": b"mine"}
    for name, what in foreign.items():
        if what == "dir":
            (path / name).mkdir()
            (path / name / "sigs.npy").write_bytes(b"half")
        else:
            (path / name).write_bytes(what)
    with DiskIndex.open(path, readonly=True) as idx:                 # readers leave everything alone
        assert len(idx) == 5000
    assert left <= {p.name for p in path.iterdir()}
    with DiskIndex.open(path) as idx:
        assert len(idx) == 5000
        idx.add_batch([f"m{i}" for i in range(5000)], [_text(i + 9000) for i in range(5000)])
        idx.compact()
        idx.remove("m7")
        idx.flush()
    now = {p.name for p in path.iterdir()}
    assert not (left & now), left & now                              # the crashed publish's files: gone
    assert set(foreign) <= now                                       # the user's: all there
    assert (path / "seg-99-abcdef" / "sigs.npy").read_bytes() == b"half"
    with DiskIndex.open(path) as idx:
        assert len(idx) == 9999


def test_a_removed_lock_file_lets_no_second_writer_in(tmp_path):
    """The writer's lock is held on the folder, not inferred from the LOCK file: removing or
    replacing that file while a writer holds the index does not let another writer in."""
    path = tmp_path / "idx"
    DiskIndex.create(path).close()
    with DiskIndex.open(path) as idx:
        idx.add("a", _text(1))
        (path / "LOCK").unlink()
        with pytest.raises(IndexStoreError, match="being written by"):
            SegmentStore.open(path, timeout=0.2)
        (path / "LOCK").write_text("")
        with pytest.raises(IndexStoreError, match="being written by"):
            SegmentStore.open(path, timeout=0.2)
        idx.add("b", _text(2))
    with DiskIndex.open(path) as idx:
        assert "a" in idx and "b" in idx


def test_not_an_index(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotAnIndexError, match="no MANIFEST"):
        DiskIndex.open(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "MANIFEST").write_text("{not json")
    with pytest.raises(NotAnIndexError, match="not JSON"):
        DiskIndex.open(tmp_path / "bad")
    (tmp_path / "bad" / "MANIFEST").write_text('{"format": 99}')
    with pytest.raises(NotAnIndexError, match="format 99"):
        DiskIndex.open(tmp_path / "bad")
    with pytest.raises(FileNotFoundError):
        DiskIndex.open(tmp_path / "absent")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "data.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        DiskIndex.create(tmp_path / "full")
    assert (tmp_path / "full" / "data.txt").read_text() == "mine"
    DiskIndex.create(tmp_path / "empty").close()                    # an empty folder is used
    SimHashDiskIndex.create(tmp_path / "s").close()
    with pytest.raises(Exception, match="SimHashDiskIndex"):
        DiskIndex.open(tmp_path / "s")


def test_second_writer_waits_then_is_refused(tmp_path):
    path = tmp_path / "idx"
    first = DiskIndex.create(path)
    try:
        with pytest.raises(IndexStoreError, match="one writer at a time"):
            SegmentStore.open(path, timeout=0.2)
        reader = DiskIndex.open(path, readonly=True)                 # readers need no lock
        first.add("a", _text(1))
        assert len(reader) == 1 and reader.query(_text(1)) == [("a", 1.0)]
        reader.close()
    finally:
        first.close()
    SegmentStore.open(path, timeout=0.2).close()                      # released on close


def test_many_segments_are_merged_and_answers_stay_the_same(tmp_path, monkeypatch):
    monkeypatch.setattr(segments, "MERGE_SEGMENTS", 4)
    path = tmp_path / "idx"
    texts = {}
    with DiskIndex.create(path, threshold=0.5) as idx:
        for b in range(9):
            keys = [f"b{b}-{j}" for j in range(40)]
            batch = [_text(b * 40 + j) for j in range(40)]
            idx.add_batch(keys, batch, bulk=True)
            texts.update(zip(keys, batch))
            if b == 3:
                idx.remove("b1-5")
                del texts["b1-5"]
        assert idx.stats()["segments"] <= 5 and len(idx) == len(texts)
        for q in (_text(45, 1), _text(200, 2), _text(355)):
            assert idx.query(q) == _brute(idx, texts, q, 0.5)
        assert "b1-5" not in idx and "b8-39" in idx


WRITER = textwrap.dedent("""
    import sys
    from neardup.index.disk import DiskIndex
    path, mode, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    idx = DiskIndex.open(path, synchronous="FULL")
    i = len(idx) // size
    while True:
        keys = [f"b{i}-{j}" for j in range(size)]
        texts = [f"batch {i} document {j} " + " ".join(f"w{(i * 7919 + j * 104729 + t * 31) % 5000}"
                 for t in range(40)) for j in range(size)]
        idx.add_batch(keys, texts, bulk=mode == "bulk")
        print("committed", i, flush=True)
        i += 1
""")


@pytest.mark.parametrize("mode", ["log", "bulk"])
def test_killed_writer_leaves_whole_batches(tmp_path, mode):
    """SIGKILL at arbitrary points of a writer adding batches (log records, or segments published
    by manifest renames): reopening finds whole batches only, at least every acknowledged one,
    and every stored document answers its own query."""
    path = tmp_path / "idx"
    size = 50
    DiskIndex.create(path).close()
    script = tmp_path / "w.py"
    script.write_text(WRITER)
    for round_ in range(3):
        proc = subprocess.Popen([sys.executable, str(script), str(path), mode, str(size)],
                                stdout=subprocess.PIPE, text=True)
        acked = -1
        try:
            for line in proc.stdout:
                acked = int(line.split()[1])
                if acked >= 2 + 3 * round_:
                    break
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(timeout=30)
        with DiskIndex.open(path) as idx:
            n = len(idx)
            assert n % size == 0 and n // size >= acked + 1, (n, acked)
            report = idx.check()
            assert report["docs"] == n and report["missing"] == 0
            last = n // size - 1
            probe = f"batch {last} document 7 " + " ".join(
                f"w{(last * 7919 + 7 * 104729 + t * 31) % 5000}" for t in range(40))
            assert idx.query(probe)[0] == (f"b{last}-7", 1.0)
            assert all(f"b{i}-0" in idx for i in range(last + 1)) and f"b{last + 1}-0" not in idx


def test_parallel_probe_gives_the_sequential_answers(tmp_path, monkeypatch):
    """A batch large enough for the all-cores probe answers exactly as the one-thread probe."""
    texts = {f"k{i}": _text(i, 0, 40) for i in range(3000)}
    queries = [_text(i, 1 if i % 3 else 0, 40) + (" extra words" if i % 5 == 0 else "") for i in range(2500)]
    for cls in (DiskIndex, SimHashDiskIndex):
        with cls.create(tmp_path / cls.__name__) as idx:
            idx.add_batch(list(texts), list(texts.values()), bulk=True)
            assert len(queries) >= probe_module.PARALLEL_QUERIES
            fast = idx.query_batch(queries)
            monkeypatch.setattr(probe_module, "PARALLEL_QUERIES", 10**9)
            slow = idx.query_batch(queries)
            monkeypatch.undo()
            assert fast == slow and sum(map(len, fast)) > 800


def test_a_huge_band_bucket_is_checked_against_its_oldest_document(tmp_path):
    """MinHash: past index.lsh.MAX_BUCKET documents sharing a band key, a query meets the oldest
    of them only (the batch engine's star rule); SimHash finds every one (it is exact)."""
    from neardup.index.lsh import MAX_BUCKET

    same = _text(1)
    keys = [f"c{i}" for i in range(MAX_BUCKET + 5)]
    with DiskIndex.create(tmp_path / "m") as idx:
        idx.add_batch(keys, [same] * len(keys))
        assert idx.query(same) == [("c0", 1.0)]
    with DiskIndex.create(tmp_path / "m2") as idx:
        idx.add_batch(keys[:MAX_BUCKET - 1], [same] * (MAX_BUCKET - 1))
        assert idx.query(same) == [(k, 1.0) for k in keys[:MAX_BUCKET - 1]]
    with SimHashDiskIndex.create(tmp_path / "s") as idx:
        idx.add_batch(keys, [same] * len(keys))
        assert idx.query(same) == [(k, 0) for k in keys]
