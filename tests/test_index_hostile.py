"""The disk index under hostile use (issue 13, "Index"): concurrent creation, a read-only folder,
NumPy parameters, and SQLite errors that name the file."""
from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3

import numpy as np
import pytest
from hostile import without_root

from neardup.errors import NeardupError
from neardup.index.disk import DiskIndex, SimHashDiskIndex
from neardup.index.store import IndexStoreError, SQLiteStore

TEXTS = ["the quick brown fox jumps over the lazy dog near the river bank today",
         "a completely different sentence about gardening and tomatoes in summer"]


def _create(path, barrier, q):
    barrier.wait()
    try:
        idx = DiskIndex.create(path, exist_ok=True)
        idx.add(f"k{os.getpid()}", TEXTS[0])
        idx.close()
        q.put("ok")
    except Exception as exc:
        q.put(f"{type(exc).__name__}: {exc}")


def test_concurrent_create_exist_ok_gives_one_index(tmp_path):
    ctx = mp.get_context("fork")
    for attempt in range(3):
        path = str(tmp_path / f"race{attempt}.db")
        barrier, q = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_create, args=(path, barrier, q)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        results = [q.get(timeout=5) for _ in procs]
        assert results == ["ok"] * 4, results
        idx = DiskIndex.open(path, readonly=True)
        assert len(idx) == 4 and idx.check()["orphans"] == 0
        idx.close()
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".building")]


def test_create_without_exist_ok_refuses_an_existing_index(tmp_path):
    path = tmp_path / "i.db"
    DiskIndex.create(path).close()
    with pytest.raises(FileExistsError):
        DiskIndex.create(path)


def test_new_index_file_has_the_usual_permissions(tmp_path):
    path = tmp_path / "i.db"
    DiskIndex.create(path, store=SQLiteStore).close()
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask


def test_read_only_index_in_a_read_only_folder_opens_read_only(open_tmp):
    folder = open_tmp / "ro"
    folder.mkdir()
    path = folder / "i.db"
    idx = DiskIndex.create(path)
    idx.add_batch(["a", "b"], TEXTS)
    idx.query(TEXTS[0])   # its kernels compiled here: the child below could not write numba's cache
    idx.close()
    os.chmod(folder, 0o555)

    def query():
        i = DiskIndex.open(str(path), readonly=True)
        try:
            return len(i), i.query(TEXTS[0])
        finally:
            i.close()

    status, value = without_root(query)
    assert status == "ok", value
    assert value == (2, [("a", 1.0)])


def test_numpy_integer_parameters_are_accepted(tmp_path):
    DiskIndex.create(tmp_path / "m.db", num_perm=np.int64(64), seed=np.uint64(2), ngram=np.int32(3)).close()
    DiskIndex.open(tmp_path / "m.db", num_perm=np.int16(64), seed=np.int8(2)).close()
    SimHashDiskIndex.create(tmp_path / "s.db", max_distance=np.int64(3), top_n=np.int64(5)).close()
    SimHashDiskIndex.open(tmp_path / "s.db", max_distance=np.uint8(3), top_n=np.int64(5)).close()
    with pytest.raises(ValueError, match="max_distance"):
        SimHashDiskIndex.create(tmp_path / "t.db", max_distance=np.float64(3.0))


def test_sqlite_errors_name_the_index_file(tmp_path):
    path = tmp_path / "i.db"
    idx = DiskIndex.create(path, store=SQLiteStore)
    idx.add("a", TEXTS[0])
    idx.close()
    other = sqlite3.connect(path, timeout=0)
    other.execute("BEGIN EXCLUSIVE")              # another process holds the write lock
    try:
        idx = DiskIndex.open(path)
        idx._store._conn.execute("PRAGMA busy_timeout=50")
        with pytest.raises(IndexStoreError) as exc:
            idx.add("b", TEXTS[1])
        assert str(path) in str(exc.value) and isinstance(exc.value, NeardupError)
        assert isinstance(exc.value, sqlite3.OperationalError)
        idx.close()
    finally:
        other.rollback()
        other.close()

