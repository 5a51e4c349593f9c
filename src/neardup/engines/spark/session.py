"""The Spark session and the run's plumbing: what is supported, partitions, job descriptions, caching and
releasing, worker errors turned into one line, paths that may be URIs."""
from __future__ import annotations

import contextlib
import gc
import os
import re
import sys

from pyspark.sql import DataFrame, SparkSession

from ..._arrays import physical_memory
from ...config import DedupConfig, check_banded, cpu_count
from ...dedup.methods import method_of
from ...dedup.progress import reporting
from ...errors import ConfigError, WorkerError
from .progress import PhaseProgress


def _check_supported(cfg: DedupConfig, spans: bool = False) -> None:
    """What Spark's steps take; ``spans``: a whole run (:func:`~.run.run_spark_dedup`), whose span step
    runs where the run finishes on its driver (the DataFrame steps have none)."""
    check_banded(cfg)
    if spans:
        return
    if cfg.spans is not None:
        raise ConfigError(f"spans (--spans) {cfg.spans} on Spark runs in `neardup dedup --engine spark` (the span "
                          "step runs on the driver); these DataFrame steps have none")
    if method_of(cfg).spans:
        raise ConfigError(f"method (--method) {cfg.method} on Spark runs in `neardup dedup --engine spark` (the "
                          "span step runs on the driver); these DataFrame steps have none")


def _task_threads() -> None:
    """One compute thread per Spark task: Spark runs tasks side by side already, and a kernel that
    spreads over every core from each task slot would oversubscribe them."""
    import numba  # noqa: PLC0415

    numba.set_num_threads(1)


def _shuffle_partitions(spark) -> int:
    return int(spark.conf.get("spark.sql.shuffle.partitions"))


