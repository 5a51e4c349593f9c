"""The one rule for output files (neardup.io.outfile): ``-o`` and the files written beside it
replace only regular files that are not inputs; devices, FIFOs, sockets, folders and symbolic
links are refused with one line, and ``-o -`` is standard output, never a file named ``-``."""
from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys

import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.index.disk import DiskIndex


@pytest.fixture
def corpus(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": f"text number {i} with some words"}) + "\n"
                           for i in range(30)), encoding="utf-8")
    return src


def _specials(tmp_path):
    """(name, path) of entries -o must never replace, each made here."""
    out = []
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out.append(("a FIFO", fifo))
    target = tmp_path / "target.txt"
    target.write_text("precious")
    link = tmp_path / "link.npy"
    link.symlink_to(target)
    out.append(("a symbolic link", link))
    dangling = tmp_path / "dangling.npy"
    dangling.symlink_to(tmp_path / "nowhere" / "x")
    out.append(("a symbolic link", dangling))
    (tmp_path / "folder.npy").mkdir()
    out.append(("a folder", tmp_path / "folder.npy"))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    out.append(("a socket", tmp_path / "sock"))
    if os.geteuid() == 0:                     # a device node of our own (the same device as /dev/null)
        dev = tmp_path / "null"
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        out.append(("a character device", dev))
    return out, target, sock


def _state(path):
    st = os.lstat(path)
    return st.st_ino, st.st_mode


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "npy"])
def test_sign_never_replaces_what_is_not_a_regular_file(corpus, tmp_path, fmt):
    specials, target, sock = _specials(tmp_path)
    try:
        for kind, path in specials:
            before = _state(path)
            res = CliRunner().invoke(main, ["sign", str(corpus), "-o", str(path), "--format", fmt])
            assert res.exit_code != 0, (kind, res.output)
            assert "Traceback" not in res.output and kind in res.output, (kind, res.output)
            assert _state(path) == before
        assert target.read_text() == "precious"
    finally:
        sock.close()


def test_sign_through_the_console_script_refuses_too(corpus, tmp_path):
    """The `neardup` console script, refusing before anything is signed."""
    specials, target, sock = _specials(tmp_path)
    try:
        for kind, path in specials[:2]:
            res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "neardup"), "sign", str(corpus),
                                  "-o", str(path), "--format", "parquet"], capture_output=True, text=True, timeout=300)
            assert res.returncode == 1 and kind in res.stderr and "Traceback" not in res.stderr, res.stderr
        assert target.read_text() == "precious"
    finally:
        sock.close()


def test_the_ids_file_beside_an_npy_output_is_checked_against_the_inputs(tmp_path):
    src = tmp_path / "sig.ids.jsonl"              # an input that happens to have the sidecar's name
    src.write_text("".join(json.dumps({"id": i, "text": f"text {i} words here"}) + "\n" for i in range(10)))
    before = src.read_bytes()
    res = CliRunner().invoke(main, ["sign", str(src), "-o", str(tmp_path / "sig.npy"), "--format", "npy"])
    assert res.exit_code != 0 and "is the input" in res.output and "ids file" in res.output, res.output
    assert src.read_bytes() == before and not (tmp_path / "sig.npy").exists()
    link = tmp_path / "hard.jsonl"
    os.link(src, link)                            # the same file under another name
    res = CliRunner().invoke(main, ["sign", str(src), "-o", str(link)])
    assert res.exit_code != 0 and "is the input" in res.output
    assert src.read_bytes() == before


def test_index_export_to_standard_output_and_refusals(tmp_path, monkeypatch):
    idx = tmp_path / "idx"
    with DiskIndex.create(idx) as i:
        i.add_batch([f"k{j}" for j in range(20)], [f"text {j} with words" for j in range(20)])
    monkeypatch.chdir(tmp_path)
    res = subprocess.run([sys.executable, "-m", "neardup", "index", "export", str(idx), "-o", "-"],
                         capture_output=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "-").exists()
    import io

    import pyarrow.parquet as pq

    assert pq.read_table(io.BytesIO(res.stdout)).num_rows == 20
    specials, target, sock = _specials(tmp_path)
    try:
        for kind, path in specials:
            res = CliRunner().invoke(main, ["index", "export", str(idx), "-o", str(path)])
            assert res.exit_code != 0 and kind in res.output and "Traceback" not in res.output, res.output
        assert target.read_text() == "precious"
    finally:
        sock.close()
