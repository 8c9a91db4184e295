"""Broker addresses have one owner, the cluster metadata; the connection pool reads them.

The metadata learns addresses as the Java client's ``Metadata.update`` does from a Metadata
response's broker list; bootstrap servers keep negative node ids (``ClientUtils
.parseAndValidateAddresses`` -> ``Cluster.bootstrap``: -1, -2, ...). It also keeps the host and
port a FindCoordinator answer names for its coordinator: this client's own shortcut, so a
coordinator missing from the last Metadata is reached without another Metadata round (the
Java admin client resolves the node id through its metadata instead).
"""

from __future__ import annotations

from airflow_provider_kgroups.client.cluster import ClusterMetadata
from airflow_provider_kgroups.client.config import BrokerAddress
from airflow_provider_kgroups.client.contract import RequestPlan
from airflow_provider_kgroups.client.lookup import CoordinatorLookup
from airflow_provider_kgroups.client.protocol import FindCoordinatorRequest
from airflow_provider_kgroups.client.transport import ConnectionPool
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import config, until
from tests.support.responses import found, metadata_response


def test_metadata_keeps_bootstrap_metadata_and_coordinator_addresses():
    """Bootstrap servers as -1, -2; Metadata's brokers by node id; a coordinator named only by
    FindCoordinator (node 3 here) is known by its address too. No I/O: responses are fed in."""
    metadata = ClusterMetadata((BrokerAddress("seed-a", 9092), BrokerAddress("seed-b", 9092)))
    assert (metadata.bootstrap_nodes, metadata.known_nodes) == ([-1, -2], [])
    assert metadata.address_of(-2) == BrokerAddress("seed-b", 9092) and metadata.address_of(1) is None
    assert metadata.absorb(["t"], metadata_response({0: (0, 1)})) == {"t": 0}
    assert metadata.known_nodes == [1, 2] and metadata.brokers == {
        1: BrokerAddress("b1", 9092),
        2: BrokerAddress("b2", 9092),
    }
    lookup = CoordinatorLookup(metadata)
    plan = RequestPlan(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4, ("g",))
    assert lookup.parse(plan, found(("g", 0, 3))).completed == {"g": 3}
    assert metadata.known_nodes == [1, 2, 3] and metadata.address_of(3) == BrokerAddress("b3", 9092)
    assert metadata.brokers.keys() == {1, 2}  # the broker list is Metadata's alone


async def test_the_pool_follows_a_broker_that_moved():
    """A node id whose address the metadata changed is reached at the new address on next use,
    and the connection to the old one is closed."""
    async with FakeCluster(brokers=2) as c:
        cfg = config(c)
        metadata = ClusterMetadata(cfg.bootstrap_servers)
        pool = ConnectionPool(cfg, metadata)
        try:
            metadata.learn_brokers({7: BrokerAddress(*c.address(0))})
            first = await pool.get(7)
            assert first.address == BrokerAddress(*c.address(0))
            assert (c.brokers[0].connections, c.brokers[1].connections) == (1, 0)
            assert await pool.get(7) is first  # unchanged address: the same connection
            metadata.learn_brokers({7: BrokerAddress(*c.address(1))})
            moved = await pool.get(7)
            assert moved is not first and moved.address == BrokerAddress(*c.address(1))
            await until(lambda: not c.brokers[0].connections, "the old connection closed", within_s=5)
            assert (c.brokers[0].connections, c.brokers[1].connections) == (0, 1)
        finally:
            await pool.close()
