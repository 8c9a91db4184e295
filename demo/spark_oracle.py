"""Spark's own Kafka source (``spark-sql-kafka-0-10``) as the oracle for the ``kgroups`` source.

Maven Central serves the connector up to Spark :data:`ORACLE_SPARK` (checked 2026-11: 4.2.0 is
the newest release there; 4.3.0, the pyspark of the project's venv, is not served), so the
comparisons run in a Spark of that version, in an environment of its own: pyspark
:data:`ORACLE_SPARK` installed by pip into a cached folder (``--target``), put first on the
``PYTHONPATH`` of a worker process (:mod:`demo.spark_oracle_worker`) that runs everything
else from the project's venv. Once Maven Central serves the installed pyspark's connector, set
:data:`ORACLE_SPARK` to it and the worker runs on the venv's own pyspark.

The connector's jars are resolved with Maven (``demo.apache_kafka.resolve_jars``: Spark's Ivy
ignores Maven mirrors) and passed with ``spark.jars``; of its runtime dependencies only the four
in :data:`NEEDED_JARS` are passed (Scala, Hadoop, lz4, snappy, slf4j come with pyspark in the
versions that Spark was built with, and a second copy would clash).

One worker is one Spark session (``local[2]``) with the ``kgroups`` source registered, its JVM
tuned for a fast start unless ``settings`` say otherwise (a benchmark passes the settings of its
other session, so that every Spark it times runs the same JVM);
:meth:`SparkOracle.read` has it read ``format`` with ``options`` and answers the schema, the rows
(``timestamp`` as epoch milliseconds, ``headers`` as ``[(key, value)]``) and, when asked, the
number of Spark partitions; :meth:`SparkOracle.stream` has it run ``format`` as a Structured
Streaming query (``availableNow`` or ``once``) from a checkpoint the caller keeps, and answers every
micro-batch's rows and source offsets (:class:`StreamResult`);
:meth:`SparkOracle.stream_value_bytes` runs such a query for a benchmark, answering only the sum
of the value lengths and each batch's timings (:class:`StreamCost`); an error comes back as
:class:`OracleReadError`.

The tests (``tests/apachekafka/test_spark_kafka_source.py``) and the data-source benchmark use it.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from demo.apache_kafka import JarResolutionError, build_once, output_tail, resolve_jars

__all__ = [
    "NEEDED_JARS",
    "ORACLE_SPARK",
    "OracleReadError",
    "ReadResult",
    "SparkOracle",
    "StreamBatch",
    "StreamBatchCost",
    "StreamCost",
    "StreamResult",
    "connector_jars",
    "pyspark_environment",
]

#: The newest Spark whose spark-sql-kafka-0-10 Maven Central serves (checked 2026-11).
ORACLE_SPARK = "4.2.0"
CONNECTOR = ("org.apache.spark", "spark-sql-kafka-0-10_2.13", ORACLE_SPARK)
#: File-name prefixes of the connector's jars Spark needs beyond its own.
NEEDED_JARS = (
    "spark-sql-kafka-0-10_2.13-",
    "spark-token-provider-kafka-0-10_2.13-",
    "kafka-clients-",
    "commons-pool2-",
)
_ROOT = Path(__file__).resolve().parents[1]
#: The triggers :meth:`SparkOracle.stream` runs: both end the query by themselves.
STREAM_TRIGGERS = ("availableNow", "once")
#: How long past a stream's own timeout the parent waits for the answer: on a timeout the worker
#: stops the query (which interrupts its thread and waits for it) before it answers.
STOP_GRACE = 60.0


def connector_jars() -> list[Path]:
    """The four jars of :data:`NEEDED_JARS`, resolved once with Maven (raises JarResolutionError)."""
    lib = resolve_jars([CONNECTOR], name=f"spark-sql-kafka-{ORACLE_SPARK}")
    found = []
    for prefix in NEEDED_JARS:
        matches = sorted(lib.glob(f"{prefix}*.jar"))
        if len(matches) != 1:
            raise JarResolutionError(f"{lib} holds {len(matches)} jars named {prefix}*.jar, expected one")
        found.append(matches[0])
    return found


def _installed_pyspark() -> str:
    from importlib.metadata import version

    return version("pyspark")


def pyspark_environment(timeout: float = 1800.0) -> Path | None:
    """None when the venv's pyspark is :data:`ORACLE_SPARK`; else a folder holding pyspark
    :data:`ORACLE_SPARK` (and its py4j), installed once by pip: into a temporary folder, then
    renamed, under a file lock (as ``resolve_jars`` does), so a killed install leaves nothing."""
    if _installed_pyspark() == ORACLE_SPARK:
        return None
    root = Path(
        os.environ.get("KGROUPS_PYSPARK_CACHE")
        or Path.home() / ".cache" / "airflow-provider-kgroups" / "pyspark"
    )
    target = root / ORACLE_SPARK
    if (target / "pyspark").is_dir():
        return target

    def install(staging: Path) -> None:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--target",
                str(staging),
                f"pyspark=={ORACLE_SPARK}",
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"pip could not install pyspark=={ORACLE_SPARK} (the oracle's Spark; PyPI must be "
                f"reachable). pip said:\n{output_tail(done)}"
            )

    build_once(target, "pyspark", install)
    return target


class OracleReadError(Exception):
    """A read the worker's Spark refused or failed: ``kind`` is the exception's class name."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind, self.message = kind, message


