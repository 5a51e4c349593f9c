"""The Python API as a newcomer meets it: results that print as a summary, the guide's "list of
strings → kept mask" recipe as written, and one notice on the first use that compiles kernels."""
from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
from numba.core import event

import neardup
from neardup import _cache
from neardup.config import DedupConfig

ROOT = Path(__file__).resolve().parents[1]


def test_duplicate_result_and_clusters_print_a_summary_not_arrays():
    rng = np.random.default_rng(3)
    fps = rng.integers(0, 2**63, size=20_000, dtype=np.uint64)
    fps[1::7] = fps[::7][: fps[1::7].shape[0]]                 # identical copies: removed rows, pairs
    fps[2::11] ^= np.uint64(1)                                  # near copies, 1 bit away from a neighbour
    found = neardup.find_simhash_duplicates(fps, k=3)
    kept = int(found.clusters.kept.sum())
    assert 0 < kept < 20_000 and found.pairs_lo.shape[0] > 0
    text = repr(found)
    assert text == (f"DuplicateResult(rows=20000, clusters={kept}, removed={20_000 - kept}, "
                    f"pairs={found.pairs_lo.shape[0]}, candidates={found.candidates})")
    assert str(found) == text and "array" not in text and len(text) < 120
    assert repr(found.clusters) == f"Clusters(rows=20000, clusters={kept}, removed={20_000 - kept})"


def test_summary_of_no_documents():
    found = neardup.find_simhash_duplicates(np.zeros(0, dtype=np.uint64), k=3)
    assert repr(found) == "DuplicateResult(rows=0, clusters=0, removed=0, pairs=0, candidates=0)"
    assert repr(found.clusters) == "Clusters(rows=0, clusters=0, removed=0)"


def test_guide_kept_mask_recipe_runs_as_written():
    """docs/guide/python.md's first recipe, run as written: what it prints is what its comments say."""
    text = (ROOT / "docs" / "guide" / "python.md").read_text(encoding="utf-8")
    code = re.search(r"<!-- example: kept-mask -->\s*```python\n(.*?)```", text, re.S).group(1)
    env: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "python.md kept-mask", "exec"), env)
    printed = out.getvalue().splitlines()
    assert env["found"].clusters.kept.tolist() == [True, False, True, False]
    assert env["kept_docs"] == [env["docs"][0], env["docs"][2]]
    promised = [m.group(1) for m in re.finditer(r"^print\(found\)\s+# (.*)$", code, re.M)]
    assert promised == [printed[0]] == [repr(env["found"])]
    assert printed[1] == "[ True False  True False]"


def _fake_compile(module: str) -> None:
    """numba's ``numba:compile`` event for a kernel of ``module``, as a cache miss fires it."""
    dispatcher = types.SimpleNamespace(py_func=types.SimpleNamespace(__module__=module))
    with event.trigger_event("numba:compile", data={"dispatcher": dispatcher, "args": (), "return_type": None}):
        pass


def test_first_compile_of_a_neardup_kernel_logs_one_notice(monkeypatch, caplog):
    monkeypatch.setattr(_cache, "_noticed", False)
    with caplog.at_level(logging.INFO, logger="neardup.compile"):
        _fake_compile("someone_else.kernels")           # not ours: nothing said
        assert caplog.records == []
        _fake_compile("neardup.kernels.minhash")
        _fake_compile("neardup.kernels.simhash")
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("neardup.compile", logging.WARNING, _cache.COMPILE_NOTICE)]


def test_the_commands_warm_up_step_says_it_instead(monkeypatch, caplog, tmp_path):
    """A command's warm-up (dedup, pairs) gives its own message (or none, quiet): no library notice
    on top when its small run compiles."""
    from neardup.engines.local import warmup

    monkeypatch.setenv("NEARDUP_WARMUP", "1")                  # (the suite turns the step off)
    monkeypatch.setattr(_cache, "_noticed", False)
    monkeypatch.setattr(warmup, "stamp_path", lambda cfg: str(tmp_path / "stamp"))
    monkeypatch.setattr(warmup, "run_dedup", lambda *a, **k: _fake_compile("neardup.kernels.hashing"))
    with caplog.at_level(logging.INFO, logger="neardup.compile"):
        assert warmup.warm_up(DedupConfig(method="exact").resolved(), announce=False) is not None
    assert caplog.records == [] and (tmp_path / "stamp").is_file()


_FIRST_USE = """
import logging, sys
import numpy as np
import neardup
from numba import njit
if sys.argv[1] == "silenced":
    logging.getLogger("neardup.compile").setLevel(logging.ERROR)
a = np.arange(50, dtype=np.uint64)
neardup.hamming_array(a, a[::-1])
neardup.hamming_array(a.view(np.int64), a)          # another signature: a second compile
njit(lambda x: x + 1)(1)                            # the user's own kernel: not ours to announce
print("done")
"""


def test_first_use_on_a_fresh_cache_says_so_once_on_stderr(tmp_path):
    """A real first use (NUMBA_CACHE_DIR empty): one notice on stderr however many kernels compile;
    the same code again, its kernels now cached: none; silenced through logging: none."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def run(*args):
        res = subprocess.run([sys.executable, "-c", _FIRST_USE, *args], env=env, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0 and res.stdout == "done\n", res.stderr
        return res.stderr

    first = run("plain")
    assert first.count(_cache.COMPILE_NOTICE) == 1 and first.strip() == _cache.COMPILE_NOTICE, first
    assert _cache.COMPILE_NOTICE not in run("plain")
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache2")
    assert _cache.COMPILE_NOTICE not in run("silenced")


def test_serve_logs_the_notice_in_its_own_format(monkeypatch, capsys):
    """``neardup serve --log-format json``: every stderr line is a JSON object, the notice of a first
    request that compiles too."""
    import json

    from neardup.cli.serve import _log_lines

    loggers = [logging.getLogger(n) for n in ("neardup.service", "uvicorn", "neardup.compile", "neardup.service.access")]
    saved = [(g.handlers[:], g.propagate, g.level) for g in loggers]
    monkeypatch.setattr(_cache, "_noticed", False)
    try:
        _log_lines("json", access_log=True)
        _fake_compile("neardup.index.probe")
    finally:                    # (the loggers as they were, for the tests after this one)
        for g, (handlers, propagate, level) in zip(loggers, saved):
            g.handlers[:], g.propagate = handlers, propagate
            g.setLevel(level)
    lines = capsys.readouterr().err.splitlines()
    assert [json.loads(line)["message"] for line in lines] == [_cache.COMPILE_NOTICE]
    assert json.loads(lines[0])["level"] == "warning"
