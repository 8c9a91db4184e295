"""The driver's half of ``spark.readStream.format("kgroups")``: where a query starts, how far each
micro-batch reads, where an AvailableNow run or ``endingOffsets`` ends it, and the progress
group. Spark calls it from one long-lived Python process on the driver (PySpark's streaming
source runner), so it keeps one client open between calls. No pyspark import: the Spark
classes in :mod:`.datasource` delegate here, and the tests drive it directly too.

Offsets cross to Spark in the form of Spark's Kafka source (``{"topic": {"0": 23}}``), so a
checkpoint's ``offsets/`` log and a query's progress read alike for both sources."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..client.errors import ConfigurationError
from ..client.results import TopicPartition
from ..lag.offset_range import nest_offsets, unnest_offsets
from .admission import MinimumBatch, rate_limit
from .chunks import OffsetChunk, split_ranges
from .stream_options import StreamSpec
from .stream_progress import ProgressCommitter

log = logging.getLogger(__name__)

Offsets = dict[TopicPartition, int]


class DataLossError(ConfigurationError):
    """Records the query should have read are gone (``failOnDataLoss=true``)."""


class StreamPlanner:
    def __init__(self, spec: StreamSpec, clock: Callable[[], float] = time.time) -> None:
        self.spec = spec
        self.clock = clock
        self._client: Any = None  # a GroupsClient, opened at the first call
        self.target: Offsets | None = None  # fixed by prepare_available_now
        self.latest_seen: Offsets | None = None
        self.minimum = (
            MinimumBatch(spec.min_offsets, spec.max_trigger_delay_ms, last_trigger_ms=0.0)
            if spec.min_offsets
            else None
        )
        self._progress: ProgressCommitter | None = None
        self._initial: Offsets | None = None  # resolved by the first initial_offset call

    # -- Spark's calls ---------------------------------------------------------------------------

    def initial_offset(self) -> dict:
        """Where a query without a checkpoint starts (Spark does not ask again once one exists).
        Resolved once: Spark asks twice for a new query's first batch (for its latestOffset, then
        again to plan it), and its Kafka source answers the second time what it wrote down the
        first (``KafkaSourceInitialOffsetWriter``), so that ``latest`` cannot move in between."""
        if self._initial is None:
            self._initial = self._resolve_initial()
        return nest_offsets(self._initial)

    def _resolve_initial(self) -> Offsets:
        partitions = self._partitions()
        starting = self.spec.starting
        if starting.word == "earliest":
            offsets = self._log_starts(partitions)
        elif starting.word == "latest":
            offsets = self._log_ends(partitions)
        elif starting.word == "group":
            offsets = self._from_group(partitions)
        elif starting.offsets is not None:
            offsets = self._resolve_given(starting.offsets, partitions)
        else:
            offsets = self._by_time(partitions)
        if self.spec.ending is not None:
            offsets = {
                tp: min(o, self.spec.ending[tp]) if tp in self.spec.ending else o for tp, o in offsets.items()
            }
        log.info("the query starts at %s (%s)", _show(offsets), self._starting_words())
        return offsets

    def prepare_available_now(self) -> None:
        """Trigger.AvailableNow: the run's end, fixed now (the log end, or the last stable offset
        under read_committed; never past ``endingOffsets``)."""
        self.target = self._ends(self._partitions())
        log.info("AvailableNow: this run ends at %s", _show(self.target))

    def latest_offset(self, start_nested: Mapping, limited: bool) -> dict:
        """The end of the next micro-batch (``start`` itself: nothing to read). ``limited``: the
        engine asked for the source's read limit (not ReadAllAvailable)."""
        start = unnest_offsets(start_nested)
        self._commit_progress(start, "the previous batch is in the sink's commit log")
        latest = dict(self.target) if self.target is not None else self._ends(self._partitions())
        self._drop_gone(start, latest)
        if self.target is not None:  # a partition that appeared after the run started waits for the next run
            latest.update({tp: o for tp, o in start.items() if tp not in latest})
        self.latest_seen = dict(latest)
        if (
            limited
            and self.minimum
            and self.target is None
            and self.minimum.wait(start, latest, self.clock() * 1000)
        ):
            return dict(start_nested)
        if limited and self.spec.max_offsets:
            new = [tp for tp in latest if tp not in start]
            latest = rate_limit(self.spec.max_offsets, start, latest, self._log_starts(new) if new else {})
        return nest_offsets(latest)

    def partitions(self, start_nested: Mapping, end_nested: Mapping) -> list[OffsetChunk]:
        start, end = unnest_offsets(start_nested), unnest_offsets(end_nested)
        new = [tp for tp in end if tp not in start]
        new_starts = self._log_starts(new) if new else {}
        for tp, first in sorted(new_starts.items()):  # Spark's getOffsetRangesFromResolvedOffsets
            if first != 0:
                self._data_loss(
                    f"{tp}: the partition appeared after the query started and its log starts at "
                    f"{first}, not 0: offsets 0..{first - 1} were deleted before the query could read them"
                )
        ranges = {}
        for tp, stop in end.items():
            begin = start.get(tp, new_starts.get(tp, 0))
            if stop < begin:
                self._data_loss(
                    f"{tp}: its offset went back from {begin} to {stop} (was the topic deleted and created again?)"
                )
                continue
            ranges[tp] = (begin, stop)
        return split_ranges(ranges, self.spec.records_per_partition, self.spec.min_partitions)

    def commit(self, end_nested: Mapping) -> None:
        self._commit_progress(unnest_offsets(end_nested), "Spark committed the batch")

    def report_latest(self) -> dict | None:
        return None if self.latest_seen is None else nest_offsets(self.latest_seen)

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- the pieces ------------------------------------------------------------------------------

    @property
    def client(self):
        if self._client is None:
            from ..client.sync import GroupsClient

            self._client = GroupsClient(self.spec.config)
        return self._client

    def _partitions(self) -> set[TopicPartition]:
        found = self.client.run(self.spec.subscription.partitions(self.client.aclient))
        ending = self.spec.ending
        if ending is not None:
            outside = sorted(set(ending) - found)
            if outside and self.spec.subscription.kind == "assign":
                raise ConfigurationError(
                    f"option endingOffsets names partitions the query does not read "
                    f"({', '.join(map(str, outside[:5]))}): assign them, or leave them out of endingOffsets."
                )
            found &= set(ending)  # the query reads exactly the partitions the range names
        return found

    def _ends(self, partitions: set[TopicPartition]) -> Offsets:
        ends = self._log_ends(partitions)
        if self.spec.ending is not None:
            ends = {tp: min(o, self.spec.ending[tp]) for tp, o in ends.items()}
        return ends

    def _listed(self, listed, what: str) -> Offsets:
        if listed.failures:
            tp, failure = next(iter(listed.failures.items()))
            raise ConfigurationError(f"{tp}: cannot list its {what}: {failure}")
        return {tp: value.offset for tp, value in listed.values.items()}

    def _log_starts(self, partitions) -> Offsets:
        partitions = list(partitions)
        return (
            self._listed(self.client.log_start_offsets(partitions), "earliest offset") if partitions else {}
        )

    def _log_ends(self, partitions) -> Offsets:
        partitions = list(partitions)
        if not partitions:
            return {}
        listed = self.client.log_end_offsets(partitions, read_committed=self.spec.flags.read_committed)
        return self._listed(listed, "latest offset")

    def _resolve_given(self, given: Mapping[TopicPartition, int], partitions: set[TopicPartition]) -> Offsets:
        """Per-partition ``startingOffsets``: they must name the subscription's partitions, as
        Spark's source requires (with ``endingOffsets``, which names them, a partition left out
        starts at its earliest offset); -2 and -1 resolved now."""
        if set(given) != partitions and self.spec.ending is None:
            missing = ", ".join(map(str, sorted(partitions - set(given))[:5])) or "none"
            extra = ", ".join(map(str, sorted(set(given) - partitions)[:5])) or "none"
            raise ConfigurationError(
                "option startingOffsets must name every partition the query reads (as Spark's Kafka "
                f"source requires; -2 earliest, -1 latest): missing {missing}; not read {extra}."
            )
        wanted = {tp: o for tp, o in given.items() if tp in partitions}
        # resolved here, not as a partition new to the first batch (which the data-loss check
        # of an added partition would take for one whose log no longer starts at 0)
        wanted.update({tp: -2 for tp in partitions - set(given)})
        starts = self._log_starts([tp for tp, o in wanted.items() if o == -2])
        ends = self._log_ends([tp for tp, o in wanted.items() if o == -1])
        return {tp: starts.get(tp, ends.get(tp, o)) if o < 0 else o for tp, o in wanted.items()}

    def _from_group(self, partitions: set[TopicPartition]) -> Offsets:
        """``startingOffsets=group``: the group's commits; earliest where it has none; a commit
        outside the log follows failOnDataLoss."""
        committed = self.progress.group_offsets(partitions)
        starts = self._log_starts(partitions)
        offsets = {}
        for tp in partitions:
            offset = committed.get(tp, starts[tp])
            if offset < starts[tp]:
                self._data_loss(
                    f"{tp}: group {self.spec.commit_group!r} committed {offset}, but the log starts at "
                    f"{starts[tp]}: offsets {offset}..{starts[tp] - 1} were deleted"
                )
                offset = starts[tp]
            offsets[tp] = offset  # one past the log's end shows as data loss when the batch is planned
        log.info(
            "startingOffsets=group: %d partition(s) from group %s, %d from earliest (no commit)",
            len(committed),
            self.spec.commit_group,
            len(partitions) - len(committed),
        )
        return offsets

    def _by_time(self, partitions: set[TopicPartition]) -> Offsets:
        starting = self.spec.starting
        if starting.timestamps is not None:
            if set(starting.timestamps) != partitions:
                raise ConfigurationError(
                    "option startingOffsetsByTimestamp must name every partition the query reads "
                    "(as Spark's Kafka source requires)."
                )
            per_time: dict[int, list[TopicPartition]] = {}
            for tp, stamp in starting.timestamps.items():
                per_time.setdefault(stamp, []).append(tp)
        else:
            per_time = {int(starting.timestamp or 0): sorted(partitions)}
        offsets = {}
        for stamp, tps in per_time.items():
            offsets.update(self._listed(self.client.offsets_for_timestamp(tps, stamp), f"offset at {stamp}"))
        unmatched = sorted(tp for tp, o in offsets.items() if o < 0)
        if unmatched and starting.if_no_match == "error":
            raise ConfigurationError(
                f"no record at or after the starting timestamp in {', '.join(map(str, unmatched[:5]))}: "
                "set startingOffsetsByTimestampStrategy=latest to start those at the log's end."
            )
        offsets.update(self._log_ends(unmatched))
        return offsets

    def _drop_gone(self, start: Offsets, latest: Offsets) -> None:
        gone = sorted(tp for tp in start if tp not in latest)
        if gone and self.spec.ending is None:
            self._data_loss(
                f"partition(s) {', '.join(map(str, gone[:5]))} are gone; some records may have been missed"
            )

    def _data_loss(self, what: str) -> None:
        if self.spec.flags.fail_on_data_loss:
            raise DataLossError(f"{what}. Set failOnDataLoss=false to go on without them.")
        log.warning("%s (failOnDataLoss=false: going on)", what)

    @property
    def progress(self) -> ProgressCommitter:
        if self._progress is None:
            assert self.spec.commit_group is not None
            self._progress = ProgressCommitter(
                self.client, self.spec.commit_group, self.spec.subscription.describe()
            )
        return self._progress

    def _commit_progress(self, offsets: Offsets, why: str) -> None:
        if self.spec.commit_group is not None and offsets:
            self.progress.commit(offsets, why)

    def _starting_words(self) -> str:
        s = self.spec.starting
        return (
            f"startingOffsets={s.word}"
            if s.word
            else ("startingOffsets JSON" if s.offsets else "by timestamp")
        )


def _show(offsets: Mapping[TopicPartition, int], most: int = 6) -> str:
    shown = ", ".join(f"{tp}@{o}" for tp, o in sorted(offsets.items())[:most])
    return (
        shown + (f" ... ({len(offsets)} partitions)" if len(offsets) > most else "")
        if offsets
        else "no partitions"
    )
