"""Reading exactly one offset range of one partition, page by page, and accounting for every
offset in it.

Each offset in ``[start, end)`` ends up as exactly one of: a record read; a skipped offset
(a transaction marker, or with read_committed a record of an aborted transaction: offsets a
consumer never returns either); or a **gap**: deleted by retention (below the log start
offset) or missing from a compacted log. A gap raises :class:`RecordsUnavailable` naming
the partition and the offsets, unless gaps are allowed, in which case they are counted in
:attr:`RangeReader.gaps`. A range that reaches past what can be read (the high watermark, or
the last stable offset with read_committed) fails before anything is read from it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .errors import ConfigurationError, KafkaGroupsError
from .handlers.fetch_sizes import DEFAULT_RECORD_PAGE_BYTES
from .numbers import check_int
from .results import RecordPage, TopicPartition

if TYPE_CHECKING:
    from .client import AsyncGroupsClient

#: How long the leader may wait for data on each try at a page that came back empty although the
#: log reaches further (a busy broker may answer a 1 ms wait with nothing).
EMPTY_PAGE_WAITS_MS = (1, 100, 500, 1000)


class RecordsUnavailable(KafkaGroupsError):
    """Records of the requested range cannot be read as asked; the message names the
    partition, the offsets and why."""


class RangeReader:
    """``async for records in RangeReader(client, tp, 0, 100).pages(): ...``

    ``decode=False`` yields each page's data batches undecoded (the data source reads them
    column-wise): every batch holds records of the range, and records outside it are the
    reader's to drop."""

    def __init__(
        self,
        client: AsyncGroupsClient,
        tp: TopicPartition,
        start: int,
        end: int,
        *,
        read_committed: bool = False,
        allow_gaps: bool = False,
        page_bytes: int = DEFAULT_RECORD_PAGE_BYTES,
        page_timeout_s: float | None = None,
        gap_hint: str = "allow gaps to read around them",
        decode: bool = True,
    ) -> None:
        for name, value in (("start", start), ("end", end)):
            check_int(f"{tp}: {name} offset", value, at_least=0)
        if start > end:
            raise ConfigurationError(
                f"{tp}: start offset {start} is after end offset {end} (the end is exclusive)."
            )
        self.client = client
        self.tp = tp
        self.start, self.end = start, end
        self.read_committed = read_committed
        self.allow_gaps = allow_gaps
        self.page_bytes = page_bytes
        self.page_timeout_s = page_timeout_s
        self.gap_hint = gap_hint
        self.decode = decode
        self.records = 0
        self.skipped = 0
        self.gaps: list[tuple[int, int, str]] = []  # (first, last, why), offsets inclusive
        self.requests = 0
        self._covered = start  # every offset below this is accounted for
        #: Records below this offset are not returned: the range's start, or the log start after a
        #: gap deleted by retention (a batch straddling the log start still holds deleted records).
        self.floor = start

    async def pages(self) -> AsyncIterator[list[Any]]:  # FetchedRecord, or RecordBatch with decode=False
        position = self.start
        budgets = {self.tp: self.page_bytes}
        while position < self.end:
            page = await self._page(position, budgets)
            if page.out_of_range:
                position = await self._out_of_range(position, page)
                continue
            readable_end = self._readable_end(page)
            if self.end > readable_end:
                what = "last stable offset" if self.read_committed else "high watermark"
                raise RecordsUnavailable(
                    f"{self.tp}: the range ends at {self.end} (exclusive), beyond the partition's "
                    f"{what} {readable_end}: those records do not exist (yet)"
                )
            if page.next_offset <= position:
                # A leader answers a fetch inside [log start, high watermark) with the batch holding
                # the offset or the next one (the log cleaner never touches the active segment, so
                # the log never ends in a compacted hole): nothing at all is the broker being slow.
                raise RecordsUnavailable(
                    f"{self.tp}: the broker returned no records at offset {position} in "
                    f"{len(EMPTY_PAGE_WAITS_MS)} tries although the log reaches {readable_end}"
                )
            if self.decode:
                records = [r for r in page.records if self.floor <= r.offset < self.end]
                read = [(r.offset, r.offset) for r in records]
            else:
                records = [b for b in page.batches if b.base_offset < self.end]
                read = self._batch_spans(records)
            self._account(page, read)
            position = page.next_offset
            if records:
                self.records += sum(last - first + 1 for first, last in read)
                yield records
        if self._covered < self.end:
            self._gap(self._covered, self.end - 1, "missing from the log (compacted)")

    async def _page(self, position: int, budgets: dict[TopicPartition, int]) -> RecordPage:
        """The page at ``position``; an empty one below the readable end is asked for again,
        letting the leader wait longer each time."""
        for max_wait_ms in EMPTY_PAGE_WAITS_MS:
            self.requests += 1
            result = await self.client.fetch_records(
                {self.tp: position},
                read_committed=self.read_committed,
                page_bytes=self.page_bytes,
                budgets=budgets,
                max_wait_ms=max_wait_ms,
                timeout_s=self.page_timeout_s,
                decode=self.decode,
            )
            if self.tp in result.failures:
                raise KafkaGroupsError(
                    f"{self.tp}: Fetch at offset {position} failed: {result.failures[self.tp]}"
                )
            page = result.values[self.tp]
            if page.out_of_range or page.next_offset > position or position >= self._readable_end(page):
                return page
        return page

    def _readable_end(self, page: RecordPage) -> int:
        if self.read_committed and page.last_stable_offset >= 0:
            return page.last_stable_offset
        return page.high_watermark

    async def _out_of_range(self, position: int, page: RecordPage) -> int:
        log_start, log_end = page.log_start, page.high_watermark
        if log_start < 0 or log_end < 0:
            # Apache Kafka answers OFFSET_OUT_OF_RANGE with -1 for both (ReplicaManager's read
            # error result): ask where the log starts and ends now.
            log_start, log_end = await self._log_bounds()
        if log_start >= 0 and position < log_start:
            resume = min(self.end, log_start)
            self._gap(position, resume - 1, f"deleted by retention (the log now starts at {log_start})")
            self.floor = max(self.floor, resume)
            return resume
        raise RecordsUnavailable(
            f"{self.tp}: offset {position} is past the log end ({log_end}): the range "
            f"[{self.start}, {self.end}) asks for records that do not exist"
        )

    async def _log_bounds(self) -> tuple[int, int]:
        self.requests += 2
        bounds = []
        for listed in (
            await self.client.log_start_offsets([self.tp], timeout_s=self.page_timeout_s),
            await self.client.log_end_offsets([self.tp], timeout_s=self.page_timeout_s),
        ):
            if self.tp in listed.failures:
                raise KafkaGroupsError(
                    f"{self.tp}: the Fetch was out of range and ListOffsets failed: "
                    f"{listed.failures[self.tp]}"
                )
            bounds.append(listed.values[self.tp].offset)
        return bounds[0], bounds[1]

    def _batch_spans(self, batches: list[Any]) -> list[tuple[int, int]]:
        """The offsets of undecoded batches inside the range, as (first, last) runs: a batch
        holding every offset from its base to its last is one run; one the log cleaner thinned
        (fewer records than offsets: ``MemoryRecords.filterTo`` keeps its base offset) is decoded
        for its offsets."""
        spans = []
        for batch in batches:
            if batch.count == batch.last_offset - batch.base_offset + 1:
                first, last = max(batch.base_offset, self.floor), min(batch.last_offset, self.end - 1)
                if first <= last:
                    spans.append((first, last))
            else:
                spans.extend((o, o) for o in batch.columns().offsets if self.floor <= o < self.end)
        return spans

    def _account(self, page: RecordPage, read: list[tuple[int, int]]) -> None:
        """Walk the page's records (runs of offsets read) and skipped ranges in offset order;
        what lies between is a gap."""
        skipped = [
            (max(first, self.start), min(last, self.end - 1))
            for first, last in page.skipped
            if last >= self.start and first < self.end
        ]
        self.skipped += sum(last - first + 1 for first, last in skipped)
        for first, last in sorted(read + skipped):
            if first > self._covered:
                self._gap(self._covered, first - 1, "missing from the log (compacted)")
            self._covered = max(self._covered, last + 1)

    def _gap(self, first: int, last: int, why: str) -> None:
        last = min(last, self.end - 1)
        if last < first:
            return
        self._covered = max(self._covered, last + 1)
        if not self.allow_gaps:
            raise RecordsUnavailable(
                f"{self.tp}: offsets {first}..{last} of the range [{self.start}, {self.end}) are "
                f"{why}; {self.gap_hint}"
            )
        self.gaps.append((first, last, why))

    @property
    def gap_offsets(self) -> int:
        return sum(last - first + 1 for first, last, _ in self.gaps)
