"""Fetch, for reading records: one page per partition from a given offset.

One request per partition leader carrying all its partitions, no fetch session
(``session_epoch=-1``), ``max_wait_ms=1`` (see :mod:`.fetch` for why not 0), and a byte budget
per partition. Paging over a range is the caller's loop (:mod:`..records`); this handler
answers one page per partition and says where the next one starts.

A first batch larger than the budget comes back truncated (KIP-74): the partition is asked
again with four times the budget, up to :data:`MAX_PARTITION_BYTES`, as the timestamp handler
does. Batches are classified by :class:`.fetch.PageBatches` (data, transaction markers,
aborted records with read_committed), the same reading the lag-in-seconds fetch uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..batches import UndecodableBatch
from ..contract import Outcome, RequestPlan
from ..errors import REFRESH_LEADER, ErrorCode, Failure
from ..lookup import LeaderLookup
from ..results import FetchedRecord, RecordPage, TopicPartition
from .base import Handler, Notes
from .fetch import (
    FETCH,
    FETCH_MAX_WAIT_MS,
    FETCH_NEEDS,
    BatchKind,
    PageBatches,
    budget_of,
    fetch_request,
    grow_budget,
    parse_fetch,
    undecodable,
)
from .list_offsets import READ_COMMITTED


class FetchRecordsHandler(Handler[TopicPartition, RecordPage]):
    """Keys are partitions; ``positions[tp]`` is where the page starts, ``budgets[tp]`` the bytes
    it may take. A page's ``budget_bytes`` is the budget it needed (grown for a batch that did not
    fit), for the caller to pass on to the next page. ``decode=False`` leaves the data batches
    undecoded in ``RecordPage.batches`` (for a column-wise reader)."""

    kafka_api = FETCH
    needs = FETCH_NEEDS

    def __init__(
        self,
        lookup: LeaderLookup,
        positions: Mapping[TopicPartition, int],
        isolation_level: int,
        budgets: Mapping[TopicPartition, int],
        max_wait_ms: int = FETCH_MAX_WAIT_MS,
        decode: bool = True,
    ) -> None:
        self.lookup = lookup
        self._decode = decode
        self._positions = dict(positions)
        self._isolation = isolation_level
        self._budgets = dict(budgets)
        self._max_wait_ms = max_wait_ms

    def build(
        self, tps: list[TopicPartition], version: int, notes: Notes
    ) -> list[RequestPlan[TopicPartition]]:
        budgets = {tp: budget_of(tp, notes, self._budgets) for tp in tps}
        return [fetch_request(self._positions, budgets, tps, version, self._isolation, self._max_wait_ms)]

    def parse(
        self, plan: RequestPlan[TopicPartition], response: Any, notes: Notes
    ) -> Outcome[TopicPartition, RecordPage]:
        def read(outcome: Outcome[TopicPartition, RecordPage], tp: TopicPartition, p: Any) -> None:
            self._read_partition(outcome, tp, p, budget_of(tp, notes, self._budgets))

        return parse_fetch(plan, response, read)

    def _read_partition(
        self, outcome: Outcome[TopicPartition, RecordPage], tp: TopicPartition, p: Any, budget: int
    ) -> None:
        start = self._positions[tp]
        marks = {
            "high_watermark": p.high_watermark,
            "log_start": getattr(p, "log_start_offset", -1),
            "last_stable_offset": getattr(p, "last_stable_offset", -1),
            "budget_bytes": budget,
        }
        if p.error_code in REFRESH_LEADER:
            outcome.requeue(tp, Failure(p.error_code), relookup=True)
            return
        if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            outcome.completed[tp] = RecordPage(start, (), (), start, out_of_range=True, **marks)
            return
        if p.error_code != ErrorCode.NONE:
            outcome.failed[tp] = Failure(p.error_code)
            return
        records: list[FetchedRecord] = []
        data_batches = []
        skipped: list[tuple[int, int]] = []
        next_offset = start
        try:
            batches = PageBatches(
                p.records, p.aborted_transactions if self._isolation == READ_COMMITTED else None
            )
            for kind, batch in batches:
                if kind is BatchKind.DATA and not self._decode:
                    if batch.last_offset >= start:
                        data_batches.append(batch)
                elif kind is BatchKind.DATA:
                    kind_of_time = batch.timestamp_type
                    records.extend(
                        FetchedRecord(offset, timestamp, kind_of_time, key, value, headers)
                        for offset, timestamp, key, value, headers in zip(*batch.columns())
                        if offset >= start
                    )
                else:
                    skipped.append((batch.base_offset, batch.last_offset))
                next_offset = max(next_offset, batch.last_offset + 1)
            truncated_first = batches.truncated and next_offset == start
        except UndecodableBatch as exc:
            outcome.failed[tp] = undecodable(tp, start, exc)
            return
        if truncated_first:
            grow_budget(outcome, tp, budget, start)
            return
        outcome.completed[tp] = RecordPage(
            start, tuple(records), tuple(skipped), next_offset, **marks, batches=tuple(data_batches)
        )
