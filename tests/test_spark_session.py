"""The Spark session neardup makes for itself: settings the user gives (``--spark-conf``), defaults
where none is given (the driver's memory from the machine), and a JVM that dies as one line naming
the setting to raise. No Spark is started here."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark", reason="the Spark engine's tests need PySpark (pip install 'neardup[spark]')")

from neardup._arrays import physical_memory
from neardup.cli import main
from neardup.config import DedupConfig
from neardup.engines.spark import session
from neardup.errors import ConfigError, WorkerError


def test_spark_conf_is_key_value_with_a_spark_key():
    assert session.parse_spark_conf(["spark.driver.memory=8g", " spark.sql.shuffle.partitions = 16 "]) == {
        "spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "16"}
    for bad in ("nope", "spark.x=", "=1", "memory=8g"):
        with pytest.raises(ConfigError, match=r"spark_conf \(--spark-conf\)"):
            session.parse_spark_conf([bad])


def test_the_local_driver_gets_a_share_of_the_machine(monkeypatch):
    gib = int(session.local_driver_memory()[:-1])
    assert gib >= 1 and gib << 30 <= 0.41 * max(physical_memory(), 1 << 30) + (1 << 30)
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 3g pyspark-shell")
    assert session._given("spark.driver.memory", {})
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS")
    assert not session._given("spark.driver.memory", {}) and session._given("spark.driver.memory",
                                                                             {"spark.driver.memory": "2g"})


def test_a_dead_jvm_is_one_line_naming_the_setting():
    from py4j.protocol import Py4JNetworkError

    class Given:                 # a session handed in: neither started nor stopped here
        pass

    with pytest.raises(WorkerError, match=r"ran out of memory: raise spark\.driver\.memory"):
        with session._session(Given(), DedupConfig().resolved(), {"spark.driver.memory": "2g"}):
            raise Py4JNetworkError("Answer from Java side is empty")


def test_spark_conf_needs_the_spark_engine(tmp_path):
    res = CliRunner().invoke(main, ["dedup", "x.jsonl", "-o", str(tmp_path / "o"), "--spark-conf",
                                    "spark.driver.memory=2g"])
    assert res.exit_code == 2 and "only with --engine spark" in res.output and "Traceback" not in res.output
