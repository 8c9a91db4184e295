"""``DeadConsumerGroupCleanupOperator``: delete abandoned consumer groups, safely.

A thin operator over the one safety path shared with ``kgroups delete``
(:mod:`..cleanup`): it parses and checks its arguments when the DAG is parsed, calls the path
through the hook, logs one line per decision, returns plain JSON data, and fails at the end
if a deletion failed (the other groups were still handled). Per run:

1. the scope (``group_ids`` / ``group_patterns`` / ``exclude_patterns``, default every group)
   is judged by the evidence (:mod:`..lag.deadgroups`): only groups it calls dead may go;
   ``delete_group_ids`` are named explicitly: deleted when Empty, whatever the evidence says;
2. deny patterns protect system groups (``connect-*``, ``_confluent*``, ``__*``,
   ``schema-registry*``, Kafka Streams application ids) plus the user's ``deny``;
   ``override_deny`` lifts them for the groups it names (by name only); Kafka Connect
   evidence (``connect_conn_ids``) keeps a connector's group while the connector exists and
   lifts the ``connect-*`` deny for a group whose connector is gone; a Connect cluster that
   cannot be read holds every deletion of the run (``delete_despite_unreadable_connect``);
3. caps: at most ``max_deletions`` and ``max_deletions_percent`` % of the candidates per run;
4. ``dry_run=True`` (the default) stops here and reports ``would_delete``;
5. otherwise: describe again and skip whatever changed; back up the offsets to
   ``<backup_url or history_url>/_backups/`` (read back before any delete); delete;
6. an audit record under ``<history_url>/_audit/`` (every decision, the rules, the backup);
7. opt-in (``stale_offsets=True``): a *live* group's committed offsets on a topic that is
   deleted (proved by name) or that no member subscribes to any more are removed with
   OffsetDelete (:mod:`..cleanup.stale`), with the same dry run, cap (``max_deletions``
   groups), backup and audit; deny patterns protect the same groups.

Undo a deletion with one call::

    KafkaGroupsHook("kgroups_default").restore_offsets("<backup_url from the result>")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException, BaseOperator, Context

from .. import settings
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
from ..cleanup import CleanupPolicy, CleanupResult, Outcome
from ..cleanup.offset_results import ChangeOutcome, OffsetChangeResult
from ..client.errors import ConfigurationError
from ..hooks.connect import connect_configs_from_conn_ids
from ..hooks.groups import KafkaGroupsHook, restore_call
from ..lag.deadgroups import DeadGroupRules
from ..observability import lineage, metrics

_XCOM_DECISION_KEYS = ("decision", "reason", "health", "selected_by", "deletion", "connect")


class DeadConsumerGroupCleanupOperator(BaseOperator):
    """Find dead consumer groups and (with ``dry_run=False``) delete them after backing up their offsets.

    :param history_url: the history store (evidence of idleness) and where audit records (and,
        without ``backup_url``, backups) are written: a directory or an fsspec URL (default
        ``[kgroups] history_url``).
    :param group_ids: / :param group_patterns: / :param exclude_patterns: the scope judged by
        the evidence (default: every group the cluster lists).
    :param delete_group_ids: groups named explicitly: deleted when Empty without members, the
        evidence reported but not required; still behind the deny lists.
    :param override_deny: exact group ids whose deny matches are lifted (never patterns).
    :param allow: patterns; when given, only matching groups may be deleted (an allow match
        also overrides a default deny).
    :param deny: patterns never deleted, whatever else matches.
    :param default_deny: the system-group patterns (default ``[kgroups] default_deny_patterns``,
        whose own default is ``lag.deadgroups.DEFAULT_DENY_PATTERNS``); replace only knowingly.
    :param deny_streams_apps: keep groups that look like Kafka Streams application ids.
    :param idle_hours: idle (Empty, records to read, no commit progress) this long in the
        stored history is evidence of death.
    :param assume_full_visibility: the principal may Describe every topic and group: only then
        is "no committed offset at all" evidence (default False).
    :param offsets_retention_minutes: the cluster's ``offsets.retention.minutes`` (for the report).
    :param dry_run: report only (default True).
    :param max_deletions: at most this many deletions per run (default ``[kgroups] max_deletions``, 10).
    :param max_deletions_percent: at most this percentage of the candidates, rounded up (default
        ``[kgroups] max_deletions_percent``, 50).
    :param backup_url: where offset backups go (default ``history_url``).
    :param connect_conn_ids: Kafka Connect REST connections (type ``kgroups_connect``): their
        connectors' states are evidence (see ``cleanup.plan``); default ``[kgroups] connect_conn_ids``.
    :param delete_despite_unreadable_connect: delete even when one of those Connect clusters
        cannot be read. Default False: such a run deletes nothing (a group named by a connector's
        ``consumer.override.group.id`` there cannot be recognised) and each group that would have
        gone is kept, naming the cluster.
    :param storage_options: fsspec options for ``history_url`` and ``backup_url``.
    :param stale_offsets: also remove live groups' offsets on deleted or unsubscribed topics
        (default False; see step 7).
    :param kafka_groups_conn_id: a ``kgroups`` or ``kafka`` connection.
    """

    template_fields: Sequence[str] = (
        "history_url",
        "group_ids",
        "group_patterns",
        "exclude_patterns",
        "delete_group_ids",
        "override_deny",
        "allow",
        "deny",
        "default_deny",
        "deny_streams_apps",
        "idle_hours",
        "assume_full_visibility",
        "offsets_retention_minutes",
        "dry_run",
        "max_deletions",
        "max_deletions_percent",
        "backup_url",
        "connect_conn_ids",
        "delete_despite_unreadable_connect",
        "stale_offsets",
        "kafka_groups_conn_id",
    )
    ui_color = "#f5e0d9"

    def __init__(
        self,
        *,
        history_url: str | None = None,
        group_ids: Sequence[str] | None = None,
        group_patterns: Sequence[str] | None = None,
        exclude_patterns: Sequence[str] | None = None,
        delete_group_ids: Sequence[str] | None = None,
        override_deny: Sequence[str] | None = None,
        allow: Sequence[str] | None = None,
        deny: Sequence[str] | None = None,
        default_deny: Sequence[str] | None = None,
        deny_streams_apps: bool | str = True,
        idle_hours: float | str = 7 * 24.0,
        assume_full_visibility: bool | str = False,
        offsets_retention_minutes: int | str = 7 * 24 * 60,
        dry_run: bool | str = True,
        max_deletions: int | str | None = None,
        max_deletions_percent: float | str | None = None,
        backup_url: str | None = None,
        connect_conn_ids: Sequence[str] | None = None,
        delete_despite_unreadable_connect: bool | str = False,
        storage_options: Mapping[str, Any] | None = None,
        stale_offsets: bool | str = False,
        kafka_groups_conn_id: str = KafkaGroupsHook.default_conn_name,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        # unset arguments: the [kgroups] section of Airflow's configuration (settings.py)
        history_url = history_url if history_url is not None else settings.history_url()
        if history_url is None:
            raise ValueError(
                f"{self.task_id}: history_url is required: pass it, or set [kgroups] history_url "
                "(AIRFLOW__KGROUPS__HISTORY_URL) for every cleanup of this deployment."
            )
        self.history_url: str = history_url
        self.stale_offsets = stale_offsets
        self.group_ids = group_ids
        self.group_patterns = group_patterns
        self.exclude_patterns = exclude_patterns
        self.delete_group_ids = delete_group_ids
        self.override_deny = override_deny
        self.allow = allow
        self.deny = deny
        self.default_deny = (
            default_deny if default_deny is not None else settings.get_list("default_deny_patterns")
        )
        self.deny_streams_apps = deny_streams_apps
        self.idle_hours = idle_hours
        self.assume_full_visibility = assume_full_visibility
        self.offsets_retention_minutes = offsets_retention_minutes
        self.dry_run = dry_run  # type: ignore[method-assign, assignment]  # public argument kept; BaseOperator.dry_run is a method
        self.max_deletions = max_deletions if max_deletions is not None else settings.get_int("max_deletions")
        self.max_deletions_percent = (
            max_deletions_percent
            if max_deletions_percent is not None
            else settings.get_float("max_deletions_percent")
        )
        self.backup_url = backup_url
        self.connect_conn_ids = (
            connect_conn_ids
            if connect_conn_ids is not None
            else (settings.get_list("connect_conn_ids") or None)
        )
        self.delete_despite_unreadable_connect = delete_despite_unreadable_connect
        self.storage_options = check_argument(
            self.task_id, "storage_options", storage_options, parse_storage_options
        )
        self.kafka_groups_conn_id = kafka_groups_conn_id
        self._validate(rendered=False)

    def _validate(self, *, rendered: bool) -> CleanupPolicy | None:
        """Check what is not (still) a template; once nothing is, return the policy.
        Raises ValueError naming the argument and the fix."""
        values = {name: getattr(self, name) for name in self.template_fields}
        parsed = check_arguments(
            self.task_id,
            values,
            {
                "kafka_groups_conn_id": parse_conn_id,
                "history_url": parse_url,
                "backup_url": _optional_url,
                "allow": parse_str_list,
                "deny": parse_str_list,
                "default_deny": parse_str_list,
                "delete_group_ids": parse_str_list,
                "override_deny": parse_str_list,
                "connect_conn_ids": parse_str_list,
                "deny_streams_apps": parse_bool,
                "delete_despite_unreadable_connect": parse_bool,
                "assume_full_visibility": parse_bool,
                "dry_run": parse_bool,
                "stale_offsets": parse_bool,
                "idle_hours": _required(parse_number, allow_zero=False),
                "offsets_retention_minutes": _required(parse_number, integer=True, allow_zero=False),
                "max_deletions": _required(parse_number, integer=True),
                "max_deletions_percent": _percent,
            },
            rendered=rendered,
        )
        selection = (self.group_ids, self.group_patterns, self.exclude_patterns)
        selector = None
        if rendered or not any(is_templated(v) for v in selection):
            selector = parse_selector(self.task_id, *selection, allow_all=True)
        if not rendered and any(is_templated(v) for v in values.values()):
            return None
        try:
            rules = DeadGroupRules(
                idle_hours=parsed["idle_hours"],
                offsets_retention_minutes=parsed["offsets_retention_minutes"],
                allow=parsed["allow"],
                deny=parsed["deny"],
                default_deny=parsed["default_deny"],
                deny_streams_apps=parsed["deny_streams_apps"],
                assume_full_visibility=parsed["assume_full_visibility"],
            )
            return CleanupPolicy(
                rules=rules,
                selector=selector,
                named=parsed["delete_group_ids"],
                override_deny=parsed["override_deny"],
                max_deletions=parsed["max_deletions"],
                max_deletions_percent=parsed["max_deletions_percent"],
                dry_run=parsed["dry_run"],
                delete_despite_unreadable_connect=parsed["delete_despite_unreadable_connect"],
            )
        except ValueError as exc:  # ConfigurationError is a ValueError
            raise ValueError(f"{self.task_id}: {exc}") from None

    @cached_property
    def hook(self) -> KafkaGroupsHook:
        return KafkaGroupsHook(self.kafka_groups_conn_id)

    def _connect_clusters(self) -> list[Any]:
        ids = parse_str_list("connect_conn_ids", self.connect_conn_ids)
        return connect_configs_from_conn_ids(ids) if ids else []

    # -- the run ------------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        policy = self._validate(rendered=True)
        assert policy is not None
        ti = context["ti"]
        result, stale = self._run(policy, _who(ti, self.kafka_groups_conn_id))
        self._log_decisions(result, stale)
        out = self._xcom(result)
        if stale is not None:
            out["stale_offsets"] = {
                **stale.summary(),
                "decisions": {  # the plan's refusals are most groups: left out
                    g: d.to_dict()
                    for g, d in stale.decisions.items()
                    if d.outcome is not ChangeOutcome.REFUSED or d.refused_by_broker
                },
            }
        metrics.cleanup_ran(out, dag_id=ti.dag_id, task_id=ti.task_id)
        self._summary = out  # for get_openlineage_facets_on_complete / _on_failure
        self._log_summary(policy, out)
        problems = _problems(result, stale)
        if problems:
            ti.xcom_push(key="return_value", value=out)
            raise AirflowException(
                f"{'; '.join(problems)} (the other groups were handled; see the audit {out['audit_url']})"
            )
        return out

    def _run(
        self, policy: CleanupPolicy, who: dict[str, Any]
    ) -> tuple[CleanupResult, OffsetChangeResult | None]:
        """The deletions, then (when asked) the stale offsets, both audited in the history store."""
        from ..history.store import HistoryStore

        store = HistoryStore(self.history_url, storage_options=self.storage_options)
        try:
            result = self.hook.cleanup(
                policy,
                backup_base_url=(self.backup_url or store.url),
                audit_base_url=store.url,
                who=who,
                history=lambda ids, since_ms: store.read_window(ids, since_ms=since_ms),
                connect_clusters=self._connect_clusters(),
                storage_options=self.storage_options,
            )
            stale = (
                self._stale_offsets(policy, store.url, who)
                if parse_bool("stale_offsets", self.stale_offsets)
                else None
            )
        finally:
            self.hook.close()
        return result, stale

    def _log_decisions(self, result: CleanupResult, stale: OffsetChangeResult | None) -> None:
        for decision in result.decisions.values():
            self.log.info("%s", decision.line())
        if result.held:
            self.log.warning(
                "Kafka Connect %s could not be read: %d deletion(s) held (set "
                "delete_despite_unreadable_connect=True to delete anyway)",
                ", ".join(result.connect_unreadable),
                len(result.held),
            )
        for change in stale.decisions.values() if stale is not None else ():
            self.log.info("stale offsets: %s", change.line())

    def _log_summary(self, policy: CleanupPolicy, out: Mapping[str, Any]) -> None:
        self.log.info(
            "Cleanup %s: %d examined, %d deleted, %d would delete, %d skipped, %d refused, %d not found, "
            "%d failed, %d kept; audit %s",
            "DRY RUN" if policy.dry_run else "run",
            out["examined"],
            len(out["deleted"]),
            len(out["would_delete"]),
            len(out["skipped"]),
            len(out["refused"]),
            len(out["not_found"]),
            len(out["failed"]),
            sum(out["kept"].values()),
            out["audit_url"],
        )

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: what the run deleted (run facet ``kgroups_cleanup``), the backup and audit it wrote."""
        return lineage.cleanup_lineage(getattr(self, "_summary", None))

    def _stale_offsets(self, policy: CleanupPolicy, store_url: str, who: dict[str, Any]):
        """The opt-in stale-offsets rule over the same scope, dry run, cap and deny patterns."""
        from ..cleanup.offset_deletion import DeletionOptions
        from ..cleanup.permission import denied_by

        groups = self.hook.select_groups(policy.selector) if policy.selector is not None else []

        def denied(group_id: str) -> str | None:
            if group_id in policy.override_deny:
                return None
            found = denied_by(group_id, policy.rules)  # the same deny patterns as the group deletions
            return found.pattern if found is not None else None

        options = DeletionOptions(dry_run=policy.dry_run, max_groups=policy.max_deletions)
        return self.hook.clean_stale_offsets(
            groups,
            options,
            backup_base_url=(self.backup_url or store_url),
            audit_base_url=store_url,
            who=who,
            storage_options=self.storage_options,
            denied=denied,
        )

    def _xcom(self, result: CleanupResult) -> dict[str, Any]:
        """Plain JSON: the summary, the restore call, the decisions other than keep, and those held
        for an unreadable Kafka Connect (every decision is in the audit record)."""
        out = result.summary()
        out["restore"] = restore_call(
            self.kafka_groups_conn_id, result.backup_url, result.ids(Outcome.DELETED), result.undo
        )
        out["decisions"] = {
            g: {k: v for k, v in d.to_dict().items() if k in _XCOM_DECISION_KEYS}
            for g, d in result.decisions.items()
            if d.outcome is not Outcome.KEEP or g in result.held
        }
        return out


