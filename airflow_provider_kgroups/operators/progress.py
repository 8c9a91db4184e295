"""``ConsumerGroupProgressOperator``: after a Spark task read ``[startingOffsets, endingOffsets)``
straight from Kafka, commit ``endingOffsets`` to a named *progress group*, so lag tools (Burrow,
KMinion, this project's sensor) see the job's progress, and the next run can start where it
stopped (``KafkaGroupsHook.progress_offsets``)::

    gate = ConsumerLagSensor(task_id="gate", ...)          # XCom: startingOffsets / endingOffsets
    totals = spark_job(gate.output)                          # reads the range from Kafka
    progress = ConsumerGroupProgressOperator(
        task_id="progress", progress_group_id="orders-totals-progress",
        ending_offsets="{{ ti.xcom_pull(task_ids='gate') }}", backup_url="s3://bucket/kgroups-history")
    totals >> progress

The group is created Empty by its first commit and is never one with members (such a group is
refused: it belongs to running consumers). The commit goes through the cleanup's safety path
(backup read back first, audit record); a range that would move the group back (a rerun of an
older interval) is refused unless ``allow_rewind=True``. Committed by an administrator, it is
exactly the job's ending offset: the next record it has not read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException, BaseOperator, Context

from ..arguments import (
    check_argument,
    check_arguments,
    parse_bool,
    parse_conn_id,
    parse_offsets_map,
    parse_storage_options,
    parse_url,
)
from ..client.errors import ConfigurationError
from ..client.offset_map import OffsetKind
from ..client.selection import validate_group_ids
from ..hooks.groups import KafkaGroupsHook
from ..lag.offset_range import unnest_offsets


def _group_id(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "*?["):
        raise ConfigurationError(f"{name} must be one exact group id (not a pattern), got {value!r}.")
    return validate_group_ids([value], what=name)[0]


def _ending(name: str, value: Any) -> dict[str, dict[str, int]]:
    """The processed range's ending offsets: committed offsets (>= 0; -2/-1 are not offsets a
    job read up to), as the one offset map reads them."""
    parsed = parse_offsets_map(name, value, OffsetKind.COMMITTED)
    if not parsed:
        raise ConfigurationError(
            f"{name} is empty: give the range's endingOffsets, e.g. "
            "\"{{ ti.xcom_pull(task_ids='gate') }}\" (the sensor's result) or "
            "{'orders': {'0': 42}}."
        )
    return parsed


class ConsumerGroupProgressOperator(BaseOperator):
    """Commit a processed range's ending offsets to a progress group.

    :param progress_group_id: the group that records the job's progress (one exact id).
    :param ending_offsets: ``{"topic": {"0": offset}}`` (Spark's endingOffsets, exclusive), its
        JSON, or the lag sensor's result (its ``endingOffsets`` are used); templated.
    :param allow_rewind: commit even where the group already went further (default False).
    :param dry_run: plan and report only (default False: this is the job's bookkeeping).
    :param backup_url: where the previous progress is backed up and the audit record written.
    :param storage_options: fsspec options for ``backup_url``.
    :param kafka_groups_conn_id: a ``kgroups`` or ``kafka`` connection.
    """

    template_fields: Sequence[str] = (
        "progress_group_id",
        "ending_offsets",
        "allow_rewind",
        "dry_run",
        "backup_url",
        "kafka_groups_conn_id",
    )
    ui_color = "#dcebf5"

    def __init__(
        self,
        *,
        progress_group_id: str,
        ending_offsets: Any,
        backup_url: str,
        allow_rewind: bool | str = False,
        dry_run: bool | str = False,
        storage_options: Mapping[str, Any] | None = None,
        kafka_groups_conn_id: str = KafkaGroupsHook.default_conn_name,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.progress_group_id, self.ending_offsets, self.backup_url = (
            progress_group_id,
            ending_offsets,
            backup_url,
        )
        self.allow_rewind = allow_rewind
        self.dry_run = dry_run  # type: ignore[method-assign, assignment]  # public argument kept; BaseOperator.dry_run is a method
        self.storage_options = check_argument(
            self.task_id, "storage_options", storage_options, parse_storage_options
        )
        self.kafka_groups_conn_id = kafka_groups_conn_id
        self._validate(rendered=False)

    def _validate(self, *, rendered: bool) -> dict[str, Any]:
        values = {name: getattr(self, name) for name in self.template_fields}
        return check_arguments(
            self.task_id,
            values,
            {
                "progress_group_id": _group_id,
                "ending_offsets": _ending,
                "allow_rewind": parse_bool,
                "dry_run": parse_bool,
                "backup_url": parse_url,
                "kafka_groups_conn_id": parse_conn_id,
            },
            rendered=rendered,
        )

    @cached_property
    def hook(self) -> KafkaGroupsHook:
        return KafkaGroupsHook(self.kafka_groups_conn_id)

    def execute(self, context: Context) -> dict[str, Any]:
        parsed = self._validate(rendered=True)
        group_id, ending = parsed["progress_group_id"], unnest_offsets(parsed["ending_offsets"])
        ti = context["ti"]
        who = {
            "dag_id": ti.dag_id,
            "run_id": ti.run_id,
            "task_id": ti.task_id,
            "try_number": ti.try_number,
            "connection": self.kafka_groups_conn_id,
        }
        try:
            result = self.hook.commit_progress(
                group_id,
                ending,
                backup_base_url=self.backup_url,
                audit_base_url=self.backup_url,
                who=who,
                allow_rewind=parsed["allow_rewind"],
                dry_run=parsed["dry_run"],
                storage_options=self.storage_options,
            )
        finally:
            self.hook.close()
        decision = result.decisions[group_id]
        self.log.info("Progress of %s: %s", group_id, decision.line())
        out = result.to_dict()
        if not result.ok:
            ti.xcom_push(key="return_value", value=out)
            what = (
                "only partly committed"
                if decision.outcome.value == "partial"
                else f"not committed ({decision.outcome.label})"
            )
            raise AirflowException(f"the processed range was {what} to {group_id!r}: {decision.reason}")
        return out
