"""The ``kgroups`` data source with SASL/OAUTHBEARER: the client credentials live in the
properties file named by ``kgroups.command.config`` (the Java client's names); the executors
fetch their own tokens from the identity provider; the options, the plan and its text never
hold the secret, and an option that would carry it is refused when the query is planned."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.spark.datasource import parse_options, read_offset_range
from tests.support.fakekafka import FakeCluster
from tests.support.fakekafka.oauth import JwksValidator
from tests.support.oidc import IdentityProvider

SECRET = "spark-oidc-secret-never-print"


def offsets(topic: str, per_partition: dict[int, int]) -> str:
    return json.dumps({topic: {str(p): o for p, o in per_partition.items()}})


@pytest.mark.parametrize(
    "option",
    [
        "kafka.sasl.oauthbearer.client.secret",
        "kafka.sasl.oauthbearer.client.credentials.client.secret",
        "kafka.sasl.oauthbearer.config",
    ],
)
def test_an_option_carrying_the_client_secret_is_refused(option):
    with pytest.raises(ConfigurationError, match="would show a secret in query plans") as info:
        parse_options(
            {
                "kafka.bootstrap.servers": "k:1",
                "startingOffsets": offsets("t", {0: 0}),
                "endingOffsets": offsets("t", {0: 1}),
                option: SECRET,
            }
        )
    assert SECRET not in str(info.value)


def test_oidc_credentials_from_the_properties_file_and_never_in_the_plan(spark, tmp_path):
    with (
        IdentityProvider({"svc": SECRET}) as idp,
        FakeCluster.running_in_thread(brokers=1, sasl={"OAUTHBEARER": JwksValidator(idp.jwks_url)}) as c,
    ):
        c.add_topic("orders", 1)
        c.append("orders", 0, 5, value=lambda o: b"v%d" % o)
        props = tmp_path / "client.properties"
        props.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
            f"sasl.oauthbearer.token.endpoint.url={idp.token_url}\n"
            "sasl.oauthbearer.client.credentials.client.id=svc\n"
            f"sasl.oauthbearer.client.credentials.client.secret={SECRET}\n"
        )
        df = read_offset_range(
            spark,
            c.bootstrap,
            starting=offsets("orders", {0: 1}),
            ending=offsets("orders", {0: 4}),
            command_config=str(props),
        )
        assert sorted(r.offset for r in df.collect()) == [1, 2, 3]
        plan = df._jdf.queryExecution().toString()
        assert "kgroups" in plan and SECRET not in plan
        assert len(idp.requests) >= 1 and {r.client_id for r in idp.requests} == {"svc"}
