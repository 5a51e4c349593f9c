"""The first run of a method on a machine compiles its kernels before the run starts: announced
when progress is shown, timed apart from the run's own total, and only once (a stamp)."""
import json
import time

from neardup import DedupConfig, run_dedup
from neardup.engines.local import warmup


def test_first_run_compiles_apart_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NEARDUP_WARMUP", "1")
    stamp = tmp_path / "stamp"
    monkeypatch.setattr(warmup, "stamp_path", lambda cfg: str(stamp))
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in warmup.DOCS * 2), encoding="utf-8")
    t0 = time.perf_counter()
    r1 = run_dedup([str(src)], str(tmp_path / "o1"), DedupConfig(progress="bar", workers=1))
    wall = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert "compiling its kernels once" in err and "kernels compiled in" in err
    assert stamp.exists() and r1["timings"]["compile"] > 0
    # the run's own total leaves the compile out: both fit in the call's wall time side by side
    assert r1["timings"]["total"] <= wall - r1["timings"]["compile"] + 0.05
    r2 = run_dedup([str(src)], str(tmp_path / "o2"), DedupConfig(progress="bar", workers=1))
    assert "compiling" not in capsys.readouterr().err and "compile" not in r2["timings"]
    assert (tmp_path / "o1" / "clusters.jsonl").read_bytes() == (tmp_path / "o2" / "clusters.jsonl").read_bytes()


def test_quiet_and_piped_runs_stay_silent(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NEARDUP_WARMUP", "1")
    monkeypatch.setattr(warmup, "stamp_path", lambda cfg: str(tmp_path / f"stamp-{cfg.method}"))
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in warmup.DOCS), encoding="utf-8")
    run_dedup([str(src)], str(tmp_path / "o1"), DedupConfig(method="lines", quiet=True))
    run_dedup([str(src)], str(tmp_path / "o2"), DedupConfig(method="exact"))      # stderr is not a terminal
    assert capsys.readouterr().err == ""
    assert (tmp_path / "stamp-lines").exists() and (tmp_path / "stamp-exact").exists()


def test_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv("NEARDUP_WARMUP", "0")
    monkeypatch.setattr(warmup, "stamp_path", lambda cfg: str(tmp_path / "stamp"))
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"text": "a b c"}) + "\n", encoding="utf-8")
    r = run_dedup([str(src)], str(tmp_path / "o"), DedupConfig(method="exact"))
    assert "compile" not in r["timings"] and not (tmp_path / "stamp").exists()


