"""One local Spark for the Spark tests: ``local[2]``, 4 shuffle partitions, no UI, UTC.

``spark`` (and ``spark_factory()`` for module-scoped fixtures) hands out the same session all
along, started on first use and stopped at the end of the test session; if other code stopped
it in between (a ``@task.pyspark`` run stops the session it got), a new one is started.
"""

from __future__ import annotations

import logging
import os
import sys

import pytest

import tests.support.airflow_env

pytest.importorskip("pyspark")
logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO lines at interpreter exit hit closed streams

CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
    # a short-lived local driver: C1 JIT and the serial GC start faster
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


def _start():
    from pyspark.sql import SparkSession

    os.environ.setdefault(
        "PYSPARK_PYTHON", sys.executable
    )  # Python workers (data sources) run this interpreter

    builder = SparkSession.builder.master("local[2]").appName("kgroups-spark-tests")
    for key, value in CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _alive(session) -> bool:
    sc = session.sparkContext
    return sc._jsc is not None and not sc._jsc.sc().isStopped()


@pytest.fixture(scope="session")
def spark_factory():
    """A callable returning the live session (for module-scoped fixtures)."""
    holder: dict = {}

    def get():
        session = holder.get("session")
        if session is None or not _alive(session):
            session = holder["session"] = _start()
        for key, value in CONF.items():  # a session someone else started may differ in runtime settings
            if key.startswith("spark.sql."):
                session.conf.set(key, value)
        return session

    yield get
    if holder.get("session") is not None and _alive(holder["session"]):
        holder["session"].stop()


@pytest.fixture
def spark(spark_factory):
    return spark_factory()
