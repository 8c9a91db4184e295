"""Starting Spark from a task without the Airflow Spark provider.

The Spark provider (``@task.pyspark``, ``SparkSubmitOperator``) depends on ``pyspark-client``,
which installs the same ``pyspark`` package files as ``pyspark`` itself: with both, the Python
side of one release runs against the jars of another and ``pip check`` does not notice. The
example DAGs therefore start Spark with these two small helpers, and the ``spark`` extra is
plain ``pyspark``. Importing this module does not import pyspark.

- :func:`spark_session`: a session for the body of a ``with`` (stopped after), master from the
  argument (the example DAGs pass ``[kgroups_examples] spark_master``), else
  ``KGROUPS_SPARK_MASTER`` for use outside Airflow (this module never imports it), else ``local[*]``.
- :func:`spark_submit_command` / :func:`run_spark_submit`: a ``spark-submit`` child process,
  its output in the task log, a non-zero exit an exception.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..client.errors import ConfigurationError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

ENV_MASTER = "KGROUPS_SPARK_MASTER"
DEFAULT_MASTER = "local[*]"


def spark_master(master: str | None = None) -> str:
    """The master to use: the argument, else ``KGROUPS_SPARK_MASTER``, else ``local[*]``."""
    chosen = master or os.environ.get(ENV_MASTER) or DEFAULT_MASTER
    if not chosen.strip():
        raise ConfigurationError(
            f"the Spark master is empty: pass one (e.g. 'local[2]', 'spark://host:7077', "
            f"'yarn') or set {ENV_MASTER}."
        )
    return chosen.strip()


@contextmanager
def spark_session(
    app_name: str, *, master: str | None = None, conf: Mapping[str, str] | None = None
) -> Iterator[SparkSession]:
    """A SparkSession for the ``with`` body, stopped afterwards (also when the body raises)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).master(spark_master(master))
    for key, value in (conf or {}).items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    try:
        yield spark
    finally:
        spark.stop()


def spark_submit_binary() -> str:
    """``spark-submit`` from PATH, else the one pip's pyspark ships in its ``bin/``."""
    found = shutil.which("spark-submit")
    if found:
        return found
    spec = importlib.util.find_spec("pyspark")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "bin" / "spark-submit"
        if candidate.exists():
            return str(candidate)
    raise FileNotFoundError(
        "spark-submit is neither on PATH nor in the installed pyspark: "
        "pip install 'airflow-provider-kgroups[spark]' or put Spark's bin on PATH."
    )


def spark_submit_command(
    application: str,
    *,
    master: str | None = None,
    name: str | None = None,
    conf: Mapping[str, str] | None = None,
    application_args: Sequence[str] = (),
) -> list[str]:
    """``spark-submit --master M [--name N] [--conf k=v ...] application args...``."""
    command = ["spark-submit", "--master", spark_master(master)]
    if name:
        command += ["--name", name]
    for key, value in (conf or {}).items():
        command += ["--conf", f"{key}={value}"]
    return [*command, application, *application_args]


def run_spark_submit(command: Sequence[str], *, env: Mapping[str, str] | None = None) -> None:
    """Run a :func:`spark_submit_command`, its output line by line in the log; raise on failure."""
    argv = (
        [spark_submit_binary(), *command[1:]] if command and command[0] == "spark-submit" else list(command)
    )
    log.info("Running: %s", " ".join(argv))
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, **(env or {})}
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            log.info("%s", line.rstrip())
    if process.returncode:
        raise RuntimeError(f"spark-submit exited with code {process.returncode}: {' '.join(argv)}")
