"""neardup's Spark job on a real cluster, the route of docs/guide/spark-cluster.md: a Spark standalone master
and two one-core workers on 127.0.0.1 (PySpark's own ``spark-class``), the executors' Python environment
packed with venv-pack and shipped with ``spark-submit --archives env.tar.gz#environment``
(``spark.pyspark.python=./environment/bin/python``; the driver runs this venv's Python), the module file
``neardup/cli/spark_submit.py`` submitted in client mode. MinHash with the defaults (a local OUTDIR) and
SimHash (a ``file://`` OUTDIR: Spark part-file folders, as on HDFS or S3) give the local engine's
clusters.jsonl, kept rows and report counts byte for byte, and the report records the cluster's shuffle
partitions (two per core of its default parallelism, at least 8); a count given to ``spark-submit --conf``
is kept. The archive carries the numba cache the local runs compiled, and the executors get no
NUMBA_CACHE_DIR: set, it names its cache folder after the package's path, new in every executor's
working folder, so each executor would compile every kernel again (a SimHash run: 334 s against 181 s).

Everything the cluster starts runs in its own process group under ``timeout`` and is stopped at the end,
failed or not; every wait is bounded. No Java, or no port on 127.0.0.1, fails in one line."""
import gzip
import importlib.metadata
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="PySpark is not installed (pip install 'neardup[spark]')")
pytest.importorskip("pandas", reason="PySpark's mapInArrow needs pandas (pip install 'pandas>=2.2')")

import pyspark
import venv_pack
from click.testing import CliRunner
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import neardup
import neardup.cli.spark_submit
from neardup.cli import main

if sys.platform == "win32":  # pragma: no cover
    pytest.skip("Spark's standalone scripts are bash scripts", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "data" / "debian_copyright.jsonl.gz"
SPARK_HOME = Path(pyspark.__file__).parent          # pip's PySpark is a whole Spark: bin/, jars/
START_TIMEOUT = 240      # s: the master and both workers up and registered (about 30 s on a busy 2-core machine)
SUBMIT_TIMEOUT = 600     # s: one spark-submit (about 3 minutes on a busy 2-core machine)
LIFETIME = 2400          # s: `timeout` ends every daemon after this even if pytest itself is killed
WORKERS = 2
MAIN = neardup.cli.spark_submit.__file__
RUNS = {   # method: (neardup dedup's options for both engines, for Spark only, a file:// OUTDIR)
    "minhash": ([], [], False),
    # --spark-conf reaches the session spark-submit's driver creates: 5 × 2 = 10 shuffle partitions, which
    # the local-mode rule (4 per CPU, at least 8: a multiple of 4) never gives
    "simhash": (["--method", "simhash"], ["--spark-conf", "spark.default.parallelism=5"], True),
}
COMPARED = ("cluster_sizes", "similarity_histogram", "samples", "skipped", "lsh", "pairs", "simhash")


def _fail(message: str):
    pytest.fail(message, pytrace=False)


def _tail(path: Path, n: int = 40) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-n:])
    except OSError as exc:
        return f"({path}: {exc})"


def _check_java_and_loopback() -> None:
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        where = f"JAVA_HOME={home} has no bin/java" if home else "no java on PATH and no JAVA_HOME"
        _fail(f"Java 17 or 21 is not installed ({where}): tests/test_spark_cluster.py starts a Spark cluster and "
              "needs it")
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    found = re.search(r'version "(\d+)', out.stderr + out.stdout)
    if not found or int(found.group(1)) < 17:
        _fail(f"Spark 4 needs Java 17 or 21; {java} says: {(out.stderr or out.stdout).strip().splitlines()[:1]}")
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
    except OSError as exc:
        _fail(f"no free TCP port on 127.0.0.1 ({exc}): the Spark cluster binds its master, workers and driver there")


def _spark_env(root: Path) -> dict:
    """The environment of every Spark process: none of the caller's Spark settings, an empty conf folder
    (no spark-defaults.conf of this machine), loopback, scratch space inside the test's folder."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SPARK_", "PYSPARK_")) and k not in ("MASTER", "PYTHONPATH", "NUMBA_CACHE_DIR")}
    for sub in ("conf", "local"):
        (root / sub).mkdir(exist_ok=True)
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_CONF_DIR=str(root / "conf"), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOCAL_DIRS=str(root / "local"), SPARK_DAEMON_MEMORY="512m",
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")   # its REST server wants fixed port 6066
    return env


def _stop(proc: subprocess.Popen) -> None:
    """Stop a process started with its own session and everything it started (executors, Python workers)."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            if sig == signal.SIGTERM:      # the group may outlive its leader a moment: make sure
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


