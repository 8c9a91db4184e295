"""``ConsumerGroupSnapshotOperator``: a lag snapshot of selected groups, appended to the history store.

The history is what the verdicts (STOP / STALL / WARN over a window), the dead-group evidence
("no commit progress for N days") and the Spark jobs read; run this every few minutes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from airflow.providers.common.compat.sdk import BaseOperator, Context

from .. import settings
from ..arguments import (
    check_argument,
    check_arguments,
    is_templated,
    parse_bool,
    parse_conn_id,
    parse_selector,
    parse_storage_options,
    parse_topics,
    parse_url,
)
from ..history.store import HistoryStore
from ..hooks.failures import fail_fast
from ..hooks.groups import KafkaGroupsHook
from ..lag.policy import parse_policy


class ConsumerGroupSnapshotOperator(BaseOperator):
    """Take one lag snapshot and append it to the history store; return a small summary.

    :param history_url: the store: a directory or an fsspec URL (``s3://bucket/kgroups-history``);
        default ``[kgroups] history_url``.
    :param group_ids: exact group ids; with ``group_patterns`` unset and no ids, every group.
    :param group_patterns: globs or ``re:`` regexes matched against ListGroups.
    :param exclude_patterns: patterns removed from the selection.
    :param topics: only these topics (all their partitions).
    :param unknown_lag: policy for partitions without a commit (``fail`` keeps their lag
        unknown in the history, which is the honest default).
    :param read_committed: log end = last stable offset (transactional topics).
    :param storage_options: fsspec options of the store (credentials come from the
        environment otherwise).
    :param kafka_groups_conn_id: a ``kgroups`` or ``kafka`` connection.

    Returns ``{"taken_at_ms", "groups", "partitions", "rows", "files", "failures": {group: error},
    "worst": [{"group_id", "total_lag"}...] (5 largest known total lags)}``.
    """

    template_fields: Sequence[str] = (
        "history_url",
        "group_ids",
        "group_patterns",
        "exclude_patterns",
        "topics",
        "unknown_lag",
        "read_committed",
        "kafka_groups_conn_id",
    )
    ui_color = "#e8f0d9"

    def __init__(
        self,
        *,
        history_url: str | None = None,
        group_ids: Sequence[str] | None = None,
        group_patterns: Sequence[str] | None = None,
        exclude_patterns: Sequence[str] | None = None,
        topics: Sequence[str] | None = None,
        unknown_lag: str = "fail",
        read_committed: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        kafka_groups_conn_id: str = KafkaGroupsHook.default_conn_name,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        history_url = history_url if history_url is not None else settings.history_url()
        if history_url is None:
            raise ValueError(
                f"{self.task_id}: history_url is required: pass it, or set [kgroups] history_url "
                "(AIRFLOW__KGROUPS__HISTORY_URL) for this deployment."
            )
        self.history_url: str = history_url
        self.group_ids = group_ids
        self.group_patterns = group_patterns
        self.exclude_patterns = exclude_patterns
        self.topics = topics
        self.unknown_lag = unknown_lag
        self.read_committed = read_committed
        self.storage_options = check_argument(
            self.task_id, "storage_options", storage_options, parse_storage_options
        )
        self.kafka_groups_conn_id = kafka_groups_conn_id
        self._validate(rendered=False)

    def _validate(self, *, rendered: bool) -> None:
        values = {name: getattr(self, name) for name in self.template_fields}
        check_arguments(
            self.task_id,
            values,
            {
                "history_url": parse_url,
                "topics": parse_topics,
                "kafka_groups_conn_id": parse_conn_id,
                "unknown_lag": lambda n, v: parse_policy(v),
                "read_committed": parse_bool,
            },
            rendered=rendered,
        )
        selection = (self.group_ids, self.group_patterns, self.exclude_patterns)
        if rendered or not any(is_templated(v) for v in selection):
            parse_selector(self.task_id, *selection, allow_all=True)

    @cached_property
    def hook(self) -> KafkaGroupsHook:
        return KafkaGroupsHook(self.kafka_groups_conn_id)

    def execute(self, context: Context) -> dict[str, Any]:
        self._validate(rendered=True)
        selector = parse_selector(
            self.task_id, self.group_ids, self.group_patterns, self.exclude_patterns, allow_all=True
        )
        store = HistoryStore(self.history_url, storage_options=self.storage_options)
        try:
            with fail_fast(self.task_id):
                ids = self.hook.select_groups(selector)
                if not ids:
                    self.log.info("No consumer group selected: nothing to snapshot.")
                    return {
                        "taken_at_ms": None,
                        "groups": 0,
                        "partitions": 0,
                        "rows": 0,
                        "files": [],
                        "failures": {},
                        "worst": [],
                    }
                snapshot = self.hook.snapshot(
                    ids,
                    policy=self.unknown_lag,
                    read_committed=parse_bool("read_committed", self.read_committed),
                    topics=list(self.topics) if self.topics else None,
                )
        finally:
            self.hook.close()
        files = store.append(snapshot)
        rows = sum(max(1, len(g.partitions)) for g in snapshot.groups.values())
        known = [(g.total_lag, g.group_id) for g in snapshot.groups.values() if g.total_lag is not None]
        worst = [
            {"group_id": g, "total_lag": lag} for lag, g in sorted(known, key=lambda x: (-x[0], x[1]))[:5]
        ]
        summary = {
            "taken_at_ms": snapshot.taken_at_ms,
            "groups": len(snapshot.groups),
            "partitions": sum(len(g.partitions) for g in snapshot.groups.values()),
            "rows": rows,
            "files": files,
            "failures": {g: f.name for g, f in snapshot.failures.items()},
            "worst": worst,
        }
        self.log.info(
            "Snapshot of %d group(s), %d partition(s) appended to %s (%d row(s), %d file(s)); "
            "%d group(s) unreadable",
            summary["groups"],
            summary["partitions"],
            store.url,
            rows,
            len(files),
            len(snapshot.failures),
        )
        for group_id, failure in snapshot.failures.items():
            self.log.warning("Group %s not read: %s", group_id, failure)
        return summary
