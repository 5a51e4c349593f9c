"""Helpers for the hostile-input, output-folder and fault tests: small generated corpora, the CLI
run in-process or as a real process, and a way to drop root's override of file permissions."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from neardup.cli import main

BASE = ("the licence grants permission to use copy modify merge publish distribute sublicense and sell copies "
        "of the software subject to the following conditions stated in this notice")
UNRELATED = ["an unrelated text about gardening tomatoes basil and the summer weather in the north",
             "stock markets rose on tuesday as investors weighed the central bank decision on rates",
             "the recipe needs two cups of flour one egg a pinch of salt and some warm milk to start"]


def docs(n: int = 12) -> list[str]:
    """``n`` documents: near-copies of BASE every third row, the rest distinct."""
    out = []
    for i in range(n):
        if i % 3 == 0:
            out.append(BASE + f" copy {i // 3}")
        else:
            out.append(UNRELATED[i % 3] + f" number {i} " + " ".join(f"w{i}x{j}" for j in range(8)))
    return out


def jsonl_bytes(texts, ids=None, extra: bool = False) -> bytes:
    rows = []
    for i, t in enumerate(texts):
        rec = {"text": t} if ids is None else {"id": ids[i], "text": t}
        if extra:
            rec["n"] = i
        rows.append(json.dumps(rec, ensure_ascii=False))
    return ("\n".join(rows) + "\n").encode("utf-8")


def write_jsonl(path: Path, texts=None, ids=None) -> Path:
    path.write_bytes(jsonl_bytes(docs() if texts is None else texts, ids))
    return path


def cli(*args, input=None):
    """The CLI in-process: (exit code, stdout, stderr)."""
    res = CliRunner().invoke(main, [str(a) for a in args], input=input)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def cli_proc(*args, input: bytes | None = None, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """The CLI as its own process (what a shell runs)."""
    return subprocess.run([sys.executable, "-m", "neardup.cli", *map(str, args)], input=input, capture_output=True,
                          timeout=timeout, **kw)


def one_line_error(err: str) -> str:
    """The error a run printed: exactly one line starting with 'Error:' and no traceback."""
    assert "Traceback" not in err, err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    return lines[0]


def error_line(err: str) -> str:
    """The one 'Error:' line of a refusal (click's usage lines may stand before it), no traceback."""
    assert "Traceback" not in err, err
    lines = [x for x in err.splitlines() if x.startswith("Error: ")]
    assert len(lines) == 1, err
    return lines[0]


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def clusters(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "clusters.jsonl").read_text(encoding="utf-8").splitlines()]


def accounted(out: Path, n_rows: int) -> dict:
    rep = report(out)
    c = rep["counts"]
    assert c["input_rows"] == n_rows and c["kept"] + c["removed"] + c["skipped_records"] == n_rows
    recs = clusters(out)
    assert [r["row"] for r in recs] == list(range(n_rows))
    assert sum(r["kept"] for r in recs) == c["kept"]
    return rep


def snapshot(root: Path) -> dict:
    """Every file under ``root`` (relative path → bytes), to prove a folder untouched."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def without_root(fn, *args):
    """``fn(*args)`` with file permissions enforced: directly when not root; as root, in a forked child
    that gives up root (uid/gid 65534) first. Returns ``("ok", value)`` or ``("err", "Type: message")``."""
    if os.geteuid() != 0:
        try:
            return "ok", fn(*args)
        except Exception as exc:
            return "err", f"{type(exc).__name__}: {exc}"
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child)
        os.close(r)
        try:
            os.setgid(65534)
            os.setuid(65534)
            res = ("ok", fn(*args))
        except BaseException as exc:
            res = ("err", f"{type(exc).__name__}: {exc}")
        try:
            data = pickle.dumps(res)
        except Exception:
            data = pickle.dumps(("ok", repr(res[1])))
        os.write(w, data)
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    return pickle.loads(b"".join(chunks))
