"""``spark.read.format("kgroups")``: exactly an offset range of Kafka, read by this package's client.

A Spark 4 Python data source, so a pip-installed package is enough (no JVM package such as
``spark-sql-kafka-0-10``, which many images and locked-down clusters cannot add). It takes the
options of Spark's Kafka batch source where they exist, and has its schema, so a job switches
between the two by changing the format name (a JVM source owns the name ``kafka``)::

    from airflow_provider_kgroups.spark.datasource import register

    register(spark)
    df = (spark.read.format("kgroups")
          .option("kafka.bootstrap.servers", "kafka-1:9092")
          .option("startingOffsets", gate["startingOffsets"])   # the sensor's XCom
          .option("endingOffsets", gate["endingOffsets"])
          .load())

Options:

``kafka.bootstrap.servers`` (required)
``startingOffsets`` / ``endingOffsets`` (required)
    Per-partition JSON as Spark's Kafka source takes it (``{"orders": {"0": 23, "1": -2}}``,
    -2 earliest in starting, -1 latest in ending, the end exclusive); -2 and -1 are resolved
    once, on the driver, when the query is planned.
``maxRecordsPerPartition`` (default 1000000)
    Offsets per Spark partition at most: a larger range is split into near-equal chunks, one task
    each, as Spark's Kafka source splits it (which has no default: unset, it never splits).
``minPartitions``
    At least about this many Spark partitions: the largest ranges are split further, by Spark's
    Kafka source's own rule (``KafkaOffsetRangeCalculator``), so both plan the same tasks.
``assign`` / ``subscribe`` / ``subscribePattern``
    Optional, one of them: the offsets must name exactly the partitions assigned or subscribed to
    when the query is planned (Spark refuses a mismatch too). The timestamp options
    (``startingTimestamp``, ``endingTimestamp``, ``startingOffsetsByTimestamp``...) are refused
    with the reason (:data:`REFUSED_OPTIONS`): a batch read takes exactly the offsets it is given.
    ``spark.readStream`` takes the same source: :mod:`.stream_options`.
``kafka.isolation.level`` (``read_uncommitted``)
    ``read_committed`` leaves out aborted transactions and reads up to the last stable offset.
``failOnDataLoss`` (``true``)
    Records of the range that are gone (deleted by retention, or compacted away) fail the task
    naming the partition and the offsets; ``false`` reads around them and logs how many offsets
    were missing (for compacted topics).
``includeHeaders`` (``false``)
    Adds the ``headers`` column, as Spark's Kafka source does.
``kgroups.command.config``
    A client.properties file (``security.protocol``, ``sasl.*``, ``ssl.*``), read on the driver
    when the query is planned. Secrets go here, never into options: options are shown in query
    plans and the Spark UI, so ``kafka.sasl.password``, ``kafka.ssl.key.password``,
    ``kafka.sasl.jaas.config`` and OAUTHBEARER's client secret (``kafka.sasl.oauthbearer.client.secret``,
    ``...client.credentials.client.secret``, ``...config``) are refused. With OAUTHBEARER each
    executor process fetches (and caches) its own token from the same settings.
``kafka.<property>``
    Any other client property this package supports (``kafka.security.protocol``,
    ``kafka.sasl.mechanism``, ``kafka.ssl.ca.location``, timeouts...).
``kgroups.fetch.bytes`` (1048576)
    Bytes asked per Fetch (grown for a record batch that does not fit).

Each task reads ``[start, end)`` of one partition with bounded Fetch requests to its leader,
skips transaction markers (and aborted records with read_committed), and yields Arrow record
batches, not Python rows. Bad options fail when ``load()`` is called, before any task starts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..client.compression import UndecodableBatch
from ..client.config import ClientConfig
from ..client.errors import ConfigurationError
from ..client.properties import config_to_kafka_properties, format_properties
from ..client.results import TopicPartition
from .chunks import OffsetChunk, split_ranges
from .offsets import EARLIEST, ENDING, LATEST, STARTING, OffsetRange
from .options import SECRET_OPTIONS, client_config, lower, positive_int, read_flags, refuse_secrets
from .subscription import Subscription, parse_assign

log = logging.getLogger(__name__)

FORMAT = "kgroups"
DEFAULT_RECORDS_PER_PARTITION = 1_000_000
__all__ = [
    "FORMAT",
    "SECRET_OPTIONS",
    "OffsetChunk",
    "parse_options",
    "read_offset_range",
    "register",
    "split_ranges",
]
#: Options of this source (the rest of ``kafka.*`` are client properties).
OWN_OPTIONS = (
    "kafka.bootstrap.servers",
    STARTING,
    ENDING,
    "maxrecordsperpartition",
    "minpartitions",
    "assign",
    "kafka.isolation.level",
    "failondataloss",
    "includeheaders",
    "kgroups.command.config",
    "kgroups.fetch.bytes",
)
_BY_TIME = (
    "this source does not look offsets up by time: resolve the time to offsets first "
    "(GroupsClient.offsets_for_timestamp) and pass them as startingOffsets/endingOffsets"
)
#: Options of Spark's Kafka batch source this source refuses, each with why and what to do instead.
REFUSED_OPTIONS = {
    "startingTimestamp": _BY_TIME,
    "endingTimestamp": _BY_TIME,
    "startingOffsetsByTimestamp": _BY_TIME,
    "endingOffsetsByTimestamp": _BY_TIME,
    "startingOffsetsByTimestampStrategy": _BY_TIME,
}
SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int"
)
HEADERS_FIELD = "headers array<struct<key: string, value: binary>>"


@dataclass(frozen=True)
class ReadSpec:
    """The validated options: what every task needs, secrets included (never shown: the
    reader travels to the executors pickled, not as options)."""

    config: ClientConfig
    ranges: tuple[tuple[TopicPartition, int, int], ...]  # offsets may still be -2 / -1
    records_per_partition: int
    min_partitions: int | None
    read_committed: bool
    fail_on_data_loss: bool
    include_headers: bool
    fetch_bytes: int
    subscription: Subscription | None = (
        None  # subscribe/subscribePattern: checked against the ranges at planning
    )


def parse_options(options: Mapping[str, str]) -> ReadSpec:
    """Every option of a batch read checked, with a message naming it and the fix (ConfigurationError)."""
    opts = lower(options)
    refuse_secrets(opts)
    for name, why in REFUSED_OPTIONS.items():
        if name.lower() in opts:  # Spark hands the options over in lower case: name it as Spark's docs do
            raise ConfigurationError(
                f"option {name} of Spark's Kafka source is not taken by the kgroups source: {why}."
            )
    for name in (STARTING, ENDING):
        if name.lower() not in opts:
            raise ConfigurationError(
                f"option {name} is required for a batch read: per-partition JSON such as "
                '{"orders": {"0": 0, "1": -2}}, e.g. the ConsumerLagSensor\'s XCom.'
            )
    config = client_config(opts, OWN_OPTIONS)
    ranges = OffsetRange.from_json(opts[STARTING.lower()], opts[ENDING.lower()]).pairs()
    subscription = Subscription.from_options(opts)
    if subscription is not None and subscription.kind == "assign":
        _check_assign(opts["assign"], set(ranges))
    flags = read_flags(opts)
    return ReadSpec(
        config=config,
        ranges=tuple((tp, s, e) for tp, (s, e) in ranges.items()),
        records_per_partition=positive_int(opts, "maxRecordsPerPartition", DEFAULT_RECORDS_PER_PARTITION),
        min_partitions=positive_int(opts, "minPartitions", 0) or None,
        read_committed=flags.read_committed,
        fail_on_data_loss=flags.fail_on_data_loss,
        include_headers=flags.include_headers,
        fetch_bytes=flags.fetch_bytes,
        subscription=subscription if subscription is not None and subscription.kind != "assign" else None,
    )


def _check_assign(text: str, partitions: set[TopicPartition]) -> None:
    """``assign`` (``{"topic": [0, 1]}``) must name exactly the offsets' partitions: Spark's source
    refuses a mismatch with specific offsets too."""
    assigned = set(parse_assign(text))
    if assigned != partitions:
        only_assign = ", ".join(map(str, sorted(assigned - partitions))) or "none"
        only_offsets = ", ".join(map(str, sorted(partitions - assigned))) or "none"
        raise ConfigurationError(
            f"option assign must name the partitions of startingOffsets/endingOffsets (Spark's "
            f"Kafka source refuses a mismatch too); only in assign: {only_assign}; only in the "
            f"offsets: {only_offsets}."
        )


def check_subscribed(subscribed: set[TopicPartition], spec: ReadSpec) -> None:
    """With subscribe/subscribePattern, the offsets must name every partition subscribed to now and
    no other (Spark's source: "If startingOffsets contains specific offsets, you must specify all
    TopicPartitions")."""
    named = {tp for tp, _, _ in spec.ranges}
    if named != subscribed:
        missing = ", ".join(map(str, sorted(subscribed - named)[:5])) or "none"
        extra = ", ".join(map(str, sorted(named - subscribed)[:5])) or "none"
        assert spec.subscription is not None
        raise ConfigurationError(
            f"startingOffsets/endingOffsets must name every partition of {spec.subscription.describe()} "
            f"and no other (as Spark's Kafka source requires): not named {missing}; not subscribed {extra}."
        )


async def resolve_ranges(client, spec: ReadSpec) -> dict[TopicPartition, tuple[int, int]]:
    """-2 (earliest) and -1 (latest; the last stable offset with read_committed) -> offsets."""
    need_start = [tp for tp, s, _ in spec.ranges if s == EARLIEST]
    need_end = [tp for tp, _, e in spec.ranges if e == LATEST]
    starts = await client.log_start_offsets(need_start) if need_start else None
    ends = await client.log_end_offsets(need_end, read_committed=spec.read_committed) if need_end else None
    resolved = {}
    for tp, start, end in spec.ranges:
        for listed, wanted in ((starts, start == EARLIEST), (ends, end == LATEST)):
            if wanted and listed is not None and tp in listed.failures:
                raise ConfigurationError(f"{tp}: cannot resolve earliest/latest: {listed.failures[tp]}")
        # listed whenever asked for (need_start, need_end)
        start = starts.values[tp].offset if start == EARLIEST and starts is not None else start
        end = ends.values[tp].offset if end == LATEST and ends is not None else end
        resolved[tp] = (start, max(start, end))
    return resolved


def to_record_batches(
    chunk: OffsetChunk, batches: list, include_headers: bool, start: int | None = None
) -> Iterator[Any]:
    """One page's record batches (undecoded) -> Arrow record batches of the chunk's records, in the
    source's schema, of about 32,768 rows each (:func:`.arrow_records.page_to_arrow`; a record
    without headers has NULL headers, as in Spark's ``KafkaRecordToRowConverter``). Spark sends
    them to the JVM as they are: pyspark/sql/worker/plan_data_source_read.py,
    ``records_to_arrow_batches``, passes an iterator of ``pyarrow.RecordBatch`` through after
    checking the first one's schema, so their size is the size of the batches the JVM reads."""
    from .arrow_records import page_to_arrow

    first = chunk.start if start is None else start  # the reader's floor: never a record deleted by retention
    return page_to_arrow(chunk.topic, chunk.partition, batches, first, chunk.end, include_headers)


def _iterate(async_iterable, loop: asyncio.AbstractEventLoop) -> Iterator[Any]:
    iterator = async_iterable.__aiter__()
    while True:
        try:
            yield loop.run_until_complete(iterator.__anext__())
        except StopAsyncIteration:
            return


def read_chunk(spec: ReadSpec, chunk: OffsetChunk) -> Iterator[Any]:
    """The records of one chunk as Arrow record batches (runs on an executor)."""
    from ..client.client import AsyncGroupsClient
    from ..client.records import RangeReader

    tp = TopicPartition(chunk.topic, chunk.partition)
    loop = asyncio.new_event_loop()
    client = AsyncGroupsClient(spec.config)
    reader = RangeReader(
        client,
        tp,
        chunk.start,
        chunk.end,
        read_committed=spec.read_committed,
        allow_gaps=not spec.fail_on_data_loss,
        page_bytes=spec.fetch_bytes,
        gap_hint="set failOnDataLoss=false to read around them (the missing offsets are logged)",
        decode=False,
    )
    try:
        for batches in _iterate(reader.pages(), loop):
            try:
                yield from to_record_batches(chunk, batches, spec.include_headers, reader.floor)
            except UndecodableBatch as exc:  # the task fails naming the partition, the codec and the library
                raise UndecodableBatch(exc.codec, f"{tp}: {exc.detail}") from exc
    finally:
        loop.run_until_complete(client.close())
        loop.close()
    if reader.gaps:
        log.warning(
            "%s [%d, %d): %d offset(s) missing and read around (failOnDataLoss=false): %s",
            tp,
            chunk.start,
            chunk.end,
            reader.gap_offsets,
            "; ".join(f"{first}..{last} {why}" for first, last, why in reader.gaps[:10]),
        )


def parse_either(options: Mapping[str, str]) -> tuple[Any, Any]:
    """The options read as a batch read's and as a stream's, at ``load()``, which does not say
    which it is: an error both readings give is raised there (the batch one unless the options
    subscribe, which only streams do without offsets); an error only one gives is kept and raised
    when Spark asks for that reader."""
    from .stream_options import parse_stream_options

    found: list[Any] = []
    for parse in (parse_options, parse_stream_options):
        try:
            found.append(parse(options))
        except ConfigurationError as exc:
            found.append(exc)
    batch, stream = found
    if isinstance(batch, Exception) and isinstance(stream, Exception):
        opts = lower(options)
        raise stream if any(k in opts for k in ("subscribe", "subscribepattern")) else batch
    return batch, stream


def _data_source_classes():
    """Defined lazily so that importing this module does not import pyspark."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        ReadMinRows,
        SupportsTriggerAvailableNow,
    )

    class KGroupsPartition(InputPartition):
        def __init__(self, chunk: OffsetChunk) -> None:
            super().__init__(chunk)
            self.chunk = chunk

    class KGroupsReader(DataSourceReader):
        def __init__(self, spec: ReadSpec) -> None:
            self.spec = spec

        def partitions(self) -> list:
            from ..client.sync import GroupsClient

            with GroupsClient(self.spec.config) as client:
                if self.spec.subscription is not None:
                    check_subscribed(client.run(self.spec.subscription.partitions(client.aclient)), self.spec)
                ranges = client.run(resolve_ranges(client.aclient, self.spec))
            chunks = split_ranges(ranges, self.spec.records_per_partition, self.spec.min_partitions)
            return [KGroupsPartition(c) for c in chunks]

        def read(self, partition) -> Iterator[Any]:
            chunk = getattr(
                partition, "chunk", None
            )  # Spark reads one InputPartition(None) for no partitions
            return read_chunk(self.spec, chunk) if chunk is not None else iter(())

    class KGroupsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        """Spark's calls, each handed to the driver's :class:`.stream_planner.StreamPlanner`."""

        def __init__(self, spec) -> None:
            from .stream_planner import StreamPlanner

            self.spec = spec
            self.planner = StreamPlanner(spec)

        def initialOffset(self) -> dict:
            return self.planner.initial_offset()

        def getDefaultReadLimit(self):
            if self.spec.max_offsets:
                return ReadMaxRows(self.spec.max_offsets)
            if self.spec.min_offsets:
                return ReadMinRows(self.spec.min_offsets)
            return ReadAllAvailable()

        def latestOffset(self, start: dict, limit) -> dict:
            return self.planner.latest_offset(start, limited=not isinstance(limit, ReadAllAvailable))

        def prepareForTriggerAvailableNow(self) -> None:
            self.planner.prepare_available_now()

        def reportLatestOffset(self) -> dict | None:
            return self.planner.report_latest()

        def partitions(self, start: dict, end: dict) -> list:
            return [KGroupsPartition(c) for c in self.planner.partitions(start, end)]

        def read(self, partition) -> Iterator[Any]:
            return read_chunk(self.spec, partition.chunk)

        def commit(self, end: dict) -> None:
            self.planner.commit(end)

        def stop(self) -> None:
            self.planner.stop()

    class KGroupsDataSource(DataSource):
        """Exactly ``[startingOffsets, endingOffsets)`` of Kafka read as a batch, or a stream
        (module docstring and :mod:`.stream_options`: the options)."""

        def __init__(self, options: MutableMapping[str, str]) -> None:
            super().__init__(options)
            self.spec, self.stream_spec = parse_either(options)  # bad options fail at load()

        @classmethod
        def name(cls) -> str:
            return FORMAT

        def schema(self) -> str:
            spec = self.stream_spec if isinstance(self.spec, Exception) else self.spec
            headers = spec.include_headers
            return SCHEMA + (f", {HEADERS_FIELD}" if headers else "")

        def reader(self, schema) -> DataSourceReader:
            if isinstance(self.spec, Exception):
                raise self.spec
            return KGroupsReader(self.spec)

        def streamReader(self, schema) -> DataSourceStreamReader:
            if isinstance(self.stream_spec, Exception):
                raise self.stream_spec
            return KGroupsStreamReader(self.stream_spec)

    return KGroupsDataSource


def register(spark) -> None:
    """Make ``spark.read.format("kgroups")`` available in this session."""
    spark.dataSource.register(_data_source_classes())


def read_offset_range(
    spark,
    bootstrap_servers: str,
    source: Mapping[str, Any] | OffsetRange | None = None,
    *,
    starting: str | None = None,
    ending: str | None = None,
    command_config: str | None = None,
    options: Mapping[str, str] | None = None,
):
    """A DataFrame of exactly the range in ``source`` (an :class:`~..lag.offset_range.OffsetRange`,
    the ConsumerLagSensor's XCom, or ``starting``/``ending`` JSON), read with the ``kgroups`` source."""
    from .offsets import kafka_batch_options

    register(spark)
    range_options = kafka_batch_options(source, starting=starting, ending=ending)
    reader = (
        spark.read.format(FORMAT)
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option(STARTING, range_options[STARTING])
        .option(ENDING, range_options[ENDING])
    )
    if command_config:
        reader = reader.option("kgroups.command.config", command_config)
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    return reader.load()


@contextmanager
def client_properties_file(config: ClientConfig) -> Iterator[str]:
    """A client.properties file (mode 0600) holding ``config``'s security settings, secrets
    included, for ``kgroups.command.config``; removed when the block ends."""
    fd, path = tempfile.mkstemp(prefix="kgroups-", suffix=".properties")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(format_properties(config_to_kafka_properties(config)))
        yield path
    finally:
        os.unlink(path)