class Cluster:
    """One standalone master and WORKERS one-core workers, started in a thread (while the test packs the
    environment); ``url`` waits for both workers to register."""

    def __init__(self, root: Path):
        self.root, self.env = root, _spark_env(root)
        (root / "logs").mkdir(exist_ok=True)
        self.procs: list[subprocess.Popen] = []
        self._url: str | None = None
        self._error: str | None = None
        self._thread = threading.Thread(target=self._start, daemon=True)
        self._thread.start()

    def _daemon(self, name: str, cls: str, *args: str) -> Path:
        log = self.root / "logs" / f"{name}.log"
        cmd = [str(SPARK_HOME / "bin" / "spark-class"), cls, *args]
        if shutil.which("timeout"):
            cmd = ["timeout", "-k", "10", str(LIFETIME), *cmd]
        with open(log, "wb") as fh:
            self.procs.append(subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                               env=self.env, cwd=self.root, start_new_session=True))
        return log

    def _start(self) -> None:
        try:
            deadline = time.monotonic() + START_TIMEOUT
            master_log = self._daemon("master", "org.apache.spark.deploy.master.Master",
                                      "--host", "127.0.0.1", "--port", "0", "--webui-port", "0")
            url = self._wait(master_log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", 1, deadline)
            if url is None:
                return
            for i in range(WORKERS):
                work = self.root / f"work{i}"
                work.mkdir(exist_ok=True)
                self._daemon(f"worker{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                             "--port", "0", "--webui-port", "0", "--cores", "1", "--memory", "2g",
                             "--work-dir", str(work), url)
            if self._wait(master_log, r"Registering worker (127\.0\.0\.1:\d+)", WORKERS, deadline) is not None:
                self._url = url
        except Exception as exc:       # reported by url, in the test's thread
            self._error = f"{type(exc).__name__}: {exc}"

    def _wait(self, log: Path, pattern: str, count: int, deadline: float) -> str | None:
        while time.monotonic() < deadline:
            found = re.findall(pattern, log.read_text(encoding="utf-8", errors="replace")) if log.exists() else []
            if len(found) >= count:
                return found[0]
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                self._error = f"a Spark daemon exited with status {dead[0].returncode}"
                return None
            time.sleep(0.5)
        self._error = f"{log.name} has no {count} × {pattern!r} after {START_TIMEOUT} s"
        return None

    @property
    def url(self) -> str:
        self._thread.join(START_TIMEOUT + 30)
        if self._url is None:
            logs = "\n".join(f"--- {p.name}\n{_tail(p, 15)}" for p in sorted((self.root / "logs").glob("*.log")))
            _fail(f"the Spark standalone cluster did not start: {self._error or 'timed out'}\n{logs}")
        return self._url

    def executor_dirs(self) -> list[Path]:
        return sorted(self.root.glob("work*/app-*/*/"))

    def stop(self) -> None:
        self._thread.join(START_TIMEOUT + 30)
        for proc in reversed(self.procs):     # workers (and their executors) first, then the master
            _stop(proc)


def _corpus(path: Path) -> Path:
    """2,750 documents: the 550 Debian copyright files of the demo corpus and four near-copies of each
    (one to four words replaced), shuffled."""
    rng = random.Random(20261207)
    rows = [json.loads(line) for line in gzip.open(DEMO, "rt", encoding="utf-8")]
    out = []
    for r in rows:
        out.append(r)
        words = list(re.finditer(r"\w+", r["text"]))
        for v in range(4):
            text = r["text"]
            if words:
                for i in sorted(rng.sample(range(len(words)), min(len(words), rng.randint(1, 4))), reverse=True):
                    text = text[:words[i].start()] + rng.choice(["alpha", "beta", "gamma"]) + text[words[i].end():]
            out.append({"id": f"{r['id']}~{v}", "text": text})
    rng.shuffle(out)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in out)
    return path


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:          # another filesystem
        shutil.copy2(src, dst)


