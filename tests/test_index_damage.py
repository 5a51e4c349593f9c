"""Damaged index files: every segment file, the list of removed documents and the log, damaged in
the ways disks and people damage them. The index either answers exactly as before or refuses with
one IndexCorruptError naming the file — never a crash, a traceback or a silently different
answer; ``neardup index verify`` names what is wrong and ``--repair`` salvages what verifies."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.errors import NeardupError
from neardup.index import segments_open
from neardup.index.disk import DiskIndex, open_index
from neardup.index.files import SEGMENT_FILES
from neardup.index.repair import repair_index, verify_index
from neardup.index.store import IndexCorruptError


def _text(i: int, j: int = 0) -> str:
    return f"doc {i} " + " ".join(f"w{(i * 7919 + t * 31 + j) % 5000}" for t in range(50))


N_SEG, N_LOG = 3000, 30


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """Two segments, a list of removed documents, and a log of single adds and a removal."""
    path = tmp_path_factory.mktemp("damage") / "idx"
    with DiskIndex.create(path, threshold=0.5) as idx:
        idx.add_batch([f"a{i}" for i in range(N_SEG)], [_text(i) for i in range(N_SEG)], bulk=True)
        idx.add_batch([f"b{i}" for i in range(N_SEG)], [_text(i + N_SEG) for i in range(N_SEG)], bulk=True)
        idx.remove("a5")
        idx.flush()                                     # the removal in deleted-*.npy
        for i in range(N_LOG):
            idx.add(f"c{i}", _text(i + 2 * N_SEG))
        idx.remove("b7")
    return path


QUERIES = [_text(i, 1) for i in (3, 5, N_SEG + 9, 2 * N_SEG + 4)]


def _answers(path, **kw):
    with DiskIndex.open(path, readonly=True, **kw) as idx:
        return idx.query_batch(QUERIES), len(idx)


def _damages(data: bytes):
    """(name, damaged bytes) of one file."""
    n = len(data)
    yield "zero-filled", b"\0" * n
    yield "cut in half", data[: n // 2]
    yield "empty", b""
    yield "header byte", data[:8] + bytes([data[8] ^ 0xFF]) + data[9:]
    yield "last byte", data[:-1] + bytes([data[-1] ^ 0x01])
    rng = np.random.default_rng(7)
    yield "noise", rng.integers(0, 256, n, dtype=np.uint8).tobytes()
    head = data.find(b"\n") + 1                       # the .npy header ends with a newline
    if n > head:
        yield "data zeroed", data[:head] + b"\0" * (n - head)
        yield "data 0xFF", data[:head] + b"\xff" * (n - head)


def _manifest(path):
    return json.loads((path / "MANIFEST").read_text())


def test_the_pristine_index_verifies(pristine):
    rep = verify_index(pristine)
    assert rep["ok"] and rep["documents_at_risk"] == 0 and rep["log"]["records"] == N_LOG + 1
    assert CliRunner().invoke(main, ["index", "verify", str(pristine)]).exit_code == 0


@pytest.mark.parametrize("cheap", [False, True], ids=["checksummed-on-open", "large-index"])
def test_every_damage_of_every_segment_file_is_refused_or_harmless(pristine, tmp_path, monkeypatch, cheap):
    """Default: the index is small enough to be checksummed at open, so every damage is refused at
    open. ``large-index`` (VERIFY_ON_OPEN = 0, as for an index over 1 GiB): open checks only sizes,
    dtypes, shapes and, before a kernel reads them, row ranges — never a crash; what that lets
    through (values of the right shape, e.g. zeroed signatures) is what `index verify` is for,
    and it finds every case."""
    if cheap:
        monkeypatch.setattr(segments_open, "VERIFY_ON_OPEN", 0)
    want = _answers(pristine)
    seg = _manifest(pristine)["segments"][0]["dir"]
    refused = 0
    for f in SEGMENT_FILES:
        data = (pristine / seg / f"{f}.npy").read_bytes()
        for name, bad in _damages(data):
            path = tmp_path / "idx"
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(pristine, path)
            (path / seg / f"{f}.npy").write_bytes(bad)
            try:
                got = _answers(path)
            except IndexCorruptError as exc:
                assert f"{f}.npy" in str(exc) or seg in str(exc), (f, name, str(exc))
                refused += 1
                continue
            assert cheap, (f, name)                         # only the large-index path may let it through
            assert got == want or not verify_index(path)["ok"], (f, name)   # and verify finds it
    if not cheap:
        assert refused == sum(1 for f in SEGMENT_FILES
                              for _ in _damages((pristine / seg / f"{f}.npy").read_bytes()))


def test_rows_out_of_range_in_a_large_index_are_refused_before_a_kernel_reads_them(pristine, tmp_path, monkeypatch):
    """A band_row.npy rewritten as a valid array of the same size whose rows point past the
    segment (what crashed the probe kernel with a segmentation fault): refused by the row check."""
    monkeypatch.setattr(segments_open, "VERIFY_ON_OPEN", 0)
    path = tmp_path / "idx"
    shutil.copytree(pristine, path)
    seg = _manifest(path)["segments"][0]["dir"]
    f = path / seg / "band_row.npy"
    rows = np.load(f)
    rows[:, ::7] = 2**31
    f.unlink()
    np.save(f, rows)
    with pytest.raises(IndexCorruptError, match="points past"):
        _answers(path)
    with DiskIndex.open(path) as idx, pytest.raises(IndexCorruptError):
        idx.compact()                                       # a merge verifies first: no laundering
    assert not verify_index(path)["ok"]


def test_damaged_segment_files_through_the_command_line_are_one_line(pristine, tmp_path):
    """In a process of its own (a segmentation fault would show as exit -11): one line, exit 1."""
    path = tmp_path / "idx"
    shutil.copytree(pristine, path)
    seg = _manifest(path)["segments"][1]["dir"]
    data = (path / seg / "sigs.npy").read_bytes()
    head = data.find(b"\n") + 1
    (path / seg / "sigs.npy").write_bytes(data[:head] + b"\0" * (len(data) - head))     # zero-filled data
    for args in (["index", "query", str(path), "--text", QUERIES[0]], ["index", "stats", str(path)],
                 ["index", "add", str(path), "-", "--id-field", "id"]):
        res = subprocess.run([sys.executable, "-m", "neardup", *args], capture_output=True, text=True,
                             input='{"id": "z", "text": "x y z"}\n', timeout=300)
        assert res.returncode == 1, (args, res.returncode, res.stderr)
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert "sigs.npy" in res.stderr and "checksum" in res.stderr
    res = subprocess.run([sys.executable, "-m", "neardup", "index", "verify", str(path)], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 1 and "sigs.npy" in res.stdout and "Traceback" not in res.stderr


def test_repair_rebuilds_damaged_band_tables_and_loses_nothing(pristine, tmp_path):
    path = tmp_path / "idx"
    shutil.copytree(pristine, path)
    seg = _manifest(path)["segments"][0]["dir"]
    for f in ("bands", "band_row", "key_hash"):
        (path / seg / f"{f}.npy").write_bytes(b"\0" * 100)
    with pytest.raises(IndexCorruptError):
        _answers(path)
    rep = repair_index(path, tmp_path / "new")
    assert rep["lost"] == [] and rep["recovered"] == 2 * N_SEG + N_LOG - 2
    assert _answers(tmp_path / "new") == _answers(pristine)
    assert verify_index(tmp_path / "new")["ok"]


def test_repair_of_a_segment_whose_signatures_are_damaged_reports_its_documents(pristine, tmp_path):
    path = tmp_path / "idx"
    shutil.copytree(pristine, path)
    seg = _manifest(path)["segments"][1]["dir"]
    (path / seg / "sigs.npy").write_bytes(b"\0" * 64)
    res = CliRunner().invoke(main, ["index", "verify", str(path), "--repair", str(tmp_path / "new")])
    assert res.exit_code == 1 and f"segment {seg}: {N_SEG} documents" in res.output, res.output
    with open_index(tmp_path / "new", readonly=True) as idx:
        assert len(idx) == N_SEG - 1 + N_LOG and "a3" in idx and "b3" not in idx and "c3" in idx


def test_repair_of_a_damaged_log_keeps_every_record_that_verifies(pristine, tmp_path):
    path = tmp_path / "idx"
    shutil.copytree(pristine, path)
    log = path / _manifest(path)["wal"]
    data = log.read_bytes()
    at = len(data) // 2
    log.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1:])
    with pytest.raises(IndexCorruptError, match="is damaged"):
        _answers(path)
    rep = repair_index(path, tmp_path / "new")
    assert len(rep["lost"]) == 1 and "bytes" in rep["lost"][0]
    assert rep["recovered"] == 2 * N_SEG + N_LOG - 2 - 1           # one record of one document lost
    with DiskIndex.open(tmp_path / "new", readonly=True) as idx:
        assert "b7" not in idx and "a5" not in idx                  # removals replayed, kept
    res = CliRunner().invoke(main, ["index", "verify", str(path), "--repair", str(tmp_path / "new")])
    assert res.exit_code != 0 and "already exists" in res.output


def test_a_damaged_list_of_removed_documents_is_refused_and_repair_says_what_may_come_back(pristine, tmp_path):
    path = tmp_path / "idx"
    shutil.copytree(pristine, path)
    dele = path / _manifest(path)["deleted"]
    data = dele.read_bytes()
    dele.write_bytes(data[:-8] + b"\0" * 8)
    with pytest.raises(NeardupError):
        _answers(path)
    rep = repair_index(path, tmp_path / "new")
    assert any("removed documents" in x for x in rep["lost"])


def test_a_damaged_manifest_is_one_line(pristine, tmp_path):
    path = tmp_path / "idx"
    shutil.copytree(pristine, path)
    m = _manifest(path)
    for bad in ({**m, "segments": "x"}, {**m, "segments": [{"dir": "../../etc", "first_id": 1, "n": 1}]},
                {**m, "next_id": -1}, {**m, "wal": "/etc/passwd"}):
        (path / "MANIFEST").write_text(json.dumps(bad))
        with pytest.raises(NeardupError):
            _answers(path)
    (path / "MANIFEST").write_bytes(b"\0" * 50)
    with pytest.raises(NeardupError):
        _answers(path)
