"""``DeadConsumerGroupCleanupOperator``: delete abandoned consumer groups, safely.

Per run:

1. select the groups in scope (ids / patterns; default every group) and classify each one
   with the lag engine (:mod:`..lag.deadgroups`): *active*, *paused* or *dead*, with evidence
   from DescribeGroups, the committed offsets, the topics and the stored history (no commit
   progress for ``idle_hours``; every committed topic deleted; no commit at all);
2. only dead, Empty groups that the patterns allow are candidates: a user ``deny`` always
   wins, a user ``allow`` restricts (and may override a default deny), the default deny
   patterns protect system groups (``connect-*``, ``_confluent*``, ``__*``,
   ``schema-registry*``, Kafka Streams application ids);
3. a cap per run: at most ``max_deletions`` and at most ``max_deletions_percent`` % of the
   candidates (rounded up), so a bad rule or a lost history cannot empty a cluster in one
   run; the longest idle go first, the rest wait for the next run;
4. ``dry_run=True`` (the default) stops here and reports ``would_delete``;
5. otherwise: describe the candidates *again* and skip any that is no longer Empty or has a
   member; back up their committed offsets to ``<history_url>/_backups/`` (the deletion does
   not happen unless the backup reads back identical); delete; a broker refusal because the
   group has members again (NON_EMPTY_GROUP) or because it is already gone is a skip, any
   other error a failure;
6. write an audit record (``<history_url>/_audit/<time>-<id>.json``: every decision, the
   rules, the backup URL, the Airflow run), log one line per group, return the result, and
   fail the task at the end if any deletion failed unexpectedly (the others still ran).

Undo a deletion with one call::

    KafkaGroupsHook("kgroups_default").restore_offsets("<backup_url from the result>")
"""

from __future__ import annotations

import json
import math
import uuid
from datetime import datetime, timezone
from functools import cached_property
from typing import Any, Mapping, Sequence

import fsspec
from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowException

from ..client.errors import ConfigurationError, ErrorCode
from ..client.results import GroupDeletion, GroupState
from ..history.backup import backup_offsets
from ..history.store import HistoryStore
from ..hooks.groups import KafkaGroupsHook
from ..lag.deadgroups import DEFAULT_DENY_PATTERNS, DeadGroupRules, GroupHealthReport
from ..lag.snapshot import now_ms
from .arguments import check_arguments, is_templated, parse_bool, parse_number, parse_selector, parse_str_list
from .snapshot import _parse_url

AUDIT_DIR = "_audit"  # "_" keeps it out of the history dataset (pyarrow and Spark skip "_" paths)
#: broker answers to DeleteGroups that mean "not deleted, and that is fine"
_EXPECTED_REFUSALS = {ErrorCode.NON_EMPTY_GROUP: "the broker refused: the group has members again (NON_EMPTY_GROUP)",
                      ErrorCode.GROUP_ID_NOT_FOUND: "already gone (GROUP_ID_NOT_FOUND)"}


