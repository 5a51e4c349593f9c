"""What the benchmarks share: where data and results live, the corpora built on demand, results
written to benchmarks/out/, and a command timed with its peak memory.

Benchmarks run as ``python benchmarks/NAME.py``, so this folder is on ``sys.path`` and they
``from common import ...``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
OUT = os.path.join(HERE, "out")
CORPUS = os.path.join(DATA, "corpus.jsonl")
SHARED = os.path.join(HERE, "..", "..", "shared")


def corpus(path: str = CORPUS) -> str:
    """The real corpus (≈ 92 MB of copyright files and man pages of this machine), built by
    build_corpus.py when missing."""
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(HERE, "build_corpus.py"), "--out", path], check=True)
    return path


def synthetic(n: int, path: str | None = None) -> str:
    """The synthetic corpus of ``n`` documents (build_synthetic.py; deterministic), built when missing."""
    path = path or os.path.join(DATA, f"synthetic_{n}.jsonl")
    if not os.path.exists(path):
        bigger = sorted(int(f[10:-6]) for f in os.listdir(DATA) if f.startswith("synthetic_") and f.endswith(".jsonl")
                        and f[10:-6].isdigit() and int(f[10:-6]) > n)
        if bigger:          # the build is sequential: its first n lines are the corpus of n documents
            with open(os.path.join(DATA, f"synthetic_{bigger[0]}.jsonl"), "rb") as src, open(path + ".tmp", "wb") as dst:
                for _ in range(n):
                    dst.write(src.readline())
            os.replace(path + ".tmp", path)
            return path
        corpus()
        subprocess.run([sys.executable, os.path.join(HERE, "build_synthetic.py"), "--n", str(n), "--out", path],
                       check=True)
    return path


def zh_pages(shared: str = SHARED) -> list[str]:
    """The 100 Chinese man pages of ../shared (zh_CN, then zh_TW; the same name is the same page)."""
    import glob

    root = os.path.join(shared, "corpora", "manpages_zh_sample")
    texts = []
    for sub in ("zh_CN", "zh_TW"):
        for path in sorted(glob.glob(os.path.join(root, sub, "*"))):
            with open(path, "rb") as fh:
                texts.append(fh.read().decode("utf-8", errors="replace"))
    if not texts:
        raise SystemExit(f"no Chinese man pages under {root}")
    return texts


def write_result(name: str, obj) -> str:
    """``obj`` as indented JSON in benchmarks/out/NAME (the folder made when missing); its path."""
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2)
    return path


def neardup_cli() -> str:
    """The ``neardup`` console script of the running interpreter's environment."""
    return os.path.join(os.path.dirname(sys.executable), "neardup")


def timed(cmd: list[str]) -> dict:
    """Wall seconds and peak resident memory (MB, of the largest process of the command's tree that
    was waited for) of a command, measured by /usr/bin/time; stops the benchmark if it fails."""
    res = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M", *cmd], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stderr[-3000:]}")
    line = [x for x in res.stderr.splitlines() if x.startswith("TIME ")][-1]
    _, wall, rss = line.split()
    return {"wall_s": float(wall), "peak_rss_MB": round(int(rss) / 1024)}