def _arrow_frame(spark, table, schema=None) -> DataFrame:
    """A DataFrame of an Arrow table of the driver, cut into about as many partitions as the shuffles
    use. PySpark cuts it into one partition per ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows
    (10,000 by default): the 5.6 M candidate pairs of a million documents became 560 tasks (10.6 s of
    a run's 136 on local[2]), where 8 do."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key, None)
    spark.conf.set(key, str(max(int(before or 10_000), -(-table.num_rows // _shuffle_partitions(spark)))))
    try:        # (the setting is read as the table is sent to the JVM, here: no later query sees it)
        return spark.createDataFrame(table) if schema is None else spark.createDataFrame(table, schema=schema)
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def _driver_memory(spark) -> int:
    """``spark.driver.memory`` in bytes (1 GiB, Spark's default, when unset), read by Spark's own parser
    of size strings (MiB without a unit)."""
    utils = spark.sparkContext._jvm.org.apache.spark.network.util.JavaUtils
    return int(utils.byteStringAsMb(str(spark.conf.get("spark.driver.memory", "1g")))) << 20


def _phase(spark, what: str | None) -> None:
    """Name the jobs that follow (Spark UI, event log: the benchmark sums shuffle bytes per phase), and
    first let the JVM drop the Datasets of the DataFrames the run no longer holds (:func:`_release`)."""
    _release()
    spark.sparkContext.setJobDescription(f"neardup: {what}" if what else None)
    if _PHASES:
        _PHASES[-1].phase(what)


_PHASES: list[PhaseProgress] = []      # the progress of the run in this driver (--progress bar|json)


def _release() -> None:
    """Free the py4j proxies of dropped DataFrames now. A proxy on which a method was called sits in a
    reference cycle (py4j caches each method object, which points back at the proxy), so Python frees
    it only in a cycle collection, and until then the JVM keeps its Dataset alive with every plan of it
    (parsed, analysed, optimised, physical): megabytes per DataFrame over this engine's long lineages.
    Python's collector runs by the count of Python objects, which a Spark run creates few of, so without
    this one run in a 2 GB driver kept about 1 GB of dead plans (``--verify borderline``, the 42 rows of
    tests/test_golden.py in five inputs)."""
    gc.collect()


def _checkpoint(df: DataFrame) -> DataFrame:
    """Truncate the lineage of an iterated DataFrame: reliable checkpoint when a checkpoint directory
    is set (use one on clusters with dynamic allocation), else a local checkpoint."""
    if df.sparkSession.sparkContext.getCheckpointDir():
        return df.checkpoint(eager=True)
    return df.localCheckpoint(eager=True)


def _local_master() -> bool:
    """Whether a session made here runs in local mode (no master given by spark-submit or MASTER)."""
    master = os.environ.get("MASTER", "")
    return (not master or master.startswith("local")) and "--master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


def _given(name: str, conf: dict) -> bool:
    """Whether the user set the Spark setting ``name`` (``--spark-conf``, or ``PYSPARK_SUBMIT_ARGS``)."""
    return name in conf or name in os.environ.get("PYSPARK_SUBMIT_ARGS", "") or (
        name == "spark.driver.memory" and "--driver-memory" in os.environ.get("PYSPARK_SUBMIT_ARGS", ""))


def local_driver_memory() -> str:
    """The driver's memory in local mode, where the one JVM is the driver and the executors: 40 % of
    the machine's memory (the Python workers and the page cache need the rest), at least 1 GiB."""
    phys = physical_memory()
    gib = max(1, int(phys * 0.4) >> 30) if phys > 0 else 1
    return f"{gib}g"


def parse_spark_conf(items) -> dict:
    """``KEY=VALUE`` settings (``--spark-conf``) as a dict; :class:`ConfigError` naming a bad one."""
    out = {}
    for item in items or ():
        key, eq, value = str(item).partition("=")
        if not eq or not key.strip().startswith("spark.") or not value.strip():
            raise ConfigError(f"spark_conf (--spark-conf) must be KEY=VALUE with a Spark key (spark.…); got {item!r}")
        out[key.strip()] = value.strip()
    return out


@contextlib.contextmanager
def _session(spark, cfg: DedupConfig, conf: dict | None = None):
    """The session to run on: the one given, the active one, or a new one stopped at the end. A new
    one takes the ``conf`` settings (``--spark-conf``); where the user set nothing: in local mode its
    driver gets :func:`local_driver_memory` (Spark's 1 GiB default fails at a million documents) and 4
    shuffle partitions per CPU (at least 8), on a cluster 2 per core of its default parallelism when the
    session starts (at least 8: Spark's default of 200 runs each of the ~95 stages as 200 tasks), unless
    the context already has ``spark.sql.shuffle.partitions`` (spark-submit's ``--conf``,
    spark-defaults.conf); its Python workers run
    this very interpreter in local mode (``PYSPARK_PYTHON``), so ``.venv/bin/neardup dedup --engine
    spark`` works without activating the environment; it logs only fatal messages
    (``NEARDUP_SPARK_LOG_LEVEL`` to see more). A failure inside a Python worker reaches the caller as
    one :class:`~neardup.errors.WorkerError` line (the worker's own error, the JVM's trace chained),
    and so does a JVM that died (out of memory: the line names the setting to raise)."""
    from py4j.protocol import Py4JError, Py4JNetworkError  # noqa: PLC0415  (PySpark's bridge: Spark runs only)
    from pyspark.errors import PythonException  # noqa: PLC0415  (as above)

    conf = dict(conf or {})
    own = spark is None and SparkSession.getActiveSession() is None
    if spark is None:
        builder = SparkSession.builder.appName("neardup dedup")
        for key, value in conf.items():
            builder = builder.config(key, value)
        if not _given("spark.ui.showConsoleProgress", conf):     # (neardup's own bars, --progress, instead)
            builder = builder.config("spark.ui.showConsoleProgress", "false")
        local = own and _local_master()
        if local and not os.environ.get("PYSPARK_PYTHON"):
            os.environ["PYSPARK_PYTHON"] = sys.executable     # read by the SparkContext for its workers
        if local and not _given("spark.driver.memory", conf):
            builder = builder.config("spark.driver.memory", local_driver_memory())
        spark = builder.getOrCreate()
        if own and not _given("spark.sql.shuffle.partitions", conf) and \
                not spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
            # Spark's default of 200 shuffle partitions makes each of ~95 stages 200 tasks, each with a
            # Python worker on one machine (a 40-document run: 113 s with 200, 49 s with 8). A value the
            # user gave (--spark-conf, spark-submit's --conf, spark-defaults.conf) is in the context's
            # settings and kept: spark-submit's never reaches PYSPARK_SUBMIT_ARGS
            per_core = 4 * cpu_count() if local else 2 * spark.sparkContext.defaultParallelism
            spark.conf.set("spark.sql.shuffle.partitions", str(max(8, per_core)))
        if own:   # a failing task is neardup's one line, not pages of executor log (NEARDUP_SPARK_LOG_LEVEL)
            spark.sparkContext.setLogLevel(os.environ.get("NEARDUP_SPARK_LOG_LEVEL", "FATAL"))
    memory = conf.get("spark.driver.memory") or (local_driver_memory() if own and _local_master() else None)
    # what exists now (modules, the session) is never garbage: each _release then walks only the run's own
    # objects (on the 20k-document run its 12 collections took 4.3 s walking the whole heap)
    gc.freeze()
    progress = contextlib.ExitStack()
    phases = None
    if progress.enter_context(reporting(cfg)).mode != "none":
        phases = PhaseProgress(spark.sparkContext)
        _PHASES.append(phases)
    try:
        yield spark
    except PythonException as exc:
        raise WorkerError(f"a Spark Python worker failed: {_worker_error(str(exc))}") from exc
    except (Py4JNetworkError, ConnectionError) as exc:
        raise WorkerError(_jvm_died(memory)) from exc
    except Py4JError as exc:
        if "OutOfMemoryError" in str(exc) or "Java heap space" in str(exc):
            raise WorkerError(_jvm_died(memory)) from exc
        raise
    finally:
        if phases is not None:
            _PHASES.remove(phases)
            phases.close()
        progress.close()
        gc.unfreeze()
        if own:
            with contextlib.suppress(Exception):     # (a JVM that died cannot be stopped)
                spark.stop()


def _jvm_died(memory: str | None) -> str:
    return ("the Spark driver's JVM stopped answering — most often it ran out of memory: raise spark.driver.memory "
            f"(--spark-conf spark.driver.memory=…{'; it had ' + memory if memory else ''}), or give the run more "
            "partitions (--spark-conf spark.sql.shuffle.partitions=…)")


def _worker_error(message: str) -> str:
    """The last Python error line of a worker's traceback (``ModuleNotFoundError: No module …``)."""
    lines = [ln.strip() for ln in message.splitlines()]
    errs = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", ln)]
    return errs[-1] if errs else (next((ln for ln in lines if ln), "") or "unknown error")


def _join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *parts]) if _is_uri(base) else os.path.join(base, *parts)


def _first_message(df: DataFrame, cond, col: str = "err") -> str:
    return df.filter(cond).orderBy("row").select(col).first()[0]


def _is_uri(path: str) -> bool:
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", path) is not None
