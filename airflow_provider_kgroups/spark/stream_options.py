"""The options of ``spark.readStream.format("kgroups")``, checked when the query is defined (a
bad option fails ``load()``, before any batch): Spark's Kafka source's names and meanings,
plus ``endingOffsets`` (where the query ends: the gate's XCom) and ``commitToGroup``.
The docs' Spark page has the table; each error names the option and the fix."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ..client.config import ClientConfig
from ..client.errors import ConfigurationError
from ..client.numbers import is_int
from ..client.offset_map import OffsetKind, OffsetMap
from ..client.results import TopicPartition
from ..client.selection import validate_group_ids
from .options import (
    ReadFlags,
    client_config,
    duration_ms,
    lower,
    optional_positive_int,
    positive_int,
    read_flags,
)
from .subscription import Subscription

DEFAULT_RECORDS_PER_PARTITION = 1_000_000
DEFAULT_MAX_TRIGGER_DELAY = "15m"  # Spark's default
#: ``startingOffsets`` words: Spark's two, and ``group`` (the commitToGroup group's offsets).
STARTING_WORDS = ("earliest", "latest", "group")
OWN_OPTIONS = (
    "startingoffsets",
    "endingoffsets",
    "startingtimestamp",
    "startingoffsetsbytimestamp",
    "startingoffsetsbytimestampstrategy",
    "maxoffsetspertrigger",
    "minoffsetspertrigger",
    "maxtriggerdelay",
    "committogroup",
    "maxrecordsperpartition",
    "minpartitions",
    "kgroups.command.config",
    "kgroups.fetch.bytes",
)
#: Spark's batch-only options, refused in a streaming query with the reason.
BATCH_ONLY = {
    "endingtimestamp": "endingTimestamp",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
}


@dataclass(frozen=True)
class Starting:
    """Where a query without a checkpoint starts: ``word`` (earliest, latest, group), per-partition
    ``offsets`` (-2/-1 allowed), or a time: ``timestamp`` for every partition or per-partition
    ``timestamps``; ``if_no_match`` is ``startingOffsetsByTimestampStrategy`` (error or latest)."""

    word: str | None = None
    offsets: Mapping[TopicPartition, int] | None = None
    timestamp: int | None = None
    timestamps: Mapping[TopicPartition, int] | None = None
    if_no_match: str = "error"


@dataclass(frozen=True)
class StreamSpec:
    config: ClientConfig
    subscription: Subscription
    starting: Starting
    ending: Mapping[TopicPartition, int] | None  # the query reads no offset at or past these
    max_offsets: int | None
    min_offsets: int | None
    max_trigger_delay_ms: int
    commit_group: str | None
    flags: ReadFlags
    records_per_partition: int
    min_partitions: int | None

    # what every task reads with (the batch source's ReadSpec names them alike)
    @property
    def read_committed(self) -> bool:
        return self.flags.read_committed

    @property
    def fail_on_data_loss(self) -> bool:
        return self.flags.fail_on_data_loss

    @property
    def include_headers(self) -> bool:
        return self.flags.include_headers

    @property
    def fetch_bytes(self) -> int:
        return self.flags.fetch_bytes


def parse_stream_options(options: Mapping[str, str]) -> StreamSpec:
    """Every option checked (ConfigurationError naming it and the fix)."""
    opts = lower(options)
    for key, name in BATCH_ONLY.items():
        if key in opts:
            raise ConfigurationError(
                f"option {name} is for batch reads only (as in Spark's Kafka source); a streaming "
                "query ends at endingOffsets (per-partition offsets) or where Trigger.AvailableNow "
                "found the log's end."
            )
    subscription = Subscription.from_options(opts)
    if subscription is None:
        raise ConfigurationError(
            "a streaming kgroups query needs one of assign, subscribe or subscribePattern "
            "(as Spark's Kafka source does), e.g. .option('subscribe', 'orders')."
        )
    commit_group = opts.get("committogroup")
    if commit_group is not None:
        validate_group_ids([commit_group], what="option commitToGroup")
    starting = _starting(opts)
    if starting.word == "group" and commit_group is None:
        raise ConfigurationError(
            "startingOffsets=group starts from the commitToGroup group's offsets: give commitToGroup too."
        )
    max_offsets = optional_positive_int(opts, "maxOffsetsPerTrigger")
    min_offsets = optional_positive_int(opts, "minOffsetsPerTrigger")
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise ConfigurationError(  # Spark's Kafka source refuses it too (validateGeneralOptions)
            f"option minOffsetsPerTrigger ({min_offsets}) is higher than maxOffsetsPerTrigger "
            f"({max_offsets}): no micro-batch could hold the minimum; lower it to at most the maximum."
        )
    return StreamSpec(
        config=client_config(opts, OWN_OPTIONS),
        subscription=subscription,
        starting=starting,
        ending=_ending(opts),
        max_offsets=max_offsets,
        min_offsets=min_offsets,
        max_trigger_delay_ms=duration_ms(opts, "maxTriggerDelay", DEFAULT_MAX_TRIGGER_DELAY),
        commit_group=commit_group,
        flags=read_flags(opts),
        records_per_partition=positive_int(opts, "maxRecordsPerPartition", DEFAULT_RECORDS_PER_PARTITION),
        min_partitions=optional_positive_int(opts, "minPartitions"),
    )


def _starting(opts: Mapping[str, str]) -> Starting:
    """Spark's precedence: startingTimestamp, then startingOffsetsByTimestamp, then startingOffsets
    (default latest, as for Spark's streaming source)."""
    strategy = str(opts.get("startingoffsetsbytimestampstrategy", "error")).strip().lower()
    if strategy not in ("error", "latest"):
        raise ConfigurationError(
            f"option startingOffsetsByTimestampStrategy must be error or latest, got {strategy!r}."
        )
    if "startingtimestamp" in opts:
        text = str(opts["startingtimestamp"]).strip()
        if not text.isdigit():
            raise ConfigurationError(
                f"option startingTimestamp must be milliseconds since the epoch, got {text!r}."
            )
        return Starting(timestamp=int(text), if_no_match=strategy)
    if "startingoffsetsbytimestamp" in opts:
        stamps = OffsetMap.parse(
            str(opts["startingoffsetsbytimestamp"]), OffsetKind.COMMITTED, name="startingOffsetsByTimestamp"
        )
        return Starting(timestamps=stamps.flat(), if_no_match=strategy)
    text = str(opts.get("startingoffsets", "latest")).strip()
    if text.lower() in STARTING_WORDS:
        return Starting(word=text.lower())
    if not text.startswith("{"):
        raise ConfigurationError(
            f"option startingOffsets must be earliest, latest, group or per-partition JSON such as "
            f'{{"orders": {{"0": 23, "1": -2}}}}, got {text!r}.'
        )
    return Starting(
        offsets=OffsetMap.parse(text, OffsetKind.STREAMING, name="startingOffsets", nonempty=True).flat()
    )


def _ending(opts: Mapping[str, str]) -> Mapping[TopicPartition, int] | None:
    if "endingoffsets" not in opts:
        return None
    text = str(opts["endingoffsets"]).strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise ConfigurationError(
            "option endingOffsets of a streaming query must be per-partition offsets such as "
            f'{{"orders": {{"0": 120, "1": 80}}}} (the ConsumerLagSensor\'s XCom), got {text!r}; '
            "to end at the log's end when the query starts, use Trigger.AvailableNow without it."
        )
    ending = OffsetMap.parse(parsed, OffsetKind.COMMITTED, name="endingOffsets", nonempty=True).flat()
    assert all(is_int(o) for o in ending.values())
    return ending
