"""The Spark session and the run's plumbing: what is supported, partitions, job descriptions, caching and
releasing, worker errors turned into one line, paths that may be URIs."""
from __future__ import annotations

import contextlib
import gc
import os
import re
import sys

from pyspark.sql import DataFrame, SparkSession

from ...config import DedupConfig, check_banded, cpu_count, simhash_verified
from ...errors import ConfigError, WorkerError


def _check_supported(cfg: DedupConfig) -> None:
    check_banded(cfg)
    if cfg.spans is not None:
        raise ConfigError(f"spans (--spans) {cfg.spans} runs on the local engine (--engine local); on Spark it is "
                          "not built yet (see README, 'Duplicates inside documents')")
    if cfg.method in ("lines", "substrings"):
        raise ConfigError(f"method (--method) {cfg.method} runs on the local engine (--engine local); on Spark it "
                          "is not built yet (see README, 'Duplicates inside documents')")
    if cfg.resume:
        raise ConfigError("resume (--resume) runs on the local engine (--engine local); Spark keeps no checkpoint "
                          "of pass 1 yet")
    if cfg.index is not None and simhash_verified(cfg):
        raise ConfigError("index (--index) with verified SimHash runs on the local engine (--engine local); on Spark "
                          "the index is probed with the classic rule only (give --bits K)")
    if cfg.index is not None and cfg.method == "minhash" and cfg.metric == "containment":
        raise ConfigError("index (--index) with --metric containment runs on the local engine (--engine local); "
                          "on Spark the index is probed for Jaccard only")


def _task_threads() -> None:
    """One compute thread per Spark task: Spark runs tasks side by side already, and a kernel that
    spreads over every core from each task slot would oversubscribe them."""
    import numba  # noqa: PLC0415

    numba.set_num_threads(1)


def _shuffle_partitions(spark) -> int:
    return int(spark.conf.get("spark.sql.shuffle.partitions"))


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


@contextlib.contextmanager
def _session(spark, cfg: DedupConfig):
    """The session to run on: the one given, the active one, or a new one stopped at the end. A new
    local one runs its Python workers with this very interpreter (``PYSPARK_PYTHON``), so
    ``.venv/bin/neardup dedup --engine spark`` works without activating the environment, uses
    4 shuffle partitions per CPU (at least 8) unless ``PYSPARK_SUBMIT_ARGS`` sets them, and logs only
    fatal messages (``NEARDUP_SPARK_LOG_LEVEL`` to see more). A failure inside a Python worker
    reaches the caller as one :class:`~neardup.errors.WorkerError` line (the worker's own error,
    the JVM's trace chained)."""
    from pyspark.errors import PythonException  # noqa: PLC0415

    own = spark is None and SparkSession.getActiveSession() is None
    if spark is None:
        builder = SparkSession.builder.appName("neardup dedup")
        if cfg.quiet or not sys.stderr.isatty():
            builder = builder.config("spark.ui.showConsoleProgress", "false")
        if own and _local_master() and not os.environ.get("PYSPARK_PYTHON"):
            os.environ["PYSPARK_PYTHON"] = sys.executable     # read by the SparkContext for its workers
        if own and _local_master() and "spark.sql.shuffle.partitions" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
            # Spark's default of 200 shuffle partitions is for clusters: on one machine each is a task
            # with a Python worker (a 40-document run: 113 s with 200, 49 s with 8)
            builder = builder.config("spark.sql.shuffle.partitions", str(max(8, 4 * cpu_count())))
        spark = builder.getOrCreate()
        if own:   # a failing task is neardup's one line, not pages of executor log (NEARDUP_SPARK_LOG_LEVEL)
            spark.sparkContext.setLogLevel(os.environ.get("NEARDUP_SPARK_LOG_LEVEL", "FATAL"))
    try:
        yield spark
    except PythonException as exc:
        raise WorkerError(f"a Spark Python worker failed: {_worker_error(str(exc))}") from exc
    finally:
        if own:
            spark.stop()


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
