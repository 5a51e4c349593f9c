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
    r1 = run_dedup([str(src)], str(tmp_path / "o1"), DedupConfig(progress=True, workers=1))
    wall = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert "compiling its kernels once" in err and "kernels compiled in" in err
    assert stamp.exists() and r1["timings"]["compile"] > 0
    # the run's own total leaves the compile out: both fit in the call's wall time side by side
    assert r1["timings"]["total"] <= wall - r1["timings"]["compile"] + 0.05
    r2 = run_dedup([str(src)], str(tmp_path / "o2"), DedupConfig(progress=True, workers=1))
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


def test_explicit_warmup_covers_the_index_for_both_methods(tmp_path, monkeypatch):
    """`neardup warmup` also runs dedup --index twice and the service's check-and-add and query on
    the index it made (for SimHash this once met a crash in check-and-add): no error, for both."""
    calls = []
    real = warmup._warm_index
    monkeypatch.setattr(warmup, "_warm_index", lambda *a: (calls.append(a[0].method), real(*a))[1])
    monkeypatch.setattr(warmup, "stamp_path", lambda cfg: str(tmp_path / f"stamp-{cfg.method}"))
    for method in ("minhash", "simhash"):
        assert warmup.warm_up(DedupConfig(method=method), announce=False, force=True, explicit=True) > 0
    assert calls == ["minhash", "simhash"]
    assert warmup.warm_up(DedupConfig(method="exact"), announce=False, force=True, explicit=True) >= 0
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
    warmup.warm_up(DedupConfig(), announce=False, force=True, explicit=True)
    assert calls and cluster.PARALLEL_LINKAGE_EDGES == limit
