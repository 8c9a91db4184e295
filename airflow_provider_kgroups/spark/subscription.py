"""Which partitions a ``kgroups`` query reads: exactly one of ``assign``, ``subscribe`` or
``subscribePattern``, as Spark's Kafka source takes them (``KafkaSourceProvider``:
``assign`` is ``{"topic": [0, 1]}``, ``subscribe`` a comma-separated list of topics,
``subscribePattern`` a regular expression a topic's whole name must match, internal topics
left out as Kafka's consumer leaves them out). A subscription is resolved again at every
micro-batch, so partitions added to a topic and topics created that match are picked up."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..client.errors import ConfigurationError
from ..client.numbers import is_int
from ..client.results import TopicPartition

KINDS = ("assign", "subscribe", "subscribePattern")


@dataclass(frozen=True)
class Subscription:
    kind: str  # one of KINDS
    assigned: frozenset[TopicPartition] = frozenset()
    topics: tuple[str, ...] = ()
    pattern: str = ""

    @classmethod
    def from_options(cls, opts: Mapping[str, str]) -> Subscription | None:
        """The one subscription option given (None when none is), checked."""
        given = [kind for kind in KINDS if kind.lower() in opts]
        if len(given) > 1:
            raise ConfigurationError(
                f"options {' and '.join(given)} were both given: give exactly one of assign, "
                "subscribe or subscribePattern (as Spark's Kafka source requires)."
            )
        if not given:
            return None
        kind, text = given[0], str(opts[given[0].lower()])
        if kind == "assign":
            return cls(kind, assigned=parse_assign(text))
        if kind == "subscribe":
            topics = tuple(t.strip() for t in text.split(",") if t.strip())
            if not topics:
                raise ConfigurationError(
                    f"option subscribe names no topic: {text!r}; e.g. 'orders,payments'."
                )
            return cls(kind, topics=topics)
        try:
            re.compile(text)
        except re.error as exc:
            raise ConfigurationError(
                f"option subscribePattern is not a regular expression ({exc}): {text!r}."
            ) from None
        return cls(kind, pattern=text)

    def describe(self) -> str:
        if self.kind == "assign":
            return f"assign {len(self.assigned)} partition(s)"
        return (
            f"subscribe {', '.join(self.topics)}"
            if self.kind == "subscribe"
            else f"subscribePattern {self.pattern!r}"
        )

    async def partitions(self, client) -> set[TopicPartition]:
        """The partitions this subscription reads now (assigned ones as given; a subscribed topic
        that does not exist, or that this principal may not Describe, has none)."""
        if self.kind == "assign":
            return set(self.assigned)
        topics = await client.describe_topics(self.topics if self.kind == "subscribe" else None)
        if self.kind == "subscribePattern":
            matcher = re.compile(self.pattern)
            topics = {n: t for n, t in topics.items() if not t.is_internal and matcher.fullmatch(n)}
        return {TopicPartition(name, p) for name, topic in topics.items() for p in topic.partitions}


def parse_assign(text: str) -> frozenset[TopicPartition]:
    example = 'e.g. {"orders": [0, 1]}'
    try:
        parsed = json.loads(text)
    except (TypeError, ValueError):
        raise ConfigurationError(f"option assign is not valid JSON: {text!r}; {example}.") from None
    if not isinstance(parsed, dict) or not all(
        isinstance(topic, str) and isinstance(parts, list) and all(is_int(p) and p >= 0 for p in parts)
        for topic, parts in parsed.items()
    ):
        raise ConfigurationError(
            f"option assign must map each topic to a list of partitions, got {text!r}; {example}."
        )
    assigned = frozenset(TopicPartition(topic, p) for topic, parts in parsed.items() for p in parts)
    if not assigned:
        raise ConfigurationError(f"option assign names no partition: {text!r}; {example}.")
    return assigned
