"""What a change will do to one group (:class:`Intent`), as a value: each change says it
(:meth:`.guard.Change.intent`), the run's write-ahead intent records it (:mod:`.writeahead`), and
the reconciliation of an interrupted run reads it back to judge what the run did. JSON only at the
journal: :meth:`Intent.to_dict` and :meth:`Intent.from_dict`, partitions as ``"topic:p"`` keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..client.results import TopicPartition

__all__ = ["Intent", "IntentKind", "tp_from_key", "tp_key"]


def tp_key(tp: TopicPartition) -> str:
    return f"{tp.topic}:{tp.partition}"


def tp_from_key(key: str) -> TopicPartition:
    topic, _, partition = key.rpartition(":")
    return TopicPartition(topic, int(partition))


class IntentKind(str, Enum):
    DELETE_GROUP = "delete-group"  # the whole group goes (DeleteGroups)
    COMMIT = "commit"  # offsets committed (a reset, a restore, a progress commit)
    DELETE_OFFSETS = "delete-offsets"  # some partitions' offsets go (OffsetDelete)


@dataclass(frozen=True, slots=True)
class Intent:
    """:param partitions: the partitions the change touches (none for a whole group).
    :param targets: a commit's offsets per partition (None: remove the partition's offset, as a
        restore does where the group had none).
    :param via: how a commit goes ("kafka", "connect", "share").
    :param from_backup: the backup a restore commits."""

    kind: IntentKind
    partitions: frozenset[TopicPartition] = frozenset()
    targets: Mapping[TopicPartition, int | None] | None = None
    via: str | None = None
    from_backup: str | None = None

    @classmethod
    def commit(
        cls,
        targets: Mapping[TopicPartition, int | None],
        *,
        via: str | None = None,
        from_backup: str | None = None,
    ) -> Intent:
        return cls(IntentKind.COMMIT, frozenset(targets), dict(targets), via, from_backup)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value}
        if self.kind is not IntentKind.DELETE_GROUP:
            out["partitions"] = sorted(tp_key(tp) for tp in self.partitions)
        if self.targets is not None:
            out["targets"] = dict(sorted((tp_key(tp), o) for tp, o in self.targets.items()))
        if self.via is not None:
            out["via"] = self.via
        if self.from_backup is not None:
            out["from_backup"] = self.from_backup
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Intent:
        """The intent a journal's record holds (ValueError: it names no known kind of change)."""
        targets = data.get("targets")
        return cls(
            IntentKind(str(data.get("kind"))),
            frozenset(tp_from_key(k) for k in data.get("partitions") or ()),
            None if targets is None else {tp_from_key(k): v for k, v in dict(targets).items()},
            data.get("via"),
            data.get("from_backup"),
        )