def _stage(prefix: Path) -> None:
    """A fresh venv holding what the executors import, as ``pip install neardup 'pandas>=2.2,<3'`` followed
    by ``neardup warmup`` would leave it: neardup itself is this tree's package copied with the numba cache
    this run's local engine has just compiled in it (this venv has neardup as an editable install, which
    venv-pack refuses to pack), and its requirements plus the spark extra's pandas are copied file by file
    from this venv by their installed RECORD. No PySpark: the executors' Python workers import the
    cluster's own (SPARK_HOME/python/lib/pyspark.zip)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True, timeout=120)
    site = prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    nd = importlib.metadata.distribution("neardup")
    wanted, seen = [], set()
    for text in nd.requires or ():
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": "spark"}) and canonicalize_name(req.name) != "pyspark":
            wanted.append(req.name)
    while wanted:
        name = canonicalize_name(wanted.pop())
        if name in seen:
            continue
        seen.add(name)
        dist = importlib.metadata.distribution(name)
        for f in dist.files or ():
            rel = os.path.normpath(str(f))
            src = str(dist.locate_file(f))
            if rel.startswith("..") or not os.path.isfile(src):       # console scripts in bin/
                continue
            dst = site / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(src, str(dst))
        wanted += [Requirement(t).name for t in dist.requires or ()
                   if Requirement(t).marker is None or Requirement(t).marker.evaluate({"extra": ""})]
    shutil.copytree(Path(neardup.__file__).parent, site / "neardup")
    info = site / f"neardup-{nd.version}.dist-info"
    info.mkdir()
    for name in ("METADATA", "entry_points.txt"):
        (info / name).write_text(nd.read_text(name) or "", encoding="utf-8")
    (info / "top_level.txt").write_text("neardup\n", encoding="utf-8")
    (info / "INSTALLER").write_text("tests/test_spark_cluster.py\n", encoding="utf-8")


def _local(corpus: Path, out: Path, opts: list[str]) -> None:
    res = CliRunner().invoke(main, ["dedup", str(corpus), "-o", str(out), "--id-field", "id", "-q",
                                    "--engine", "local", *opts], catch_exceptions=False)
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(cluster, corpus, archive, local outputs per method); stops the cluster and removes the big folders
    (the archive, every executor's unpacked copy of it) at the end."""
    _check_java_and_loopback()
    root = tmp_path_factory.mktemp("spark-cluster")
    corpus = _corpus(root / "corpus.jsonl")
    local = {}
    for method, (opts, _, _) in RUNS.items():   # first: the kernels they compile are the ones the archive carries
        local[method] = root / f"local-{method}"
        _local(corpus, local[method], opts)
    cluster = Cluster(root)      # starts in a thread while the environment is packed (after the local runs,
    try:                         # which fork their workers)
        archive = root / "env.tar.gz"
        t0 = time.perf_counter()
        _stage(root / "stage")
        venv_pack.pack(prefix=str(root / "stage"), output=str(archive), compress_level=1)
        shutil.rmtree(root / "stage")
        print(f"staged and packed the environment in {time.perf_counter() - t0:.1f} s "
              f"({archive.stat().st_size >> 20} MB)")
        yield cluster, corpus, archive, local
    finally:
        cluster.stop()
        for big in [root / "env.tar.gz", root / "stage", root / "local", *root.glob("work*")]:
            if big.is_dir():
                shutil.rmtree(big, ignore_errors=True)
            elif big.exists():
                big.unlink()