@dataclass(frozen=True)
class ReadResult:
    schema: str  # DataFrame.schema.simpleString()
    rows: list[tuple]  # sorted by (topic, partition, offset)
    partitions: int | None  # Spark partitions of the scan, when asked


@dataclass(frozen=True)
class StreamBatch:
    """One micro-batch that ran ``foreachBatch``. ``start``/``end``/``input_rows`` are the source's
    ``startOffset``/``endOffset``/``numInputRows`` in the query's progress update for the batch
    (parsed: ``{"topic": {"0": offset, ...}}`` for Kafka; ``start`` is None for a fresh query's
    first batch, which Spark reports without one)."""

    batch_id: int
    rows: list[tuple]  # as ReadResult.rows: sorted by (topic, partition, offset)
    start: dict | None
    end: dict | None
    input_rows: int


@dataclass(frozen=True)
class StreamResult:
    """One run of a streaming query to its end. ``batches`` holds only the batches that ran
    ``foreachBatch`` (with rows or without), in batch order: Spark also reports a trigger that ran
    no batch (a rerun with nothing new makes one), with no input rows, under the id the next batch
    will take; such an update adds no batch, so a rerun that finds nothing answers none.
    ``latest`` is the source's ``latestOffset`` in the last progress update, idle or not (parsed),
    None when there was none."""

    schema: str  # the loaded streaming DataFrame's schema.simpleString()
    batches: list[StreamBatch]
    latest: dict | None


@dataclass(frozen=True)
class StreamBatchCost:
    """One micro-batch of :meth:`SparkOracle.stream_value_bytes`: the ``durationMs`` of its
    progress update (Spark's phases in milliseconds: latestOffset, queryPlanning, getBatch,
    walCommit, addBatch, commitOffsets, triggerExecution) and its ``numInputRows``."""

    batch_id: int
    durations: dict[str, int]
    input_rows: int


@dataclass(frozen=True)
class StreamCost:
    """A benchmark's streaming run: the sum of every delivered value's length, and each batch
    that ran ``foreachBatch``, in batch order."""

    value_bytes: int
    batches: list[StreamBatchCost]


