"""Kafka's reset-plan CSV: what ``kafka-consumer-groups.sh --reset-offsets --export`` prints and
``--from-file`` reads (``ConsumerGroupCommand.exportOffsetsToCsv`` / ``parseResetPlan``, written
with Jackson's ``CsvMapper`` in ``CsvUtils``: no header, values quoted only where needed).

* one group in the call: ``topic,partition,offset`` per line (``CsvRecordNoGroup``);
* several groups: ``group,topic,partition,offset`` (``CsvRecordWithGroup``).

Reading follows Kafka: with one group in the call a three-column file is that group's; any
other file must carry the group in its first column. Unlike Kafka's tool, a bad line is an
error naming the line and the fix (not a stack trace), and so is a group the call does not
name (Kafka would reset nothing for it, silently).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence

from ..client.errors import ConfigurationError
from ..client.results import TopicPartition


def parse_reset_csv(
    text: str, group_ids: Sequence[str] | None, *, source: str = "--from-file"
) -> dict[str, dict[TopicPartition, int]]:
    """``{group: {TopicPartition: offset}}`` from the CSV text; ``group_ids``: the call's groups
    (None: not known yet, a pattern selects them; the plan checks the file's groups then)."""
    rows = [row for row in csv.reader(io.StringIO(text)) if row and any(cell.strip() for cell in row)]
    if not rows:
        raise ConfigurationError(
            f"{source} has no offsets: write 'topic,partition,offset' lines (one group) or "
            "'group,topic,partition,offset' lines, as kgroups reset-offsets --export prints."
        )
    single_group = (
        group_ids[0] if group_ids is not None and len(group_ids) == 1 and len(rows[0]) == 3 else None
    )
    single = single_group is not None
    width = 3 if single else 4
    out: dict[str, dict[TopicPartition, int]] = {}
    for number, row in enumerate(rows, 1):
        if len(row) != width:
            raise ConfigurationError(
                f"{source} line {number} has {len(row)} column(s), expected {width} "
                f"({'topic,partition,offset' if single else 'group,topic,partition,offset'}"
                f"{'' if single else '; three columns only when the call names exactly one group'})."
            )
        group, topic, partition, offset = [single_group, *row] if single_group is not None else row
        group, topic = group.strip(), topic.strip()
        if not topic:
            raise ConfigurationError(f"{source} line {number} has no topic.")
        p, o = _number(source, number, "partition", partition), _number(source, number, "offset", offset)
        if p < 0 or o < 0:
            raise ConfigurationError(
                f"{source} line {number}: the partition and the offset must be >= 0, got "
                f"{partition.strip()!r} and {offset.strip()!r}."
            )
        if not group:
            raise ConfigurationError(f"{source} line {number} has no group.")
        if group_ids is not None and group not in group_ids:
            raise ConfigurationError(
                f"{source} line {number} names group {group!r}, which this call does not: "
                f"add it to the groups, or remove the line (the call names "
                f"{', '.join(map(repr, group_ids))})."
            )
        tp = TopicPartition(topic, p)
        previous = out.setdefault(group, {}).get(tp)
        if previous is not None and previous != o:
            raise ConfigurationError(
                f"{source} line {number} gives {group!r} {tp} offset {o}, an earlier line {previous}."
            )
        out[group][tp] = o
    return out


def _number(source: str, line: int, what: str, cell: str) -> int:
    text = cell.strip()
    try:
        return int(text)
    except ValueError:
        raise ConfigurationError(
            f"{source} line {line}: the {what} {text!r} is not a whole number."
        ) from None


def export_csv(offsets: Mapping[str, Mapping[TopicPartition, int]], *, single_group: bool) -> str:
    """Kafka's ``--export`` text: three columns when the call named one group, else four."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for group_id, partitions in offsets.items():
        for tp in sorted(partitions):
            row = [tp.topic, tp.partition, partitions[tp]]
            writer.writerow(row if single_group else [group_id, *row])
    return buffer.getvalue()
