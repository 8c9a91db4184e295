"""OpenLineage for the gate, the cleanup and the Spark reads of a gated range; the ``kgroups``
asset scheme.

Follows the Airflow OpenLineage provider's developer guide ("Implementing OpenLineage in
Operators", providers/openlineage/docs/guides/developer.rst): operators and sensors implement
``get_openlineage_facets_on_complete`` and build :class:`OperatorLineage` from what ``execute``
kept; every OpenLineage import is inside a function, so nothing here needs OpenLineage
installed. Dataset names follow the OpenLineage naming spec (spec/Naming.md, Kafka):
namespace ``kafka://{first bootstrap host}:{port}``, name = the topic; a listener prefix such as
``SASL_SSL://`` is dropped, as the spec's Kafka namespace has none (the same string as
``openlineage.client.naming.dataset.Kafka``).

Tasks written with ``@task`` (the Spark reads of the example DAGs) have no OpenLineage methods:
:func:`report_kafka_read` adds the topics they read, with the range and the record count
(``inputStatistics``), to the running task's inlets as OpenLineage datasets, which the
provider uses as the task's inputs when no extractor and no hook lineage gave any (the guide's
"Manually annotated lineage"; Airflow itself ignores OpenLineage datasets in inlets).

Assets: ``kgroups://{host}:{port}/{topic}/{group}`` names "the ranges of ``topic`` that
``group`` has consumed" on a cluster; it is registered in the provider info (``asset-uris``)
with :func:`sanitize_uri`, :func:`create_asset` and :func:`convert_asset_to_openlineage`, which
turns it into the topic's dataset (``kafka://host:port`` / ``topic``), so lineage tools join it
with every other reader and writer of the topic. Why not ``kafka://host:port/topic``: the
official Kafka provider registers that scheme (handler and converter); registering it here too
would let the two overwrite each other (the providers manager keeps the last), and without that
provider Airflow 3.3 keeps a ``kafka://`` URI unnormalized (``Asset.normalized_uri`` is None),
so the OpenLineage provider drops it. And Airflow keeps asset URIs unique: ``kafka://h/orders``
is one asset, so "a producer wrote to orders" and "group G has landed a range of orders" would
be the same asset, and a DAG scheduled on it would run for either.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

from ..client.numbers import is_int
from ..client.offset_map import OffsetKind, OffsetMap
from .facets import CLEANUP, OFFSET_RANGE, cleanup_facet, offset_range_facet

if TYPE_CHECKING:
    from urllib.parse import SplitResult

log = logging.getLogger(__name__)

DEFAULT_PORT = 9092
ASSET_SCHEME = "kgroups"
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")  # Kafka's legal topic names (Topic.validate)


# -- names ------------------------------------------------------------------------------------


def _first_server(bootstrap: str | Iterable[Any]) -> tuple[str, int]:
    items = bootstrap.split(",") if isinstance(bootstrap, str) else [str(b) for b in bootstrap]
    items = [item.strip() for item in items if str(item).strip()]
    if not items:
        raise ValueError("no bootstrap server to name the Kafka namespace after: give 'host:port'.")
    server = items[0].split("://", 1)[-1]  # SASL_SSL://kafka-1:9093 -> kafka-1:9093
    parsed = urlsplit(f"//{server}")
    if not parsed.hostname:
        raise ValueError(f"bootstrap server {items[0]!r} has no host: give 'host:port'.")
    host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
    return host, parsed.port or DEFAULT_PORT


def kafka_namespace(bootstrap: str | Iterable[Any]) -> str:
    """``kafka://{host}:{port}`` of the first bootstrap server (a string list or BrokerAddress values)."""
    host, port = _first_server(bootstrap)
    return f"kafka://{host}:{port}"


def _ol_available() -> bool:
    try:
        import openlineage.client  # noqa: F401 - only whether it imports
        from airflow.providers.openlineage.extractors import OperatorLineage  # noqa: F401 - as above
    except ImportError:
        return False
    return True


# -- the kgroups asset scheme ---------------------------------------------------------------------


def range_asset_uri(bootstrap: str | Iterable[Any], topic: str, group: str) -> str:
    host, port = _first_server(bootstrap)
    return f"{ASSET_SCHEME}://{host}:{port}/{topic}/{quote(group, safe='')}"


def create_asset(
    *,
    bootstrap: str,
    topic: str,
    group: str,
    name: str | None = None,
    extra: dict | None = None,
    **kwargs: Any,
):
    """The asset for the ranges of ``topic`` consumed by ``group`` (an AssetWatcher's events,
    a gate's outlet). ``name`` defaults to the URI; ``kwargs`` go to ``Asset`` (``watchers``...)."""
    from airflow.providers.common.compat.sdk import Asset

    from ..version_compat import AIRFLOW_V_3_0_PLUS

    uri = range_asset_uri(bootstrap, topic, group)
    if not AIRFLOW_V_3_0_PLUS:  # Airflow 2's Dataset has a URI and no name
        return Asset(uri=uri, extra=extra or {}, **kwargs)
    return Asset(name=name or uri, uri=uri, extra=extra or {}, **kwargs)


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Airflow's URI handler for ``kgroups://``: host required, the default port made explicit,
    exactly ``/{topic}/{group}`` with a legal topic name."""
    if not uri.hostname:
        raise ValueError(
            "a kgroups:// asset URI needs the cluster's first bootstrap server: "
            "kgroups://{host}:{port}/{topic}/{group}"
        )
    parts = uri.path.strip("/").split("/")
    if len(parts) != 2 or not all(parts):
        raise ValueError(
            f"a kgroups:// asset URI has the path /{{topic}}/{{group}}, got {uri.path!r} "
            "(percent-encode a '/' in a group id)"
        )
    if not _TOPIC.match(parts[0]):
        raise ValueError(f"{parts[0]!r} is not a legal Kafka topic name ([A-Za-z0-9._-], 1-249 characters)")
    host = f"[{uri.hostname}]" if ":" in uri.hostname else uri.hostname
    return uri._replace(netloc=f"{host}:{uri.port or DEFAULT_PORT}")


def convert_asset_to_openlineage(asset: Any, lineage_context: Any = None):
    """The OpenLineage converter: the asset's topic, as a Kafka dataset."""
    from openlineage.client.event_v2 import Dataset

    parsed = urlsplit(asset.uri)
    topic = unquote(parsed.path.strip("/").split("/")[0])
    return Dataset(namespace=f"kafka://{parsed.netloc}", name=topic)


