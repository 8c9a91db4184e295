"""An AvailableNow streaming job over exactly the gate's range, for a task's body: the reader
options (:func:`available_now_options`) and the run to a file sink (:func:`run_available_now`).

The query reads from where its checkpoint says (the first run: from where ``commitToGroup``'s
group says, earliest where it has no commit) up to the gate's ``endingOffsets``, in
micro-batches of ``maxOffsetsPerTrigger``; the file sink and the checkpoint make a rerun
exactly-once, and the group shows how far the job got to every lag tool and gate::

    options = available_now_options(bootstrap, gate_xcom, subscribe="orders",
                                    commit_group="orders-spark", command_config=props)
    summary = run_available_now(spark, options, checkpoint=".../cp", sink_path=".../out")
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from ..client.errors import ConfigurationError
from ..lag.offset_range import ENDING
from .datasource import FORMAT, register

log = logging.getLogger(__name__)


def available_now_options(
    bootstrap_servers: str,
    gate: Mapping[str, Any] | None,
    *,
    subscribe: str,
    commit_group: str | None = None,
    command_config: str | None = None,
    max_offsets_per_trigger: int | None = None,
    options: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Reader options: ``subscribe``, ``endingOffsets`` from the gate's XCom (None: the log end
    when the run starts), ``commitToGroup`` with ``startingOffsets=group`` (else earliest)."""
    chosen = {"kafka.bootstrap.servers": bootstrap_servers, "subscribe": subscribe}
    if gate is not None:
        if ENDING not in gate:
            raise ConfigurationError(f"the gate's result has no {ENDING}: pass the ConsumerLagSensor's XCom.")
        ending = gate[ENDING]
        chosen[ENDING] = ending if isinstance(ending, str) else json.dumps(ending)
    chosen["startingOffsets"] = "group" if commit_group else "earliest"
    if commit_group:
        chosen["commitToGroup"] = commit_group
    if command_config:
        chosen["kgroups.command.config"] = command_config
    if max_offsets_per_trigger:
        chosen["maxOffsetsPerTrigger"] = str(max_offsets_per_trigger)
    chosen.update(options or {})
    return chosen


def run_available_now(
    spark,
    options: Mapping[str, str],
    *,
    checkpoint: str,
    sink_path: str,
    sink_format: str = "parquet",
    transform: Callable[[Any], Any] | None = None,
    timeout_s: float = 3600.0,
) -> dict[str, Any]:
    """Run the query once under Trigger.AvailableNow to ``sink_path``; answers the batches it
    ran, the records it read and where it ended (``endOffsets``: Spark's last progress)."""
    register(spark)
    frame = spark.readStream.format(FORMAT).options(**options).load()
    if transform is not None:
        frame = transform(frame)
    query = (
        frame.writeStream.format(sink_format)
        .option("path", sink_path)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    if not query.awaitTermination(timeout_s):
        query.stop()
        raise TimeoutError(f"the AvailableNow run did not end within {timeout_s:.0f} s and was stopped.")
    ran = [p for p in query.recentProgress if "addBatch" in p.get("durationMs", {})]  # batches that ran
    end = ran[-1]["sources"][0]["endOffset"] if ran else None
    summary = {
        "batches": len(ran),
        "records": sum(int(p.get("numInputRows", 0)) for p in ran),
        "endOffsets": json.loads(end) if isinstance(end, str) else end,
    }
    log.info(
        "AvailableNow run: %d micro-batch(es), %d record(s), ended at %s",
        summary["batches"],
        summary["records"],
        summary["endOffsets"] or "where the last run ended (nothing new)",
    )
    return summary
