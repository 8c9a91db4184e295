"""``ConsumerGroupOffsetResetOperator``: ``kgroups reset-offsets`` as a task, e.g. rewinding the
landing groups to the start of the interval a backfill reprocesses::

    ConsumerGroupOffsetResetOperator(
        task_id="rewind", group_ids=["orders-landing"], topics=["orders"],
        strategy="to_datetime", value="{{ data_interval_start }}", dry_run=False,
        backup_url="s3://bucket/kgroups-history")

A thin operator over the one safety path (:mod:`..cleanup.reset`): its arguments are checked
when the DAG is parsed (the strategy and its value as soon as they are not templates), the
reset is planned in one batched read, only groups without members are reset (a Kafka Connect
sink group never directly), the offsets are backed up (read back) and the run audited; one log
line per group. A real run fails the task unless every selected group was reset (the other
groups were still handled; the XCom and the audit say which).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException, BaseOperator, Context

from ..arguments import (
    check_argument,
    check_arguments,
    is_templated,
    parse_bool,
    parse_conn_id,
    parse_number,
    parse_selector,
    parse_storage_options,
    parse_str_list,
    parse_url,
)
from ..cleanup.offset_results import ChangeOutcome
from ..cleanup.reset import ResetOptions
from ..client.errors import ConfigurationError
from ..hooks.connect import connect_configs_from_conn_ids
from ..hooks.groups import KafkaGroupsHook, restore_call
from ..offsets.spec import ResetSpec, Strategy, reset_spec


def spec_from_arguments(strategy: Any, value: Any, topics: Any, all_topics: Any) -> ResetSpec:
    """The operator's arguments as a spec (``from_file``: ``value`` is the CSV text or a path)."""
    s = Strategy.parse("strategy", strategy)
    file_offsets = None
    if s is Strategy.FROM_FILE:
        from ..offsets.csvfile import parse_reset_csv

        if not isinstance(value, str) or not value.strip():
            raise ConfigurationError(
                "strategy='from_file' needs value: the CSV text or the path of a CSV file."
            )
        text = value
        if "\n" not in value.strip() and "," not in value:
            try:
                with open(value.strip(), encoding="utf-8") as f:
                    text = f.read()
            except OSError as exc:
                raise ConfigurationError(
                    f"value {value!r} (strategy from_file) cannot be read: {exc}"
                ) from None
        file_offsets, value = parse_reset_csv(text, None, source="value (from_file)"), None
    topics_ = parse_str_list("topics", topics)
    return reset_spec(
        s,
        value,
        topics=list(topics_),
        all_topics=parse_bool("all_topics", all_topics),
        file_offsets=file_offsets,
    )


