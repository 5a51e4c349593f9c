"""``neardup dedup --engine spark`` on the real corpus beside the local engine.

Runs the local engine (all cores) and the Spark engine (``local[2]`` by default) on
``benchmarks/data/corpus.jsonl`` (built by ``benchmarks/build_corpus.py`` when missing), checks that
both write the same ``clusters.jsonl`` and kept rows, and reads Spark's event log for what each
phase cost: wall time, executor CPU time, shuffle bytes written (and per document), input bytes.
The engine names its jobs by phase (``neardup: read + sign``, ``neardup: verify``, …), so the event
log's stages are attributed without the UI or its REST API.

    python benchmarks/bench_spark.py [--corpus PATH] [--master local[2]] [--partitions 8]

Writes ``benchmarks/out/spark.json``; ``benchmarks/SPARK.md`` holds the measured table and the
estimate for 10⁹ documents.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from common import corpus

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def event_log_phases(folder: str, first_job: int = 0, last_job: int | None = None) -> dict:
    """Per job description (jobs first_job..last_job): stages, tasks, executor run/CPU time, shuffle and
    input bytes."""
    files = [p for p in glob.glob(os.path.join(folder, "*")) if os.path.isfile(p)]
    if not files:
        return {}
    job_desc, stage_job = {}, {}
    out: dict = defaultdict(lambda: defaultdict(float))
    with open(max(files, key=os.path.getmtime), encoding="utf-8") as fh:
        for line in fh:
            ev = json.loads(line)
            kind = ev.get("Event")
            if kind == "SparkListenerJobStart":
                jid = ev["Job ID"]
                if jid < first_job or (last_job is not None and jid > last_job):
                    continue
                desc = (ev.get("Properties") or {}).get("spark.job.description") or "(other)"
                job_desc[jid] = desc
                for sid in ev.get("Stage IDs", []):
                    stage_job.setdefault(sid, ev["Job ID"])
            elif kind == "SparkListenerStageCompleted":
                info = ev["Stage Info"]
                if stage_job.get(info["Stage ID"]) not in job_desc:
                    continue
                phase = job_desc[stage_job[info["Stage ID"]]]
                acc = {a.get("Name"): a.get("Value") for a in info.get("Accumulables", [])}
                p = out[phase]
                p["stages"] += 1
                p["tasks"] += info.get("Number of Tasks", 0)
                p["shuffle_write_bytes"] += float(acc.get("internal.metrics.shuffle.write.bytesWritten", 0) or 0)
                p["shuffle_write_records"] += float(acc.get("internal.metrics.shuffle.write.recordsWritten", 0) or 0)
                p["input_bytes"] += float(acc.get("internal.metrics.input.bytesRead", 0) or 0)
                p["executor_run_s"] += float(acc.get("internal.metrics.executorRunTime", 0) or 0) / 1e3
                p["executor_cpu_s"] += float(acc.get("internal.metrics.executorCpuTime", 0) or 0) / 1e9
                p["spill_bytes"] += float(acc.get("internal.metrics.diskBytesSpilled", 0) or 0)
    return {k: {kk: (int(vv) if kk in ("stages", "tasks") else round(vv, 3)) for kk, vv in v.items()}
            for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(HERE / "data" / "corpus.jsonl"))
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=8, help="spark.sql.shuffle.partitions")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--out", default=str(HERE / "out" / "spark.json"))
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--runs", type=int, default=2, help="Spark runs in one session (the first is cold)")
    args = ap.parse_args()

    corpus(args.corpus)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from neardup import DedupConfig, run_dedup

    work = Path(tempfile.mkdtemp(prefix="neardup-bench-spark-"))
    res: dict = {"corpus": args.corpus, "corpus_bytes": os.path.getsize(args.corpus), "master": args.master,
                 "shuffle_partitions": args.partitions, "cpus": os.cpu_count()}
    cfg = DedupConfig(quiet=True, html=False)
    try:
        if not args.skip_local:
            t = time.perf_counter()
            rep = run_dedup([args.corpus], str(work / "local"), cfg)
            res["local"] = {"wall_s": round(time.perf_counter() - t, 3), "timings": rep["timings"],
                            "counts": rep["counts"], "workers": cfg.resolved().workers}
            print(f"local: {res['local']['wall_s']:.1f} s  {rep['timings']}", file=sys.stderr)

        from pyspark.sql import SparkSession

        from neardup.engines.spark import run_spark_dedup

        events = work / "events"
        events.mkdir()
        t = time.perf_counter()
        spark = (SparkSession.builder.master(args.master).appName("neardup bench")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", str(args.partitions))
                 .config("spark.driver.memory", args.driver_memory)
                 .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", events.as_uri())
                 .config("spark.eventLog.compress", "false").config("spark.eventLog.rolling.enabled", "false")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        res["spark_version"] = spark.version
        start_s = time.perf_counter() - t
        runs, jobs = [], []
        for i in range(args.runs):
            shutil.rmtree(work / "spark", ignore_errors=True)
            first = max(spark.sparkContext.statusTracker().getJobIdsForGroup(None) or [-1]) + 1
            t = time.perf_counter()
            rep = run_spark_dedup([args.corpus], str(work / "spark"), cfg, spark=spark)
            runs.append((time.perf_counter() - t, rep))
            jobs.append((first, max(spark.sparkContext.statusTracker().getJobIdsForGroup(None))))
            print(f"spark run {i + 1}: {runs[-1][0]:.1f} s  {rep['timings']}", file=sys.stderr)
        spark.stop()
        n = rep["counts"]["documents"]
        res["spark"] = {"session_start_s": round(start_s, 3), "counts": rep["counts"],
                        "component_rounds": rep["spark"]["component_rounds"], "runs": []}
        for (wall, r), (j0, j1) in zip(runs, jobs):
            phases = event_log_phases(str(events), j0, j1)
            for p in phases.values():
                p["shuffle_write_bytes_per_doc"] = round(p["shuffle_write_bytes"] / n, 2) if n else None
            res["spark"]["runs"].append({"wall_s": round(wall, 3), "timings": r["timings"], "jobs": [j0, j1],
                                         "phases": phases})
        if not args.skip_local:
            same = (work / "local" / "clusters.jsonl").read_bytes() == (work / "spark" / "clusters.jsonl").read_bytes()
            kept = all((work / "local" / "kept" / f).read_bytes() == (work / "spark" / "kept" / f).read_bytes()
                       for f in os.listdir(work / "local" / "kept"))
            res["identical_outputs"] = bool(same and kept and res["local"]["counts"] == rep["counts"])
            print(f"identical clusters.jsonl, kept rows and counts: {res['identical_outputs']}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=2)
        fh.write("\n")
    for k, run in enumerate(res.get("spark", {}).get("runs", []), 1):
        print(f"run {k}: {run['wall_s']:.1f} s")
        print(f"  {'phase':26s} {'stages':>6s} {'task s':>8s} {'shuffle MB':>11s} {'B/doc':>9s}")
        for name, p in sorted(run["phases"].items()):
            print(f"  {name:26s} {p['stages']:6d} {p['executor_run_s']:8.1f} {p['shuffle_write_bytes'] / 1e6:11.2f} "
                  f"{p['shuffle_write_bytes_per_doc']:9.1f}")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