# -- datasets with the range ----------------------------------------------------------------------


def _offsets(value: Any, kind: OffsetKind, option: str) -> dict[str, dict[str, int]]:
    return OffsetMap.parse(value or {}, kind, name=option).nested()


def range_inputs(
    bootstrap: str | Iterable[Any],
    offsets: Mapping[str, Any],
    *,
    records: int | Mapping[str, int] | None = None,
    group_ids: Iterable[str] = (),
) -> list[Any]:
    """One OpenLineage input per topic of a range (``startingOffsets`` / ``endingOffsets`` as in
    the gate's XCom), with the ``kgroups_offsetRange`` facet and, when ``records`` is given (a
    total for a single topic, or per topic), ``inputStatistics``."""
    from openlineage.client.event_v2 import InputDataset
    from openlineage.client.facet_v2 import input_statistics_input_dataset

    namespace = kafka_namespace(bootstrap)
    starting = _offsets(offsets.get("startingOffsets"), OffsetKind.STARTING, "startingOffsets")
    ending = _offsets(offsets.get("endingOffsets"), OffsetKind.ENDING, "endingOffsets")
    if is_int(records) and len(ending) != 1:
        raise ValueError(
            "records as one number needs a one-topic range; give {topic: count} for several topics"
        )
    out = []
    for topic in sorted(ending):
        input_facets: dict[str, Any] = {
            OFFSET_RANGE: offset_range_facet(starting.get(topic, {}), ending[topic], list(group_ids))
        }
        count = records if is_int(records) else records.get(topic) if isinstance(records, Mapping) else None
        if count is not None:
            input_facets["inputStatistics"] = input_statistics_input_dataset.InputStatisticsInputDatasetFacet(
                rowCount=int(count)
            )
        out.append(InputDataset(namespace=namespace, name=topic, inputFacets=input_facets))
    return out


def gate_lineage(bootstrap: str | Iterable[Any], result: Mapping[str, Any] | None):
    """The sensor's lineage: the gated topics as inputs, each with the range handed on."""
    if not result or "endingOffsets" not in result or not _ol_available():
        return None
    from airflow.providers.openlineage.extractors import OperatorLineage

    return OperatorLineage(inputs=range_inputs(bootstrap, result, group_ids=result.get("group_ids") or ()))


def _file_dataset(url: str):
    """An OpenLineage dataset for a file the cleanup wrote (naming spec: ``s3://bucket`` / key,
    ``file`` / local path)."""
    from openlineage.client.event_v2 import OutputDataset

    parsed = urlsplit(url)
    if parsed.scheme in ("", "file"):
        return OutputDataset(namespace="file", name=parsed.path or url)
    return OutputDataset(namespace=f"{parsed.scheme}://{parsed.netloc}", name=parsed.path.lstrip("/"))


def cleanup_lineage(summary: Mapping[str, Any] | None):
    """The cleanup's lineage: what it deleted (and would, skipped, failed) as a run facet; the
    offset backup and the audit record it wrote as outputs."""
    if not summary or not _ol_available():
        return None
    from airflow.providers.openlineage.extractors import OperatorLineage

    outputs = [_file_dataset(summary[key]) for key in ("backup_url", "audit_url") if summary.get(key)]
    return OperatorLineage(outputs=outputs, run_facets={CLEANUP: cleanup_facet(summary)})


def report_kafka_read(
    context: Mapping[str, Any],
    bootstrap: str | Iterable[Any],
    offsets: Mapping[str, Any],
    *,
    records: int | Mapping[str, int] | None = None,
    group_ids: Iterable[str] = (),
) -> None:
    """From inside a ``@task`` that read a range of Kafka (from Kafka or from its landing zone):
    the topics, the range and the record count become the task's OpenLineage inputs. A no-op
    without OpenLineage; never fails the task."""
    if not _ol_available():
        return
    try:
        context["task"].add_inlets(range_inputs(bootstrap, offsets, records=records, group_ids=group_ids))
    except Exception:
        log.warning("OpenLineage: the Kafka range read could not be reported", exc_info=True)


__all__ = [
    "kafka_namespace",
    "range_asset_uri",
    "create_asset",
    "sanitize_uri",
    "convert_asset_to_openlineage",
    "range_inputs",
    "gate_lineage",
    "cleanup_lineage",
    "report_kafka_read",
    "ASSET_SCHEME",
]
