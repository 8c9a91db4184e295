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

Each verb is written once, ``async def _<name>(self, aclient, ...)``; its sync ``<name>`` and
async ``a<name>`` are made from it (:mod:`.twins`), each run through its way's one entry point
(:meth:`_run`, :meth:`_arun`: the client, then one deadline for everything the verb does).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from airflow.providers.common.compat.sdk import BaseHook

from ..client.errors import ConfigurationError
from ..version_compat import AIRFLOW_V_3_0_PLUS
from .connection import check_client_options, client_config_from_connection
from .connection_form import declared_form_methods
from .failures import gate_decision_on_error
from .twins import async_twin, sync_twin

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
    from .run_keywords import CleanupRun, DeletionRun, ProgressRun, ResetRun, StaleRun

T = TypeVar("T")


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

    def _run(self, call: Callable[[AsyncGroupsClient], Coroutine[Any, Any, T]]) -> T:
        """The sync way's one entry point: ``call(aclient)`` on the sync client's loop, under one
        deadline (``call_timeout_s``) for every call it makes."""
        client = self.client
        with client.deadline():
            return client.run(call(client.aclient))

    async def _arun(self, call: Callable[[AsyncGroupsClient], Coroutine[Any, Any, T]]) -> T:
        """The async way's: ``call(aclient)`` on the caller's loop, under the same one deadline."""
        aclient = await self.aget_client()
        async with aclient.deadline():
            return await call(aclient)

    # -- verbs: each written once over an AsyncGroupsClient; its twins are made on the line below it

    async def _select_groups(self, aclient: AsyncGroupsClient, selector: GroupSelector) -> list[str]:
        """The exact ids plus the listed groups matching the patterns (ListGroups only if patterns);
        a broker whose listing failed raises :class:`IncompleteListingError` (the one selection
        routine, :func:`~..client.selection.select_groups`, shared with the CLI)."""
        from ..client.selection import select_groups

        return await select_groups(aclient, selector)

    select_groups, aselect_groups = sync_twin(_select_groups), async_twin(_select_groups)

    async def _snapshot(
        self,
        aclient: AsyncGroupsClient,
        group_ids: Iterable[str],
        *,
        policy: UnknownLagPolicy | str = "fail",
        topics: Iterable[str] | None = None,
        read_committed: bool = False,
    ) -> LagSnapshot:
        """A lag snapshot of ``group_ids`` (the lag engine's ``take_snapshot``)."""
        from ..lag.snapshot import take_snapshot

        return await take_snapshot(
            aclient, list(group_ids), policy=policy, topics=topics, read_committed=read_committed
        )

    snapshot, asnapshot = sync_twin(_snapshot), async_twin(_snapshot)

    async def _fix_barrier(
        self,
        aclient: AsyncGroupsClient,
        group_ids: Iterable[str],
        *,
        topics: Iterable[str] | None = None,
        timestamp_ms: int | None = None,
        read_committed: bool = False,
    ) -> BarrierTarget:
        """Fix a catch-up target now: log-end offsets, or the offsets at ``timestamp_ms``."""
        from ..lag.barrier import fix_target

        return await fix_target(
            aclient, list(group_ids), topics=topics, timestamp_ms=timestamp_ms, read_committed=read_committed
        )

    fix_barrier = sync_twin(_fix_barrier)

    async def _lag_seconds(
        self, aclient: AsyncGroupsClient, snapshot: LagSnapshot, *, read_committed: bool = False
    ) -> dict[str, GroupLagSeconds]:
        """Lag in seconds of each group's worst partition (one small Fetch per leader)."""
        from ..lag.seconds import lag_seconds

        return await lag_seconds(aclient, snapshot, read_committed=read_committed)

    lag_seconds = sync_twin(_lag_seconds)

    async def _check_gate(self, aclient: AsyncGroupsClient, gate: LagGate) -> Decision:
        """One check of a lag gate (:func:`..lag.gate.check_gate`: groups bound, snapshot, target on
        the first check, lag seconds if needed, then the gate's decision). A client error is a
        decision too: wait when retrying can fix it, fail (``not_retriable``) when it cannot."""
        from ..lag.gate import check_gate

        return await check_gate(aclient, gate)

    # the error becomes a decision whatever raised it: the connection's lookup, the client, the check
    check_gate = sync_twin(_check_gate, on_error=gate_decision_on_error)
    acheck_gate = async_twin(_check_gate, on_error=gate_decision_on_error)

    async def _find_dead_groups(
        self,
        aclient: AsyncGroupsClient,
        group_ids: Iterable[str] | None,
        *,
        history: Iterable[LagSnapshot] = (),
        rules: DeadGroupRules | None = None,
    ) -> DeadGroupsResult:
        """Classify groups (default: every listed group) as active / paused / dead, with evidence
        (``rules``: default ``DeadGroupRules()``)."""
        from ..cleanup.report import find_dead_groups
        from ..lag.deadgroups import DeadGroupRules

        return await find_dead_groups(
            aclient,
            None if group_ids is None else list(group_ids),
            history=history,
            rules=DeadGroupRules() if rules is None else rules,
        )

    find_dead_groups = sync_twin(_find_dead_groups)

    async def _cleanup(
        self, aclient: AsyncGroupsClient, policy: CleanupPolicy, **options: Unpack[CleanupRun]
    ) -> CleanupResult:
        """The one safety path for deleting groups (:func:`..cleanup.run_cleanup`): plan, describe
        again, back up, delete, audit. ``options``: ``backup_base_url``, ``history``,
        ``connect_clusters``, ``audit_base_url``, ``who``, ``storage_options``."""
        from ..cleanup import run_cleanup
        from ..cleanup.context import context_from

        context, rest = context_from(aclient, options)
        return await run_cleanup(context, policy, **rest)

    cleanup = sync_twin(_cleanup)

    # -- changing offsets (each through the cleanup's safety path: plan, describe again, back up, change, audit)

    async def _reset_offsets(
        self,
        aclient: AsyncGroupsClient,
        spec: ResetSpec,
        group_ids: Iterable[str],
        options: ResetOptions | None = None,
        **run: Unpack[ResetRun],
    ) -> OffsetChangeResult:
        """Reset committed offsets (:func:`..cleanup.reset.run_reset`; ``options`` default: a dry
        run). ``run``: ``backup_base_url`` (required), ``audit_base_url``, ``who``,
        ``connect_clusters``, ``storage_options``."""
        from ..cleanup.context import context_from
        from ..cleanup.reset import ResetOptions, run_reset

        context, rest = context_from(aclient, run)
        return await run_reset(context, spec, list(group_ids), options or ResetOptions(), **rest)

    reset_offsets, areset_offsets = sync_twin(_reset_offsets), async_twin(_reset_offsets)

    async def _delete_offsets(
        self,
        aclient: AsyncGroupsClient,
        group_ids: Iterable[str],
        topics: Mapping[str, Any],
        options: DeletionOptions | None = None,
        **run: Unpack[DeletionRun],
    ) -> OffsetChangeResult:
        """Delete committed offsets of ``topics`` (topic -> partitions or None) with OffsetDelete
        (:func:`..cleanup.offset_deletion.run_offset_deletion`; default: a dry run)."""
        from ..cleanup.context import context_from
        from ..cleanup.offset_deletion import DeletionOptions, run_offset_deletion
        from ..offsets.deletion import plan_offset_deletion

        context, rest = context_from(aclient, run)
        plans = await plan_offset_deletion(aclient, list(group_ids), topics)
        return await run_offset_deletion(context, plans, options or DeletionOptions(), **rest)

    delete_offsets, adelete_offsets = sync_twin(_delete_offsets), async_twin(_delete_offsets)

    async def _clean_stale_offsets(
        self,
        aclient: AsyncGroupsClient,
        group_ids: Iterable[str],
        options: DeletionOptions,
        **run: Unpack[StaleRun],
    ) -> OffsetChangeResult:
        """The cleanup's stale-offsets rule (:mod:`..cleanup.stale`) over ``group_ids``."""
        from ..cleanup.context import context_from
        from ..cleanup.stale import run_stale_offsets

        context, rest = context_from(aclient, run)
        return await run_stale_offsets(context, list(group_ids), options, **rest)

    clean_stale_offsets = sync_twin(_clean_stale_offsets)
    aclean_stale_offsets = async_twin(_clean_stale_offsets)

    async def _commit_progress(
        self,
        aclient: AsyncGroupsClient,
        group_id: str,
        ending: Mapping[TopicPartition, int],
        **run: Unpack[ProgressRun],
    ) -> OffsetChangeResult:
        """Commit a processed range's ending offsets to a progress group (:mod:`..cleanup.progress`)."""
        from ..cleanup.context import context_from
        from ..cleanup.progress import commit_progress

        context, rest = context_from(aclient, run)
        return await commit_progress(context, group_id, ending, **rest)

    commit_progress, acommit_progress = sync_twin(_commit_progress), async_twin(_commit_progress)

    async def _progress_offsets(
        self, aclient: AsyncGroupsClient, group_id: str
    ) -> dict[str, dict[str, int]] | None:
        """A progress group's offsets as Spark's ``startingOffsets`` (None: no progress yet)."""
        from ..cleanup.progress import progress_offsets

        return await progress_offsets(aclient, group_id)

    progress_offsets, aprogress_offsets = sync_twin(_progress_offsets), async_twin(_progress_offsets)

    async def _share_lag(self, aclient: AsyncGroupsClient, group_ids: Iterable[str]) -> dict[str, Any]:
        """Share groups' lag (KIP-932) as JSON-ready data: per share-partition ``lag`` and
        ``lag_kind``, ``"exact"`` where the broker gives it (Kafka 4.2+, KIP-1226), ``"at_most"``
        (the log end minus the start offset) on Kafka 4.1, None when unknown."""
        from ..offsets.share import share_group_lag

        return (await share_group_lag(aclient, list(group_ids))).to_dict()

    share_lag, ashare_lag = sync_twin(_share_lag), async_twin(_share_lag)

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
        from ..cleanup.restore import restore_context, run_restore
        from ..history.backup import restore_outcome

        ids = None if group_ids is None else list(group_ids)
        who = {"by": "KafkaGroupsHook.restore_offsets", "connection": self.kafka_groups_conn_id}
        results, run = self._run(
            lambda aclient: run_restore(
                restore_context(aclient, backup, who=who, storage_options=storage_options), backup, ids
            )
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
