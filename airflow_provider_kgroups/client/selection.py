"""Choosing groups by exact ids and patterns, validated before anything is sent."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigurationError, IncompleteListingError
from .results import GroupListing

REGEX_PREFIX = "re:"


def validate_group_ids(group_ids: Iterable[str], *, what: str = "group_ids") -> list[str]:
    """A non-empty list of non-empty strings, duplicates dropped (order kept).

    Kafka refuses only null and empty group ids; any other string (" " included) is a valid
    group, so it is accepted here too."""
    if isinstance(group_ids, str):
        raise ConfigurationError(
            f"{what} must be a list of group ids, not the single string {group_ids!r}; write [{group_ids!r}]."
        )
    ids = list(dict.fromkeys(group_ids))
    if not ids:
        raise ConfigurationError(f"{what} is empty: name at least one consumer group.")
    bad = [g for g in ids if not isinstance(g, str) or not g]
    if bad:
        raise ConfigurationError(
            f"{what} contains {bad[0]!r}: every group id must be a non-empty string "
            "(Kafka refuses only null and empty ids)."
        )
    return ids


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """A glob (``orders-*``) or, with the ``re:`` prefix, a regular expression matched in full."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise ConfigurationError(
            f"group pattern {pattern!r} is empty: use a glob such as 'orders-*' "
            f"or a regex such as 're:orders-[0-9]+'."
        )
    if pattern.startswith(REGEX_PREFIX):
        body = pattern[len(REGEX_PREFIX) :]
        try:
            return re.compile(rf"(?:{body})\Z")
        except re.error as exc:
            raise ConfigurationError(
                f"group pattern {pattern!r} is not a valid regular expression: {exc}."
            ) from None
    if _unclosed_class(pattern):
        raise ConfigurationError(
            f"group pattern {pattern!r} has an unclosed '[': close the character class or escape it as '[[]'."
        )
    return re.compile(fnmatch.translate(pattern))


def _unclosed_class(pattern: str) -> bool:
    """True when a '[' opens a character class that never closes (fnmatch would silently take
    it literally). As in fnmatch, a ']' right after '[' or '[!' is part of the class."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] == "!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            j = pattern.find("]", j)
            if j < 0:
                return True
            i = j
        i += 1
    return False


@dataclass(frozen=True)
class GroupSelector:
    """Exact ids plus include patterns, minus exclude patterns. Exact ids are never excluded."""

    ids: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    _include: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _exclude: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.ids, str) or isinstance(self.patterns, str) or isinstance(self.exclude, str):
            raise ConfigurationError("group ids, patterns and excludes must be lists, not single strings.")
        if not self.ids and not self.patterns:
            raise ConfigurationError(
                "no groups selected: give group ids, patterns (e.g. 'orders-*'), or both."
            )
        if self.ids:
            validate_group_ids(self.ids)
        object.__setattr__(self, "_include", tuple(compile_pattern(p) for p in self.patterns))
        object.__setattr__(self, "_exclude", tuple(compile_pattern(p) for p in self.exclude))

    @property
    def needs_listing(self) -> bool:
        return bool(self.patterns)

    def matches(self, group_id: str) -> bool:
        if group_id in self.ids:
            return True
        return any(p.match(group_id) for p in self._include) and not any(
            p.match(group_id) for p in self._exclude
        )

    def select(self, listed: Iterable[str]) -> list[str]:
        """The exact ids (listed or not) followed by the listed groups that match. An empty id
        (a pre-2.2 broker may still list one) cannot be addressed by any admin API: skipped."""
        chosen = dict.fromkeys(self.ids)
        names = sorted(g for g in listed if g)
        # pattern by pattern over every name (the loops in C: 100,000 listed groups), not the
        # patterns name by name; the same sets as matches() gives
        matched: set[str] = set()
        for pattern in self._include:
            matched.update(_matching(pattern, names))
        for pattern in self._exclude:
            matched.difference_update(_matching(pattern, matched))
        for group_id in names:
            if group_id in matched:
                chosen.setdefault(group_id)
        return list(chosen)


def _matching(pattern: re.Pattern[str], names: Iterable[str]) -> list[str]:
    match: Callable[[str], object] = pattern.match
    return list(filter(match, names))


async def select_groups(
    aclient: Any, selector: GroupSelector, *, timeout_s: float | None = None
) -> list[str]:
    """The one selection routine of every caller (CLI, hook, operators, sensor).

    Exact ids need no listing. Patterns are matched against every broker's ListGroups
    (de-duplicated by group id, as the Java admin client's ``listConsumerGroups`` does); if any
    broker's listing failed after its retries, this raises :class:`IncompleteListingError`
    naming the brokers instead of selecting from a partial listing.
    ``aclient`` is an :class:`~.client.AsyncGroupsClient`."""
    return (await select_listed(aclient, selector, timeout_s=timeout_s))[0]


async def select_listed(
    aclient: Any, selector: GroupSelector, *, timeout_s: float | None = None
) -> tuple[list[str], dict[str, GroupListing]]:
    """:func:`select_groups`, and what the listing said of each selected group (empty when the
    selection needed no listing). A group that two brokers listed (its coordinator moving
    between them) has no entry: neither answer is known to be the current one."""
    if not selector.needs_listing:
        return list(selector.ids), {}
    listed = await aclient.list_groups(timeout_s=timeout_s)
    if listed.broker_failures:
        raise IncompleteListingError(dict(listed.broker_failures))
    ids = selector.select(g.group_id for g in listed.groups)
    chosen = set(ids) - listed.listed_twice
    return ids, {g.group_id: g for g in listed.groups if g.group_id in chosen}
