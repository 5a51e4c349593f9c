"""The disk index under hostile use (issue 13, "Index"): concurrent creation, a read-only folder,
NumPy parameters, and SQLite errors that name the file."""
from __future__ import annotations

import multiprocessing as mp
import os

import numpy as np
import pytest
from hostile import without_root

from neardup.index.disk import DiskIndex, SimHashDiskIndex

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


def test_new_index_folder_has_the_usual_permissions(tmp_path):
    """The index folder and its files get the modes any new folder and file get (the umask's), not
    the private ones of a temporary file."""
    path = tmp_path / "i"
    with DiskIndex.create(path) as idx:
        idx.add_batch(["a", "b"], TEXTS, bulk=True)
        idx.add("c", "a third text, logged")
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o777 & ~umask
    files = [p for p in path.rglob("*") if p.is_file()]
    assert len(files) > 3 and all(os.stat(f).st_mode & 0o777 == 0o666 & ~umask for f in files), \
        [(f.name, oct(os.stat(f).st_mode & 0o777)) for f in files]


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


