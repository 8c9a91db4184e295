"""The client loads kafka-python's codec without its client stack, and kafka-python stays whole
for anyone else in the process (checked in fresh interpreters: the test run itself imports it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {code}"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    ).stdout.strip()


def test_the_client_does_not_load_kafka_pythons_clients():
    loaded = run(
        "from airflow_provider_kgroups.client import AsyncGroupsClient; import airflow_provider_kgroups.cli; "
        "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('kafka.')}))"
    )
    # no admin, consumer, producer, net; no kafka.record/kafka.codec either (batches are read by client/batches.py)
    assert loaded == "['errors', 'protocol', 'structs', 'util']"


def test_the_client_builds_only_the_admin_messages_it_uses():
    """kafka.protocol.admin's __init__ would build every admin API's classes (ACLs, configs,
    topics, quotas, transactions, users): only its groups module is loaded."""
    loaded = run(
        "from airflow_provider_kgroups.client import AsyncGroupsClient; "
        "print(sorted(m for m in sys.modules if m.startswith('kafka.protocol.admin')))"
    )
    assert loaded == "['kafka.protocol.admin', 'kafka.protocol.admin.groups']"


def test_the_admin_package_stays_whole_for_anyone_else():
    out = run(
        "import airflow_provider_kgroups.client.protocol as p; import kafka.protocol.admin as admin; "
        "from kafka.protocol.admin import CreateTopicsRequest, DescribeAclsRequest; "
        "print(admin.DescribeGroupsRequest is p.DescribeGroupsRequest, CreateTopicsRequest.__name__, "
        "DescribeAclsRequest.__name__)"
    )
    assert out == "True CreateTopicsRequest DescribeAclsRequest"


def test_importing_the_package_or_the_cli_loads_no_codec_until_a_verb_is_used():
    """The client package loads its names on first use (PEP 562): the CLI parses its arguments
    (and answers --help) without kafka-python, not even its errors module."""
    loaded = run(
        "import airflow_provider_kgroups.client, airflow_provider_kgroups.cli; "
        "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('kafka.')}))"
    )
    assert loaded == "[]"


def test_kafka_python_still_works_after_the_client_was_imported():
    out = run(
        "import airflow_provider_kgroups.client; import kafka; from kafka import KafkaConsumer, KafkaAdminClient; "
        "import kafka.protocol.admin as admin; print(kafka.__version__, KafkaConsumer.__name__, "
        "KafkaAdminClient.__name__, admin.__name__)"
    )
    assert out.split()[1:] == ["KafkaConsumer", "KafkaAdminClient", "kafka.protocol.admin"]
    assert out.split()[0].startswith("3.")


def test_a_process_that_imported_kafka_first_keeps_the_real_package():
    out = run(
        "import kafka; real = sys.modules['kafka']; import airflow_provider_kgroups.client; "
        "print(sys.modules['kafka'] is real)"
    )
    assert out == "True"


def test_the_client_leaves_what_only_other_verbs_send_until_they_run():
    """The lag path builds no message class it never sends: the verbs' own handlers
    (client.VERB_HANDLERS: fetch, SASL, share offsets, topic settings, deletes) load on first use."""
    out = run(
        "import airflow_provider_kgroups.client.client as c; "
        "print(sorted(m for m in c.VERB_HANDLERS if m in sys.modules), "
        "[m for m in ('kafka.protocol.sasl', 'kafka.protocol.consumer.fetch') if m in sys.modules])"
    )
    assert out == "[] []"
    out = run(
        "import airflow_provider_kgroups.client.protocol as p; "
        "import airflow_provider_kgroups.client.topic_verbs; "
        "from airflow_provider_kgroups.client.handlers.describe_configs import DescribeConfigsHandler as H; "
        "print(H.request_class is p.DescribeConfigsRequest, p.CLIENT_MAX_VERSIONS[p.DescribeConfigsRequest])"
    )
    assert out == "True 4"
