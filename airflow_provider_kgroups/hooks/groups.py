"""``KafkaGroupsHook``: the Airflow connection -> the batched consumer-group client.

The hook owns the connection and the client and offers a few verbs (select, snapshot,
barrier targets, describe, delete, back up, restore); operators, the sensor and the trigger
call only these. Nothing is looked up or opened before the first verb: constructing the hook
is free, so operators can build it at parse time without touching the network (they still
build it lazily).

Two ways in:

* sync (operators, poke mode): :attr:`client` is a :class:`GroupsClient` (its own event
  loop on a daemon thread); call :meth:`close` when done.
* async (triggers): :meth:`aget_client` resolves the connection with Airflow's async lookup
  (``BaseHook.aget_connection`` + ``Connection.aextra_dejson``), so no synchronous
  connection lookup ever runs on the triggerer's event loop; :meth:`aclose` closes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseHook

from ..client.errors import ConfigurationError, KafkaGroupsError
from ..version_compat import AIRFLOW_V_3_0_PLUS
from .connection import check_client_options, client_config_from_connection
from .connection_form import declared_form_methods

# The client, the lag engine and the history store are imported inside the verbs: importing
# the hook (every DAG file that uses an operator, the triggerer) stays cheap (PEP 562 packages).
if TYPE_CHECKING:
    from ..cleanup import CleanupPolicy, CleanupResult
    from ..cleanup.offset_deletion import DeletionOptions
    from ..cleanup.offset_results import OffsetChangeResult
    from ..cleanup.report import DeadGroupsResult
    from ..cleanup.reset import ResetOptions
    from ..client import AsyncGroupsClient, ClientConfig, GroupsClient, GroupSelector
    from ..client.results import GroupDeletion, GroupDescription, GroupOffsets, KeyedResults, TopicPartition
    from ..lag.barrier import BarrierTarget
    from ..lag.deadgroups import DeadGroupRules
    from ..lag.gate import Decision, LagGate
    from ..lag.model import LagSnapshot, UnknownLagPolicy
    from ..lag.seconds import GroupLagSeconds
    from ..offsets.spec import ResetSpec


def _secrets(config: ClientConfig) -> list[str]:
    oauth = config.oauthbearer
    found = [
        config.sasl_password,
        config.ssl_key_password,
        *((oauth.client_secret, oauth.callback_config) if oauth is not None else ()),
    ]
    return [s for s in found if s]


def allowed_token_callbacks() -> tuple[str, ...]:
    """The ``oauth_cb`` paths an administrator allows: ``[kgroups] allowed_token_callbacks``
    (:mod:`..settings`), and the official Kafka provider's ``[apache_kafka] callback_allowlist``
    (the same guard for the same key); empty, none is."""
    from airflow.providers.common.compat.sdk import conf

    from ..settings import get_list

    official = conf.get("apache_kafka", "callback_allowlist", fallback="") or ""
    paths = get_list("allowed_token_callbacks") + [p.strip() for p in official.split(",") if p.strip()]
    return tuple(dict.fromkeys(paths))


class KafkaGroupsHook(BaseHook):
    """Kafka consumer groups through a ``kgroups`` (or the official ``kafka``) connection.

    :param kafka_groups_conn_id: the connection id (type ``kgroups`` or ``kafka``).
    :param client_options: ClientConfig options that win over the connection's
        (e.g. ``{"call_timeout_s": 20}``).
    """

    conn_name_attr = "kafka_groups_conn_id"
    default_conn_name = "kgroups_default"
    conn_type = "kgroups"
    hook_name = "Kafka consumer groups"
    if not AIRFLOW_V_3_0_PLUS:  # Airflow 2's Flask form asks the hook; 3.2+ reads the provider info
        get_connection_form_widgets, get_ui_field_behaviour = declared_form_methods()

    def __init__(
        self, kafka_groups_conn_id: str = default_conn_name, client_options: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__()
        if not isinstance(kafka_groups_conn_id, str) or not kafka_groups_conn_id.strip():
            raise ConfigurationError(
                f"kafka_groups_conn_id must be a connection id, got {kafka_groups_conn_id!r}."
            )
        self.kafka_groups_conn_id = kafka_groups_conn_id
        self.client_options = check_client_options(client_options)
        self._aclient: AsyncGroupsClient | None = None

    # -- configuration ------------------------------------------------------------------------

    def _config_from(self, conn, extra: Mapping[str, Any]) -> ClientConfig:
        notes: list[str] = []
        config = client_config_from_connection(
            conn.conn_type,
            conn_id=self.kafka_groups_conn_id,
            host=conn.host,
            port=conn.port,
            login=conn.login,
            password=conn.password,
            extra=extra,
            overrides=self.client_options,
            notes=notes,
            allowed_token_callbacks=allowed_token_callbacks(),
        )
        for note in notes:
            self.log.info("Connection %s: %s", self.kafka_groups_conn_id, note)
        return config

    def _log_config(self, config: ClientConfig, conn_type: str | None) -> None:
        """One line, no secret (call after the secrets are masked)."""
        if config.oauthbearer is not None:
            login = f" OAUTHBEARER with {config.oauthbearer.describe()}"
        else:
            login = f" {config.sasl_mechanism} as {config.sasl_username}" if config.uses_sasl else ""
        self.log.info(
            "Kafka groups connection %s (type %s): bootstrap %s, %s%s",
            self.kafka_groups_conn_id,
            conn_type,
            ",".join(map(str, config.bootstrap_servers)),
            config.security_protocol,
            login,
        )

    @cached_property
    def client_config(self) -> ClientConfig:
        """The validated client configuration (sync connection lookup; not for event loops)."""
        from airflow.providers.common.compat.sdk import mask_secret

        conn = self.get_connection(self.kafka_groups_conn_id)
        config = self._config_from(conn, conn.extra_dejson)
        for secret in _secrets(config):
            mask_secret(secret)
        self._log_config(config, conn.conn_type)
        return config

    async def aget_client_config(self) -> ClientConfig:
        """The same configuration, resolved with Airflow's async connection lookup."""
        from ..version_compat import aextra_dejson, aget_connection, amask_secret

        conn = await aget_connection(self, self.kafka_groups_conn_id)
        config = self._config_from(conn, await aextra_dejson(conn))
        for secret in _secrets(config):
            await amask_secret(secret)
        self._log_config(config, conn.conn_type)
        return config

    # -- clients ------------------------------------------------------------------------------

    @cached_property
    def client(self) -> GroupsClient:
        """The blocking client (created on first use)."""
        from ..client import GroupsClient

        return GroupsClient(self.client_config)

    def get_conn(self) -> GroupsClient:
        return self.client

    async def aget_client(self) -> AsyncGroupsClient:
        """The asyncio client for the running loop (created on first use)."""
        if self._aclient is None:
            from ..client import AsyncGroupsClient

            self._aclient = AsyncGroupsClient(await self.aget_client_config())
        return self._aclient

    def close(self) -> None:
        client = self.__dict__.pop("client", None)
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        client, self._aclient = self._aclient, None
        if client is not None:
            await client.close()

    def _run(self, coroutine_fn, *args, **kwargs):
        """Run an ``async def f(aclient, ...)`` on the sync client's loop: one code path for both
        ways in. A verb has one deadline (``call_timeout_s``) for every call it makes."""
        client = self.client
        with client.deadline():
            return client.run(coroutine_fn(client.aclient, *args, **kwargs))

    async def _arun(self, coroutine_fn, *args, **kwargs):
        """The async twin of :meth:`_run`, on the caller's loop, under the same one deadline."""
        aclient = await self.aget_client()
        async with aclient.deadline():
            return await coroutine_fn(aclient, *args, **kwargs)

    # -- verbs (each written once, async, over an AsyncGroupsClient) --------------------------

    def select_groups(self, selector: GroupSelector) -> list[str]:
        """The exact ids plus the listed groups matching the patterns (ListGroups only if patterns);
        a broker whose listing failed raises :class:`IncompleteListingError` (the one selection
        routine, :func:`~..client.selection.select_groups`, shared with the CLI)."""
        from ..client.selection import select_groups

        return self._run(select_groups, selector)

    async def aselect_groups(self, selector: GroupSelector) -> list[str]:
        from ..client.selection import select_groups

        return await self._arun(select_groups, selector)

    def snapshot(
        self,
        group_ids: Iterable[str],
        *,
        policy: UnknownLagPolicy | str = "fail",
        topics: Iterable[str] | None = None,
        read_committed: bool = False,
    ) -> LagSnapshot:
        """A lag snapshot of ``group_ids`` (the lag engine's ``take_snapshot``)."""
        from ..lag.snapshot import take_snapshot

        return self._run(
            take_snapshot, list(group_ids), policy=policy, topics=topics, read_committed=read_committed
        )

    async def asnapshot(
        self,
        group_ids: Iterable[str],
        *,
        policy: UnknownLagPolicy | str = "fail",
        topics: Iterable[str] | None = None,
        read_committed: bool = False,
    ) -> LagSnapshot:
        from ..lag.snapshot import take_snapshot

        return await self._arun(
            take_snapshot, list(group_ids), policy=policy, topics=topics, read_committed=read_committed
        )

    def fix_barrier(
        self,
        group_ids: Iterable[str],
        *,
        topics: Iterable[str] | None = None,
        timestamp_ms: int | None = None,
        read_committed: bool = False,
    ) -> BarrierTarget:
        """Fix a catch-up target now: log-end offsets, or the offsets at ``timestamp_ms``."""
        from ..lag.barrier import fix_target

        return self._run(
            fix_target,
            list(group_ids),
            topics=topics,
            timestamp_ms=timestamp_ms,
            read_committed=read_committed,
        )

    def lag_seconds(
        self, snapshot: LagSnapshot, *, read_committed: bool = False
    ) -> dict[str, GroupLagSeconds]:
        """Lag in seconds of each group's worst partition (one small Fetch per leader)."""
        from ..lag.seconds import lag_seconds

        return self._run(lag_seconds, snapshot, read_committed=read_committed)

    def check_gate(self, gate: LagGate) -> Decision:
        """One check of a lag gate (:func:`..lag.gate.check_gate`: groups bound, snapshot, target on
        the first check, lag seconds if needed, then the gate's decision). A client error is a
        decision too: wait when retrying can fix it, fail (``not_retriable``) when it cannot."""
        from ..lag.gate import check_gate
        from .failures import gate_decision_on_error

        try:
            return self._run(check_gate, gate)
        except KafkaGroupsError as exc:
            return gate_decision_on_error(exc)

    async def acheck_gate(self, gate: LagGate) -> Decision:
        from ..lag.gate import check_gate
        from .failures import gate_decision_on_error

        try:
            return await self._arun(check_gate, gate)
        except KafkaGroupsError as exc:
            return gate_decision_on_error(exc)

    def find_dead_groups(
        self,
        group_ids: Iterable[str] | None,
        *,
        history: Iterable[LagSnapshot] = (),
        rules: DeadGroupRules | None = None,
    ) -> DeadGroupsResult:
        """Classify groups (default: every listed group) as active / paused / dead, with evidence
        (``rules``: default ``DeadGroupRules()``)."""
        from ..cleanup.report import find_dead_groups
        from ..lag.deadgroups import DeadGroupRules

        rules = DeadGroupRules() if rules is None else rules
        return self._run(
            find_dead_groups, None if group_ids is None else list(group_ids), history=history, rules=rules
        )

    def cleanup(self, policy: CleanupPolicy, **options: Any) -> CleanupResult:
        """The one safety path for deleting groups (:func:`..cleanup.run_cleanup`): plan, describe
        again, back up, delete, audit. ``options``: ``backup_base_url``, ``history``,
        ``connect_clusters``, ``audit_base_url``, ``who``, ``storage_options``."""
        from ..cleanup import run_cleanup

        return self._run(run_cleanup, policy, **options)

    # -- changing offsets (each through the cleanup's safety path: plan, describe again, back up, change, audit)

    def reset_offsets(
        self, spec: ResetSpec, group_ids: Iterable[str], options: ResetOptions | None = None, **run: Any
    ) -> OffsetChangeResult:
        """Reset committed offsets (:func:`..cleanup.reset.run_reset`; ``options`` default: a dry
        run). ``run``: ``backup_base_url`` (required), ``audit_base_url``, ``who``,
        ``connect_clusters``, ``storage_options``."""
        from ..cleanup.reset import ResetOptions, run_reset

        return self._run(run_reset, spec, list(group_ids), options or ResetOptions(), **run)

    async def areset_offsets(
        self, spec: ResetSpec, group_ids: Iterable[str], options: ResetOptions | None = None, **run: Any
    ) -> OffsetChangeResult:
        from ..cleanup.reset import ResetOptions, run_reset

        return await self._arun(run_reset, spec, list(group_ids), options or ResetOptions(), **run)

    def delete_offsets(
        self,
        group_ids: Iterable[str],
        topics: Mapping[str, Any],
        options: DeletionOptions | None = None,
        **run: Any,
    ) -> OffsetChangeResult:
        """Delete committed offsets of ``topics`` (topic -> partitions or None) with OffsetDelete
        (:func:`..cleanup.offset_deletion.run_offset_deletion`; default: a dry run)."""
        return self._run(_delete_offsets, list(group_ids), topics, options, run)

    async def adelete_offsets(
        self,
        group_ids: Iterable[str],
        topics: Mapping[str, Any],
        options: DeletionOptions | None = None,
        **run: Any,
    ) -> OffsetChangeResult:
        return await self._arun(_delete_offsets, list(group_ids), topics, options, run)

    def clean_stale_offsets(
        self, group_ids: Iterable[str], options: DeletionOptions, **run: Any
    ) -> OffsetChangeResult:
        """The cleanup's stale-offsets rule (:mod:`..cleanup.stale`) over ``group_ids``."""
        from ..cleanup.stale import run_stale_offsets

        return self._run(run_stale_offsets, list(group_ids), options, **run)

    async def aclean_stale_offsets(
        self, group_ids: Iterable[str], options: DeletionOptions, **run: Any
    ) -> OffsetChangeResult:
        from ..cleanup.stale import run_stale_offsets

        return await self._arun(run_stale_offsets, list(group_ids), options, **run)

    def commit_progress(
        self, group_id: str, ending: Mapping[TopicPartition, int], **run: Any
    ) -> OffsetChangeResult:
        """Commit a processed range's ending offsets to a progress group (:mod:`..cleanup.progress`)."""
        from ..cleanup.progress import commit_progress

        return self._run(commit_progress, group_id, ending, **run)

    async def acommit_progress(
        self, group_id: str, ending: Mapping[TopicPartition, int], **run: Any
    ) -> OffsetChangeResult:
        from ..cleanup.progress import commit_progress

        return await self._arun(commit_progress, group_id, ending, **run)

    def progress_offsets(self, group_id: str) -> dict[str, dict[str, int]] | None:
        """A progress group's offsets as Spark's ``startingOffsets`` (None: no progress yet)."""
        from ..cleanup.progress import progress_offsets

        return self._run(progress_offsets, group_id)

    async def aprogress_offsets(self, group_id: str) -> dict[str, dict[str, int]] | None:
        from ..cleanup.progress import progress_offsets

        return await self._arun(progress_offsets, group_id)

    def share_lag(self, group_ids: Iterable[str]) -> dict[str, Any]:
        """Share groups' lag (KIP-932) as JSON-ready data: per share-partition ``lag`` and
        ``lag_kind``, ``"exact"`` where the broker gives it (Kafka 4.2+, KIP-1226), ``"at_most"``
        (the log end minus the start offset) on Kafka 4.1, None when unknown."""
        from ..offsets.share import share_group_lag

        return self._run(share_group_lag, list(group_ids)).to_dict()

    async def ashare_lag(self, group_ids: Iterable[str]) -> dict[str, Any]:
        from ..offsets.share import share_group_lag

        return (await self._arun(share_group_lag, list(group_ids))).to_dict()

    def describe_groups(self, group_ids: Iterable[str]) -> KeyedResults[str, GroupDescription]:
        return self.client.describe_groups(list(group_ids))

    def committed_offsets(self, group_ids: Iterable[str]) -> KeyedResults[str, GroupOffsets]:
        return self.client.fetch_committed_offsets(list(group_ids))

    def delete_groups(self, group_ids: Iterable[str]) -> KeyedResults[str, GroupDeletion]:
        """Delete groups; the broker refuses a group with members (NON_EMPTY_GROUP), per group."""
        return self.client.delete_groups(list(group_ids))

    def restore_offsets(
        self,
        backup: str,
        group_ids: Iterable[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Undo a cleanup: commit the offsets saved in ``backup`` (a backup URL from the cleanup
        operator's result) for ``group_ids`` (default: every group in it). The groups must be
        Empty or absent. Returns per group ``{"results": {"topic:partition": offset}, "errors": {...},
        "outcome": "restored" | "partial" | "failed"}``."""
        from ..cleanup.restore import run_restore
        from ..history.backup import restore_outcome

        results, run = self._run(
            run_restore,
            backup,
            group_ids,
            storage_options=storage_options,
            who={"by": "KafkaGroupsHook.restore_offsets", "connection": self.kafka_groups_conn_id},
        )
        for group_id, outcome in results.items():
            self.log.info(
                "Restore of %s %s: %d partition(s) committed, %d failed",
                group_id,
                restore_outcome(outcome),
                len(outcome.values),
                len(outcome.failures),
            )
        self.log.info(
            "Restore audit %s; the offsets it overwrote are backed up to %s",
            run.audit_url or f"NOT WRITTEN ({run.audit_error})",
            run.backup_url,
        )
        return {g: {**r.to_dict(), "outcome": restore_outcome(r)} for g, r in results.items()}

    # -- the UI's "Test" button ---------------------------------------------------------------

    def test_connection(self) -> tuple[bool, str]:
        """Reach the cluster with the connection's settings: (ok, message). Never echoes a secret."""
        try:
            topics = self.client.describe_topics(None)
            brokers = len(self.client.aclient.metadata.brokers)
            return True, f"Connected: {brokers} broker(s), {len(topics)} topic(s)."
        except Exception as exc:  # noqa: BLE001 - the UI shows any failure; ClientConfig errors never carry secrets
            return False, f"{type(exc).__name__}: {exc}"
        finally:
            self.close()


async def _delete_offsets(aclient, group_ids, topics, options, run):
    from ..cleanup.offset_deletion import DeletionOptions, run_offset_deletion
    from ..offsets.deletion import plan_offset_deletion

    plans = await plan_offset_deletion(aclient, group_ids, topics)
    return await run_offset_deletion(aclient, plans, options or DeletionOptions(), **run)


def restore_call(
    conn_id: str, backup_url: str | None, changed: list[str], undo: Mapping[str, str]
) -> str | None:
    """The hook call(s) that undo a run's change: ``restore_offsets(<backup>)`` when one backup
    undoes it all (the usual case), else one call per backup naming its groups (a group an
    interrupted earlier run changed first is undone by that run's backup)."""
    from ..cleanup.writeahead import undo_by_backup

    if not backup_url:
        return None
    by_backup = undo_by_backup(backup_url, changed, undo)
    if set(by_backup) <= {backup_url}:
        return f"KafkaGroupsHook({conn_id!r}).restore_offsets({backup_url!r})"
    return "; ".join(
        f"KafkaGroupsHook({conn_id!r}).restore_offsets({url!r}, {groups!r})"
        for url, groups in sorted(by_backup.items())
    )