def test_warmup_command_compiles_once_and_on_force(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from neardup.cli import main

    monkeypatch.setenv("NEARDUP_WARMUP", "0")         # the command is explicit: it runs anyway
    monkeypatch.setattr(warmup, "stamp_path", lambda cfg: str(tmp_path / f"stamp-{cfg.method}"))
    runner = CliRunner()
    r = runner.invoke(main, ["warmup", "--method", "exact", "--method", "lines", "--jobs", "1"])
    assert r.exit_code == 0, r.output
    assert "exact: kernels compiled in" in r.output and "lines: kernels compiled in" in r.output
    assert (tmp_path / "stamp-exact").exists() and (tmp_path / "stamp-lines").exists()
    again = runner.invoke(main, ["warmup", "--method", "exact", "--jobs", "1"])
    assert again.exit_code == 0 and "exact: already compiled" in again.output
    forced = runner.invoke(main, ["warmup", "--method", "exact", "--jobs", "1", "--force"])
    assert forced.exit_code == 0 and "exact: kernels compiled in" in forced.output
    bad = runner.invoke(main, ["warmup", "--method", "cosine"])
    assert bad.exit_code == 2 and "cosine" in bad.output


def test_warmup_command_in_parallel_processes_fills_the_cache(tmp_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), NEARDUP_WARMUP="0")
    p = subprocess.run([sys.executable, "-m", "neardup", "warmup", "--method", "exact", "--method", "lines",
                        "--jobs", "2"], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "exact: kernels compiled in" in p.stdout and "lines: kernels compiled in" in p.stdout
    stamps = sorted(f.name for f in (tmp_path / "cache").iterdir() if f.name.endswith(".stamp"))
    assert len(stamps) == 2 and any("exact" in s for s in stamps) and any("lines" in s for s in stamps)
    assert any(f.suffix == ".nbi" for f in (tmp_path / "cache").rglob("*"))      # numba's index files


def test_the_warm_up_of_a_run_with_index_and_replace_compiles(tmp_path, monkeypatch):
    """A first run with --index IDX --replace warms up on its own small run without the index: that
    configuration dropped --index but kept --replace, which needs it, so it was refused and the warm-up
    was skipped in silence (the run then compiled as it went)."""
    monkeypatch.setattr(warmup, "stamp_path", lambda cfg: str(tmp_path / "stamp"))
    monkeypatch.setenv("NEARDUP_WARMUP", "1")        # (the suite turns the automatic warm-up off)
    cfg = DedupConfig(index=str(tmp_path / "idx"), id_field="id", replace=True).resolved()
    assert warmup.warm_up(cfg, announce=False, force=True) is not None
    assert (tmp_path / "stamp").exists() and not (tmp_path / "idx").exists()


def test_explicit_warmup_covers_the_index_for_both_methods(tmp_path, monkeypatch):
    """`neardup warmup` also runs dedup --index twice and the service's check-and-add and query on
    the index it made (for SimHash this once met a crash in check-and-add): no error, for both."""
    calls = []
    real = warmup._warm_index
    monkeypatch.setattr(warmup, "_warm_index", lambda *a: (calls.append(a[0].method), real(*a))[1])
    monkeypatch.setattr(warmup, "stamp_path", lambda cfg: str(tmp_path / f"stamp-{cfg.method}"))
    for method in ("minhash", "simhash"):
        assert warmup.warm_up(DedupConfig(method=method).resolved(), announce=False, force=True, explicit=True) > 0
    assert calls == ["minhash", "simhash"]
    assert warmup.warm_up(DedupConfig(method="exact").resolved(), announce=False, force=True, explicit=True) >= 0
    assert calls == ["minhash", "simhash"]                       # no index for the other methods


def test_warm_up_compiles_the_linkage_on_all_threads_and_restores_its_limit(tmp_path, monkeypatch):
    """The warm-up runs bounded linkage's all-threads path too (a run takes it from 100 k verified
    pairs on, which the warm-up's few documents never reach), then puts the limit back."""
    from neardup.clusters import cluster

    monkeypatch.setattr(warmup, "stamp_path", lambda cfg: str(tmp_path / "stamp"))
    calls = []
    real = cluster.bounded_components_parts
    monkeypatch.setattr(cluster, "bounded_components_parts", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(cluster, "_linkage_threads", lambda edges: 2 if edges >= cluster.PARALLEL_LINKAGE_EDGES else 1)
    limit = cluster.PARALLEL_LINKAGE_EDGES
    warmup.warm_up(DedupConfig().resolved(), announce=False, force=True, explicit=True)
    assert calls and cluster.PARALLEL_LINKAGE_EDGES == limit


_FIRST_REAL_RUN = r"""
import json, os, sys
from neardup import DedupConfig, run_dedup
from neardup.clusters import cluster
from neardup.engines.local.warmup import warm_up
from neardup.similarity import jaccard

cache, src, out = sys.argv[1:4]
cfg = DedupConfig(workers=2, quiet=True)
warm_up(cfg.resolved(), announce=False, force=True)

def files():
    return {os.path.join(d, f): (os.stat(os.path.join(d, f)).st_size, os.stat(os.path.join(d, f)).st_mtime_ns)
            for d, _, names in os.walk(cache) for f in names if f.endswith((".nbi", ".nbc"))}

before = files()
jaccard.PARALLEL_PAIRS = 1                 # the band's pairs and the linkage on all threads, as a large run
cluster.PARALLEL_LINKAGE_EDGES = 1
report = run_dedup([src], out, cfg)
after = files()
print(json.dumps({"compiled": sorted(os.path.basename(p) for p in after if before.get(p) != after[p]),
                  "band": report["borderline"]["documents"]}))
"""


def test_after_the_warm_up_a_real_run_with_workers_compiles_nothing(tmp_path):
    """The warm-up's few documents, signed in one process, must still compile what a real run with
    several workers runs: the workers' packed batches, the band's re-read of its documents (wanted
    lines cut from a block, some with characters whose NFKC is Python's), its sets read back from the
    workers' spill file (a read-only map), the pair kernel and the linkage on all threads. A kernel
    missed there compiled inside the user's first run (4 s on the benchmark corpus, and a stop then
    landed in numba's compile). Checked on numba's own cache: no file written by the run."""
    import gzip
    import os
    import subprocess
    import sys
    from pathlib import Path

    from neardup.config import cpu_count

    if cpu_count() < 2:
        import pytest

        pytest.skip("needs 2 CPUs for 2 workers")
    root = Path(__file__).resolve().parents[1]
    rows = [json.loads(line) for line in gzip.open(root / "examples/data/debian_copyright.jsonl.gz", "rt")]
    long = [r["text"] for r in rows if len(r["text"].split()) > 200][:40]
    planted = []
    for i, text in enumerate(long):               # borderline copies: a word in 30 changed, a unit NFKC maps
        words = text.split()
        words[::30] = [f"edit{i}" for _ in words[::30]]
        planted.append(" ".join(words) + " 5 ㎏")
    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps({"text": r["text"]}, ensure_ascii=False) + "\n" for r in rows)
                   + "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in planted), encoding="utf-8")
    cache = tmp_path / "cache"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), NEARDUP_WARMUP="1")
    p = subprocess.run([sys.executable, "-c", _FIRST_REAL_RUN, str(cache), str(src), str(tmp_path / "out")],
                       env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["band"] >= 40, got               # the band was re-read (the planted pairs at least)
    assert got["compiled"] == [], got
