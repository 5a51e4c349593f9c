"""``neardup sign --format parquet|npy`` on the kernels compiled ahead of time (:mod:`neardup.kernels.aot`,
:mod:`neardup.engines.aot_sign`, the console script's :mod:`neardup._start`).

The contract: the same bytes as the JIT path, whatever the input; the JIT path (with its errors)
for whatever the fast path does not cover; never numba imported when it applies; nothing left
behind when it is stopped."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from neardup import _start
from neardup.engines import aot_sign
from neardup.kernels import aot

ROOT = Path(__file__).resolve().parents[1]
DEBIAN = ROOT / "examples" / "data" / "debian_copyright.jsonl.gz"
TEXTS = ["The quick brown fox jumps over the lazy dog, again and again and again and again.",
         "Ｆｕｌｌ－ｗｉｄｔｈ ｔｅｘｔ and the ﬁ ligature fold under NFKC, as does ½ and ㎏ here.",
         "中文文本也要测试一下，看看分词和签名是否正常工作。", "", "one", "tab\tand\nnew line \"quoted\" \\ end",
         "Straße ΣΊΣΥΦΟΣ İstanbul ǅ Ⅻ and more words to make shingles of five words",
         "e\u0301 composed by NFKC, " * 40, "\u2028line separator\u2029 and \ud7ff edge", "x " * 3000]


@pytest.fixture(scope="module")
def built():
    """The module built for this machine (about 7 s the first time; CI builds it here)."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: the ahead-of-time signer cannot be built (sign keeps the JIT kernels)")
    _, reason = aot.build()
    assert reason is None, reason
    mod = aot.load()
    assert mod is not None
    return mod


def _lines(texts, ids=None, ascii_=None) -> bytes:
    out = []
    for i, t in enumerate(texts):
        rec = {"text": t} if ids is None else {"id": ids[i], "text": t}
        out.append(json.dumps(rec, ensure_ascii=(i % 2 == 0) if ascii_ is None else ascii_))
    return ("\n".join(out) + "\n").encode("utf-8")


def _debian(tmp_path: Path) -> Path:
    dst = tmp_path / "debian.jsonl"
    with gzip.open(DEBIAN, "rb") as src, open(dst, "wb") as fh:
        shutil.copyfileobj(src, fh)
    return dst


def _run(*args, aot_on=True, timeout=300, **kw) -> subprocess.CompletedProcess:
    """The console script's entry point (``python -m neardup``), with or without the fast path."""
    env = dict(os.environ, NEARDUP_AOT="1" if aot_on else "0")
    env.update(kw.pop("env", {}))
    return subprocess.run([sys.executable, "-m", "neardup", *map(str, args)], capture_output=True, timeout=timeout,
                          env=env, **kw)


def _outputs(path: Path, fmt: str) -> list[bytes]:
    files = [path] + ([path.with_name(path.name[:-4] + ".ids.jsonl")] if fmt == "npy" else [])
    return [f.read_bytes() if f.exists() else None for f in files]


# -- the kernels ----------------------------------------------------------------------------------------

def test_the_compiled_kernels_equal_the_jit_kernels(built, tmp_path):
    from neardup._seeds import scheme_salt
    from neardup.kernels import jsonl, minhash

    data = np.frombuffer(_debian(tmp_path).read_bytes() + _lines(TEXTS, [f"t{i}" for i in range(len(TEXTS))]), np.uint8)
    keys = (np.frombuffer(b"text", np.uint8).copy(), np.frombuffer(b"id", np.uint8).copy())
    got = built.extract_fields(data, 0, 500, 4300, *keys, True)
    want = jsonl.extract_fields(data, 0, 500, 4300, *keys, True)
    assert got[0] and got[1] == want[1] > 500
    for a, b in zip(got, want):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    cls, slot, utf8, unsafe, leads = aot.load_tables()
    for k, seed, n in [(128, 1, 5), (64, 7, 3), (256, 2**64 - 1, 1)]:
        args = (cls, slot, utf8, n, np.uint64(0), k, scheme_salt(seed))
        for check in (True, False):
            va, sa = built.oph_word_batch(got[2], got[3], *args, check, unsafe, leads)
            vb, sb = minhash.oph_word_batch(want[2], want[3], *args, check, unsafe, leads)
            assert np.array_equal(sa, sb)
            ok = sa >= 0                   # (a flagged document's row is left for the caller)
            assert np.array_equal(va[ok], vb[ok])
            assert (~ok).any() == check    # the debian corpus has documents NFKC changes
    # the saved tables are the ones the package builds
    for saved, fresh in zip(aot.load_tables(), aot.word_tables()):
        assert np.array_equal(saved, fresh) and saved.dtype == fresh.dtype