class ConsumerGroupOffsetResetOperator(BaseOperator):
    """Reset consumer groups' committed offsets, as ``kafka-consumer-groups.sh --reset-offsets``.

    :param group_ids: / :param group_patterns: / :param exclude_patterns: the groups (a pattern
        selection with ``dry_run=False`` needs ``max_groups``).
    :param strategy: ``to_earliest``, ``to_latest``, ``to_current``, ``to_offset``, ``shift_by``,
        ``to_datetime``, ``by_duration`` or ``from_file`` (templated).
    :param value: the strategy's value (templated): an offset, a shift, a date-time (ISO-8601;
        without a zone it is UTC, e.g. ``"{{ data_interval_start }}"``), an ISO-8601 duration
        (``"PT6H"``), or for ``from_file`` the CSV (Kafka's ``--export`` format) or its path.
    :param topics: ``["orders", "payments:0,2"]`` (every partition, or those named), or
    :param all_topics: every partition the group committed.
    :param dry_run: plan and report only (default True).
    :param max_groups: at most this many groups reset per run.
    :param backup_url: where the offsets are backed up and the audit record written.
    :param connect_conn_ids: Kafka Connect REST connections: a sink connector's group is never
        committed to directly; with ``via_connect=True`` a STOPPED connector's group is reset
        through Connect (``PATCH /connectors/{name}/offsets``, KIP-875).
    :param storage_options: fsspec options for ``backup_url``.
    :param kafka_groups_conn_id: a ``kgroups`` or ``kafka`` connection.

    Returns the result as plain JSON: per group its decision, reason and partitions (current,
    new, clamp), the backup URL, the audit URL and the undo call.
    """

    template_fields: Sequence[str] = (
        "group_ids",
        "group_patterns",
        "exclude_patterns",
        "strategy",
        "value",
        "topics",
        "all_topics",
        "dry_run",
        "max_groups",
        "backup_url",
        "connect_conn_ids",
        "via_connect",
        "kafka_groups_conn_id",
    )
    ui_color = "#f2e6c9"

    def __init__(
        self,
        *,
        strategy: str,
        value: Any = None,
        group_ids: Sequence[str] | None = None,
        group_patterns: Sequence[str] | None = None,
        exclude_patterns: Sequence[str] | None = None,
        topics: Sequence[str] | None = None,
        all_topics: bool | str = False,
        dry_run: bool | str = True,
        max_groups: int | str | None = None,
        backup_url: str,
        connect_conn_ids: Sequence[str] | None = None,
        via_connect: bool | str = False,
        storage_options: Mapping[str, Any] | None = None,
        kafka_groups_conn_id: str = KafkaGroupsHook.default_conn_name,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.group_ids, self.group_patterns, self.exclude_patterns = (
            group_ids,
            group_patterns,
            exclude_patterns,
        )
        self.strategy, self.value, self.topics, self.all_topics = strategy, value, topics, all_topics
        self.dry_run = dry_run  # type: ignore[method-assign, assignment]  # public argument kept; BaseOperator.dry_run is a method
        self.max_groups, self.backup_url = max_groups, backup_url
        self.connect_conn_ids, self.via_connect = connect_conn_ids, via_connect
        self.storage_options = check_argument(
            self.task_id, "storage_options", storage_options, parse_storage_options
        )
        self.kafka_groups_conn_id = kafka_groups_conn_id
        self._validate(rendered=False)

    def _validate(self, *, rendered: bool) -> tuple[ResetSpec, ResetOptions] | None:
        values = {name: getattr(self, name) for name in self.template_fields}
        parsed = check_arguments(
            self.task_id,
            values,
            {
                "kafka_groups_conn_id": parse_conn_id,
                "backup_url": parse_url,
                "dry_run": parse_bool,
                "via_connect": parse_bool,
                "all_topics": parse_bool,
                "connect_conn_ids": parse_str_list,
                "max_groups": lambda n, v: parse_number(n, v, integer=True, allow_zero=False),
            },
            rendered=rendered,
        )
        selection = (self.group_ids, self.group_patterns, self.exclude_patterns)
        if rendered or not any(is_templated(v) for v in selection):
            selector = parse_selector(self.task_id, *selection, allow_all=False)
            if (
                selector.patterns
                and parsed["dry_run"] is False
                and parsed["max_groups"] is None
                and not is_templated(self.max_groups)
            ):
                raise ValueError(
                    f"{self.task_id}: group_patterns with dry_run=False needs max_groups: the cap says "
                    "how many groups may be reset in one run."
                )
        spec_args = (self.strategy, self.value, self.topics, self.all_topics)
        if not rendered and any(is_templated(v) for v in values.values()):
            if not any(is_templated(v) for v in spec_args):
                self._spec(*spec_args)  # the spec is whole already: check it at parse time
            return None
        options = ResetOptions(
            dry_run=parsed["dry_run"], max_groups=parsed["max_groups"], via_connect=parsed["via_connect"]
        )
        return self._spec(*spec_args), options

    def _spec(self, *args: Any) -> ResetSpec:
        try:
            return spec_from_arguments(*args)
        except ConfigurationError as exc:
            raise ValueError(f"{self.task_id}: {exc}") from None

    @cached_property
    def hook(self) -> KafkaGroupsHook:
        return KafkaGroupsHook(self.kafka_groups_conn_id)

    def execute(self, context: Context) -> dict[str, Any]:
        validated = self._validate(rendered=True)
        assert validated is not None
        spec, options = validated
        selector = parse_selector(
            self.task_id, self.group_ids, self.group_patterns, self.exclude_patterns, allow_all=False
        )
        ids = parse_str_list("connect_conn_ids", self.connect_conn_ids)
        ti = context["ti"]
        who = {
            "dag_id": ti.dag_id,
            "run_id": ti.run_id,
            "task_id": ti.task_id,
            "try_number": ti.try_number,
            "connection": self.kafka_groups_conn_id,
        }
        self.log.info("Reset %s: %s", "DRY RUN" if options.dry_run else "run", spec.describe(_now()))
        try:
            groups = self.hook.select_groups(selector)
            result = self.hook.reset_offsets(
                spec,
                groups,
                options,
                backup_base_url=self.backup_url,
                audit_base_url=self.backup_url,
                who=who,
                connect_clusters=connect_configs_from_conn_ids(ids) if ids else [],
                storage_options=self.storage_options,
            )
        finally:
            self.hook.close()
        for decision in result.decisions.values():
            self.log.info("%s", decision.line())
        out = result.to_dict()
        out["restore"] = restore_call(
            self.kafka_groups_conn_id,
            result.backup_url,
            result.ids(ChangeOutcome.DONE) + result.ids(ChangeOutcome.PARTIAL),
            result.undo,
        )
        if not options.dry_run and not result.ok:
            ti.xcom_push(key="return_value", value=out)
            missed = [
                f"{g} ({d.outcome.label})" for g, d in result.decisions.items() if d.outcome.value != "done"
            ]
            raise AirflowException(
                f"{len(missed)} group(s) not fully reset: {', '.join(missed)} (see the task log "
                f"and the audit {result.audit_url or result.audit_error})"
            )
        return out


def _now() -> int:
    from ..lag.snapshot import now_ms

    return now_ms()
