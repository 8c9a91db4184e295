"""What Airflow's providers manager reads (entry point ``apache_airflow_provider``).

Kept import-free (no Airflow, no client): Airflow calls it while it starts, for every
process, and the connection form is built from the ``conn-fields`` and
``ui-field-behaviour`` declared here without importing the hook.
"""

from __future__ import annotations

from airflow_provider_kgroups import __version__
from airflow_provider_kgroups.settings import provider_config

INTEGRATION = "Kafka consumer groups"

SECURITY_PROTOCOLS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SASL_MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
TOKEN_SOURCES = ["oidc", "aws_msk_iam", "callback"]


def _text(label: str, description: str, **schema) -> dict:
    return {"label": label, "description": description, "schema": {"type": ["string", "null"], **schema}}


def _oauthbearer_fields() -> dict:
    """The OAUTHBEARER options of a kgroups connection (client.auth.config.OPTIONS)."""
    return {
        "sasl_oauthbearer_method": {
            "label": "OAUTHBEARER token source",
            "description": "oidc (client credentials at a token endpoint), aws_msk_iam (AWS's signer; the msk extra) "
            "or callback (oauth_cb). Empty: inferred from the fields below.",
            "schema": {"type": ["string", "null"], "enum": TOKEN_SOURCES},
        },
        "sasl_oauthbearer_token_endpoint_url": _text(
            "OIDC token endpoint URL",
            "The identity provider's token endpoint (sasl.oauthbearer.token.endpoint.url).",
            format="uri",
        ),
        "sasl_oauthbearer_client_id": _text(
            "OIDC client id", "The client id of the client-credentials grant."
        ),
        "sasl_oauthbearer_client_secret": _text(
            "OIDC client secret",
            "The client secret (sent to the token endpoint only, never logged).",
            format="password",
        ),
        "sasl_oauthbearer_scope": _text(
            "OIDC scope", "Scope to ask for (space-separated), if the provider needs one."
        ),
        "sasl_oauthbearer_extensions": _text(
            "SASL extensions",
            "KIP-342 extensions as name=value,name=value "
            "(Confluent Cloud: logicalCluster=lkc-...,identityPoolId=pool-...).",
        ),
        "sasl_oauthbearer_aws_region": _text(
            "AWS region (MSK IAM)",
            "Region of the MSK cluster; empty: read from the MSK bootstrap host names.",
        ),
        "oauth_cb": _text(
            "Token callback",
            "Dotted path of f(config) -> (token, expiry): allowed only when listed "
            "in [kgroups] allowed_token_callbacks.",
        ),
    }


def get_provider_info() -> dict:
    info = _provider_info()
    if _airflow_major() < 3:  # Airflow 2 reads the same handlers under their old name (assets were datasets)
        info["dataset-uris"] = info["asset-uris"]
    return info


def _airflow_major() -> int:
    # The distribution's metadata, not ``airflow.__version__``: Airflow calls this while ``airflow`` is
    # still being imported, and version_compat would import it again from the middle of that.
    from importlib.metadata import version

    return int(version("apache-airflow").split(".")[0])


