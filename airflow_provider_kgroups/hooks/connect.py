"""``KafkaConnectHook``: an Airflow connection -> Kafka Connect REST endpoints (and evidence).

Connection type ``kgroups_connect``: Host = the REST URL (``https://connect:8083``) or host
name, several comma-separated for several Connect clusters; Schema = ``http``/``https`` for
hosts without a scheme; Port for hosts without a port; Login/Password = HTTP basic auth;
extra ``verify`` (true/false), ``ca_bundle`` (PEM path), ``timeout_s``, ``retries``,
``backoff_s``. The translation is pure (``connect.config.connect_configs_from_connection``);
the hook looks the connection up, masks the password, and offers one verb.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property

from airflow.providers.common.compat.sdk import BaseHook

from ..client.errors import ConfigurationError
from ..connect import (
    ConnectClusterConfig,
    ConnectEvidence,
    connect_configs_from_connection,
    fetch_connect_evidence,
)
from ..version_compat import AIRFLOW_V_3_0_PLUS
from .connection_form import declared_form_methods


class KafkaConnectHook(BaseHook):
    """Kafka Connect's REST API through a ``kgroups_connect`` connection.

    :param kafka_connect_conn_id: the connection id (type ``kgroups_connect``, or ``http``).
    """

    conn_name_attr = "kafka_connect_conn_id"
    default_conn_name = "kgroups_connect_default"
    conn_type = "kgroups_connect"
    hook_name = "Kafka Connect REST (consumer-group evidence)"
    if not AIRFLOW_V_3_0_PLUS:  # Airflow 2's Flask form asks the hook; 3.2+ reads the provider info
        get_connection_form_widgets, get_ui_field_behaviour = declared_form_methods()

    def __init__(self, kafka_connect_conn_id: str = default_conn_name) -> None:
        super().__init__()
        if not isinstance(kafka_connect_conn_id, str) or not kafka_connect_conn_id.strip():
            raise ConfigurationError(
                f"kafka_connect_conn_id must be a connection id, got {kafka_connect_conn_id!r}."
            )
        self.kafka_connect_conn_id = kafka_connect_conn_id

    @cached_property
    def cluster_configs(self) -> list[ConnectClusterConfig]:
        """The validated endpoints of this connection (sync connection lookup; not for event loops)."""
        from airflow.providers.common.compat.sdk import mask_secret

        conn = self.get_connection(self.kafka_connect_conn_id)
        if conn.password:
            mask_secret(conn.password)
        configs = connect_configs_from_connection(
            conn.conn_type,
            conn_id=self.kafka_connect_conn_id,
            host=conn.host,
            port=conn.port,
            schema=conn.schema,
            login=conn.login,
            password=conn.password,
            extra=conn.extra_dejson,
        )
        self.log.info(
            "Kafka Connect connection %s: %s%s",
            self.kafka_connect_conn_id,
            ", ".join(c.url for c in configs),
            f" as {configs[0].username}" if configs and configs[0].uses_auth else "",
        )
        return configs

    def get_conn(self) -> list[ConnectClusterConfig]:
        return self.cluster_configs

    def fetch_evidence(self, timeout_s: float) -> ConnectEvidence:
        """Read this connection's Connect clusters within ``timeout_s`` (fails closed, never raises
        for an unreadable cluster)."""
        return fetch_connect_evidence(self.cluster_configs, timeout_s)


def connect_configs_from_conn_ids(conn_ids: Iterable[str]) -> list[ConnectClusterConfig]:
    """Every endpoint of every connection, in order (for ``connect_conn_ids`` on an operator)."""
    if isinstance(conn_ids, str):
        raise ConfigurationError(
            f"connect_conn_ids must be a list of connection ids, got the string {conn_ids!r}."
        )
    return [config for conn_id in conn_ids for config in KafkaConnectHook(conn_id).cluster_configs]
