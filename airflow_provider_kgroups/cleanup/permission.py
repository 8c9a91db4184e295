"""May a group be deleted, by the patterns alone (whatever the evidence says)? One precedence,
first match wins:

1. a user ``deny`` pattern: never;
2. a user ``allow`` pattern: yes (an explicit allow overrides a default deny);
3. ``allow`` given and none matches: no;
4. a default deny pattern (system groups: ``connect-*``, ``_confluent*``, ``__*``,
   ``schema-registry*``): no;
5. a Kafka Streams application id (``deny_streams_apps``: a ``<group>-...-changelog`` or
   ``-repartition`` topic is in the listing): no;
6. otherwise: yes.

Patterns are globs, or ``re:`` regular expressions (:func:`..client.selection.compile_pattern`),
read from :class:`~..lag.deadgroups.DeadGroupRules`. The run's overrides (``override_deny``,
Kafka Connect evidence lifting ``connect-*``) are rule sets of
:class:`~.policy.CleanupPolicy`, evaluated here like any other.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any

from ..client.selection import compile_pattern
from ..lag.deadgroups import DeadGroupRules

__all__ = ["PermissionReason", "Permission", "permission", "denied_by", "first_match"]

_STREAMS_SUFFIXES = ("-changelog", "-repartition")
_compiled = lru_cache(maxsize=4096)(compile_pattern)


class PermissionReason(str, Enum):
    DENY = "deny"
    ALLOW = "allow"
    NOT_ALLOWED = "not_allowed"
    DEFAULT_DENY = "default_deny"
    STREAMS_APP = "streams_app"
    NO_DENY = "no_deny"

    @property
    def permits(self) -> bool:
        return self in (PermissionReason.ALLOW, PermissionReason.NO_DENY)


@dataclass(frozen=True, slots=True)
class Permission:
    reason: PermissionReason
    pattern: str | None = None  # the pattern that matched (DENY, ALLOW, DEFAULT_DENY)
    topics: tuple[str, ...] = ()  # STREAMS_APP: the topics that show it (at most three)

    @property
    def permitted(self) -> bool:
        return self.reason.permits

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason.value,
            "permitted": self.permitted,
            "pattern": self.pattern,
            "topics": list(self.topics),
        }


def first_match(patterns: tuple[str, ...], group_id: str) -> str | None:
    """The first of ``patterns`` that matches ``group_id``."""
    return next((p for p in patterns if _compiled(p).match(group_id)), None)


def permission(group_id: str, rules: DeadGroupRules, topics: Collection[str] | None) -> Permission:
    """The precedence above; ``topics``: a topic listing, for the Streams heuristic (None: none)."""
    if (pattern := first_match(rules.deny, group_id)) is not None:
        return Permission(PermissionReason.DENY, pattern)
    if (pattern := first_match(rules.allow, group_id)) is not None:
        return Permission(PermissionReason.ALLOW, pattern)
    if rules.allow:
        return Permission(PermissionReason.NOT_ALLOWED)
    if (pattern := first_match(rules.default_deny, group_id)) is not None:
        return Permission(PermissionReason.DEFAULT_DENY, pattern)
    if rules.deny_streams_apps and topics:
        prefix = group_id + "-"
        streams = sorted(t for t in topics if t.startswith(prefix) and t.endswith(_STREAMS_SUFFIXES))
        if streams:
            return Permission(PermissionReason.STREAMS_APP, topics=tuple(streams[:3]))
    return Permission(PermissionReason.NO_DENY)


def denied_by(group_id: str, rules: DeadGroupRules) -> Permission | None:
    """The deny pattern (user, then default) an override lifts for ``group_id``, if one matches."""
    if (pattern := first_match(rules.deny, group_id)) is not None:
        return Permission(PermissionReason.DENY, pattern)
    if (pattern := first_match(rules.default_deny, group_id)) is not None:
        return Permission(PermissionReason.DEFAULT_DENY, pattern)
    return None