def _provider_info() -> dict:
    return {
        "package-name": "airflow-provider-kgroups",
        "name": "Kafka consumer groups",
        "description": (
            "Kafka consumer groups for Apache Airflow: batched lag checks, a catch-up barrier sensor "
            "(poke or deferrable) that hands Spark its offsets, lag snapshots to a history store and "
            "a safe, dry-run-first dead-group cleanup."
        ),
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "external-doc-url": "https://kafka.apache.org/documentation/#consumerconfigs",
                "tags": ["apache", "kafka"],
            }
        ],
        "hooks": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_provider_kgroups.hooks.groups",
                    "airflow_provider_kgroups.hooks.connect",
                ],
            }
        ],
        "sensors": [
            {"integration-name": INTEGRATION, "python-modules": ["airflow_provider_kgroups.sensors.lag"]}
        ],
        "triggers": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_provider_kgroups.triggers.lag",
                    "airflow_provider_kgroups.triggers.events",
                ],
            }
        ],
        "operators": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_provider_kgroups.operators.cleanup",
                    "airflow_provider_kgroups.operators.progress",
                    "airflow_provider_kgroups.operators.reset",
                    "airflow_provider_kgroups.operators.snapshot",
                ],
            }
        ],
        # No "plugins": the Consumer groups page is registered through the `airflow.plugins` entry
        # point (pyproject.toml), which Airflow always loads; listed here too it would be registered
        # twice under eager provider discovery ("Plugin 'kgroups' already registered").
        "connection-types": [
            {
                "connection-type": "kgroups",
                "hook-class-name": "airflow_provider_kgroups.hooks.groups.KafkaGroupsHook",
                "hook-name": "Kafka consumer groups",
                "ui-field-behaviour": {
                    "hidden-fields": ["schema"],
                    "relabeling": {
                        "host": "Bootstrap servers",
                        "login": "SASL username",
                        "password": "SASL password",
                    },
                    "placeholders": {
                        "host": "kafka-1:9092,kafka-2:9092",
                        "port": "9092 (only when Bootstrap servers has no port)",
                        "login": "only for SASL_PLAINTEXT / SASL_SSL",
                        "password": "only for SASL_PLAINTEXT / SASL_SSL",
                        "extra": '{"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512"}',
                    },
                },
                "conn-fields": {
                    "security_protocol": {
                        "label": "Security protocol",
                        "description": "How to reach the brokers: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
                        "schema": {
                            "type": ["string", "null"],
                            "enum": SECURITY_PROTOCOLS,
                            "default": "PLAINTEXT",
                        },
                    },
                    "sasl_mechanism": {
                        "label": "SASL mechanism",
                        "description": "For SASL_PLAINTEXT / SASL_SSL: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or "
                        "OAUTHBEARER (a token: OIDC, AWS MSK IAM or a callback).",
                        "schema": {"type": ["string", "null"], "enum": SASL_MECHANISMS},
                    },
                    **_oauthbearer_fields(),
                    "ssl_cafile": _text(
                        "TLS CA file",
                        "Path of the PEM file with the CA certificates to trust "
                        "(SSL / SASL_SSL); empty: the system's trust store.",
                    ),
                    "ssl_certfile": _text(
                        "TLS client certificate file", "Path of the PEM client certificate, for mutual TLS."
                    ),
                    "ssl_keyfile": _text(
                        "TLS client key file", "Path of the PEM private key of the client certificate."
                    ),
                    "ssl_key_password": _text(
                        "TLS client key password",
                        "Password of the client key, if it is encrypted.",
                        format="password",
                    ),
                    "ssl_check_hostname": {
                        "label": "Check TLS host name",
                        "description": "Verify that the broker certificate matches its host name.",
                        "schema": {"type": ["boolean", "null"], "default": True},
                    },
                    "client_id": _text(
                        "Client id",
                        "client.id sent to the brokers (shows in their logs and quotas).",
                        default="kgroups",
                    ),
                    "request_timeout_s": {
                        "label": "Request timeout (s)",
                        "description": "Deadline of one request to one broker.",
                        "schema": {"type": ["number", "null"], "default": 30},
                    },
                    "call_timeout_s": {
                        "label": "Call timeout (s)",
                        "description": "Deadline of one whole call (all brokers, retries included).",
                        "schema": {"type": ["number", "null"], "default": 60},
                    },
                },
            },
            {
                # Kafka Connect's REST API, read as evidence by the dead-group cleanup
                "connection-type": "kgroups_connect",
                "hook-class-name": "airflow_provider_kgroups.hooks.connect.KafkaConnectHook",
                "hook-name": "Kafka Connect REST (consumer-group evidence)",
                "ui-field-behaviour": {
                    "hidden-fields": [],
                    "relabeling": {
                        "host": "Connect REST URL(s)",
                        "schema": "Scheme",
                        "login": "Basic auth user",
                        "password": "Basic auth password",
                    },
                    "placeholders": {
                        "host": "https://connect:8083 (several Connect clusters: comma-separated)",
                        "schema": "http or https (only for a Host without a scheme)",
                        "port": "8083 (only for a Host without a port)",
                        "login": "only when the REST API requires basic auth",
                        "password": "only when the REST API requires basic auth",
                        "extra": '{"ca_bundle": "/etc/ssl/connect-ca.pem", "timeout_s": 10}',
                    },
                },
                "conn-fields": {
                    "verify": {
                        "label": "Verify TLS certificate",
                        "description": "Check the REST API's certificate (https). Off only for tests.",
                        "schema": {"type": ["boolean", "null"], "default": True},
                    },
                    "ca_bundle": _text(
                        "TLS CA bundle",
                        "Path of the PEM file with the CA certificates to trust; "
                        "empty: the system's trust store.",
                    ),
                    "timeout_s": {
                        "label": "Request timeout (s)",
                        "description": "Deadline of one HTTP request (the cleanup's deadline bounds the whole read).",
                        "schema": {"type": ["number", "null"], "default": 10},
                    },
                    "retries": {
                        "label": "Retries",
                        "description": "Further attempts after a 5xx, a 429 or a connection error.",
                        "schema": {"type": ["integer", "null"], "default": 3},
                    },
                },
            },
        ],
        "config": provider_config(),  # the [kgroups] section (settings.py)
        # kgroups://{host}:{port}/{topic}/{group}: the ranges a group consumed (why not kafka://: observability/lineage.py)
        "asset-uris": [
            {
                "schemes": ["kgroups"],
                "handler": "airflow_provider_kgroups.observability.lineage.sanitize_uri",
                "factory": "airflow_provider_kgroups.observability.lineage.create_asset",
                "to_openlineage_converter": "airflow_provider_kgroups.observability.lineage.convert_asset_to_openlineage",
            }
        ],
    }
