"""Faults of the process and the machine: a killed run's workers exit within seconds, SIGTERM cleans
up, a full disk is one line and leaves the previous result, --workers is capped.

The runs here are real processes (what a shell starts); a run is kept busy for seconds by signing a
small corpus in one-row batches, so the kill always lands while the workers exist."""
from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import time

import pytest
from hostile import accounted, cli, cli_proc, jsonl_bytes, one_line_error, snapshot, write_jsonl

from neardup import DedupConfig, run_dedup
from neardup.config import cpu_count

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _children(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(name))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def _busy_run(tmp_path, out):
    """A dedup process with 2 signing workers that stays busy for several seconds."""
    src = tmp_path / "busy.jsonl"
    src.write_bytes(jsonl_bytes([f"document {i} " + " ".join(f"w{i % 97}x{j}" for j in range(40))
                                 for i in range(40000)]))
    # SIGINT at its default, as in a terminal: a suite started in the background by a non-interactive
    # shell (`bash .ci/run &`) passes SIGINT on ignored, and Python keeps it ignored
    proc = subprocess.Popen([sys.executable, "-m", "neardup.cli", "dedup", str(src), "-o", str(out), "--workers", "2",
                             "--batch-size", "1", "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    workers: list[int] = []
    while time.time() < deadline and len(workers) < 2:
        if proc.poll() is not None:
            pytest.fail(f"the run ended before its workers were seen: {proc.stderr.read().decode()}")
        workers = _children(proc.pid)
        time.sleep(0.02)
    assert len(workers) >= 2, "workers did not start"
    time.sleep(0.3)
    return proc, workers


def _assert_all_gone(pids, seconds: float, what: str) -> None:
    """Every pid ends within ``seconds`` (those still alive then are killed, and the test fails)."""
    deadline = time.time() + seconds
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, what


@pytest.mark.skipif(cpu_count() < 2, reason="needs 2 CPUs for 2 workers")
def test_sigkill_of_the_run_ends_its_workers_and_the_next_run_cleans_up(tmp_path):
    out = tmp_path / "o"
    proc, workers = _busy_run(tmp_path, out)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    _assert_all_gone(workers, 10, "workers outlived the killed run")
    assert not (out / "report.json").exists()
    assert [p for p in os.listdir(out) if p.startswith(".neardup-tmp")]     # the dead run's work folder
    src = write_jsonl(tmp_path / "small.jsonl")
    run_dedup([str(src)], str(out), DedupConfig(workers=1, quiet=True))
    accounted(out, 12)
    assert not [p for p in os.listdir(out) if p.startswith(".neardup-tmp")]


@pytest.mark.skipif(cpu_count() < 2, reason="needs 2 CPUs for 2 workers")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_stops_the_workers_and_removes_the_work_folder(tmp_path, sig):
    out = tmp_path / "o"
    proc, workers = _busy_run(tmp_path, out)
    os.kill(proc.pid, sig)
    try:
        proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()
    _assert_all_gone(workers, 10, "workers outlived the stopped run")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr.read().decode()
    assert not out.exists()               # nothing of the stopped run is left, not even the folder it made


def test_workers_are_capped_at_the_usable_cpus(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl")
    code, _, err = cli("dedup", src, "-o", tmp_path / "o", "--workers", "1000")
    assert code == 0
    assert f"--workers 1000 capped at {cpu_count()}" in err
    assert DedupConfig(workers=1000).resolved().workers == cpu_count()


def _limit_file_size(limit: int):
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)    # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return pre


def test_a_write_failure_is_one_line_and_keeps_the_previous_result(tmp_path):
    """Disk full, as the kernel reports it: every write past RLIMIT_FSIZE fails (EFBIG), so the run's
    outputs cannot be written while the previous (smaller) result stays in place."""
    small = write_jsonl(tmp_path / "small.jsonl")
    out = tmp_path / "o"
    run_dedup([str(small)], str(out), DedupConfig(workers=1, quiet=True, html=False))
    before = snapshot(out)
    big = tmp_path / "big.jsonl"
    big.write_bytes(jsonl_bytes([f"unique document number {i} " + " ".join(f"t{i}u{j}" for j in range(30))
                                 for i in range(3000)]))
    res = cli_proc("dedup", big, "-o", out, "--workers", "1", "--no-html", preexec_fn=_limit_file_size(200_000))
    err = res.stderr.decode()
    assert res.returncode == 1, err
    line = one_line_error(err)
    assert "cannot write the outputs" in line and "File too large" in line
    assert snapshot(out) == before
    assert not [p for p in os.listdir(out) if p.startswith(".neardup-tmp")]


def test_a_full_disk_while_spooling_stdin_is_named(tmp_path):
    out = tmp_path / "o"
    data = jsonl_bytes([f"doc {i} " + "x" * 200 for i in range(2000)])
    res = cli_proc("dedup", "-", "-o", out, "--workers", "1", input=data, preexec_fn=_limit_file_size(100_000))
    assert res.returncode == 1
    line = one_line_error(res.stderr.decode())
    assert "cannot store a copy of <stdin>" in line and "File too large" in line
    assert not out.exists()


def _stop_run_at(tmp_path, big, sig, delay: float):
    out = tmp_path / f"o-{sig}-{delay}"
    proc = subprocess.Popen([sys.executable, "-m", "neardup", "dedup", str(big), "-o", str(out), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not _children(proc.pid) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)                     # signing has started
    time.sleep(delay)
    workers = _children(proc.pid)
    os.kill(proc.pid, sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"the run did not end within 30 s of {signal.Signals(sig).name} at {delay} s")
    _assert_all_gone(workers, 10, "workers outlived the stopped run")
    return proc.returncode, err.decode(), out


@pytest.mark.skipif(cpu_count() < 2, reason="needs 2 CPUs for 2 workers")
def test_stopping_a_run_at_any_moment_ends_it_promptly(tmp_path):
    """A run stopped while results (about 1 MB a batch) are in flight: the pool lets running batches
    finish instead of killing a worker halfway through sending one (which left the process waiting
    forever at exit), and the process ends with 128 + the signal."""
    big = tmp_path / "big.jsonl"
    big.write_bytes(jsonl_bytes([f"document number {i} " + " ".join(f"v{(i * 7 + j) % 5000}" for j in range(60))
                                 for i in range(150000)]))
    for sig in (signal.SIGTERM, signal.SIGINT):
        for delay in (0.0, 0.3, 0.7):
            code, err, out = _stop_run_at(tmp_path, big, sig, delay)
            if code == 0:
                continue                         # finished before the signal: nothing to check
            assert code == 128 + sig, err
            assert "Traceback" not in err
            assert not out.exists() or os.listdir(out) == []


@pytest.mark.skipif(cpu_count() < 2, reason="needs 2 CPUs for 2 workers")
def test_a_worker_killed_from_outside_is_one_line(tmp_path):
    out = tmp_path / "o"
    proc, workers = _busy_run(tmp_path, out)
    os.kill(workers[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "a signing worker process died" in one_line_error(err.decode())
    _assert_all_gone(workers, 10, "the other worker outlived the failed run")
    assert not out.exists()


def test_a_full_disk_while_the_band_spills_is_one_line(tmp_path):
    """The borderline band's sets go to a file in the run's work folder: a write failure there (disk
    full: EFBIG past RLIMIT_FSIZE), in a signing worker appending to it or in this process, is the
    run's write error in one line, and nothing is left behind (the staged folder is removed, the
    spill file with it)."""
    rng = random.Random(4)
    vocab = [f"w{i}" for i in range(3000)]
    texts = []
    for _ in range(600):
        words = [rng.choice(vocab) for _ in range(60)]
        texts.append(" ".join(words))
        words[rng.randrange(60)] = "changed"
        texts.append(" ".join(words))          # J ≈ 0.85 on word 5-grams: inside the band
    src = tmp_path / "pairs.jsonl"
    src.write_bytes(jsonl_bytes(texts))
    # the outputs fit (each file < 300 kB), and so do the 1,200 signatures of 32 slots (154 kB); the
    # band's sets (540 kB) do not
    limit = _limit_file_size(300_000)
    fits = cli_proc("dedup", src, "-o", tmp_path / "o1", "--workers", "2", "--no-html", "--verify", "minhash",
                    "--num-perm", "32", preexec_fn=limit)
    assert fits.returncode == 0, fits.stderr.decode()
    out = tmp_path / "o"
    res = cli_proc("dedup", src, "-o", out, "--workers", "2", "--no-html", "--num-perm", "32", preexec_fn=limit)
    err = res.stderr.decode()
    assert res.returncode == 1, err
    line = one_line_error(err)
    assert "cannot write the outputs" in line and "File too large" in line
    assert not out.exists() or not [p for p in os.listdir(out) if p.startswith(".neardup-tmp")]
    ok = cli_proc("dedup", src, "-o", tmp_path / "o2", "--workers", "2", "--no-html")      # without the limit
    assert ok.returncode == 0 and json.loads((tmp_path / "o2" / "report.json").read_text())["borderline"]["pairs"] > 100


def test_a_full_disk_while_the_workers_write_the_signatures_is_one_line(tmp_path):
    """With several workers the MinHash slots are written by the workers into a file in the run's work
    folder: a write failure there (EFBIG past RLIMIT_FSIZE: 1,200 signatures of 128 slots are 614 kB)
    is the run's write error in one line, and the staged folder goes with it; one worker (no such
    file) fits under the same limit."""
    rng = random.Random(6)
    vocab = [f"w{i}" for i in range(3000)]
    src = tmp_path / "in.jsonl"
    src.write_bytes(jsonl_bytes([" ".join(rng.choice(vocab) for _ in range(40)) for _ in range(1200)]))
    limit = _limit_file_size(300_000)
    one = cli_proc("dedup", src, "-o", tmp_path / "o1", "--workers", "1", "--no-html", preexec_fn=limit)
    assert one.returncode == 0, one.stderr.decode()
    out = tmp_path / "o"
    res = cli_proc("dedup", src, "-o", out, "--workers", "2", "--no-html", preexec_fn=limit)
    err = res.stderr.decode()
    assert res.returncode == 1, err
    line = one_line_error(err)
    assert "cannot write the outputs" in line and "File too large" in line
    assert not out.exists() or not [p for p in os.listdir(out) if p.startswith(".neardup-tmp")]


def test_a_stop_inside_a_kernel_dispatch_is_a_stop_not_a_bug():
    """Ctrl-C while numba loads a kernel from its cache surfaces as a SystemError raised from the
    KeyboardInterrupt: the CLI finds the stop in the chain (and only a stop)."""
    from neardup.cli.group import _stop_in

    def dispatch_stopped():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as stop:
            raise SystemError("CPUDispatcher(<function k>) returned a result with an exception set") from stop

    with pytest.raises(SystemError) as info:
        dispatch_stopped()
    assert isinstance(_stop_in(info.value), KeyboardInterrupt)
    assert _stop_in(SystemError("a real bug")) is None
    assert _stop_in(SystemError("wrapped").with_traceback(None)) is None


_STOP_IN_A_CALLBACK = r"""
import ctypes, os, signal, sys, time
import neardup.cli as cli

signal.signal(signal.SIGINT, signal.default_int_handler)
SIG = int(sys.argv[1])

@cli.main.command("stop-in-callback")
def stop_in_callback():
    def callback():                        # Python called from C, as llvmlite calls numba's cache
        os.kill(os.getpid(), SIG)
        end = time.monotonic() + 0.3
        while time.monotonic() < end:      # the handler runs here, inside the callback
            pass
    ctypes.CFUNCTYPE(None)(callback)()
    time.sleep(20)
    print("the stop was lost")

sys.argv = ["neardup", "stop-in-callback"]
cli.entry()
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_inside_a_callback_from_c_still_stops_the_run(tmp_path, sig):
    """Ctrl-C or SIGTERM whose handler runs inside Python called back from C (llvmlite's object-cache
    callback while numba compiles) raises where the exception cannot cross the C frames: the run
    still stops with 128 + the signal, at once and without a printed traceback, rather than printing
    "Exception ignored" and going on to its end."""
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-c", _STOP_IN_A_CALLBACK, str(int(sig))], capture_output=True,
                         timeout=60)
    err = res.stderr.decode()
    assert res.returncode == 128 + sig, err
    assert b"the stop was lost" not in res.stdout
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert time.monotonic() - start < 15


def test_a_full_disk_while_the_substrings_text_is_spooled_is_one_line(tmp_path):
    """``--method substrings`` appends every document's bytes to a file in the run's work folder as
    pass 1 goes: a write failure there (EFBIG past RLIMIT_FSIZE) is the run's write error in one
    line, and nothing is left behind. Every output of the same run fits under the limit (the
    boilerplate is removed from 2,000 of its 2,001 copies), so the spool is what failed."""
    boiler = "This page uses cookies to improve your experience; by reading on you accept them. " * 6
    src = tmp_path / "in.jsonl"
    src.write_bytes(jsonl_bytes([f"{boiler}page {i}" for i in range(2001)]))
    limit = 450_000
    ok = cli_proc("dedup", src, "-o", tmp_path / "o1", "--method", "substrings", "--min-length", "50",
                  "--workers", "2", "--no-html")
    assert ok.returncode == 0, ok.stderr.decode()
    sizes = [os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp_path / "o1") for f in fs]
    assert max(sizes) < limit < len(boiler) * 2001
    out = tmp_path / "o"
    res = cli_proc("dedup", src, "-o", out, "--method", "substrings", "--min-length", "50", "--workers", "2",
                   "--no-html", preexec_fn=_limit_file_size(limit))
    err = res.stderr.decode()
    assert res.returncode == 1, err
    line = one_line_error(err)
    assert "cannot write the outputs" in line and "File too large" in line
    assert not out.exists() or not [p for p in os.listdir(out) if p.startswith(".neardup-tmp")]