class DeadConsumerGroupCleanupOperator(BaseOperator):
    """Find dead consumer groups and (with ``dry_run=False``) delete them after backing up their offsets.

    :param history_url: the history store (evidence of idleness) and where backups and audit
        records are written: a directory or an fsspec URL.
    :param group_ids: / :param group_patterns: / :param exclude_patterns: the scope
        (default: every group the cluster lists).
    :param allow: patterns; when given, only matching groups may be deleted (an allow match
        also overrides a default deny).
    :param deny: patterns never deleted, whatever else matches.
    :param default_deny: the system-group patterns (default
        :data:`~..lag.deadgroups.DEFAULT_DENY_PATTERNS`); replace only knowingly.
    :param deny_streams_apps: keep groups that look like Kafka Streams application ids.
    :param idle_hours: no commit progress for this long (in the stored history) is evidence of death.
    :param offsets_retention_minutes: the cluster's ``offsets.retention.minutes`` (for the report).
    :param dry_run: report only (default True).
    :param max_deletions: at most this many deletions per run.
    :param max_deletions_percent: at most this percentage of the candidates (dead, deletable
        groups), rounded up.
    :param storage_options: fsspec options for ``history_url``.
    :param kafka_groups_conn_id: a ``kgroups`` or ``kafka`` connection.
    """

    template_fields: Sequence[str] = (
        "history_url", "group_ids", "group_patterns", "exclude_patterns", "allow", "deny", "default_deny",
        "deny_streams_apps", "idle_hours", "offsets_retention_minutes", "dry_run", "max_deletions",
        "max_deletions_percent", "kafka_groups_conn_id",
    )
    ui_color = "#f5e0d9"

    def __init__(self, *, history_url: str, group_ids: Sequence[str] | None = None,
                 group_patterns: Sequence[str] | None = None, exclude_patterns: Sequence[str] | None = None,
                 allow: Sequence[str] | None = None, deny: Sequence[str] | None = None,
                 default_deny: Sequence[str] = DEFAULT_DENY_PATTERNS, deny_streams_apps: bool | str = True,
                 idle_hours: float | str = 7 * 24.0, offsets_retention_minutes: int | str = 7 * 24 * 60,
                 dry_run: bool | str = True, max_deletions: int | str = 10, max_deletions_percent: float | str = 50.0,
                 storage_options: Mapping[str, Any] | None = None,
                 kafka_groups_conn_id: str = KafkaGroupsHook.default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.history_url = history_url
        self.group_ids = group_ids
        self.group_patterns = group_patterns
        self.exclude_patterns = exclude_patterns
        self.allow = allow
        self.deny = deny
        self.default_deny = default_deny
        self.deny_streams_apps = deny_streams_apps
        self.idle_hours = idle_hours
        self.offsets_retention_minutes = offsets_retention_minutes
        self.dry_run = dry_run
        self.max_deletions = max_deletions
        self.max_deletions_percent = max_deletions_percent
        self.storage_options = dict(storage_options or {})
        self.kafka_groups_conn_id = kafka_groups_conn_id
        self._validate(rendered=False)

    def _validate(self, *, rendered: bool) -> tuple[DeadGroupRules, dict[str, Any]] | None:
        """Check what is not (still) a template; once nothing is, return the rules and the
        parsed values. Raises ValueError naming the argument and the fix."""
        values = {name: getattr(self, name) for name in self.template_fields}
        parsed = check_arguments(self.task_id, values, {
            "history_url": _parse_url, "allow": parse_str_list, "deny": parse_str_list,
            "default_deny": parse_str_list, "deny_streams_apps": parse_bool, "dry_run": parse_bool,
            "idle_hours": _required(parse_number, allow_zero=False),
            "offsets_retention_minutes": _required(parse_number, integer=True, allow_zero=False),
            "max_deletions": _required(parse_number, integer=True),
            "max_deletions_percent": _percent}, rendered=rendered)
        selection = (self.group_ids, self.group_patterns, self.exclude_patterns)
        if rendered or not any(is_templated(v) for v in selection):
            parse_selector(self.task_id, *selection, allow_all=True)
        if not rendered and any(is_templated(v) for v in values.values()):
            return None
        try:
            rules = DeadGroupRules(
                idle_hours=parsed["idle_hours"], offsets_retention_minutes=parsed["offsets_retention_minutes"],
                allow=parsed["allow"], deny=parsed["deny"], default_deny=parsed["default_deny"],
                deny_streams_apps=parsed["deny_streams_apps"])
        except ValueError as exc:  # ConfigurationError is a ValueError
            raise ValueError(f"{self.task_id}: {exc}") from None
        return rules, parsed

    @cached_property
    def hook(self) -> KafkaGroupsHook:
        return KafkaGroupsHook(self.kafka_groups_conn_id)

    # -- the run ------------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        validated = self._validate(rendered=True)
        assert validated is not None
        rules, args = validated
        dry_run = args["dry_run"]
        selector = parse_selector(self.task_id, self.group_ids, self.group_patterns, self.exclude_patterns,
                                  allow_all=True)
        store = HistoryStore(self.history_url, storage_options=self.storage_options)
        started = now_ms()
        decisions: dict[str, dict[str, Any]] = {}

        def decide(group_id: str, decision: str, reason: str, health: str | None = None) -> None:
            decisions[group_id] = {"decision": decision, "reason": reason, "health": health}

        backup_url = None
        try:
            ids = self.hook.select_groups(selector)
            history = store.read_window(ids, since_ms=max(0, started - int(2 * rules.idle_hours * 3_600_000))) \
                if ids else []
            found = self.hook.find_dead_groups(ids, history=history, rules=rules) if ids else None
            reports = dict(found.reports) if found else {}
            for group_id, failure in (found.failures.items() if found else ()):
                decide(group_id, "keep", f"could not be read, so not judged: {failure}")
            candidates = []
            for group_id, report in reports.items():
                if report.deletable:
                    candidates.append(report)
                else:
                    decide(group_id, "keep", _reason(report), report.health.value)
            cap = min(args["max_deletions"], math.ceil(args["max_deletions_percent"] * len(candidates) / 100.0))
            candidates.sort(key=lambda r: (r.last_progress_ms or 0, r.group_id))  # longest idle first
            chosen, over_cap = candidates[:cap], candidates[cap:]
            for report in over_cap:
                decide(report.group_id, "skip", f"dead, but over this run's cap of {cap} deletion(s) "
                                                f"(max_deletions={args['max_deletions']}, max_deletions_percent="
                                                f"{args['max_deletions_percent']:g} of {len(candidates)} candidates):"
                                                " next run",
                       report.health.value)
            if dry_run:
                for report in chosen:
                    decide(report.group_id, "would_delete", _reason(report), report.health.value)
            elif chosen:
                backup_url = self._delete(context, chosen, decide)
        finally:
            self.hook.close()

        result = self._result(decisions, dry_run, len(ids), cap, backup_url)
        result["audit_url"] = self._audit(context, store, started, rules, args, result, decisions)
        for group_id, d in sorted(decisions.items()):
            self.log.info("%-12s %s: %s", d["decision"].upper(), group_id, d["reason"])
        self.log.info("Cleanup %s: %d examined, %d deleted, %d would delete, %d skipped, %d failed, %d kept; "
                      "audit %s", "DRY RUN" if dry_run else "run", len(ids), len(result["deleted"]),
                      len(result["would_delete"]), len(result["skipped"]), len(result["failed"]),
                      sum(result["kept"].values()), result["audit_url"])
        if result["failed"]:
            context["ti"].xcom_push(key="return_value", value=result)
            raise AirflowException(f"{len(result['failed'])} group deletion(s) failed unexpectedly: "
                                   f"{', '.join(result['failed'])} (the other groups were handled; see the audit "
                                   f"{result['audit_url']})")
        return result

    def _delete(self, context: Context, chosen: list[GroupHealthReport], decide) -> str | None:
        """Describe again, back up, delete. Returns the backup URL (None when nothing was backed up)."""
        ids = [r.group_id for r in chosen]
        health = {r.group_id: r for r in chosen}
        again = self.hook.describe_groups(ids)
        confirmed = []
        for group_id in ids:
            if group_id in again.failures:
                decide(group_id, "skip", f"describing it again before deleting failed ({again.failures[group_id]}): "
                                         "not deleted", "dead")
                continue
            description = again.values[group_id]
            if description.state is not GroupState.EMPTY or description.members:
                decide(group_id, "skip", f"changed since it was judged dead: now {description.state.value} with "
                                         f"{len(description.members)} member(s); not deleted", "active")
                continue
            confirmed.append(group_id)
        if not confirmed:
            return None
        offsets = self.hook.committed_offsets(confirmed)
        for group_id, failure in offsets.failures.items():
            decide(group_id, "skip", f"its committed offsets could not be read for the backup ({failure}): "
                                     "not deleted", "dead")
        to_back_up = {g: offsets.values[g] for g in confirmed if g in offsets.values}
        if not to_back_up:
            return None
        ti = context["ti"]
        try:
            backup_url = backup_offsets(self.history_url, to_back_up, storage_options=self.storage_options,
                                        note=f"{ti.dag_id}/{ti.run_id}/{ti.task_id}")
        except Exception as exc:  # no backup, no deletion
            for group_id in to_back_up:
                decide(group_id, "failed", f"backup of its offsets failed ({type(exc).__name__}: {exc}): not deleted",
                       "dead")
            return None
        deleted = self.hook.delete_groups(list(to_back_up))
        for group_id in to_back_up:
            reason = _reason(health[group_id])
            if group_id in deleted.values:
                how = "" if deleted.values[group_id] is GroupDeletion.DELETED else f" ({deleted.values[group_id].value})"
                decide(group_id, "deleted", f"{reason}; offsets backed up to {backup_url}{how}", "dead")
            else:
                failure = deleted.failures[group_id]
                expected = _EXPECTED_REFUSALS.get(failure.code)
                decide(group_id, "skip" if expected else "failed",
                       expected or f"delete failed: {failure}", "dead")
        return backup_url

    def _result(self, decisions: Mapping[str, Mapping[str, Any]], dry_run: bool, examined: int, cap: int,
                backup_url: str | None) -> dict[str, Any]:
        by: dict[str, list[str]] = {}
        kept: dict[str, int] = {}
        for group_id, d in sorted(decisions.items()):
            by.setdefault(d["decision"], []).append(group_id)
            if d["decision"] == "keep":
                kept[d["health"] or "unread"] = kept.get(d["health"] or "unread", 0) + 1
        return {
            "dry_run": dry_run, "examined": examined, "cap": cap,
            "deleted": by.get("deleted", []), "would_delete": by.get("would_delete", []),
            "skipped": by.get("skip", []), "failed": by.get("failed", []), "kept": kept,
            "backup_url": backup_url,
            "restore": (f"KafkaGroupsHook({self.kafka_groups_conn_id!r}).restore_offsets({backup_url!r})"
                        if backup_url else None),
            "decisions": {g: dict(d) for g, d in decisions.items() if d["decision"] != "keep"},
        }

    def _audit(self, context: Context, store: HistoryStore, started_ms: int, rules: DeadGroupRules,
               args: Mapping[str, Any], result: Mapping[str, Any], decisions: Mapping[str, Mapping[str, Any]]) -> str:
        """One JSON record per run, every decision included; returns its URL."""
        ti = context["ti"]
        record = {
            "format": "kgroups-cleanup-audit", "version": 1, "started_ms": started_ms, "finished_ms": now_ms(),
            "dag_id": ti.dag_id, "run_id": ti.run_id, "task_id": ti.task_id, "try_number": ti.try_number,
            "connection": self.kafka_groups_conn_id, "dry_run": result["dry_run"],
            "rules": {"idle_hours": rules.idle_hours, "offsets_retention_minutes": rules.offsets_retention_minutes,
                      "allow": list(rules.allow), "deny": list(rules.deny), "default_deny": list(rules.default_deny),
                      "deny_streams_apps": rules.deny_streams_apps, "max_deletions": args["max_deletions"],
                      "max_deletions_percent": args["max_deletions_percent"]},
            "summary": {k: v for k, v in result.items() if k != "decisions"},
            "decisions": {g: dict(d) for g, d in sorted(decisions.items())},
        }
        stamp = datetime.fromtimestamp(started_ms / 1000, tz=timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        url = f"{store.url}/{AUDIT_DIR}/{stamp}-{uuid.uuid4().hex[:12]}.json"
        fs, path = fsspec.core.url_to_fs(url, **self.storage_options)
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        with fs.open(path, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
        return url


def _required(parse, **options):
    def parse_required(name: str, value: Any):
        parsed = parse(name, value, **options)
        if parsed is None:
            raise ConfigurationError(f"{name} is required, got {value!r}.")
        return parsed
    return parse_required


def _percent(name: str, value: Any) -> float:
    parsed = _required(parse_number)(name, value)
    if parsed > 100:
        raise ConfigurationError(f"{name} must be between 0 and 100, got {value!r}.")
    return float(parsed)


def _reason(report: GroupHealthReport) -> str:
    """The health, the verdict line and the permission line of the evidence."""
    text = "; ".join(dict.fromkeys([report.evidence[0], report.evidence[-1]]))
    health = report.health.value
    return text if text.startswith(f"{health}:") else f"{health}: {text}"
