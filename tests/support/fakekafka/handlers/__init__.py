"""API handlers: one function per Kafka API, ``handler(ctx) -> response object``.

A handler reads ``ctx.request`` (decoded at ``ctx.version``), the cluster state
(``ctx.cluster``, lock held) and scripted errors (``ctx.injected(key)``), and returns an
unencoded kafka.protocol response; :mod:`..dispatch` encodes and frames it.

- :mod:`.cluster_info`: ApiVersions, Metadata, FindCoordinator
- :mod:`.groups`: OffsetFetch, OffsetCommit, DescribeGroups, ConsumerGroupDescribe, ListGroups, DeleteGroups
- :mod:`.offsets`: OffsetDelete
- :mod:`.share`: DescribeShareGroupOffsets, AlterShareGroupOffsets
- :mod:`.logs`: ListOffsets, Fetch
- :mod:`.configs`: DescribeConfigs (topics)
- :mod:`.log_dirs`: DescribeLogDirs
- :mod:`.sasl`: SaslHandshake, SaslAuthenticate
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import cluster_info, configs, groups, log_dirs, logs, offsets, sasl, share

HANDLERS: dict[int, Callable[[Any], Any]] = {
    **cluster_info.HANDLERS,
    **configs.HANDLERS,
    **log_dirs.HANDLERS,
    **groups.HANDLERS,
    **logs.HANDLERS,
    **offsets.HANDLERS,
    **sasl.HANDLERS,
    **share.HANDLERS,
}

__all__ = ["HANDLERS"]
