"""The flagship DAG's shape and switches, without a broker: the wiring (the sensor's XCom is the
only input of both Spark tasks), the barrier switch, the Kafka-source branch's detection and
its client options."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime, timezone

import pytest

from airflow_provider_kgroups.arguments import parse_timestamp_ms
from airflow_provider_kgroups.client import ClientConfig
from tests.support.airflow_env import EXAMPLE_DAGS, dagbag


@pytest.fixture(scope="module")
def dag():
    return dagbag(EXAMPLE_DAGS).dags["kgroups_gate_clean_spark"]  # parsed only: no database needed


@pytest.fixture
def module():
    spec = importlib.util.spec_from_file_location(
        "flagship_under_test", EXAMPLE_DAGS / "kgroups_gate_clean_spark.py"
    )
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def test_gate_then_clean_then_spark_with_the_sensor_xcom_as_the_only_hand_off(dag):
    tasks = dag.task_dict
    assert set(tasks) == {
        "wait_for_landing",
        "clean_dead_groups",
        "totals_from_landing",
        "kafka_source_available",
        "totals_from_kafka",
    }
    assert tasks["wait_for_landing"].downstream_task_ids == {
        "clean_dead_groups",
        "totals_from_landing",
        "totals_from_kafka",
    }
    assert tasks["clean_dead_groups"].downstream_task_ids == {"totals_from_landing", "kafka_source_available"}
    assert tasks["kafka_source_available"].downstream_task_ids == {"totals_from_kafka"}
    for spark_task in ("totals_from_landing", "totals_from_kafka"):
        assert tasks[spark_task].upstream_task_ids >= {"wait_for_landing"}
        (arg,) = tasks[spark_task].op_args
        assert arg.operator.task_id == "wait_for_landing" and arg.key == "return_value"
    gate = tasks["wait_for_landing"]
    assert (
        gate.deferrable and gate.lag_mode == "barrier" and "include_prior_dates=True" in gate.previous_barrier
    )
    assert dag.params["cleanup_dry_run"] is True and dag.params["kafka_source"] == "auto"  # safe defaults


@pytest.mark.parametrize(
    "barrier, interval_end, expected",
    [
        ("timestamp", datetime(2024, 5, 1, 13, tzinfo=UTC), 1714568400000),
        ("log_end", datetime(2024, 5, 1, 13, tzinfo=UTC), None),
        ("timestamp", None, None),  # a manual run without a data interval: the log end
    ],
)
def test_the_barrier_param_switches_between_the_interval_end_and_the_log_end(
    dag, barrier, interval_end, expected
):
    template = dag.task_dict["wait_for_landing"].barrier_timestamp
    rendered = (
        dag.get_template_env()
        .from_string(template)
        .render(params={"barrier": barrier}, data_interval_end=interval_end)
    )
    assert parse_timestamp_ms("barrier_timestamp", rendered) == expected


def test_the_jvm_kafka_source_is_chosen_only_with_its_package(module, monkeypatch, tmp_path):
    monkeypatch.delenv("SPARK_HOME", raising=False)
    monkeypatch.setattr(module, "SPARK_KAFKA_PACKAGE", "")
    assert module.spark_kafka_jar() is None  # not installable here: the kgroups source reads the range
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-sql-kafka-0-10_2.13-4.0.0.jar").write_bytes(b"")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert module.spark_kafka_jar().endswith("spark-sql-kafka-0-10_2.13-4.0.0.jar")
    monkeypatch.setattr(module, "SPARK_KAFKA_PACKAGE", "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0")
    assert module.spark_kafka_jar() == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0"


def test_spark_kafka_options_carry_the_connection_security(module, tmp_path):
    from tests.support.fakekafka import make_self_signed_cert

    ca = make_self_signed_cert(tmp_path).cert  # TLS files are loaded when the config is built
    plain = ClientConfig.create("k1:9092,k2:9093")
    assert module.spark_kafka_options(plain) == {"security.protocol": "PLAINTEXT"}
    scram = ClientConfig.create(
        "k1:9093",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="etl",
        sasl_password='p"w',
        ssl_cafile=str(ca),
        ssl_check_hostname=False,
    )
    assert module.spark_kafka_options(scram) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="etl" '
        'password="p\\"w";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca),
        "ssl.endpoint.identification.algorithm": "",
    }
