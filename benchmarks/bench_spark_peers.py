#!/usr/bin/env python3
"""neardup's Spark engine against text-dedup's Spark job, side by side (issue 39, item 5).

Same corpus, same machine, same cores, each command in a fresh process, wall time from process start
to exit (JVM start included, as a user sees it):

* ``text-dedup``    text-dedup 0.4.0's ``text_dedup/minhash_spark.py`` (its last release with the Spark
                    job), from its own venv (benchmarks/peers/setup_spark_peers.sh; never in neardup's
                    dependencies), on the corpus as Parquet (column ``text``, and ``id``):
                    ``--input CORPUS.parquet --column text --threshold 0.8 --num_perm 128 --ngram_size 5``
                    (neardup's defaults; its other arguments as shipped: ``--min_length 5``, bands by
                    its own ``optimal_param``, no verification of candidates, keeps the smallest
                    ``__id__`` of each connected component). Run as ``python minhash_spark.py`` with
                    ``PYSPARK_SUBMIT_ARGS="--master local[C] --driver-memory M pyspark-shell"``.
* ``neardup-spark`` ``neardup dedup CORPUS.jsonl -o OUT --engine spark``, no settings at all (its session
                    picks local[*], the driver's memory and the shuffle partitions itself).
* ``neardup-local`` ``neardup dedup CORPUS.jsonl -o OUT``, the local engine, for reference.

Where text-dedup cannot run as shipped here, or is set for a cluster rather than this machine, it is
changed as follows — nothing else. Its source is read from the peer venv and patched in a temporary
copy by exact string replacements that stop the benchmark if the text is not found as expected; no
code of text-dedup is kept in this repository.

1. **GraphFrames.** ``from graphframes import GraphFrame`` needs GraphFrames' JVM package, which comes
   from the Spark Packages repository; that cannot be reached from this machine (only PyPI, Debian
   and npm can). A ``graphframes`` stand-in module is put first on ``PYTHONPATH`` (the peer script is
   not edited for it): ``GraphFrame(vertices, edges).connectedComponents()`` collects the edges to the
   driver (Arrow), labels the components with ``scipy.sparse.csgraph.connected_components`` and returns
   a DataFrame ``id, component`` with component = the smallest id of the component — what GraphFrames
   returns for long ids, and the rule text-dedup's keep filter (``component == id``) relies on. The
   vertices text-dedup passes are exactly the edges' endpoints, so no vertex is lost. **This is faster
   than GraphFrames** (one collect and a C routine on the driver against GraphFrames' iterative
   big-star/small-star joins, each a few shuffles, with checkpoints), **so the peer's time here is a
   lower bound on its time as shipped.**
2. **Shuffle partitions.** ``spark.sql.shuffle.partitions`` 8192 and the two ``.repartition(4096)``
   (sized for a cluster; on local[2] each of its stages would be 8192 or 4096 tasks) become the count
   neardup's session uses on this machine: ``max(8, 4 × cores)`` in local mode
   (src/neardup/engines/spark/session.py; 8 on 2 cores). Its ``spark.default.parallelism`` of 100 (the
   RDD ``groupBy`` and ``distinct`` of band keys) and its output's ``max(256, …)`` part files are
   kept as shipped.
3. **Driver memory.** text-dedup sets none (Spark's 1 GiB default); it gets what neardup gives its own
   driver in local mode when the user sets nothing (``local_driver_memory()``: 40 % of the machine's
   memory), so both JVMs have the same heap.

The Parquet copy of the corpus is written once and cached beside it (``CORPUS.parquet``, row groups of
10,000 rows so that Spark splits the read across the cores; the JSONL's ``id`` and ``text``). Building
it is not timed. neardup reads the JSONL, as its README shows.

Reported per tool: wall seconds (median of ``--runs``), the machine's 1-minute load while it ran
(the machine may be shared: read the times with it), documents removed (text-dedup: the ids absent from its Parquet output, of which those its
``--min_length`` filter drops; neardup: ``kept == false`` in clusters.jsonl), and the overlap of the
removed sets by id (a sanity check that the tools remove the same documents; they do not use the
same hash functions, bands or verification, so they need not agree exactly).

Run inside neardup's venv (the synthetic corpora are built by benchmarks/build_synthetic.py when
missing, through common.synthetic: ``python benchmarks/build_synthetic.py --n 100000 --out
benchmarks/data/synthetic_100000.jsonl``; it needs the real corpus of build_corpus.py):

    bash benchmarks/peers/setup_spark_peers.sh                  # once: /work/textdedup-spark-venv
    .venv/bin/python benchmarks/bench_spark_peers.py            # 100k synthetic documents, 1 run each
    .venv/bin/python benchmarks/bench_spark_peers.py --n 1000000 --runs 3

Prints a markdown table; writes benchmarks/out/spark_peers.json (one entry per corpus and tool, with
its date and neardup commit; a tool measured again replaces only its own).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import islice

from common import OUT, neardup_cli, synthetic

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEER_VENV = os.environ.get("TEXTDEDUP_SPARK_VENV", "/work/textdedup-spark-venv")
TOOLS = ("text-dedup", "neardup-spark", "neardup-local")
ROW_GROUP = 10_000
THRESHOLD, NUM_PERM, NGRAM, MIN_LENGTH = 0.8, 128, 5, 5

SHIM = '''"""Stand-in for GraphFrames, written by neardup's benchmarks/bench_spark_peers.py (see its docstring):
connectedComponents() collects the edges to the driver and labels components with scipy; component =
the smallest vertex id of the component, as GraphFrames gives for long ids. Faster than GraphFrames."""
import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


class GraphFrame:
    def __init__(self, vertices, edges):
        self.vertices, self.edges = vertices, edges

    def connectedComponents(self, *args, **kwargs):
        pdf = self.edges.select("src", "dst").toPandas()
        src = pdf["src"].to_numpy(np.int64)
        dst = pdf["dst"].to_numpy(np.int64)
        ids, inv = np.unique(np.concatenate([src, dst]), return_inverse=True)
        m = len(src)
        graph = coo_matrix((np.ones(m, np.int8), (inv[:m], inv[m:])), shape=(len(ids), len(ids)))
        _, labels = connected_components(graph, directed=False)
        _, first = np.unique(labels, return_index=True)      # ids are sorted: a label's first id is its min
        out = pd.DataFrame({"id": ids, "component": ids[first][labels]})
        return self.edges.sparkSession.createDataFrame(out, schema="id long, component long")
'''


# ------------------------------------------------------------------------------------------------
# The corpus as Parquet, and the short documents text-dedup's --min_length filter drops.
# ------------------------------------------------------------------------------------------------
def parquet_copy(corpus: str) -> tuple[str, dict]:
    """``CORPUS.parquet`` (id, text; cached, rebuilt when the JSONL changed) and its facts: ids in row
    order (``ids``) and the rows text-dedup's ``ngrams_length_check`` drops (``short``)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    base = os.path.splitext(corpus)[0]
    path, meta_path, ids_path = base + ".parquet", base + ".parquet.json", base + ".parquet.ids.npy"
    st = os.stat(corpus)
    key = {"source": os.path.abspath(corpus), "size": st.st_size, "mtime": st.st_mtime, "row_group": ROW_GROUP}
    if os.path.exists(meta_path) and os.path.exists(path) and os.path.exists(ids_path):
        with open(meta_path, encoding="utf-8") as fh:
            meta = json.load(fh)
        if meta.get("key") == key:
            meta["ids"] = np.load(ids_path)
            return path, meta
    t0 = time.perf_counter()
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    table = pj.read_json(corpus, read_options=pj.ReadOptions(block_size=64 << 20),
                         parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"))
    if table.column("id").null_count:
        raise SystemExit(f"{corpus}: every row needs an integer 'id' (the overlap is counted by id)")
    pq.write_table(table, path + ".tmp", row_group_size=ROW_GROUP, compression="snappy")
    os.replace(path + ".tmp", path)
    non_alpha = re.compile(r"\W", re.UNICODE)      # text-dedup's tokens: NON_ALPHA.split(text.lower())
    short = [i for batch in table.to_batches(max_chunksize=ROW_GROUP)      # (Python strings a batch at a time)
             for i, t in zip(batch.column("id").to_pylist(), batch.column("text").to_pylist())
             if t is None or sum(1 for _ in islice(non_alpha.finditer(t.lower()), MIN_LENGTH - 1)) < MIN_LENGTH - 1]
    ids = table.column("id").to_numpy()
    np.save(ids_path, ids)
    meta = {"key": key, "rows": table.num_rows, "bytes": os.path.getsize(path), "short": short,
            "build_s": round(time.perf_counter() - t0, 1)}
    with open(meta_path, "w", encoding="utf-8") as fh:
        json.dump(meta, fh)
    meta["ids"] = ids
    return path, meta


# ------------------------------------------------------------------------------------------------
# text-dedup's job, patched in a temporary copy.
# ------------------------------------------------------------------------------------------------
def peer_script(work: str, partitions: int) -> tuple[str, str]:
    """The patched copy of text-dedup's minhash_spark.py and the folder holding the graphframes shim."""
    python = os.path.join(PEER_VENV, "bin", "python")
    found = glob.glob(os.path.join(PEER_VENV, "lib", "python3*", "site-packages", "text_dedup", "minhash_spark.py"))
    if not os.access(python, os.X_OK) or not found:
        raise SystemExit(f"no text-dedup in {PEER_VENV}: run bash benchmarks/peers/setup_spark_peers.sh")
    if not glob.glob(os.path.join(os.path.dirname(os.path.dirname(found[0])), "text_dedup-0.4.0.dist-info")):
        raise SystemExit(f"{PEER_VENV} does not hold text-dedup 0.4.0: rerun benchmarks/peers/setup_spark_peers.sh")
    with open(found[0], encoding="utf-8") as fh:
        src = fh.read()
    patches = [   # (shipped text, replacement, occurrences expected)
        ('.set("spark.sql.shuffle.partitions", "8192")', f'.set("spark.sql.shuffle.partitions", "{partitions}")', 1),
        (".repartition(4096)", f".repartition({partitions})", 2),
    ]
    for old, new, count in patches:
        if src.count(old) != count:
            raise SystemExit(f"text-dedup's minhash_spark.py: expected {count} × {old!r}, found {src.count(old)}; "
                             "the patch no longer applies")
        src = src.replace(old, new)
    if "from graphframes import GraphFrame" not in src:
        raise SystemExit("text-dedup's minhash_spark.py no longer imports GraphFrame: the shim does not apply")
    script = os.path.join(work, "minhash_spark.py")
    with open(script, "w", encoding="utf-8") as fh:
        fh.write(src)
    shim = os.path.join(work, "shim")
    os.makedirs(os.path.join(shim, "graphframes"), exist_ok=True)
    with open(os.path.join(shim, "graphframes", "__init__.py"), "w", encoding="utf-8") as fh:
        fh.write(SHIM)
    return script, shim


# ------------------------------------------------------------------------------------------------
# Running and reading the outputs.
# ------------------------------------------------------------------------------------------------
def git(*args: str) -> str:
    res = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    return res.stdout.strip() if res.returncode == 0 else ""


def clean_env() -> dict:
    env = dict(os.environ)
    for k in ("PYSPARK_SUBMIT_ARGS", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "MASTER", "PYTHONPATH",
              "SPARK_HOME"):
        env.pop(k, None)
    return env


def run(cmd: list[str], env: dict, cwd: str, log: str) -> dict:
    """Wall seconds (from process start to exit) and the machine's 1-minute load average: before the
    start, and its mean and maximum sampled every 5 s while the command ran (the command's own work
    counts in it: about the number of cores it keeps busy)."""
    load0 = os.getloadavg()[0]
    samples = []
    t0 = time.perf_counter()
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
        while True:
            try:
                rc = proc.wait(timeout=5)
                break
            except subprocess.TimeoutExpired:
                samples.append(os.getloadavg()[0])
    wall = time.perf_counter() - t0
    samples = samples or [os.getloadavg()[0]]
    out = {"wall_s": round(wall, 2), "load_before": round(load0, 2),
           "load_mean": round(statistics.fmean(samples), 2), "load_max": round(max(samples), 2), "rc": rc}
    if rc != 0:
        with open(log, encoding="utf-8", errors="replace") as fh:
            out["error_tail"] = fh.read()[-2000:]
    return out


def removed_textdedup(out: str, ids) -> set:
    import numpy as np
    import pyarrow.parquet as pq

    files = glob.glob(os.path.join(out, "__pid__=*", "*.parquet"))       # its partitioned_save's layout
    if not files:
        raise SystemExit(f"{out}: no Parquet part files")
    kept = np.concatenate([pq.read_table(f, columns=["id"]).column("id").to_numpy() for f in files])
    if len(np.unique(kept)) != len(kept):
        raise SystemExit(f"{out}: an id is kept twice")
    return set(np.setdiff1d(ids, kept).tolist())


def removed_neardup(out: str, ids) -> set:
    removed = set()
    with open(os.path.join(out, "clusters.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            if '"kept": false' in line or '"kept":false' in line:
                rec = json.loads(line)
                if rec["kept"] is False:
                    removed.add(int(ids[int(rec["id"])]))     # no --id-field: the id is the row
    return removed


def spark_facts(out: str) -> dict:
    with open(os.path.join(out, "report.json"), encoding="utf-8") as fh:
        rep = json.load(fh)
    spark = rep.get("spark") or {}
    return {k: spark[k] for k in spark if not isinstance(spark[k], (dict, list))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="synthetic corpus of N documents (default 100000)")
    ap.add_argument("--corpus", default=None, help="a JSONL corpus with integer 'id' and 'text' (default: --n)")
    ap.add_argument("--runs", type=int, default=1, help="fresh-process runs per tool; the median is reported")
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated subset of {','.join(TOOLS)}")
    ap.add_argument("--keep-outputs", action="store_true", help="keep each tool's last output under benchmarks/out")
    args = ap.parse_args()
    tools = [t for t in args.tools.split(",") if t]
    if set(tools) - set(TOOLS):
        raise SystemExit(f"unknown tools {set(tools) - set(TOOLS)}; choose from {TOOLS}")

    from neardup.config import cpu_count
    from neardup.engines.spark.session import local_driver_memory

    corpus = os.path.abspath(args.corpus or synthetic(args.n))
    cores = cpu_count()
    partitions = max(8, 4 * cores)            # neardup's rule in local mode (engines/spark/session.py)
    memory = local_driver_memory()            # what neardup's driver gets in local mode with no settings
    parquet, meta = parquet_copy(corpus)
    ids = meta["ids"]
    name = os.path.basename(corpus)
    print(f"corpus {name}: {meta['rows']:,} rows, {os.path.getsize(corpus) / 1e6:.0f} MB JSONL, "
          f"{meta['bytes'] / 1e6:.0f} MB Parquet; local[{cores}], {partitions} shuffle partitions, "
          f"driver {memory}", flush=True)

    code = {"neardup_commit": git("rev-parse", "--short", "HEAD"),      # what neardup ran: the tree at the start
            "neardup_src_modified": bool(git("status", "--porcelain", "--", "src"))}
    work_root = os.path.join(OUT, "spark_peers_runs")
    os.makedirs(work_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="bench_", dir=work_root)
    script, shim = peer_script(work, partitions)
    peer_env = clean_env()
    peer_env.update({"PYSPARK_PYTHON": os.path.join(PEER_VENV, "bin", "python"),
                     "PYSPARK_DRIVER_PYTHON": os.path.join(PEER_VENV, "bin", "python"),
                     "PYTHONPATH": shim,
                     "PYSPARK_SUBMIT_ARGS": f"--master local[{cores}] --driver-memory {memory} pyspark-shell"})
    peer_env.pop("VIRTUAL_ENV", None)
    commands = {
        "text-dedup": ([os.path.join(PEER_VENV, "bin", "python"), script, "--input", parquet, "--column", "text",
                        "--threshold", str(THRESHOLD), "--num_perm", str(NUM_PERM), "--ngram_size", str(NGRAM)],
                       peer_env, "--output"),
        "neardup-spark": ([neardup_cli(), "dedup", corpus, "--engine", "spark"], clean_env(), "-o"),
        "neardup-local": ([neardup_cli(), "dedup", corpus], clean_env(), "-o"),
    }

    results: dict = {}
    removed: dict = {}
    for i in range(args.runs):
        for tool in tools:
            cmd, env, out_flag = commands[tool]
            out = os.path.join(work, f"{tool}.out")
            shutil.rmtree(out, ignore_errors=True)
            cwd = os.path.join(work, f"{tool}.cwd")           # text-dedup's ./checkpoints land here
            shutil.rmtree(cwd, ignore_errors=True)
            os.makedirs(cwd)
            at = {"neardup_commit": git("rev-parse", "--short", "HEAD"),      # a shared tree may move between runs
                  "neardup_src_modified": bool(git("status", "--porcelain", "--", "src"))}
            r = {**run([*cmd, out_flag, out], env, cwd, os.path.join(work, f"{tool}.{i}.log")), **at}
            print(f"  run {i + 1}/{args.runs} {tool}: {r['wall_s']} s, rc {r['rc']}, load {r['load_before']} before, "
                  f"{r['load_mean']} mean, {r['load_max']} max", flush=True)
            if r["rc"] == 0:
                got = removed_textdedup(out, ids) if tool == "text-dedup" else removed_neardup(out, ids)
                r["removed"] = len(got)
                if tool in removed and removed[tool] != got:
                    r["removed_differs_from_run_1"] = True
                removed.setdefault(tool, got)
                if tool == "neardup-spark":
                    r["spark"] = spark_facts(out)
                    if r["spark"].get("shuffle_partitions") not in (None, partitions):
                        print(f"  note: neardup used {r['spark']['shuffle_partitions']} shuffle partitions, text-dedup "
                              f"{partitions}", file=sys.stderr)
            else:
                print(r["error_tail"], file=sys.stderr)
            results.setdefault(tool, []).append(r)
            if not args.keep_outputs:
                shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(cwd, ignore_errors=True)

    summary = {}
    for tool, runs in results.items():
        ok = [r for r in runs if r["rc"] == 0]
        summary[tool] = {"command": " ".join([*commands[tool][0], commands[tool][2], "OUT"]),
                         "median_wall_s": round(statistics.median(r["wall_s"] for r in ok), 2) if ok else None,
                         "removed": ok[0]["removed"] if ok else None,
                         "failed_runs": len(runs) - len(ok), "runs": runs}
    if "text-dedup" in removed:
        short = set(meta["short"])
        summary["text-dedup"]["removed_short"] = len(short & removed["text-dedup"])
    overlap = {}
    names = [t for t in TOOLS if t in removed]
    for a_i, a in enumerate(names):
        for b in names[a_i + 1:]:
            both = removed[a] & removed[b]
            overlap[f"{a} vs {b}"] = {"both": len(both), f"only {a}": len(removed[a] - removed[b]),
                                      f"only {b}": len(removed[b] - removed[a]),
                                      "jaccard": round(len(both) / max(1, len(removed[a] | removed[b])), 4)}
    entry = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), **code, "corpus": name, "rows": meta["rows"],
             "jsonl_MB": round(os.path.getsize(corpus) / 1e6), "parquet_MB": round(meta["bytes"] / 1e6),
             "cores": cores, "master": f"local[{cores}]", "shuffle_partitions": partitions,
             "driver_memory": memory, "runs": args.runs, "threshold": THRESHOLD, "num_perm": NUM_PERM,
             "ngram": NGRAM, "tools": summary, "overlap": overlap,
             "textdedup_changes": ["graphframes shim: connected components on the driver by scipy (faster than "
                                   "GraphFrames: a lower bound on the peer's time)",
                                   f"shuffle partitions 8192 and repartition(4096) -> {partitions}",
                                   f"driver memory {memory} (neardup's local default; text-dedup sets none)"]}
    path = os.path.join(OUT, "spark_peers.json")
    doc = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    # a tool measured now replaces its own entry for this corpus; the tools not run now keep theirs (each
    # with its date and commit): `--tools neardup-spark` after a change keeps the peer's last figure
    for tool in summary:
        summary[tool]["date"] = entry["date"]
        summary[tool]["neardup_commit"] = code["neardup_commit"]
    old = doc.get(name, {})
    if old.get("cores") == entry["cores"] and old.get("driver_memory") == entry["driver_memory"]:
        entry["tools"] = {**old.get("tools", {}), **summary}
        entry["overlap"] = {**old.get("overlap", {}), **overlap}
    doc[name] = entry
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2)
    if not args.keep_outputs:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\n{name} ({meta['rows']:,} documents), local[{cores}], t = {THRESHOLD}, k = {NUM_PERM}, "
          f"word {NGRAM}-grams, median of {args.runs} run(s); neardup at {code['neardup_commit']}"
          f"{' with src/ modified' if code['neardup_src_modified'] else ''}\n")
    print("| tool | wall s | removed | 1-min load during the run(s): mean (max) |")
    print("|---|---:|---:|---|")
    for tool in names + [t for t in summary if t not in names]:
        s = summary[tool]
        runs = s["runs"]
        wall = f"{s['median_wall_s']}" if s["median_wall_s"] is not None else f"failed ({s['failed_runs']})"
        rem = f"{s['removed']:,}" if s["removed"] is not None else "–"
        if tool == "text-dedup" and "removed_short" in s:
            rem += f" ({s['removed_short']} too short)"
        loads = ", ".join(f"{r['load_mean']} ({r['load_max']})" for r in runs)
        print(f"| {tool} | {wall} | {rem} | {loads} |")
    if overlap:
        print("\n| removed sets | both | only first | only second | Jaccard |")
        print("|---|---:|---:|---:|---:|")
        for k, v in overlap.items():
            a, b = k.split(" vs ")
            print(f"| {k} | {v['both']:,} | {v[f'only {a}']:,} | {v[f'only {b}']:,} | {v['jaccard']} |")
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