def test_the_plain_python_salt_is_the_kernels_splitmix():
    from neardup._seeds import SALT_TAG, scheme_salt
    from neardup.kernels.hashing import splitmix64_array

    rng = np.random.default_rng(5)
    for seed in [0, 1, 2, 2**63, 2**64 - 1, *rng.integers(0, 2**63, 20).tolist()]:
        want = splitmix64_array(np.uint64(seed) ^ np.uint64(SALT_TAG), 1)[0]
        assert scheme_salt(seed) == want and type(scheme_salt(seed)) is np.uint64


# -- the same bytes as the JIT path --------------------------------------------------------------------

CASES = [
    # (name, files: list of (texts, ids), options)
    ("plain", [(TEXTS, None)], []),
    ("int ids", [(TEXTS, list(range(100, 100 + len(TEXTS))))], ["--id-field", "id"]),
    ("str ids", [(TEXTS, [f"doc-{i}-é" for i in range(len(TEXTS))])], ["--id-field", "id"]),
    ("k seed ngram", [(TEXTS, None)], ["--num-perm", "64", "--seed", "7", "--ngram", "3"]),
    ("several files", [(TEXTS, None), (TEXTS[::-1], None), (TEXTS[:3], None)], ["--workers", "3"]),
    ("text field", [(TEXTS, None)], ["--text-field", "text", "--input-format", "jsonl", "--workers", "1"]),
]