class SparkOracle:
    """A worker process holding one Spark session of :data:`ORACLE_SPARK` with the connector."""

    def __init__(
        self,
        workdir: Path,
        *,
        start_timeout: float = 300.0,
        read_timeout: float = 300.0,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        """``settings``: Spark configuration replacing the worker's STARTUP_TUNED (heap, JIT)."""
        self.workdir = workdir
        self.settings = None if settings is None else dict(settings)
        self.start_timeout, self.read_timeout = start_timeout, read_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._answers: int | None = None  # the read end of the worker's answer pipe
        self._buffer = b""
        self._ready = False

    def start(self) -> SparkOracle:
        """:meth:`launch`, then wait until the worker's Spark has started."""
        self.launch()
        self._wait_ready()
        return self

    def launch(self) -> SparkOracle:
        """Start the worker and return at once (its Spark starts while the caller goes on: the
        first read waits for it)."""
        jars = connector_jars()
        env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS")}
        env["PYSPARK_PYTHON"] = sys.executable
        pyspark_dir = pyspark_environment()
        paths = ([str(pyspark_dir)] if pyspark_dir else []) + [str(_ROOT)]
        env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [env.get("PYTHONPATH")] if p])
        read_end, write_end = os.pipe()
        with open(self.workdir / "worker.out", "wb") as log:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "demo.spark_oracle_worker",
                    str(write_end),
                    str(self.workdir),
                    ",".join(map(str, jars)),
                    *([] if self.settings is None else [json.dumps(self.settings)]),
                ],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=_ROOT,
                pass_fds=(write_end,),
            )
        os.close(write_end)
        self._answers = read_end
        self._ready = False
        return self

    def _wait_ready(self) -> None:
        if self._ready:
            return
        try:
            hello = self._answer(self.start_timeout)
            if hello.get("spark") != ORACLE_SPARK:
                raise RuntimeError(
                    f"the oracle worker runs Spark {hello.get('spark')}, expected {ORACLE_SPARK}"
                )
        except BaseException:
            self.close(timeout=5)
            raise
        self._ready = True

    def _answer(self, timeout: float) -> dict:
        """The worker's next answer line, waited for until ``timeout`` seconds have passed."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._answers], [], [], left)[0]:
                raise TimeoutError(
                    f"the oracle worker did not answer within {timeout:.0f} s; its output:\n{self.log_tail()}"
                )
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                raise RuntimeError(f"the oracle worker exited; its output:\n{self.log_tail()}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def log_tail(self, lines: int = 40) -> str:
        path = self.workdir / "worker.out"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def read(self, format: str, options: dict[str, str], *, partitions: bool = False) -> ReadResult:
        """``spark.read.format(format).options(**options).load()``, collected; raises OracleReadError."""
        found = self._request({"format": format, "options": options, "partitions": partitions})
        return ReadResult(found["schema"], found["rows"], found["partitions"])

    def value_bytes(self, format: str, options: dict[str, str]) -> int:
        """The same read, answering only ``sum(length(value))`` (for a benchmark: nothing collected)."""
        return self._request({"format": format, "options": options, "value_bytes": True})["value_bytes"]

    def stream(
        self,
        format: str,
        options: dict[str, str],
        *,
        checkpoint: str | Path,
        trigger: str = "availableNow",
        timeout: float | None = None,
    ) -> StreamResult:
        """``spark.readStream.format(format).options(**options).load()`` run into ``foreachBatch``
        with ``trigger`` until the query ends, its state kept in ``checkpoint`` (a folder): a second
        call with the same folder continues where the first ended, as a restarted job does. The
        query is stopped after ``timeout`` seconds (default: the oracle's ``read_timeout``); that,
        and whatever failed the query, raises OracleReadError (a failed query's message ends with
        its cause's class and message)."""
        if trigger not in STREAM_TRIGGERS:
            raise ValueError(f"trigger {trigger!r}: the oracle runs {' or '.join(STREAM_TRIGGERS)}")
        limit = self.read_timeout if timeout is None else timeout
        if limit <= 0:
            raise ValueError(f"timeout {limit!r}: a stream needs a positive number of seconds")
        request = {
            "kind": "stream",
            "format": format,
            "options": options,
            "checkpoint": str(checkpoint),
            "trigger": trigger,
            "timeout": limit,
        }
        found = self._request(request, timeout=limit + STOP_GRACE)
        return StreamResult(found["schema"], [StreamBatch(**b) for b in found["batches"]], found["latest"])

    def stream_value_bytes(
        self,
        format: str,
        options: dict[str, str],
        *,
        checkpoint: str | Path,
        timeout: float | None = None,
    ) -> StreamCost:
        """The same query as :meth:`stream` (AvailableNow), answering only ``sum(length(value))``
        over its batches and each batch's timings (for a benchmark: nothing collected, so what
        it costs is the source's and Spark's); timeouts and failures as :meth:`stream`."""
        limit = self.read_timeout if timeout is None else timeout
        if limit <= 0:
            raise ValueError(f"timeout {limit!r}: a stream needs a positive number of seconds")
        request = {
            "kind": "stream_value_bytes",
            "format": format,
            "options": options,
            "checkpoint": str(checkpoint),
            "trigger": "availableNow",
            "timeout": limit,
        }
        found = self._request(request, timeout=limit + STOP_GRACE)
        return StreamCost(found["value_bytes"], [StreamBatchCost(**b) for b in found["batches"]])

    def _request(self, request: dict, *, timeout: float | None = None) -> dict:
        """Send ``request``, wait ``timeout`` seconds (default ``read_timeout``) for its answer."""
        self._wait_ready()
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        answer = self._answer(self.read_timeout if timeout is None else timeout)
        if not answer["ok"]:
            raise OracleReadError(answer["kind"], answer["message"])
        with open(answer["path"], "rb") as handle:
            found = pickle.load(handle)
        os.unlink(answer["path"])
        return found

    def close(self, timeout: float = 60.0) -> None:
        """End of input: the worker stops its Spark and exits (killed after ``timeout`` seconds; its
        JVM exits when the worker's end of the gateway pipe closes)."""
        if self.process is None:
            return
        try:
            self.process.stdin.close()
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        finally:
            if self._answers is not None:
                os.close(self._answers)
                self._answers = None
            self.process = None

    def __enter__(self) -> SparkOracle:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
