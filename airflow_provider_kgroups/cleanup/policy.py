"""What a cleanup run may do: the rules, the scope, the caps, the overrides. Validated before
anything is sent; every field is checked here, so the CLI and the operator need no checks of
their own beyond turning their inputs into a :class:`CleanupPolicy`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from ..client.errors import ConfigurationError
from ..client.numbers import check_int, check_number
from ..client.selection import GroupSelector, validate_group_ids
from ..lag.deadgroups import DeadGroupRules

__all__ = ["CleanupPolicy", "CONNECT_DENY_PATTERN"]

#: The default deny pattern that Kafka Connect evidence ("its connector no longer exists") lifts.
CONNECT_DENY_PATTERN = "connect-*"


@dataclass(frozen=True, slots=True)
class CleanupPolicy:
    """
    :param rules: the evidence rules and patterns (:class:`~..lag.deadgroups.DeadGroupRules`).
    :param selector: groups judged by the evidence: only those it calls dead may be deleted
        (None: no such selection).
    :param named: groups named explicitly: deleted when Empty without members, whatever the
        evidence says (it is reported), still behind the deny lists.
    :param override_deny: exact group ids whose deny matches (user deny, default deny, Kafka
        Streams heuristic) are lifted for this run. Only by name: never a pattern.
    :param max_deletions: at most this many deletions per run.
    :param max_deletions_percent: at most this percentage of the candidates, rounded up.
    :param dry_run: decide and report, change nothing.
    :param delete_despite_unreadable_connect: when a configured Kafka Connect cluster cannot be
        read, delete anyway. By default such a run deletes nothing: a group named by one of that
        cluster's connectors' ``consumer.override.group.id`` cannot be recognised (a paused
        connector would re-deliver its topics when resumed), so every group that would go is
        kept, naming the cluster.
    """

    rules: DeadGroupRules = field(default_factory=DeadGroupRules)
    selector: GroupSelector | None = None
    named: tuple[str, ...] = ()
    override_deny: tuple[str, ...] = ()
    max_deletions: int = 10
    max_deletions_percent: float = 50.0
    dry_run: bool = True
    delete_despite_unreadable_connect: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.rules, DeadGroupRules):
            raise ConfigurationError(f"rules must be DeadGroupRules, got {type(self.rules).__name__}.")
        if self.selector is not None and not isinstance(self.selector, GroupSelector):
            raise ConfigurationError(f"selector must be a GroupSelector, got {type(self.selector).__name__}.")
        for name in ("named", "override_deny"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ConfigurationError(
                    f"{name} must be a list of group ids, not the single string {value!r}; write [{value!r}]."
                )
            object.__setattr__(self, name, tuple(validate_group_ids(value, what=name)) if value else ())
        if not self.named and self.selector is None:
            raise ConfigurationError(
                "nothing selected: name groups, or give patterns (e.g. 'tmp-*', or '*' for "
                "every group the evidence calls dead)."
            )
        check_int("max_deletions", self.max_deletions, at_least=0, must_be="a whole number >= 0")
        object.__setattr__(
            self,
            "max_deletions_percent",
            check_number(
                "max_deletions_percent",
                self.max_deletions_percent,
                at_least=0,
                at_most=100,
                must_be="between 0 and 100",
            ),
        )
        for name in ("dry_run", "delete_despite_unreadable_connect"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigurationError(f"{name} must be True or False, got {getattr(self, name)!r}.")

    def cap(self, candidates: int) -> int:
        """How many of ``candidates`` may be deleted in this run."""
        return min(self.max_deletions, math.ceil(self.max_deletions_percent * candidates / 100.0))

    def rules_overridden(self) -> DeadGroupRules:
        """The rules for a group in ``override_deny``: no deny of any kind (allow still restricts)."""
        return replace(self.rules, deny=(), default_deny=(), deny_streams_apps=False)

    def rules_connector_gone(self) -> DeadGroupRules:
        """The rules for a group whose connector no longer exists: the default ``connect-*`` deny lifted."""
        return replace(
            self.rules, default_deny=tuple(p for p in self.rules.default_deny if p != CONNECT_DENY_PATTERN)
        )

    def to_dict(self) -> dict[str, Any]:
        r = self.rules
        return {
            "idle_hours": r.idle_hours,
            "offsets_retention_minutes": r.offsets_retention_minutes,
            "assume_full_visibility": r.assume_full_visibility,
            "allow": list(r.allow),
            "deny": list(r.deny),
            "default_deny": list(r.default_deny),
            "deny_streams_apps": r.deny_streams_apps,
            "override_deny": list(self.override_deny),
            "max_deletions": self.max_deletions,
            "max_deletions_percent": self.max_deletions_percent,
            "dry_run": self.dry_run,
            "delete_despite_unreadable_connect": self.delete_despite_unreadable_connect,
            "named": list(self.named),
            "selector": None
            if self.selector is None
            else {
                "ids": list(self.selector.ids),
                "patterns": list(self.selector.patterns),
                "exclude": list(self.selector.exclude),
            },
        }
