"""Kafka Connect as evidence for the cleanup: which consumer groups belong to a sink connector,
and whether that connector is running, stopped for a while, or gone.

Rules (:meth:`ConnectEvidence.for_group`), most specific first:

1. Protocol type ``connect`` (when the caller passes it): a Connect *worker* group (the
   cluster's own ``group.id``, e.g. ``connect-cluster``), never a sink's: KEEP.
2. The group is the group of one or more sink connectors (type "sink", or "unknown" which
   might be one): RUNNING with every task RUNNING is ACTIVE; anything else is KEEP, with why:
   PAUSED / STOPPED / FAILED / UNASSIGNED / RESTARTING connector, or a RUNNING connector
   with a task not RUNNING (a FAILED task leaves the group without members, so it looks
   Empty, yet the connector resumes from its offsets once the task is restarted). STOPPED
   names the sanctioned reset ``DELETE /connectors/{name}/offsets`` (Kafka 3.6+, KIP-875).
3. ``connect-<name>`` where connector ``<name>`` exists but does not use that group (a
   source connector, or a sink with ``consumer.override.group.id``): KEEP (it may hold the
   connector's earlier offsets; whose they are is unclear).
4. Any other ``connect-*`` group: if every configured Connect cluster was read, its
   connector no longer exists anywhere: CONNECTOR_GONE (deletable under the usual patterns,
   caps and backups). If a cluster could not be read, or none is configured: UNAVAILABLE.
5. Anything else: ``None`` (no Connect involvement known).

Fail closed: an unreadable cluster turns every Connect-looking group without a verdict from
a cluster that did answer into UNAVAILABLE; rules 1-3 still hold (they keep anyway). A group
named by ``consumer.override.group.id`` on an unreadable cluster cannot be recognised at all:
``ConnectEvidence.complete`` is False then, for a caller that wants to hold every deletion.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..client.errors import ConfigurationError
from ..client.numbers import check_number
from .config import ConnectClusterConfig
from .rest import GROUP_PREFIX, ConnectorRecord, ConnectReadError, read_connectors

log = logging.getLogger(__name__)

RESET_HINT_MIN_KAFKA = "3.6"
_WHY_KEEP = (
    "it resumes from this group's committed offsets; deleting the group makes it re-deliver its topics "
    "from the earliest offset"
)


class ConnectStatus(str, Enum):
    ACTIVE = "active"  # a RUNNING sink connector (all tasks RUNNING) uses the group
    KEEP = "keep"  # a sink connector that is not running (or another Connect reason) needs the group
    CONNECTOR_GONE = "connector_gone"  # connect-<name> whose connector exists in no configured cluster
    UNAVAILABLE = "unavailable"  # Connect could not be read: cannot tell, so keep


@dataclass(frozen=True, slots=True)
class ConnectVerdict:
    status: ConnectStatus
    reason: str
    connector: str | None = None
    cluster_url: str | None = None

    @property
    def allows_deletion(self) -> bool:
        """Only CONNECTOR_GONE is evidence for deleting; every other verdict keeps the group."""
        return self.status is ConnectStatus.CONNECTOR_GONE

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "reason": self.reason,
            "connector": self.connector,
            "cluster_url": self.cluster_url,
        }


@dataclass(frozen=True, slots=True)
class ClusterReadFailure:
    cluster_url: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"cluster_url": self.cluster_url, "reason": self.reason}


@dataclass(frozen=True)
class ConnectEvidence:
    """What the configured Connect clusters said (or why they could not say it)."""

    cluster_urls: tuple[str, ...]
    connectors: tuple[ConnectorRecord, ...] = ()
    failures: tuple[ClusterReadFailure, ...] = ()
    _by_group: dict[str, list[ConnectorRecord]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _by_name: dict[str, list[ConnectorRecord]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        for record in self.connectors:
            self._by_name.setdefault(record.name, []).append(record)
            group_id = record.group_id  # None for a source connector
            if group_id is not None:
                self._by_group.setdefault(group_id, []).append(record)

    @property
    def complete(self) -> bool:
        """Every configured cluster answered (and at least one is configured)."""
        return bool(self.cluster_urls) and not self.failures

    def groups(self) -> list[str]:
        """The consumer groups of the sink connectors read (sorted)."""
        return sorted(self._by_group)

    def for_group(self, group_id: str, protocol_type: str | None = None) -> ConnectVerdict | None:
        if protocol_type == "connect":
            return ConnectVerdict(
                ConnectStatus.KEEP,
                "a Kafka Connect worker group (protocol type connect), which "
                "coordinates the Connect workers; not a sink connector's consumer group",
            )
        records = self._by_group.get(group_id)
        if records:
            return _verdict_for_sinks(records)
        if not group_id.startswith(GROUP_PREFIX):
            return None
        same_name = self._by_name.get(group_id[len(GROUP_PREFIX) :])
        if same_name:
            record = same_name[0]
            uses = (
                "is a source connector, which has no consumer group"
                if record.type == "source"
                else f"uses group {record.group_id!r} (consumer.override.group.id)"
            )
            return ConnectVerdict(
                ConnectStatus.KEEP,
                f"connector {record.name!r} on {record.cluster_url} exists and "
                f"{uses}; this group may hold its earlier offsets",
                record.name,
                record.cluster_url,
            )
        if not self.cluster_urls:
            return ConnectVerdict(
                ConnectStatus.UNAVAILABLE,
                "looks like a Kafka Connect sink group but no Kafka Connect "
                "cluster is configured to tell whether its connector exists (give --connect-url / "
                "connect_conn_ids)",
            )
        if self.failures:
            why = "; ".join(f"{f.cluster_url}: {f.reason}" for f in self.failures)
            return ConnectVerdict(
                ConnectStatus.UNAVAILABLE,
                f"looks like a Kafka Connect sink group but Kafka Connect "
                f"could not be read, so whether its connector exists is unknown ({why})",
                cluster_url=self.failures[0].cluster_url,
            )
        return ConnectVerdict(
            ConnectStatus.CONNECTOR_GONE,
            f"its connector no longer exists: no connector named "
            f"{group_id[len(GROUP_PREFIX) :]!r} and none using this group in "
            f"{', '.join(self.cluster_urls)}",
            group_id[len(GROUP_PREFIX) :],
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster_urls": list(self.cluster_urls),
            "complete": self.complete,
            "connectors": [r.to_dict() for r in self.connectors],
            "failures": [f.to_dict() for f in self.failures],
        }


def _verdict_for_sinks(records: Sequence[ConnectorRecord]) -> ConnectVerdict:
    keeps = [(r, why) for r in records if (why := _why_not_active(r)) is not None]
    if keeps:
        record = keeps[0][0]
        reason = "; ".join(why for _, why in keeps)
        return ConnectVerdict(ConnectStatus.KEEP, reason, record.name, record.cluster_url)
    record = records[0]
    names = ", ".join(f"{r.name!r} on {r.cluster_url}" for r in records)
    tasks = f"{len(record.tasks)} task(s) RUNNING" if record.tasks else "no tasks yet"
    return ConnectVerdict(
        ConnectStatus.ACTIVE,
        f"sink connector {names} is RUNNING ({tasks}): the group is in use",
        record.name,
        record.cluster_url,
    )


def _why_not_active(record: ConnectorRecord) -> str | None:
    """None when the connector and all its tasks run; else why its group must stay."""
    what = (
        "sink connector"
        if record.type == "sink"
        else f"connector of type {record.type!r} (may be a sink; its plugin may be missing)"
    )
    head = f"{what} {record.name!r} on {record.cluster_url}"
    if record.type != "sink":
        return f"{head} is {record.state}; its type is not known to be source, so its group is kept"
    state = record.state
    if state == "RUNNING":
        not_running = [t for t in record.tasks if t.state != "RUNNING"]
        if not not_running:
            return None
        listed = ", ".join(f"task {t.id} {t.state}" for t in not_running)
        return (
            f"{head} is RUNNING but {listed}: the group may look Empty, yet {_WHY_KEEP} once the task is "
            "restarted (POST /connectors/{name}/restart?includeTasks=true&onlyFailed=true)"
        )
    if state == "STOPPED":
        return (
            f"{head} is STOPPED: {_WHY_KEEP} when resumed. To start it over on purpose use the sanctioned "
            f"reset DELETE {record.cluster_url}/connectors/{record.name}/offsets (Kafka {RESET_HINT_MIN_KAFKA}+, "
            "KIP-875, while it is STOPPED), not a group deletion"
        )
    if state == "PAUSED":
        return f"{head} is PAUSED: {_WHY_KEEP} when resumed"
    if state == "FAILED":
        return f"{head} is FAILED: {_WHY_KEEP} once restarted"
    if state == "UNASSIGNED":
        return f"{head} is UNASSIGNED (not yet started on a worker): {_WHY_KEEP} when it starts"
    if state == "RESTARTING":
        return f"{head} is RESTARTING: {_WHY_KEEP}"
    return f"{head} is in state {state!r}, not RUNNING: {_WHY_KEEP}"


def fetch_connect_evidence(clusters: Iterable[ConnectClusterConfig], timeout_s: float) -> ConnectEvidence:
    """Read every configured Connect cluster, one after the other, all within ``timeout_s``.

    Never raises for a cluster that cannot be read: that is a failure in the evidence
    (fail closed). Raises :class:`ConfigurationError` for bad arguments, before any request."""
    if isinstance(clusters, (str, ConnectClusterConfig)):
        raise ConfigurationError(
            f"clusters must be a list of ConnectClusterConfig values, got a single {type(clusters).__name__}."
        )
    checked = []
    for cluster in clusters:
        if not isinstance(cluster, ConnectClusterConfig):
            raise ConfigurationError(
                f"clusters must be ConnectClusterConfig values, got {type(cluster).__name__}."
            )
        # validated again: the plain constructor (unlike create()) checks nothing
        checked.append(
            ConnectClusterConfig.create(
                cluster.url,
                username=cluster.username,
                password=cluster.password,
                verify=cluster.verify,
                timeout_s=cluster.timeout_s,
                retries=cluster.retries,
                backoff_s=cluster.backoff_s,
            )
        )
    clusters = checked
    timeout_s = check_number("timeout_s", timeout_s, above=0, must_be="a number of seconds > 0")
    deadline = time.monotonic() + timeout_s
    urls, records, failures = [], [], []
    for cluster in clusters:
        if cluster.url in urls:
            continue
        urls.append(cluster.url)
        try:
            found = read_connectors(cluster, deadline)
        except ConnectReadError as exc:
            log.warning("Kafka Connect %s could not be read: %s; its groups are kept", cluster.url, exc)
            failures.append(ClusterReadFailure(cluster.url, str(exc)))
            continue
        log.info(
            "Kafka Connect %s: %d connector(s), %d sink(s)",
            cluster.url,
            len(found),
            sum(r.type == "sink" for r in found),
        )
        records.extend(found)
    return ConnectEvidence(tuple(urls), tuple(records), tuple(failures))
