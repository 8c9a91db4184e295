"""This provider's two custom OpenLineage facets, built only when OpenLineage is installed.

* ``kgroups_offsetRange`` (an input-dataset facet on a Kafka topic): the offsets of the range
  a gate handed on or a task read, per partition, ``[startingOffset, endingOffset)`` with
  Spark's conventions (``-2`` = earliest; the end is exclusive, a committed offset), and the
  consumer groups whose progress fixed it.
* ``kgroups_cleanup`` (a run facet): what a dead-group cleanup run decided and did.

Their JSON schemas ship in the package (``observability/schemas/``); ``_schemaURL`` names the
file under :data:`SCHEMA_BASE`, where the documentation site publishes them. Custom facet names
carry the producer's prefix, as the OpenLineage spec asks of custom facets.

The classes are made on first use (``openlineage-python`` is an optional dependency: this
module imports without it; :func:`offset_range_facet` and :func:`cleanup_facet` then are not
called, the lineage module checks first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

SCHEMA_BASE = "https://airflow-provider-kgroups.readthedocs.io/en/latest/_static/openlineage/"
OFFSET_RANGE = "kgroups_offsetRange"
CLEANUP = "kgroups_cleanup"


@lru_cache(maxsize=1)
def _classes() -> tuple[type, type]:
    import attr
    from openlineage.client.facet_v2 import InputDatasetFacet, RunFacet

    @attr.define
    class KgroupsOffsetRangeInputDatasetFacet(InputDatasetFacet):
        partitions: dict[str, dict[str, int]] = attr.field(factory=dict)
        """partition -> {"startingOffset": first offset (-2: earliest), "endingOffset": end, exclusive}"""
        groupIds: list[str] = attr.field(factory=list)

        @staticmethod
        def _get_schema() -> str:
            return SCHEMA_BASE + "KgroupsOffsetRangeInputDatasetFacet.json"

    @attr.define
    class KgroupsCleanupRunFacet(RunFacet):
        dryRun: bool = attr.field(default=True)
        candidates: int | None = attr.field(default=None)
        deleted: list[str] = attr.field(factory=list)
        wouldDelete: list[str] = attr.field(factory=list)
        skipped: list[str] = attr.field(factory=list)
        failed: list[str] = attr.field(factory=list)
        notFound: list[str] = attr.field(factory=list)
        backupUrl: str | None = attr.field(default=None)
        auditUrl: str | None = attr.field(default=None)

        @staticmethod
        def _get_schema() -> str:
            return SCHEMA_BASE + "KgroupsCleanupRunFacet.json"

    return KgroupsOffsetRangeInputDatasetFacet, KgroupsCleanupRunFacet


def offset_range_facet(
    starting: Mapping[str, int], ending: Mapping[str, int], group_ids: Sequence[str] = ()
) -> Any:
    """``starting`` / ``ending``: partition (as a string) -> offset, for one topic."""
    cls, _ = _classes()
    return cls(
        partitions={
            p: {"startingOffset": int(starting.get(p, -2)), "endingOffset": int(end)}
            for p, end in sorted(ending.items(), key=lambda kv: int(kv[0]))
        },
        groupIds=list(group_ids),
    )


def cleanup_facet(summary: Mapping[str, Any]) -> Any:
    """From a cleanup run's summary (``CleanupResult.summary()``)."""
    _, cls = _classes()
    return cls(
        dryRun=bool(summary.get("dry_run")),
        candidates=summary.get("candidates"),
        deleted=list(summary.get("deleted") or []),
        wouldDelete=list(summary.get("would_delete") or []),
        skipped=list(summary.get("skipped") or []),
        failed=list(summary.get("failed") or []),
        notFound=list(summary.get("not_found") or []),
        backupUrl=summary.get("backup_url"),
        auditUrl=summary.get("audit_url"),
    )


__all__ = ["SCHEMA_BASE", "OFFSET_RANGE", "CLEANUP", "offset_range_facet", "cleanup_facet"]