def _submit(cluster: Cluster, archive: Path, corpus: Path, out: str, opts: list[str], log: Path) -> float:
    cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.url, "--deploy-mode", "client",
           "--archives", f"{archive}#environment",
           "--conf", "spark.pyspark.python=./environment/bin/python",     # the executors': the archive's
           "--conf", f"spark.pyspark.driver.python={sys.executable}",     # the driver's: this venv's
           "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
           "--conf", "spark.driver.memory=1g", "--conf", "spark.executor.memory=1g",
           "--conf", "spark.ui.enabled=false",
           MAIN, str(corpus), "-o", out, "--id-field", "id", "-q", *opts]
    t0 = time.perf_counter()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=cluster.env, cwd=cluster.root, start_new_session=True)
    try:
        rc = proc.wait(timeout=SUBMIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        _stop(proc)
        _fail(f"spark-submit did not finish in {SUBMIT_TIMEOUT} s; the end of its log:\n{_tail(log)}")
    finally:
        _stop(proc)
    if rc != 0:
        _fail(f"spark-submit exited with status {rc}; the end of its log:\n{_tail(log)}")
    return time.perf_counter() - t0


def _parts(folder: Path) -> bytes:
    """A Spark part-file folder's content, part files in name order (how the outputs are read back)."""
    return b"".join(p.read_bytes() for p in sorted(folder.glob("part-*")))


@pytest.mark.parametrize("method", list(RUNS))
def test_spark_submit_to_a_standalone_cluster_matches_local(setup, method):
    cluster, corpus, archive, local = setup
    opts, spark_opts, uri = RUNS[method]
    before = set(cluster.executor_dirs())
    out = cluster.root / f"spark-{method}"
    seconds = _submit(cluster, archive, corpus, out.as_uri() if uri else str(out), [*opts, *spark_opts],
                      cluster.root / "logs" / f"submit-{method}.log")
    print(f"{method}: spark-submit took {seconds:.1f} s")

    # the executors: on both workers, each with the archive unpacked in its working folder
    executors = sorted(set(cluster.executor_dirs()) - before)
    assert {e.parent.parent.name for e in executors} == {f"work{i}" for i in range(WORKERS)}, executors
    for e in executors:
        assert (e / "environment" / "bin" / "python").exists(), e

    ref = local[method]
    if uri:       # a URI OUTDIR: a part-file folder per output
        assert _parts(out / "clusters.jsonl") == (ref / "clusters.jsonl").read_bytes()
        assert _parts(out / "kept" / corpus.name) == (ref / "kept" / corpus.name).read_bytes()
    else:         # a local OUTDIR: the part files merged into the local engine's files
        ours = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
        assert ours == {str(p.relative_to(ref)) for p in ref.rglob("*") if p.is_file()}
        for name in ("clusters.jsonl", f"kept/{corpus.name}"):
            assert (out / name).read_bytes() == (ref / name).read_bytes(), name
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    want = json.loads((ref / "report.json").read_text(encoding="utf-8"))
    assert rep["engine"] == "spark" and rep["counts"] == want["counts"]
    assert want["counts"]["removed"] > 2000 and want["counts"]["input_rows"] == 2750
    for key in COMPARED:
        assert rep.get(key) == want.get(key), key

    # the session spark-submit gave: the cluster's parallelism, and 2 shuffle partitions per core of it
    # (Spark's default is 200 tasks in each of ~100 stages)
    spark = rep["spark"]
    assert spark["master"] == cluster.url
    parallelism = 5 if "--spark-conf" in spark_opts else WORKERS      # standalone: the cores of the executors
    assert spark["default_parallelism"] == parallelism
    assert spark["shuffle_partitions"] == max(8, 2 * parallelism)


PROBE = """import json
from neardup.config import DedupConfig
from neardup.engines.spark.session import _session, _shuffle_partitions

with _session(None, DedupConfig(), {}) as spark:
    print("PROBE", json.dumps({"shuffle_partitions": _shuffle_partitions(spark), "master": spark.sparkContext.master}))
"""


def test_the_session_keeps_the_shuffle_partitions_given_to_spark_submit(setup):
    """``spark-submit --conf spark.sql.shuffle.partitions=N`` (the recipes for large clusters) is the
    user's setting: the session neardup creates keeps it (spark-submit's settings reach the context,
    never PYSPARK_SUBMIT_ARGS; before, the rule above replaced them)."""
    cluster = setup[0]
    script = cluster.root / "probe.py"
    script.write_text(PROBE, encoding="utf-8")
    master = cluster.url
    res = subprocess.run([str(SPARK_HOME / "bin" / "spark-submit"), "--master", master,
                          "--conf", f"spark.pyspark.driver.python={sys.executable}",
                          "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
                          "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=6", str(script)],
                         capture_output=True, text=True, env=cluster.env, cwd=cluster.root, timeout=SUBMIT_TIMEOUT)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("PROBE ")]
    assert res.returncode == 0 and lines, res.stdout[-2000:] + res.stderr[-3000:]
    got = json.loads(lines[0][len("PROBE "):])
    assert got == {"shuffle_partitions": 6, "master": master}
