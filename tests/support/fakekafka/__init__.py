"""A scriptable in-process fake Kafka cluster speaking the real wire protocol.

It decodes requests and encodes responses with kafka-python's ``kafka.protocol`` codec
classes and answers with Apache Kafka's (4.x) semantics: per-broker API versions,
coordinators, NOT_COORDINATOR / NOT_LEADER_OR_FOLLOWER on the wrong broker, group states,
committed offsets, log offsets. Every request is logged, so tests can assert exact request
counts; faults (error codes, cut responses, stalls, brokers down) are scripted per test.

Usage, in an event loop::

    async with FakeCluster(brokers=3, latency_s=0.002) as cluster:
        cluster.add_topic("orders", partitions=12, end_offsets=1000)
        cluster.add_group("billing", offsets={("orders", 0): 990},
                          members=[Member("m-1", assignment={"orders": [0, 1]})])
        cluster.inject_error("OffsetFetch", Err.COORDINATOR_LOAD_IN_PROGRESS, key="billing", times=3)
        ... run the client against cluster.bootstrap ...
        assert cluster.count("OffsetFetch") == 4

From synchronous code (the brokers run on their own loop in a daemon thread)::

    with FakeCluster.running_in_thread(brokers=9) as cluster:
        KafkaAdminClient(bootstrap_servers=cluster.bootstrap).list_consumer_group_offsets("billing")

Seeding and reading back (thread-safe): ``add_topic(name, partitions, end_offsets=,
start_offsets=, last_stable_offsets=, leaders=, config=)`` (``config``: the topic's own settings,
which DescribeConfigs answers beside ``set_broker_config`` and Kafka's defaults; ``set_topic_config``), ``append(topic, p, n, timestamp_ms=)``,
``set_offsets``, ``move_leader(topic, p, node, catching_up=)``, ``delete_topic``; ``add_group(group_id,
offsets=, members=, state=, protocol_type=, protocol=, coordinator=,
group_type="classic"|"consumer"|"share"|"streams", topology=)`` (a streams topology's
subtopologies: source topic lists or :class:`Subtopology`),
``commit``, ``set_group_state``, ``set_members``, ``move_coordinator``, ``delete_group``;
``group()``, ``committed()``, ``coordinator_of()``, ``groups_coordinated_by()``,
``leader_of()``, ``end_offset()``.

Request log: ``count(api, node=None)``, ``requests(api, node)``, ``requests_by_api()``,
``reset_counts()``; ``handler_errors`` collects exceptions raised inside the fake (any of them
fails the test it happened in: :mod:`.handler_errors`, tests/support/pytest_fakekafka.py). Sizes:
``largest_request(api=None)``, ``largest_response(api=None)``, ``refused_requests()`` (frames
over ``FakeCluster(max_request_bytes=...)``, Kafka's ``socket.request.max.bytes``).

Faults: ``inject_error(api, code, key=, node=, times=)`` (see :mod:`.faults` for keys),
``drop_mid_response(api, node=, times=1)``, ``blackhole(node, on=True, api=None)``,
``throttle(node, ms, api=, times=)`` (a quota: throttle_time_ms, then the connection is muted),
``set_delay(processing_s=, latency_s=, node=, api=)``, ``await stop_broker(node)`` /
``await start_broker(node)`` (blocking calls in thread mode), ``set_api_versions({...}, node=)``,
``clear_faults()``, ``set_describe_per_shard()`` (ConsumerGroupDescribe / ShareGroupDescribe
answer every id once per coordinator shard, as Kafka 3.7 to late 2024 did).

Layout: :mod:`.state` / :mod:`.model` (the data and the seeding helpers), :mod:`.handlers`
(one function per API), :mod:`.dispatch` (version checks, SASL gate, logging),
:mod:`.connection` / :mod:`.broker` (sockets, ordering, delays), :mod:`.faults`,
:mod:`.reqlog`, :mod:`.auth` (SASL PLAIN/SCRAM), :mod:`.tls`, :mod:`.wireclient` (raw
requests for tests), :mod:`.cluster` / :mod:`.threaded` (the entry points).
"""

from .auth import SCRAM_ITERATIONS, SCRAM_SALT
from .cluster import FakeCluster
from .codec import DEFAULT_MAX_VERSIONS, ApiKey, Err
from .faults import Drop, Injection
from .model import Committed, Group, Member, Subtopology
from .reqlog import LoggedRequest
from .threaded import ThreadedFakeCluster
from .tls import CertFiles, client_ssl_context, make_self_signed_cert, server_ssl_context
from .wireclient import ConnectionClosed, WireClient, roundtrip

__all__ = [
    "FakeCluster",
    "ThreadedFakeCluster",
    "Member",
    "Group",
    "Subtopology",
    "Committed",
    "Err",
    "ApiKey",
    "Injection",
    "Drop",
    "LoggedRequest",
    "DEFAULT_MAX_VERSIONS",
    "SCRAM_SALT",
    "SCRAM_ITERATIONS",
    "roundtrip",
    "WireClient",
    "ConnectionClosed",
    "make_self_signed_cert",
    "server_ssl_context",
    "client_ssl_context",
    "CertFiles",
]
