"""DescribeConfigs for topics: the settings that decide when a topic's records are deleted, for
every topic in one request to any broker. A topic's configuration is the same on every broker,
so, as ``KafkaAdminClient.describeConfigs`` sends every resource but a broker's own (and its
loggers) to the least-loaded broker (``LeastLoadedBrokerOrActiveKController``), the keys need no
lookup (:class:`~..lookup.AnyBrokerLookup`).

Only the settings read here are asked for (``ConfigurationKeys``; a name a broker does not know,
such as ``local.retention.ms`` before Kafka 3.6, is left out of its answer), without synonyms or
documentation. Each topic answers its own error: UNKNOWN_TOPIC_OR_PARTITION (no such topic),
TOPIC_AUTHORIZATION_FAILED (no DescribeConfigs on it), INVALID_TOPIC_EXCEPTION (a name Kafka
refuses). Each is that topic's :class:`~..errors.Failure`, never retried, as in Java
(``describeConfigs``' ``handleResponse`` completes the topic's future with the error). A topic the
answer leaves out, or whose answer lacks a retention setting, fails with CLIENT_INCOMPLETE_RESPONSE.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..contract import Outcome, RequestPlan
from ..errors import CLIENT_INCOMPLETE_RESPONSE, CLIENT_PROTOCOL_ERROR, ErrorCode, Failure
from ..lookup import AnyBrokerLookup
from ..protocol import DescribeConfigsRequest, DescribeConfigsResponse, KafkaApi
from ..results import ConfigSource, TopicRetention
from .base import Handler, Notes, VersionNeed
from .common import missing_from_response

TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
CONFIG_SOURCE_VERSION = 1  # DescribeConfigsResponse.json: "Version 1 adds ConfigSource and the synonyms"

RETENTION_MS, RETENTION_BYTES = "retention.ms", "retention.bytes"
CLEANUP_POLICY, TIMESTAMP_TYPE = "cleanup.policy", "message.timestamp.type"
SEGMENT_MS, SEGMENT_BYTES = "segment.ms", "segment.bytes"
LOCAL_RETENTION_MS, LOCAL_RETENTION_BYTES = "local.retention.ms", "local.retention.bytes"
REMOTE_STORAGE = "remote.storage.enable"
#: what every Kafka (2.8 to 4.x) answers for a topic: without one the answer is incomplete
REQUIRED = (RETENTION_MS, RETENTION_BYTES, CLEANUP_POLICY, TIMESTAMP_TYPE)
#: the keys asked for
CONFIG_KEYS = (
    *REQUIRED,
    SEGMENT_MS,
    SEGMENT_BYTES,
    LOCAL_RETENTION_MS,
    LOCAL_RETENTION_BYTES,
    REMOTE_STORAGE,
)
NO_LIMIT = -1  # retention.ms / retention.bytes / local.retention.*: keep forever, whatever the size
AS_RETENTION = -2  # local.retention.*: the same as retention.* (LogConfig.localRetentionMs)


def _number(values: Mapping[str, str], name: str) -> int | None:
    """The setting as a number; None when the broker did not answer it."""
    text = values.get(name)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name} is {text!r}, not a number") from None


def _limit(value: int | None) -> int | None:
    """A retention limit as the result gives it: -1 (and any negative) is no limit, None."""
    return None if value is None or value < 0 else value


def topic_retention(topic: str, configs: Mapping[str, tuple[str | None, int]]) -> TopicRetention:
    """One topic's answer (name -> (value, wire ConfigSource)) as a :class:`TopicRetention`.
    Raises ValueError for a number that is not one, KeyError for a required setting missing."""
    values = {name: value for name, (value, _) in configs.items() if value is not None}
    missing = [name for name in REQUIRED if name not in values]
    if missing:
        raise KeyError(", ".join(missing))
    retention_ms = _limit(_number(values, RETENTION_MS))
    retention_bytes = _limit(_number(values, RETENTION_BYTES))
    remote = values.get(REMOTE_STORAGE, "false").strip().lower() == "true"

    def local(name: str, total: int | None) -> int | None:
        # UnifiedLog: local retention applies only with remote storage; -2 follows retention.*
        value = _number(values, name)
        if not remote or value is None or value == AS_RETENTION:
            return total
        return _limit(value)

    return TopicRetention(
        topic=topic,
        retention_ms=retention_ms,
        retention_bytes=retention_bytes,
        cleanup_policy=tuple(sorted({p.strip() for p in values[CLEANUP_POLICY].split(",") if p.strip()})),
        message_timestamp_type=values[TIMESTAMP_TYPE],
        segment_ms=_number(values, SEGMENT_MS),
        segment_bytes=_number(values, SEGMENT_BYTES),
        local_retention_ms=local(LOCAL_RETENTION_MS, retention_ms),
        local_retention_bytes=local(LOCAL_RETENTION_BYTES, retention_bytes),
        remote_storage=remote,
        sources={
            name: ConfigSource.of(source)
            for name, (_, source) in sorted(configs.items())
            if name in CONFIG_KEYS
        },
    )


class DescribeConfigsHandler(Handler[str, TopicRetention]):
    # 4, the codec's newest and Kafka 4's: v4 is v3 in the flexible encoding, v2-v3 add nothing this
    # handler reads; the version is negotiated per broker (Kafka 2.8 answers up to v4 too).
    kafka_api = KafkaApi(DescribeConfigsRequest, DescribeConfigsResponse, max_version=4)
    # v0 (gone from the codec with Kafka 4's schemas) tells only IsDefault, not where a value comes from
    needs = (VersionNeed(CONFIG_SOURCE_VERSION, "where each setting comes from (ConfigSource)"),)

    def __init__(self) -> None:
        self.lookup = AnyBrokerLookup[str]()

    def build(self, topics: list[str], version: int, notes: Notes) -> list[RequestPlan[str]]:
        resource = DescribeConfigsRequest.DescribeConfigsResource
        request = DescribeConfigsRequest(
            resources=[
                resource(
                    resource_type=TOPIC_RESOURCE, resource_name=topic, configuration_keys=list(CONFIG_KEYS)
                )
                for topic in sorted(topics)
            ],
            include_synonyms=False,
            include_documentation=False,
        )
        return [RequestPlan(request, version, tuple(topics))]

    def parse(self, plan: RequestPlan[str], response: Any, notes: Notes) -> Outcome[str, TopicRetention]:
        outcome: Outcome[str, TopicRetention] = Outcome()
        for result in response.results:
            topic = result.resource_name
            if result.resource_type != TOPIC_RESOURCE or topic not in plan.key_set:
                continue
            if result.error_code != ErrorCode.NONE:
                outcome.failed[topic] = Failure(result.error_code, result.error_message or "")
                continue
            try:
                outcome.completed[topic] = topic_retention(
                    topic, {c.name: (c.value, c.config_source) for c in result.configs}
                )
            except KeyError as exc:
                outcome.failed[topic] = Failure(
                    CLIENT_INCOMPLETE_RESPONSE, f"DescribeConfigs answered no {exc.args[0]}"
                )
            except ValueError as exc:
                outcome.failed[topic] = Failure(CLIENT_PROTOCOL_ERROR, f"DescribeConfigs: {exc}")
        missing_from_response(
            outcome, plan.keys, set(outcome.completed) | set(outcome.failed), "DescribeConfigs"
        )
        return outcome
