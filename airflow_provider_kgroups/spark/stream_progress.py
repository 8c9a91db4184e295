"""A streaming ``kgroups`` query's progress as a consumer group (option ``commitToGroup``).

Spark's Kafka source keeps its progress only in the query's checkpoint; this source also
commits it to a consumer group, so ``kafka-consumer-groups.sh``, lag monitors, this project's
gates and its cleanup see the job as they see any consumer.

When: only offsets that Spark's sink has committed. Spark tells a source so in two ways, both
used: ``commit(end)`` (MicroBatchExecution calls it for batch N-1 while it plans batch N), and
``latestOffset(start)`` itself, which Spark calls for batch N+1 only after batch N is in the
checkpoint's commit log, with ``start`` = batch N's end. The second is what brings the group to
the end of an AvailableNow run: Spark never calls ``commit`` for a run's last batch, but it
asks for the latest offset once more after it, finds nothing new, and stops. Neither ever
comes before the sink: the group may lag the sink by a batch, never lead it.

How: an OffsetCommit as the admin client sends it (no member, generation -1), which Kafka
accepts only while the group has no members, so a group that consumers are using is never
moved (the commit fails naming the group; the query stops). The metadata of every committed
offset says who committed it (:data:`COMMITTER`): ``kafka-consumer-groups.sh`` and ``kgroups
describe`` show it. The cleanup judges such a group as any group without members (its offsets
move while the query runs)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from ..client.errors import KafkaGroupsError
from ..client.handlers.offset_commit import OffsetToCommit
from ..client.results import TopicPartition

log = logging.getLogger(__name__)

#: The committed offsets' metadata names this writer (a JSON object's ``committer``).
COMMITTER = "kgroups-spark-stream"


class GroupCommitError(KafkaGroupsError):
    """The progress group refused the commit (it has members, or this principal may not write it)."""


def commit_metadata(subscription: str) -> str:
    return json.dumps({"committer": COMMITTER, "reads": subscription}, separators=(",", ":"))


def is_stream_progress(metadata: str | None) -> bool:
    """Whether a committed offset's metadata says a streaming kgroups query committed it."""
    try:
        return json.loads(metadata or "").get("committer") == COMMITTER
    except (ValueError, AttributeError):
        return False


class ProgressCommitter:
    """Commits a query's processed offsets to one group, each distinct position once."""

    def __init__(self, client, group_id: str, subscription: str) -> None:
        self.client, self.group_id = client, group_id
        self.metadata = commit_metadata(subscription)
        self.committed: dict[TopicPartition, int] = {}

    def commit(self, offsets: Mapping[TopicPartition, int], why: str) -> None:
        changed = {tp: o for tp, o in offsets.items() if o >= 0 and self.committed.get(tp) != o}
        if not changed:
            return
        done = self.client.commit_offsets(
            self.group_id, {tp: OffsetToCommit(o, self.metadata) for tp, o in changed.items()}
        )
        if done.failures:
            tp, failure = next(iter(done.failures.items()))
            raise GroupCommitError(
                f"commitToGroup: Kafka refused the commit to group {self.group_id!r} ({tp}: {failure}); "
                "a group that consumers use (with members) is never committed to: name a group of "
                "its own for this query, and grant it Read on the group."
            )
        self.committed.update(changed)
        log.info(
            "committed %d partition(s) to group %s (%s): %s",
            len(changed),
            self.group_id,
            why,
            ", ".join(f"{tp}@{o}" for tp, o in sorted(changed.items())[:5])
            + (" ..." if len(changed) > 5 else ""),
        )

    def group_offsets(self, partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
        """The group's committed offsets for ``partitions`` (those without a commit left out)."""
        fetched = self.client.fetch_committed_offsets([self.group_id])
        if self.group_id in fetched.failures:
            raise GroupCommitError(
                f"startingOffsets=group: the offsets of group {self.group_id!r} could not be read: "
                f"{fetched.failures[self.group_id]}"
            )
        committed = fetched.values[self.group_id].committed()
        return {tp: o for tp, o in committed.items() if tp in partitions}
