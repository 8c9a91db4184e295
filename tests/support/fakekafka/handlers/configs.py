"""DescribeConfigs for topics, as any broker answers it (KafkaApis.handleDescribeConfigsRequest,
ConfigHelper.describeConfigs), over a small model of a topic's configuration: the topic's own
settings (``Topic.config``: DYNAMIC_TOPIC_CONFIG), else the brokers' static ones
(``cluster.broker_config``, server.properties: STATIC_BROKER_CONFIG), else Kafka's default
(DEFAULT_CONFIG). Only the retention-related settings of :data:`TOPIC_CONFIGS` exist here, with
Kafka's defaults and broker synonyms; a name outside them is left out of the answer, as Kafka
leaves out a name it does not know. No dynamic broker configuration, synonyms or documentation.

Per topic, as Kafka 4.4 answers (checked in tests/apachekafka/test_topic_retention.py): one the
principal may not DescribeConfigs answers TOPIC_AUTHORIZATION_FAILED with Errors' message (after the
others), a name Kafka refuses INVALID_TOPIC_EXCEPTION saying why (``Topic.validate``), an unknown
topic UNKNOWN_TOPIC_OR_PARTITION; an error message is "" when there is none, as Kafka sends it. An
injected error (key: the topic) answers that error. Other resource types answer INVALID_REQUEST: the
client asks for topics only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka.protocol.admin import DescribeConfigsResponse
from kafka.protocol.api_key import ApiKey

from ..codec import Err

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["HANDLERS", "TOPIC_CONFIGS", "topic_config"]

TOPIC = 2  # ConfigResource.Type.TOPIC
MAX_NAME_LENGTH = 249  # Topic.MAX_NAME_LENGTH
LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
# DescribeConfigsResponse.ConfigSource
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
# DescribeConfigsResponse.ConfigType
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7


@dataclass(frozen=True)
class TopicConfig:
    """One topic setting: Kafka's default, its type, and the broker settings it falls back to, in
    Kafka's order, each with the factor to its unit (``log.retention.hours``: 3600000 ms)."""

    default: str
    config_type: int
    synonyms: tuple[tuple[str, int], ...] = ()


_HOUR_MS = 3_600_000
#: the topic settings this fake knows (LogConfig, ServerLogConfigs, RemoteLogManagerConfig)
TOPIC_CONFIGS: dict[str, TopicConfig] = {
    "cleanup.policy": TopicConfig("delete", LIST, (("log.cleanup.policy", 1),)),
    "local.retention.bytes": TopicConfig("-2", LONG, (("log.local.retention.bytes", 1),)),
    "local.retention.ms": TopicConfig("-2", LONG, (("log.local.retention.ms", 1),)),
    "message.timestamp.type": TopicConfig("CreateTime", STRING, (("log.message.timestamp.type", 1),)),
    "remote.storage.enable": TopicConfig("false", BOOLEAN),
    "retention.bytes": TopicConfig("-1", LONG, (("log.retention.bytes", 1),)),
    "retention.ms": TopicConfig(
        str(168 * _HOUR_MS),  # log.retention.hours=168
        LONG,
        (("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", _HOUR_MS)),
    ),
    "segment.bytes": TopicConfig(str(1 << 30), INT, (("log.segment.bytes", 1),)),
    "segment.ms": TopicConfig(
        str(168 * _HOUR_MS),  # log.roll.hours=168
        LONG,
        (("log.roll.ms", 1), ("log.roll.hours", _HOUR_MS)),
    ),
}


def topic_config(overrides: dict[str, str], broker: dict[str, str], name: str) -> tuple[str, int]:
    """(value, ConfigSource) of setting ``name`` for a topic with ``overrides`` on brokers whose
    static configuration is ``broker``."""
    if name in overrides:
        return overrides[name], TOPIC_CONFIG
    spec = TOPIC_CONFIGS[name]
    for synonym, factor in spec.synonyms:
        if synonym in broker:
            value = broker[synonym]
            if factor != 1 and value.lstrip("-").isdigit() and int(value) >= 0:
                value = str(int(value) * factor)
            return value, STATIC_BROKER_CONFIG
    return spec.default, DEFAULT_CONFIG


def _invalid_name(name: str) -> str | None:
    """Why Kafka refuses ``name`` as a topic name (``Topic.validate``), if it does."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return (
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, topic name: {name}"
        )
    if not LEGAL_NAME.fullmatch(name):
        return (
            f"Topic name is invalid: '{name}' contains one or more characters other than ASCII "
            "alphanumerics, '.', '_' and '-'"
        )
    return None


def _result(kind: int, name: str, error: int, message: str = "", configs: list | None = None) -> Any:
    return DescribeConfigsResponse.DescribeConfigsResult(
        error_code=error, error_message=message, resource_type=kind, resource_name=name, configs=configs or []
    )


def _configs(ctx: RequestContext, name: str, keys: list[str] | None) -> list:
    """The answer for an existing topic: each setting asked for (None: all) that the fake knows."""
    C = DescribeConfigsResponse.DescribeConfigsResult.DescribeConfigsResourceResult
    overrides, broker = ctx.cluster.topics[name].config, ctx.cluster.broker_config
    configs = []
    for key in TOPIC_CONFIGS if keys is None else keys:
        if key not in TOPIC_CONFIGS:
            continue  # a name Kafka does not know is left out
        value, source = topic_config(overrides, broker, key)
        configs.append(
            C(
                name=key,
                value=value,
                read_only=False,
                config_source=source,
                is_sensitive=False,
                synonyms=[],
                config_type=TOPIC_CONFIGS[key].config_type,
                documentation=None,
            )
        )
    return configs


def describe_configs(ctx: RequestContext) -> Any:
    answered, refused = [], []
    for resource in ctx.request.resources:
        name, kind = resource.resource_name, resource.resource_type
        injected = ctx.injected(name)
        invalid = _invalid_name(name)
        if kind != TOPIC:
            answered.append(
                _result(kind, name, Err.INVALID_REQUEST, f"resource type {kind}: the fake describes topics")
            )
        elif not ctx.authorized("topic", name, "DescribeConfigs"):
            refused.append(_result(kind, name, Err.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."))
        elif injected is not None:
            answered.append(_result(kind, name, injected.error, injected.message or ""))
        elif invalid is not None:
            answered.append(_result(kind, name, Err.INVALID_TOPIC_EXCEPTION, invalid))
        elif name not in ctx.cluster.topics:
            answered.append(_result(kind, name, Err.UNKNOWN_TOPIC_OR_PARTITION))
        else:
            answered.append(
                _result(kind, name, Err.NONE, "", _configs(ctx, name, resource.configuration_keys))
            )
    return DescribeConfigsResponse(throttle_time_ms=0, results=answered + refused)


HANDLERS = {ApiKey.DescribeConfigs: describe_configs}