def _who(ti: Any, conn_id: str) -> dict[str, Any]:
    """Who ran the cleanup, for its audit records: the task instance and the connection."""
    return {
        "dag_id": ti.dag_id,
        "run_id": ti.run_id,
        "task_id": ti.task_id,
        "try_number": ti.try_number,
        "connection": conn_id,
    }


def _problems(result: CleanupResult, stale: OffsetChangeResult | None) -> list[str]:
    """What fails the task (the other groups were handled)."""
    problems = (
        [f"{len(result.failed)} group deletion(s) failed unexpectedly: {', '.join(result.failed)}"]
        if result.failed
        else []
    )
    if result.refused:
        problems.append(
            f"{len(result.refused)} group deletion(s) refused by the broker (a member joined: "
            f"NON_EMPTY_GROUP), not deleted: {', '.join(result.refused)}"
        )
    if result.audit_error:
        problems.append(f"the audit record could not be written ({result.audit_error})")
    if stale is not None:
        problems += _stale_problems(stale)
    return problems


def _optional_url(name: str, value: Any) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return parse_url(name, value)


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


def _stale_problems(stale) -> list[str]:
    """What the stale-offsets rule did not do that it set out to: a group refused by the broker,
    partly done or failed, and a missing audit record."""
    refused = [g for g, d in stale.decisions.items() if d.refused_by_broker]
    partial, failed = stale.ids(ChangeOutcome.PARTIAL), stale.ids(ChangeOutcome.FAILED)
    said = [
        f"{len(ids)} group(s) {what}: {', '.join(ids)}"
        for ids, what in (
            (failed, "failed"),
            (partial, "partly done (some offsets remain)"),
            (refused, "refused by the broker (nothing deleted)"),
        )
        if ids
    ]
    if stale.audit_error:
        said.append(f"audit not written ({stale.audit_error})")
    return [f"stale offsets: {'; '.join(said)}"] if said else []
