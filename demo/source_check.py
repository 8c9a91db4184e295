"""The gate's range read again after the flagship DAG's run, by Spark's own Kafka source
(``format("kafka")``, spark-sql-kafka-0-10) and by the ``kgroups`` source, in one Spark session
that has both (:mod:`demo.spark_oracle`: pyspark 4.2.0, since Maven Central serves no connector
for the venv's pyspark), and compared row by row, column by column.

:func:`oracle_unavailable` sets the oracle's environment up before the run (cached after the first
use) and answers why it cannot be, in one sentence naming what to install; :func:`check` reads
the range the DAG recorded with both and answers a :class:`SourceComparison`, or
:class:`NotCompared` (findings, no prose: ``demo.report.sources`` words them).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_kgroups.spark.offsets import kafka_batch_options
from demo.apache_kafka import JarResolutionError
from demo.spark_oracle import (
    ORACLE_SPARK,
    OracleReadError,
    SparkOracle,
    connector_jars,
    pyspark_environment,
)

#: The columns of a row as the oracle's worker answers it (timestamp as epoch milliseconds).
COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")


@dataclass(frozen=True, slots=True)
class NotCompared:
    reason: str
    failed: bool  # the comparison itself failed (no range recorded, a read raised): the demo fails


@dataclass(frozen=True, slots=True)
class SourceComparison:
    spark: str  # the Spark both read in
    manifest: str  # the file the range was taken from
    starting: str  # startingOffsets, as the DAG used it
    ending: str  # endingOffsets
    kafka_records: int
    kgroups_records: int
    schema_equal: bool
    #: columns that differ in a row both read (the same topic, partition and offset)
    differing_columns: tuple[str, ...]
    difference: str  # '' when the rows are equal, else the first differing row of each

    @property
    def equal(self) -> bool:
        return self.schema_equal and not self.difference


def oracle_unavailable() -> str | None:
    """None when Spark's Kafka source can run here (the connector's jars resolved by Maven and
    pyspark :data:`ORACLE_SPARK` installed by pip, once, into the cache); else why not."""
    try:
        connector_jars()
    except JarResolutionError as exc:
        return (
            f"spark-sql-kafka-0-10 {ORACLE_SPARK}'s jars could not be resolved from Maven Central: "
            f"{str(exc).splitlines()[0]}"
        )
    try:
        pyspark_environment()
    except subprocess.TimeoutExpired as exc:
        return f"pip did not install pyspark {ORACLE_SPARK} within {exc.timeout:.0f} s: let pip reach PyPI"
    except RuntimeError as exc:
        return (
            f"pip could not install pyspark {ORACLE_SPARK} (the newest Spark with a spark-sql-kafka-0-10 on "
            f"Maven Central) into the cache ({str(exc).strip().splitlines()[-1].strip()}): let pip reach PyPI once"
        )
    return None


def gate_manifest(output: Path) -> Path | None:
    """The newest run's manifest that records the gate's range: ``source=kafka``'s, else ``source=landing``'s
    (both carry the gate's XCom as it was)."""
    for source in ("kafka", "landing"):
        found = sorted(output.glob(f"run=*/source={source}/_manifest.json"))
        if found:
            return found[-1]
    return None


def check(
    oracle: SparkOracle | None, unavailable: str | None, bootstrap: str, output: Path
) -> SourceComparison | NotCompared:
    """The comparison of the range the DAG recorded under ``output`` (``unavailable``: why there is
    no ``oracle``); the oracle is closed on return."""
    if oracle is None:
        return NotCompared(unavailable or "Spark's Kafka source was not started", failed=False)
    try:
        manifest = gate_manifest(output)
        if manifest is None:
            return NotCompared(
                f"no manifest under {output} records the gate's range (see the log)", failed=True
            )
        return compare(oracle, bootstrap, manifest)
    except (OracleReadError, TimeoutError, RuntimeError) as exc:
        return NotCompared(f"{type(exc).__name__}: {str(exc).splitlines()[0]}", failed=True)
    finally:
        oracle.close()


def compare(oracle: SparkOracle, bootstrap: str, manifest: Path) -> SourceComparison:
    """Both sources read exactly the manifest's ``[startingOffsets, endingOffsets)``, headers
    included, with the same options (raises :class:`demo.spark_oracle.OracleReadError` when one fails)."""
    recorded = json.loads(manifest.read_text())
    starting, ending = recorded["startingOffsets"], recorded["endingOffsets"]
    options = {
        "kafka.bootstrap.servers": bootstrap,
        **kafka_batch_options(starting=starting, ending=ending),
        "includeHeaders": "true",
    }
    spark = oracle.read("kafka", options)
    ours = oracle.read("kgroups", options)
    return SourceComparison(
        spark=ORACLE_SPARK,
        manifest=str(manifest),
        starting=starting,
        ending=ending,
        kafka_records=len(spark.rows),
        kgroups_records=len(ours.rows),
        schema_equal=ours.schema == spark.schema,
        differing_columns=differing_columns(ours.rows, spark.rows),
        difference=difference(ours.rows, spark.rows),
    )


def differing_columns(got: list[tuple], expected: list[tuple]) -> tuple[str, ...]:
    """The columns (:data:`COLUMNS`) whose values differ in some record both read."""
    theirs = {row[2:5]: row for row in expected}
    found: set[int] = set()
    for row in got:
        other = theirs.get(row[2:5])
        if other is not None:
            found.update(i for i, (a, b) in enumerate(zip(row, other, strict=False)) if a != b)
    return tuple(COLUMNS[i] for i in sorted(found))


def _short(row: tuple | None) -> str:
    return (
        repr(tuple(v[:40] + b"..." if isinstance(v, bytes) and len(v) > 40 else v for v in row))
        if row is not None
        else "nothing"
    )


def difference(got: list[tuple], expected: list[tuple]) -> str:
    """'' when equal, else the first differing row of each, values cut short (1 MiB values)."""
    if got == expected:
        return ""
    for index in range(max(len(got), len(expected))):
        mine = got[index] if index < len(got) else None
        theirs = expected[index] if index < len(expected) else None
        if mine != theirs:
            return f"{len(got)} rows vs {len(expected)}; row {index}: {_short(mine)} != {_short(theirs)}"
    return "?"
