"""check_topics: a Metadata request naming the topics tells "gone" (3) from "not visible to me"
(29), as Kafka answers them (KafkaApis.handleTopicMetadataRequest)."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client import (
    AsyncGroupsClient,
    ConfigurationError,
    GroupsClient,
    TopicExistence,
)
from airflow_provider_kgroups.client.errors import CLIENT_INCOMPLETE_RESPONSE
from tests.support.fakekafka import Err, FakeCluster
from tests.support.fakeutil import config, counts


async def test_check_topics_tells_exists_absent_not_visible_and_fails_other_errors_alone():
    """KafkaApis.handleTopicMetadataRequest: a named topic answers 0, 3, 29 or another per-topic error."""
    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 3)
        c.add_topic("secret", 1)
        c.inject_error("Metadata", Err.TOPIC_AUTHORIZATION_FAILED, key="secret")
        c.inject_error("Metadata", Err.TOPIC_AUTHORIZATION_FAILED, key="hidden-and-absent")
        c.inject_error("Metadata", 17, key="bad name")  # INVALID_TOPIC_EXCEPTION
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.check_topics(
                ["orders", "gone", "secret", "hidden-and-absent", "bad name", "orders"]
            )
        assert dict(result.values) == {
            "orders": TopicExistence.EXISTS,
            "gone": TopicExistence.ABSENT,
            "secret": TopicExistence.NOT_VISIBLE,
            "hidden-and-absent": TopicExistence.NOT_VISIBLE,
        }
        assert {t: f.code for t, f in result.failures.items()} == {"bad name": 17}
        assert counts(c) == {"Metadata": 1}
        [request] = c.requests("Metadata")
        assert sorted(t.name for t in request.request.topics) == [
            "bad name",
            "gone",
            "hidden-and-absent",
            "orders",
            "secret",
        ]


async def test_check_topics_fails_a_topic_the_response_left_out():
    """A named topic missing from the answer is unknown, never "absent"."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("orders", 1)
        async with AsyncGroupsClient(config(c)) as client:
            real = client.metadata.absorb

            def drop_orders(topics, response):  # the reading of the Metadata response, which the runner calls
                answered = real(topics, response)
                answered.pop("orders", None)
                return answered

            client.metadata.absorb = drop_orders
            result = await client.check_topics(["orders", "gone"])
        assert dict(result.values) == {"gone": TopicExistence.ABSENT}
        assert {t: f.code for t, f in result.failures.items()} == {"orders": CLIENT_INCOMPLETE_RESPONSE}
        assert counts(c) == {"Metadata": 1}


async def test_check_topics_input_is_checked_before_any_request_and_empty_sends_nothing():
    async with FakeCluster(brokers=1) as c:
        async with AsyncGroupsClient(config(c)) as client:
            with pytest.raises(ConfigurationError, match="single string"):
                await client.check_topics("orders")
            with pytest.raises(ConfigurationError, match="not a topic name"):
                await client.check_topics(["orders", ""])
            assert len(await client.check_topics([])) == 0
        assert counts(c) == {}


def test_check_topics_is_a_verb_of_the_sync_client():
    with FakeCluster.running_in_thread(brokers=1) as c:
        c.add_topic("orders", 1)
        with GroupsClient(config(c)) as client:
            result = client.check_topics(["orders", "gone"])
        assert dict(result.values) == {"orders": TopicExistence.EXISTS, "gone": TopicExistence.ABSENT}
        assert result.failures == {}