@pytest.mark.parametrize("fmt", ["parquet", "npy"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_fast_path_writes_what_the_jit_path_writes(built, tmp_path, case, fmt):
    _, files, opts = case
    inputs = []
    for k, (texts, ids) in enumerate(files):
        p = tmp_path / f"in{k}.jsonl"
        p.write_bytes(_lines(texts, ids))
        inputs.append(p)
    outs = {}
    for on in (True, False):
        out = tmp_path / f"{'aot' if on else 'jit'}.{fmt}"
        r = _run("sign", *inputs, "-o", out, "--format", fmt, *opts, aot_on=on)
        assert r.returncode == 0 and r.stderr == b"", r.stderr
        outs[on] = _outputs(out, fmt)
    assert outs[True] == outs[False] and outs[True][0] is not None
    # and it was the fast path that wrote them (the console script reads its arguments so)
    opts_read = _start.parse_sign([*map(str, inputs), "-o", str(tmp_path / f"again.{fmt}"), "--format", fmt, *opts])
    assert opts_read is not None and _start.fast_sign(opts_read) is True
    assert _outputs(tmp_path / f"again.{fmt}", fmt) == outs[False]


@pytest.mark.parametrize("fmt", ["parquet", "npy"])
def test_a_real_corpus_cut_in_many_pieces_signs_as_the_jit_path(built, tmp_path, fmt, monkeypatch):
    src = _debian(tmp_path)
    jit = tmp_path / f"jit.{fmt}"
    r = _run("sign", src, "-o", jit, "--format", fmt, aot_on=False)
    assert r.returncode == 0, r.stderr
    monkeypatch.setattr(aot_sign, "MAX_PIECE", 1 << 16)     # pieces of 16-64 KiB: dozens, for three processes
    monkeypatch.setattr(aot_sign, "_MIN_PIECE", 1 << 14)
    fast = tmp_path / f"fast.{fmt}"
    got = aot_sign.sign_files([str(src)], str(fast), fmt, workers=3, mod=built)
    assert got is not None and got["documents"] == 550 and got["skipped"] == []
    assert _outputs(fast, fmt) == _outputs(jit, fmt)
    # the ids name the file as it was given, and the lines
    if fmt == "parquet":
        ids = pq.read_table(fast)["id"].to_pylist()
        assert ids[0] == f"{src}:1" and ids[-1] == f"{src}:550"


def test_pieces_are_runs_of_whole_lines_that_cover_each_file(tmp_path, monkeypatch):
    monkeypatch.setattr(aot_sign, "_MIN_PIECE", 1)
    rng = np.random.default_rng(3)
    paths = []
    for k in range(3):
        lines = [b"x" * int(n) for n in rng.integers(0, 5000, 300)] + [b"y" * 200_000]   # a line longer than a piece
        rng.shuffle(lines)
        p = tmp_path / f"f{k}.jsonl"
        p.write_bytes(b"\n".join(lines) + (b"\n" if k != 1 else b""))                   # file 1: no last newline
        paths.append(str(p))
    for workers in (1, 2, 7, 64):
        pieces = aot_sign._pieces(paths, workers)
        for i, path in enumerate(paths):
            data = Path(path).read_bytes()
            mine = [(a, b) for j, a, b in pieces if j == i]
            assert mine[0][0] == 0 and mine[-1][1] == len(data)
            assert all(b == c for (_, b), (c, _) in zip(mine[:-1], mine[1:]))
            assert all(data[a - 1:a] == b"\n" for a, _ in mine[1:])
            assert all(b > a for a, b in mine)


# -- what it does not cover goes to the JIT path, unchanged --------------------------------------------

def _same_either_way(tmp_path: Path, args: list, fmt: str = "parquet", stdin: bytes | None = None):
    got = {}
    for on in (True, False):
        out = tmp_path / f"{'aot' if on else 'jit'}.{fmt}"
        r = _run("sign", *args, "-o", out, "--format", fmt, aot_on=on, input=stdin)
        err = r.stderr.decode().replace(str(out), "OUT")
        got[on] = (r.returncode, err, _outputs(out, fmt))
    assert got[True] == got[False]
    return got[True]


@pytest.mark.parametrize("body", [
    b'{"text": "a blank line follows"}\n\n{"text": "and a document"}\n',
    b'{"text": null}\n{"text": "after a null text"}\n',
    b'{"text": "fine"}\n{"text": 5}\n',
    b'{"text": "fine"}\nnot json at all\n',
    b'{"text": "two"} {"text": "on one line"}\n',
    b'{"text": "bad utf-8 \xff here"}\n',
    b'{"text": "lone surrogate \\ud800"}\n',
    b'\xef\xbb\xbf',                                       # a byte-order mark alone
    b'{"id": 1, "text": "a"}\n{"id": "two", "text": "b"}\n',
])
def test_lines_the_fast_path_leaves_get_the_jit_paths_answer(built, tmp_path, body):
    src = tmp_path / "in.jsonl"
    src.write_bytes(body)
    code, err, _ = _same_either_way(tmp_path, [src, "--id-field", "id"] if b'"id"' in body else [src])
    if b"\n\n" in body or b"null" in body:
        assert code == 0
    _same_either_way(tmp_path, [src, "--on-error", "skip"])


def test_a_bom_crlf_and_no_last_newline_sign_on_the_fast_path(built, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + _lines(TEXTS).replace(b"\n", b"\r\n").rstrip(b"\r\n"))
    assert aot_sign.sign_files([str(src)], str(tmp_path / "x.parquet"), "parquet", mod=built) is not None
    code, err, outs = _same_either_way(tmp_path, [src])
    assert code == 0 and outs[0] is not None


@pytest.mark.parametrize("case", ["gzip", "stdin", "folder", "output is an input", "output is a folder",
                                  "output folder missing", "summary", "other scheme", "empty file", "no such file",
                                  "help", "npy without .npy", "twice"])
def test_commands_the_fast_path_declines_run_as_before(built, tmp_path, case):
    src = tmp_path / "in.jsonl"
    src.write_bytes(_lines(TEXTS))
    stdin = None
    if case == "gzip":
        gz = tmp_path / "in.jsonl.gz"
        gz.write_bytes(gzip.compress(src.read_bytes()))
        args = [gz]
    elif case == "stdin":
        args, stdin = ["-"], src.read_bytes()
    elif case == "folder":
        folder = tmp_path / "docs"
        folder.mkdir()
        for i, t in enumerate(TEXTS[:4]):
            (folder / f"{i}.txt").write_text(t, encoding="utf-8")
        args = [folder]
    elif case == "output is an input":
        got = [_run("sign", src, "-o", src, "--format", "parquet", aot_on=on) for on in (True, False)]
        assert got[0].returncode == got[1].returncode == 1 and got[0].stderr == got[1].stderr
        assert src.read_bytes() == _lines(TEXTS)
        return
    elif case in ("output is a folder", "output folder missing"):
        out = tmp_path if case == "output is a folder" else tmp_path / "nope" / "x.parquet"
        got = [_run("sign", src, "-o", out, "--format", "parquet", aot_on=on) for on in (True, False)]
        assert got[0].returncode == got[1].returncode != 0 and got[0].stderr == got[1].stderr
        return
    elif case == "summary":
        r = _run("sign", src, "-o", tmp_path / "s.parquet", "--format", "parquet", "--summary")
        assert r.returncode == 0 and b"ahead-of-time kernels" in r.stderr      # the CLI took it, then the fast path
        return
    elif case == "other scheme":
        args = [src, "--scheme", "bottomk"]
    elif case == "empty file":
        empty = tmp_path / "empty.jsonl"
        empty.write_bytes(b"")
        args = [empty]
    elif case == "no such file":
        args = [tmp_path / "missing.jsonl"]
    elif case == "help":
        got = [_run("sign", src, "--help", aot_on=on) for on in (True, False)]
        assert got[0].returncode == 0 and got[0].stdout == got[1].stdout and b"--format" in got[0].stdout
        return
    elif case == "npy without .npy":
        got = [_run("sign", src, "-o", tmp_path / "x.bin", "--format", "npy", aot_on=on) for on in (True, False)]
        assert got[0].returncode == got[1].returncode != 0 and got[0].stderr == got[1].stderr
        return
    else:
        args = [src, "--seed", "3", "--seed", "4"]          # the command line's rule: the last one given
    _same_either_way(tmp_path, args, stdin=stdin)


def test_the_fast_path_never_imports_numba(built, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(_lines(TEXTS))
    out = tmp_path / "s.parquet"
    code = ("import sys; sys.argv = ['neardup', 'sign', sys.argv[1], '-o', sys.argv[2], '--format', 'parquet']\n"
            "from neardup._start import main\nmain()\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite', 'click'))\n"
            "print(len(bad), bad[:5])\n")
    r = subprocess.run([sys.executable, "-c", code, str(src), str(out)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, NEARDUP_AOT="1"))
    assert r.returncode == 0 and r.stdout.startswith("0 []"), (r.stdout, r.stderr)
    assert out.exists()


def test_the_command_line_reader_takes_only_what_it_knows():
    ok = _start.parse_sign(["a.jsonl", "b.jsonl", "-o", "x.parquet", "--format=parquet", "--num-perm", "64",
                            "--seed=0", "--id-field", "id", "--workers", "0", "--jsonl"])
    assert ok == {"inputs": ["a.jsonl", "b.jsonl"], "output": "x.parquet", "fmt": "parquet", "num_perm": 64,
                  "seed": 0, "id_field": "id", "workers": 0, "input_format": "jsonl"}
    for bad in (["a.jsonl", "-o", "x"],                                  # no --format: JSON lines, the CLI's
                ["a.jsonl", "--format", "jsonl", "-o", "x"],
                ["--format", "parquet", "-o", "x"],                       # no input
                ["a.jsonl", "--format", "parquet", "-o"],                 # a missing value
                ["a.jsonl", "--format", "parquet", "-o", "--seed"],
                ["a.jsonl", "--format", "parquet", "-o", "x", "--seed", "-1"],
                ["a.jsonl", "--format", "parquet", "-o", "x", "--seed", str(2**64)],
                ["a.jsonl", "--format", "parquet", "-o", "x", "--num-perm", "0x10"],
                ["a.jsonl", "--format", "parquet", "-o", "x", "--num-perm", "0"],
                ["a.jsonl", "--format", "parquet", "-o", "x", "--scheme", "bottomk"],
                ["a.jsonl", "--format", "parquet", "-o", "x", "--summary"],
                ["a.jsonl", "--format", "parquet", "-o", "x", "--help"],
                ["a.jsonl", "--format", "parquet", "-ox"],
                ["a.jsonl", "--format", "parquet", "-o", "x", "--", "b"],
                ["a.jsonl", "--format", "parquet", "-o", "x", "-o", "y"],
                ["a.jsonl", "--format", "parquet", "-o", "x", "--jsonl", "--jsonl"]):
        assert _start.parse_sign(bad) is None, bad


# -- the build and the module --------------------------------------------------------------------------

def test_a_failed_build_is_remembered_and_a_foreign_module_is_not_loaded(tmp_path, monkeypatch):
    monkeypatch.setattr(aot, "base_folder", lambda: str(tmp_path / "aot"))
    monkeypatch.setattr(aot, "_LOADED", {})
    monkeypatch.setattr(sys, "executable", shutil.which("false") or "/bin/false")
    seconds, reason = aot.build()
    assert seconds is None and reason
    assert Path(aot.failure_path()).exists()
    assert aot.build() == (None, Path(aot.failure_path()).read_text().strip())      # not tried again
    assert aot.load() is None
    # a file where the module goes that is not a build of it (or is in a folder others may write)
    target = Path(aot.module_path())
    target.parent.mkdir(parents=True)
    target.write_bytes(b"not an ELF file")
    os.chmod(target.parent, 0o700)
    os.chmod(target.parent.parent, 0o700)
    assert aot.load() is None
    src = tmp_path / "in.jsonl"
    src.write_bytes(_lines(TEXTS))
    assert aot_sign.sign_files([str(src)], str(tmp_path / "x.parquet"), "parquet") is None
    assert not (tmp_path / "x.parquet").exists()


def test_a_module_in_a_folder_others_may_write_is_not_loaded(built, tmp_path, monkeypatch):
    monkeypatch.setattr(aot, "base_folder", lambda: str(tmp_path / "aot"))
    monkeypatch.setattr(aot, "_LOADED", {})
    target = Path(aot.module_path())
    target.parent.mkdir(parents=True)
    shutil.copy(built.__file__, target)
    os.chmod(target.parent.parent, 0o700)
    for mode, loads in ((0o777, False), (0o700, True)):
        os.chmod(target.parent, mode)
        aot._LOADED.clear()
        assert (aot.load() is not None) == loads


def test_the_key_follows_the_kernels_and_the_cpu(monkeypatch):
    k = aot.key()
    assert k == aot.key() and len(k) == 20
    monkeypatch.setattr(aot, "_cpu", lambda: "another machine")
    assert aot.key() != k


# -- stopped runs ----------------------------------------------------------------------------------------

def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("sig, code, group", [(signal.SIGTERM, 143, False), (signal.SIGINT, 130, False),
                                              (signal.SIGINT, 130, True)])
def test_a_run_stopped_while_signing_leaves_nothing(built, tmp_path, sig, code, group):
    """Stopped while its processes sign (each is paused with SIGSTOP as soon as it is seen, so the
    run cannot finish first however loaded the machine); ``group``: the signal goes to the whole
    process group, as a terminal's Ctrl-C does."""
    src = tmp_path / "big.jsonl"
    block = _debian(tmp_path).read_bytes()
    with open(src, "wb") as fh:
        for _ in range(8):
            fh.write(block)
    out = tmp_path / "out" / "s.parquet"
    out.parent.mkdir()
    out.write_bytes(b"the previous file")
    p = subprocess.Popen([sys.executable, "-m", "neardup", "sign", src, "-o", out, "--format", "parquet",
                          "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, NEARDUP_AOT="1"), start_new_session=True,
                         # SIGINT at its default, as in a terminal: a suite started in the background
                         # by a non-interactive shell passes it on ignored, and Python keeps it so
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    kids: list[int] = []
    while len(kids) < 2 and p.poll() is None and time.monotonic() < deadline:
        for kid in _children(p.pid):
            if kid not in kids:
                os.kill(kid, signal.SIGSTOP)
                kids.append(kid)
        time.sleep(0.001)
    assert len(kids) == 2, "the signing processes never started"
    if group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    assert sorted(os.listdir(out.parent)) == ["s.parquet"] and out.read_bytes() == b"the previous file"
    for kid in kids:                                  # killed and reaped by the run, not left behind
        assert not Path(f"/proc/{kid}").exists()
    if sig == signal.SIGINT:
        assert err.decode().strip() == "Aborted!"     # once, from the parent alone


def test_the_first_jit_run_builds_it_once_and_warmup_builds_it(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from neardup.cli import main

    monkeypatch.setattr(aot, "base_folder", lambda: str(tmp_path / "aot"))   # (not NUMBA_CACHE_DIR: numba rereads it)
    monkeypatch.setenv("NEARDUP_WARMUP", "1")
    monkeypatch.setattr(aot, "_LOADED", {})
    calls = []

    def fake_build(force=False):                  # a build that cannot be made here, remembered
        calls.append(force)
        os.makedirs(aot.base_folder(), exist_ok=True)
        Path(aot.failure_path()).write_text("no C compiler\n")
        return None, "no C compiler"

    monkeypatch.setattr(aot, "build", fake_build)
    src = tmp_path / "in.jsonl"
    src.write_bytes(_lines(TEXTS))
    runner = CliRunner()
    first = runner.invoke(main, ["sign", str(src), "-o", str(tmp_path / "a.parquet"), "--format", "parquet"])
    assert first.exit_code == 0 and calls == [False]
    assert "building the ahead-of-time signer" in first.stderr and "cannot be built here (no C compiler)" in first.stderr
    again = runner.invoke(main, ["sign", str(src), "-o", str(tmp_path / "b.parquet"), "--format", "parquet"])
    assert again.exit_code == 0 and calls == [False] and again.stderr == ""       # said once
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    # JSON lines output and options it does not cover never build it
    for opts in (["-o", str(tmp_path / "c.jsonl")], ["-o", str(tmp_path / "c.parquet"), "--format", "parquet",
                                                      "--scheme", "bottomk"]):
        Path(aot.failure_path()).unlink(missing_ok=True)
        assert runner.invoke(main, ["sign", str(src), *opts]).exit_code == 0 and calls == [False]
    # `neardup warmup` builds it; --force retries one that failed (a built one is valid by its key)
    Path(aot.failure_path()).write_text("no C compiler\n")
    monkeypatch.setattr(aot, "build", lambda force=False: (calls.append(force), (1.5, None))[1])
    monkeypatch.setattr("neardup.cli.warmup._warm", lambda method, force: None)
    out = runner.invoke(main, ["warmup", "--force"])
    assert out.exit_code == 0 and calls[-1] is False and "ahead-of-time signer built in 1.5 s" in out.output
    assert not Path(aot.failure_path()).exists()


@pytest.mark.parametrize("fault", ["killed", "raises", "refuses"])
def test_a_signing_process_that_fails_leaves_the_run_to_the_jit_path(built, tmp_path, monkeypatch, capfd, fault):
    src = _debian(tmp_path)
    monkeypatch.setattr(aot_sign, "_MIN_PIECE", 1 << 14)
    real = aot_sign._sign_piece

    def faulty(mod, tables, path, start, end, *rest):
        if start > 0:                        # every piece but the first
            if fault == "killed":
                os.kill(os.getpid(), signal.SIGKILL)
            if fault == "raises":
                raise MemoryError("no memory left for the piece")
            return None
        return real(mod, tables, path, start, end, *rest)

    monkeypatch.setattr(aot_sign, "_sign_piece", faulty)
    others = set(_children(os.getpid()))     # (processes earlier tests left to this one: not ours)
    out = tmp_path / "s.parquet"
    assert aot_sign.sign_files([str(src)], str(out), "parquet", workers=2, mod=built) is None
    assert not out.exists() and sorted(os.listdir(tmp_path)) == ["debian.jsonl"]
    err = capfd.readouterr().err
    if fault == "refuses":
        assert err == ""                     # the JIT path has the lines' messages; nothing to add
    else:
        assert "the ahead-of-time signer stopped" in err and "signing with the JIT kernels" in err
        assert ("was killed by SIGKILL" in err) if fault == "killed" else ("MemoryError: no memory left" in err)
    assert set(_children(os.getpid())) <= others       # every signing process reaped


def test_the_fast_paths_ranges_are_inside_the_command_lines():
    from neardup.config import DedupConfig
    from neardup.errors import ConfigError

    fields = {"num_perm": "num_perm", "seed": "seed", "ngram": "ngram", "workers": "workers",
              "batch_size": "batch_size"}
    for flag, (key, lo, hi) in _start._INTS.items():
        values = [lo] + ([hi] if hi is not None else [lo + 10**6])
        if key == "num_perm":
            values += list(range(lo, 300)) + [1000, 4096, 65535]
        for v in values:
            DedupConfig(method="minhash", **{fields[key]: v}).resolved()      # accepted there too
            assert _start.parse_sign(["a.jsonl", "--format", "parquet", "-o", "x", flag, str(v)])[key] == v
        if lo > 0 or key == "seed":
            assert _start.parse_sign(["a.jsonl", "--format", "parquet", "-o", "x", flag, str(lo - 1)]) is None
    for k in (1, 2):            # what the command line refuses, the fast path leaves to it
        with pytest.raises(ConfigError):
            DedupConfig(method="minhash", num_perm=k).resolved()


def test_more_pieces_than_a_pipe_holds(built, tmp_path, monkeypatch):
    """Every file is a piece at least: with more pieces than the queue's pipe holds (16,384 numbers;
    here pipes of one page, 1,024 numbers), the queue is fed while results are read."""
    import fcntl

    real_pipe = os.pipe

    def small_pipe():
        r, w = real_pipe()
        fcntl.fcntl(w, 1031, 4096)                  # F_SETPIPE_SZ
        return r, w

    files = []
    for i in range(1500):
        p = tmp_path / f"f{i:04d}.jsonl"
        p.write_bytes(_lines([f"document number {i} has words {i % 7} and more words to shingle"]))
        files.append(str(p))
    jit = tmp_path / "jit.parquet"
    r = _run("sign", *files, "-o", jit, "--format", "parquet", aot_on=False)
    assert r.returncode == 0, r.stderr
    monkeypatch.setattr(os, "pipe", small_pipe)
    fast = tmp_path / "fast.parquet"

    def stuck(signum, frame):
        raise TimeoutError("the fast path hung: queue and results each waiting on the other")

    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(120)
    try:
        got = aot_sign.sign_files(files, str(fast), "parquet", workers=2, mod=built)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        monkeypatch.undo()
    assert got is not None and got["documents"] == 1500
    assert fast.read_bytes() == jit.read_bytes()


def test_a_process_that_dies_mid_message(built, tmp_path, monkeypatch, capfd):
    src = _debian(tmp_path)
    real_send = aot_sign._send

    def half_then_die(fd, message):
        if message[0] == "piece":
            os.write(fd, (10**6).to_bytes(8, "little") + b"partial")
            os.kill(os.getpid(), signal.SIGKILL)
        real_send(fd, message)

    monkeypatch.setattr(aot_sign, "_send", half_then_die)
    others = set(_children(os.getpid()))
    assert aot_sign.sign_files([str(src)], str(tmp_path / "s.parquet"), "parquet", workers=2, mod=built) is None
    assert "was killed by SIGKILL mid-message" in capfd.readouterr().err
    assert set(_children(os.getpid())) <= others and not (tmp_path / "s.parquet").exists()


def test_a_build_that_cannot_write_is_said_not_raised(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from neardup.cli import main

    blocked = tmp_path / "aot"
    blocked.write_bytes(b"a file where the build folder goes")
    monkeypatch.setattr(aot, "base_folder", lambda: str(blocked))
    monkeypatch.setattr(aot, "_LOADED", {})
    seconds, reason = aot.build()
    assert seconds is None and "cannot write" in reason
    monkeypatch.setenv("NEARDUP_WARMUP", "1")
    src = tmp_path / "in.jsonl"
    src.write_bytes(_lines(TEXTS))
    res = CliRunner().invoke(main, ["sign", str(src), "-o", str(tmp_path / "s.parquet"), "--format", "parquet"])
    assert res.exit_code == 0 and (tmp_path / "s.parquet").exists()
    assert "cannot be built here (cannot write" in res.stderr


def test_a_module_below_a_folder_others_may_write_is_not_loaded(built, tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setattr(aot, "base_folder", lambda: str(shared / "cache" / "neardup-aot"))
    monkeypatch.setattr(aot, "_LOADED", {})
    target = Path(aot.module_path())
    target.parent.mkdir(parents=True, mode=0o700)
    shutil.copy(built.__file__, target)
    os.chmod(target.parent.parent, 0o700)
    for mode, loads in ((0o777, False), (0o1777, os.getuid() == 0), (0o755, True)):
        os.chmod(shared, mode)            # (sticky and writable by all: safe only when root owns it)
        aot._LOADED.clear()
        assert (aot.load() is not None) == loads, oct(mode)


def test_nfkc_of_utf8_lines_equals_pythons_nfkc_of_the_text():
    """:func:`neardup.text.nfkc.nfkc_utf8` (only lines with non-ASCII bytes decoded) against
    :func:`~neardup.text.nfkc.nfkc` of the decoded text: 20,000 seeded texts of characters NFKC
    changes, composes or leaves, line feeds anywhere (first, last, doubled)."""
    import random

    from neardup.text.nfkc import nfkc, nfkc_utf8

    rng = random.Random(7)
    alphabet = ["a", "b", " ", "\n", "\n", "é", "e\u0301", "\u0301", "ﬁ", "½", "Ｆ", "中", "\u1100\u1161", "\u11a8",
                "ß", "İ", "\u2028", "\r", "㎏", "\U0001d400"]
    changed = 0
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        want = nfkc(text).encode("utf-8")
        assert nfkc_utf8(np.frombuffer(text.encode("utf-8"), np.uint8)) == want, repr(text)
        changed += want != text.encode("utf-8")
    assert changed > 5000                    # (most texts hold something NFKC changes)
