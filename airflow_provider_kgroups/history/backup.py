"""Backups of committed offsets, taken before groups are deleted, so a deletion can be undone.

One JSON document per backup, next to the history::

    <store url>/_backups/<YYYYMMDDTHHMMSSZ>-<uuid>.json

    {"format": "kgroups-offsets-backup", "version": 1, "created_ms": 1700000000000,
     "note": "cleanup run 2024-05-01",
     "groups": {"billing": {"orders": {"0": {"offset": 990, "metadata": "", "leader_epoch": 7}}}},
     "no_commit": {"billing": {"orders": [1]}}}

``no_commit`` (only when a change will commit partitions the group had no offset for, e.g. a
reset): restoring removes those partitions' offsets again (OffsetDelete), so the group is back
where it was, not left at the new offsets there.

JSON rather than Parquet because a backup is small, read by people during an incident, and
restored whole. :func:`backup_offsets` reads the file back and compares before returning,
so a caller that got a URL has a usable backup. :func:`restore_offsets` commits the offsets
as an administrator (the group must be Empty or absent, which is the case after a deletion).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import fsspec

from ..client.errors import ConfigurationError, KafkaGroupsError
from ..client.numbers import check_int
from ..client.results import CommittedOffset, GroupOffsets, KeyedResults, TopicPartition
from ..lag.snapshot import now_ms as _now_ms
from .records import list_records, write_record

__all__ = [
    "OffsetsBackup",
    "backup_offsets",
    "load_backup",
    "list_backups",
    "restore_offsets",
    "restore_outcome",
    "BACKUP_FORMAT",
]

BACKUP_FORMAT = "kgroups-offsets-backup"
BACKUP_VERSION = 1
BACKUP_DIR = "_backups"  # the "_" makes Spark and pyarrow skip it when reading the Parquet history


@dataclass(frozen=True, slots=True)
class OffsetsBackup:
    created_ms: int
    groups: Mapping[str, Mapping[TopicPartition, CommittedOffset]]
    note: str = ""
    url: str | None = field(default=None, compare=False)
    #: group -> partitions without a committed offset at backup time that the change sets
    absent: Mapping[str, tuple[TopicPartition, ...]] = field(default_factory=dict)
    #: share groups (KIP-932): their offsets are start offsets, restored with AlterShareGroupOffsets
    share_groups: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        groups: dict[str, dict[str, dict[str, Any]]] = {}
        for group_id, partitions in self.groups.items():
            nested = groups.setdefault(group_id, {})
            for tp in sorted(partitions):
                c = partitions[tp]
                nested.setdefault(tp.topic, {})[str(tp.partition)] = {
                    "offset": c.offset,
                    "metadata": c.metadata,
                    "leader_epoch": c.leader_epoch,
                }
        out = {
            "format": BACKUP_FORMAT,
            "version": BACKUP_VERSION,
            "created_ms": self.created_ms,
            "note": self.note,
            "groups": groups,
        }
        if self.share_groups:
            out["share_groups"] = sorted(self.share_groups)
        absent = {g: tps for g, tps in self.absent.items() if tps}
        if absent:  # written only when there is some: a deletion's backup stays what it always was
            out["no_commit"] = {
                g: {
                    t: sorted(tp.partition for tp in tps if tp.topic == t)
                    for t in sorted({tp.topic for tp in tps})
                }
                for g, tps in absent.items()
            }
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], url: str | None = None) -> OffsetsBackup:
        where = f" ({url})" if url else ""
        if not isinstance(data, Mapping) or data.get("format") != BACKUP_FORMAT:
            raise ConfigurationError(f"not a kgroups offsets backup{where}.")
        if data.get("version") != BACKUP_VERSION:
            raise ConfigurationError(
                f"offsets backup{where} has version {data.get('version')!r}; this code reads "
                f"version {BACKUP_VERSION}."
            )
        groups: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        try:
            for group_id, topics in data["groups"].items():
                parts = groups.setdefault(group_id, {})
                for topic, partitions in topics.items():
                    for partition, c in partitions.items():
                        parts[TopicPartition(topic, int(partition))] = CommittedOffset(
                            offset=c["offset"],
                            metadata=c.get("metadata") or "",
                            leader_epoch=c.get("leader_epoch"),
                        )
            absent = {
                g: tuple(sorted(TopicPartition(t, int(p)) for t, ps in topics.items() for p in ps))
                for g, topics in (data.get("no_commit") or {}).items()
            }
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigurationError(f"offsets backup{where} is malformed: {exc!r}.") from None
        for g in absent:
            groups.setdefault(g, {})
        return cls(
            created_ms=int(data["created_ms"]),
            groups=groups,
            note=str(data.get("note") or ""),
            url=url,
            absent=absent,
            share_groups=tuple(sorted(data.get("share_groups") or ())),
        )


def _as_offsets(
    value: GroupOffsets | Mapping[TopicPartition, int | CommittedOffset],
) -> dict[TopicPartition, CommittedOffset]:
    if isinstance(value, GroupOffsets):
        value = value.partitions
    out = {}
    for tp, c in value.items():
        commit = c if isinstance(c, CommittedOffset) else CommittedOffset(offset=c)
        if commit.offset is None or commit.error is not None:
            continue  # nothing committed there: nothing to restore
        check_int(
            f"the offset for {tp}", commit.offset, at_least=0, must_be="a committed offset (an int >= 0)"
        )
        out[tp] = CommittedOffset(commit.offset, commit.metadata, commit.leader_epoch)
    return out


def backup_offsets(
    store_url: str,
    group_offsets: Mapping[str, GroupOffsets | Mapping[TopicPartition, int | CommittedOffset]],
    *,
    note: str = "",
    now_ms: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    absent: Mapping[str, Iterable[TopicPartition]] | None = None,
    share_groups: Iterable[str] = (),
) -> str:
    """Write a backup of ``group_offsets`` under ``store_url`` and return its URL, after
    reading it back and checking it. Partitions without a commit are left out; ``absent``
    names those a change is about to commit (restoring removes them again)."""
    if not group_offsets:
        raise ConfigurationError("nothing to back up: group_offsets is empty.")
    created = _now_ms() if now_ms is None else now_ms
    missing = {g: tuple(sorted(set(tps))) for g, tps in (absent or {}).items() if tps}
    stray = sorted(set(missing) - set(group_offsets))
    if stray:
        raise ConfigurationError(f"absent partitions given for group(s) {stray} that are not backed up.")
    backup = OffsetsBackup(
        created,
        {g: _as_offsets(v) for g, v in group_offsets.items()},
        note,
        absent=missing,
        share_groups=tuple(sorted(set(share_groups))),
    )
    url = write_record(
        store_url, BACKUP_DIR, backup.to_dict(), at_ms=created, storage_options=storage_options
    )
    if load_backup(url, storage_options=storage_options) != backup:
        raise KafkaGroupsError(
            f"the backup written to {url} does not read back the same: do not delete anything."
        )
    return url


def load_backup(backup_url: str, *, storage_options: Mapping[str, Any] | None = None) -> OffsetsBackup:
    try:
        with fsspec.open(backup_url, "r", **dict(storage_options or {})) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise ConfigurationError(f"no offsets backup at {backup_url}.") from None
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"offsets backup {backup_url} is not JSON: {exc}.") from None
    return OffsetsBackup.from_dict(data, url=backup_url)


def list_backups(store_url: str, *, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """Backup URLs under ``store_url``, oldest first."""
    return list_records(store_url, BACKUP_DIR, storage_options=storage_options)


async def restore_offsets(
    client,
    backup: OffsetsBackup | str,
    group_ids: Iterable[str] | None = None,
    *,
    timeout_s: float | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dict[str, KeyedResults]:
    """Commit the backed-up offsets of ``group_ids`` (default: all in the backup), one
    OffsetCommit per group, all in flight at once, then remove the offsets of the partitions that
    had none when the backup was taken (OffsetDelete). Per group, per partition: the committed
    offset (None: removed, as it was) or the failure (e.g. the group has members again: restore
    only into Empty groups)."""
    if isinstance(backup, str):
        backup = load_backup(backup, storage_options=storage_options)
    if isinstance(group_ids, str):
        raise ConfigurationError(f"group_ids must be a list, not the single string {group_ids!r}.")
    ids = list(backup.groups) if group_ids is None else list(dict.fromkeys(group_ids))
    missing = [g for g in ids if g not in backup.groups]
    if missing:
        raise ConfigurationError(
            f"group(s) {', '.join(map(repr, missing))} are not in the backup "
            f"{backup.url or ''} (it has {', '.join(sorted(backup.groups)) or 'none'})."
        )
    commit = [g for g in ids if backup.groups[g] and g not in backup.share_groups]
    results = dict(
        zip(
            commit,
            await asyncio.gather(
                *(client.commit_offsets(g, dict(backup.groups[g]), timeout_s=timeout_s) for g in commit)
            ),
        )
    )
    shares = {
        g: {tp: c.offset for tp, c in backup.groups[g].items()}
        for g in ids
        if g in backup.share_groups and backup.groups[g]
    }
    if shares:  # start offsets back with the share group's own API (KIP-932)
        altered = await client.alter_share_group_offsets(shares, timeout_s=timeout_s)
        for g, offsets in shares.items():
            per_tp = altered.values.get(g, {tp: altered.failures.get(g) for tp in offsets})
            results[g] = KeyedResults(
                {tp: offsets[tp] for tp, f in per_tp.items() if f is None},
                {tp: f for tp, f in per_tp.items() if f is not None},
            )
    remove = {g: backup.absent[g] for g in ids if backup.absent.get(g)}
    if remove:
        removed = await client.delete_committed_offsets(remove, timeout_s=timeout_s)
        for g, tps in remove.items():
            before = results.get(g, KeyedResults())
            per_tp = removed.values.get(g, {tp: removed.failures.get(g) for tp in tps})
            results[g] = KeyedResults(
                {**before.values, **{tp: None for tp, f in per_tp.items() if f is None}},
                {**before.failures, **{tp: f for tp, f in per_tp.items() if f is not None}},
            )
    return {g: results[g] for g in ids if g in results}


def restore_outcome(result: KeyedResults) -> str:
    """One group's restore in a word: "restored" (every partition), "partial" (some: the broker
    refused or failed the others) or "failed" (none)."""
    if not result.failures:
        return "restored"
    return "partial" if result.values else "failed"
