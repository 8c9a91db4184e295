"""OpenLineage events under dag.test(), written by the OpenLineage provider's file transport
(configured for the whole test session in tests/support/airflow_env.py): the gate reports the
Kafka topics it gates with the range, the Spark read of a range reports topics, range and
record count, the cleanup reports what it deleted; the ``kgroups`` asset scheme converts to
the topic's dataset. Naming: OpenLineage's Kafka convention (``kafka://host:port`` / topic)."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest

from airflow_provider_kgroups.observability import lineage
from tests.support.airflow_env import events_of
from tests.support.builders import seed_history
from tests.support.fakekafka import FakeCluster


def test_kafka_namespace_follows_the_naming_spec():
    from openlineage.client.naming.dataset import Kafka

    assert lineage.kafka_namespace("SASL_SSL://kafka-1:9093,kafka-2:9093") == "kafka://kafka-1:9093"
    assert lineage.kafka_namespace(["kafka-1"]) == "kafka://kafka-1:9092"
    assert lineage.kafka_namespace("[::1]:9094") == "kafka://[::1]:9094"
    assert lineage.kafka_namespace("kafka-1:9093") == Kafka("kafka-1", "9093", "orders").get_namespace()
    with pytest.raises(ValueError, match="no bootstrap server"):
        lineage.kafka_namespace(" , ")


def test_the_kgroups_asset_scheme_is_registered_sanitized_and_converted(airflow_db):
    from airflow.providers.common.compat.sdk import Asset
    from airflow.providers.openlineage.utils.utils import translate_airflow_asset as translate

    from airflow_provider_kgroups.version_compat import AIRFLOW_V_3_0_PLUS

    try:
        from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime as Providers
    except ImportError:  # before Airflow 3.2
        from airflow.providers_manager import ProvidersManager as Providers

    pm = Providers()
    handlers = pm.asset_uri_handlers if AIRFLOW_V_3_0_PLUS else pm.dataset_uri_handlers
    assert handlers["kgroups"] is lineage.sanitize_uri
    asset = lineage.create_asset(bootstrap="PLAINTEXT://kafka-1", topic="orders", group="orders/landing")
    assert asset.uri == "kgroups://kafka-1:9092/orders/orders%2Flanding"
    if AIRFLOW_V_3_0_PLUS:
        assert Asset("kgroups://Kafka-1/orders/g").normalized_uri == "kgroups://kafka-1:9092/orders/g"
    else:
        assert Asset("kgroups://Kafka-1/orders/g").uri == "kgroups://kafka-1:9092/orders/g"
    dataset = translate(asset, None)
    assert (dataset.namespace, dataset.name) == ("kafka://kafka-1:9092", "orders")
    for bad, why in (
        ("kgroups:///orders/g", "bootstrap server"),
        ("kgroups://k:9092/orders", "/{topic}/{group}"),
        ("kgroups://k:9092/bad topic/g", "legal Kafka topic"),
    ):
        with pytest.raises(ValueError, match=why.replace("{", r"\{").replace("}", r"\}")):
            lineage.sanitize_uri(urlsplit(bad))
    # without the official Kafka provider, a kafka:// asset has no normalizer: OpenLineage drops it
    if "kafka" not in handlers and AIRFLOW_V_3_0_PLUS:
        assert Asset("kafka://kafka-1:9092/orders").normalized_uri is None
        assert translate(Asset("kafka://kafka-1:9092/orders"), None) is None


@pytest.mark.realbroker
def test_the_gate_reports_its_topics_with_the_range_handed_on(
    run_dag, seed, broker, kgroups_conn, name_prefix
):
    kgroups_conn("kgroups_test", host=broker.bootstrap)
    topic, group_id = f"{name_prefix}lineage", f"{name_prefix}lander"
    seed.create_topic(topic, 2)
    seed.produce(topic, 0, 3)
    seed.produce(topic, 1, 2)
    seed.commit(group_id, {(topic, 0): 3, (topic, 1): 2})
    result = run_dag(
        "kg_sensor_poke", {"group": group_id, "topic": topic, "previous": json.dumps({topic: {"0": 1}})}
    )
    assert result.state == "success", result
    event = events_of("kg_sensor_poke", result.run_id, "gate")
    (dataset,) = event["inputs"]
    assert dataset["namespace"] == f"kafka://{broker.bootstrap}" and dataset["name"] == topic
    facet = dataset["inputFacets"]["kgroups_offsetRange"]
    assert facet["partitions"] == {
        "0": {"startingOffset": 1, "endingOffset": 3},
        "1": {"startingOffset": -2, "endingOffset": 2},
    }
    assert facet["groupIds"] == [group_id] and facet["_schemaURL"].endswith(
        "KgroupsOffsetRangeInputDatasetFacet.json"
    )


def test_the_cleanup_reports_what_it_deleted_and_the_backup_it_wrote(run_dag, kgroups_conn, tmp_path):

    with FakeCluster.running_in_thread(brokers=1) as cluster:
        cluster.add_topic("orders", partitions=1, end_offsets=[60])
        for group_id in ("dead-1", "dead-2"):
            cluster.add_group(group_id, offsets={("orders", 0): 50})
        history = str(tmp_path / "history")
        seed_history(history, {g: [(240, 50, 60)] for g in ("dead-1", "dead-2")})
        kgroups_conn("kgroups_fake", host=cluster.bootstrap)
        result = run_dag(
            "kg_cleanup",
            {
                "history": history,
                "ids": ["dead-1", "dead-2"],
                "patterns": [],
                "conn": "kgroups_fake",
                "dry_run": False,
            },
        )
    assert result.state == "success", result
    out = result.xcoms["cleanup"]
    event = events_of("kg_cleanup", result.run_id, "cleanup")
    facet = event["run"]["facets"]["kgroups_cleanup"]
    assert facet["dryRun"] is False and sorted(facet["deleted"]) == ["dead-1", "dead-2"] == sorted(
        out["deleted"]
    )
    assert facet["backupUrl"] == out["backup_url"] and facet["auditUrl"] == out["audit_url"]
    assert {(o["namespace"], o["name"]) for o in event["outputs"]} == {
        ("file", urlsplit(out["backup_url"]).path),
        ("file", urlsplit(out["audit_url"]).path),
    }


def test_the_facets_validate_against_the_schemas_the_package_ships():
    from importlib import resources

    import jsonschema
    from openlineage.client.serde import Serde

    from airflow_provider_kgroups.observability.facets import cleanup_facet, offset_range_facet

    schemas = resources.files("airflow_provider_kgroups.observability").joinpath("schemas")
    for facet, name, file in (
        (
            offset_range_facet({"0": -2}, {"0": 10, "1": 4}, ["g"]),
            "KgroupsOffsetRangeInputDatasetFacet",
            "KgroupsOffsetRangeInputDatasetFacet.json",
        ),
        (
            cleanup_facet({"dry_run": True, "candidates": 2, "would_delete": ["a"], "skipped": ["b"]}),
            "KgroupsCleanupRunFacet",
            "KgroupsCleanupRunFacet.json",
        ),
    ):
        schema = json.loads(schemas.joinpath(file).read_text())
        data = json.loads(Serde.to_json(facet))
        inner = schema["$defs"][name]["allOf"][1]
        jsonschema.validate(data, {**inner, "$defs": schema["$defs"]})
        assert data["_schemaURL"].endswith(file)
    with pytest.raises(jsonschema.ValidationError):  # the schema can fail
        jsonschema.validate(
            {"partitions": {"0": {"startingOffset": -5, "endingOffset": 1}}},
            json.loads(schemas.joinpath("KgroupsOffsetRangeInputDatasetFacet.json").read_text())["$defs"][
                "KgroupsOffsetRangeInputDatasetFacet"
            ]["allOf"][1],
        )
