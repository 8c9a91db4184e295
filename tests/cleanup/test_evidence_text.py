"""The one renderer of dead-group evidence (cleanup/evidence_text.py): every finding and
permission in words, exactly as the CLI, the audit records, the logs and the Spark job show them.
The findings themselves are asserted as values in tests/lag/test_deadgroups.py."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.cleanup.evidence_text import format_duration
from airflow_provider_kgroups.client.errors import Failure
from airflow_provider_kgroups.client.results import GroupState, TopicExistence
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from airflow_provider_kgroups.lag.observation import GroupHistoryPoint
from tests.support.builders import HOUR, MINUTE, tp
from tests.support.deadgroups import BACKLOG, CAUGHT_UP, COMMITTED, NOW, UNREADABLE, idle_history, report

ABSENT, EXISTS, NOT_VISIBLE = TopicExistence.ABSENT, TopicExistence.EXISTS, TopicExistence.NOT_VISIBLE
EMPTY, OK = "state Empty: no members", "matches no deny pattern"
PAUSED = "paused: Empty, but no evidence that it is abandoned"
NO_HISTORY = "cannot tell how long it has been idle: no stored history"
NO_EXPIRY = (
    "Kafka expires its offsets 10080 min after it became Empty (KIP-211); when that was is not in the history"
)
IDLE_MEANS = "idle time counts only while Empty with records to read and no commit progress"
RUN = "Empty, with records to read and no commit progress, at every stored snapshot since"
NOT_MORE = "cannot tell whether it has been idle for more than idle_hours=48"
FULL = DeadGroupRules(idle_hours=48, assume_full_visibility=True)


def expiry(since: str, until: str) -> str:
    return (
        f"Empty since at least {since}: Kafka will expire its offsets at or before {until} "
        "(offsets.retention.minutes=10080, KIP-211)"
    )


def not_judged(kind: str) -> str:
    return (
        f"a {kind} group: the consumer-group rules do not apply to it, so it is never dead or deletable by them"
        f" (its owner can delete it with kafka-{kind}-groups.sh --delete --group <id>)"
    )


SCENARIOS = {
    "active": (dict(state="Stable", members={"m": [tp("orders", 0)]}), ("state Stable with 1 member(s)", OK)),
    "state Dead": (
        dict(state="Dead", committed={}),
        (
            "state Dead: the group does not exist, or Kafka already expired its offsets (nothing to delete)",
            OK,
        ),
    ),
    "idle: dead": (
        dict(history=idle_history(72)),
        (
            "dead: no commit progress for at least 72 h while Empty with records to read (idle_hours=48)",
            EMPTY,
            "no commit progress in the 72 h of stored history (since 2023-11-20 06:13 UTC)",
            f"idle for at least 72 h: {RUN} 2023-11-20 06:13 UTC",
            expiry("2023-11-20 06:13 UTC", "2023-11-27 06:13 UTC"),
            OK,
        ),
    ),
    "idle: members an hour ago": (
        dict(
            history=[
                p
                for p in idle_history(
                    216, state=GroupState.STABLE, members=3, log_end=CAUGHT_UP, every_hours=1
                )
                if p.at_ms <= NOW - HOUR
            ]
        ),
        (
            PAUSED,
            EMPTY,
            "no commit progress in the 216 h of stored history (since 2023-11-14 06:13 UTC)",
            f"not idle by the history: it had 3 member(s) in state Stable at 2023-11-23 05:13 UTC; {IDLE_MEANS}",
            expiry("2023-11-23 06:13 UTC", "2023-11-30 06:13 UTC"),
            OK,
        ),
    ),
    "idle: short, members before": (
        dict(
            history=[
                *idle_history(216, state=GroupState.STABLE, members=3)[:-1],
                GroupHistoryPoint(NOW - HOUR, GroupState.EMPTY, 0, COMMITTED, BACKLOG),
            ]
        ),
        (
            PAUSED,
            EMPTY,
            "no commit progress in the 216 h of stored history (since 2023-11-14 06:13 UTC)",
            f"idle for at least 1 h: {RUN} 2023-11-23 05:13 UTC (before that, it had 3 member(s) in state Stable at "
            "2023-11-22 18:13 UTC); less than idle_hours=48",
            expiry("2023-11-23 05:13 UTC", "2023-11-30 05:13 UTC"),
            OK,
        ),
    ),
    "idle: caught up": (
        dict(history=idle_history(216, log_end=CAUGHT_UP)),
        (
            PAUSED,
            EMPTY,
            "no commit progress in the 216 h of stored history (since 2023-11-14 06:13 UTC)",
            "not idle by the history: it had nothing to read at 2023-11-23 00:13 UTC (caught up on every partition); "
            f"{IDLE_MEANS}",
            expiry("2023-11-14 06:13 UTC", "2023-11-21 06:13 UTC"),
            OK,
        ),
    ),
    "idle: log ends not read": (
        dict(history=idle_history(216, log_end={})),
        (
            PAUSED,
            EMPTY,
            "no commit progress in the 216 h of stored history (since 2023-11-14 06:13 UTC)",
            f"{NOT_MORE}: nothing to read was known at 2023-11-23 00:13 UTC (log end offsets not read)",
            expiry("2023-11-14 06:13 UTC", "2023-11-21 06:13 UTC"),
            OK,
        ),
    ),
    "idle: the history begins": (
        dict(history=idle_history(12)),
        (
            PAUSED,
            EMPTY,
            "no commit progress in the 12 h of stored history (since 2023-11-22 18:13 UTC)",
            f"idle for at least 12 h: {RUN} 2023-11-22 18:13 UTC; less than idle_hours=48",
            f"{NOT_MORE}: idle at every stored snapshot since 2023-11-22 18:13 UTC, the first: the history does not "
            "reach further back",
            expiry("2023-11-22 18:13 UTC", "2023-11-29 18:13 UTC"),
            OK,
        ),
    ),
    "idle: exactly idle_hours": (
        dict(history=idle_history(48)),
        (
            PAUSED,
            EMPTY,
            "no commit progress in the 48 h of stored history (since 2023-11-21 06:13 UTC)",
            f"idle for at least 48 h: {RUN} 2023-11-21 06:13 UTC; not more than idle_hours=48",
            f"{NOT_MORE}: idle at every stored snapshot since 2023-11-21 06:13 UTC, the first: the history does not "
            "reach further back",
            expiry("2023-11-21 06:13 UTC", "2023-11-28 06:13 UTC"),
            OK,
        ),
    ),
    "idle: the history stopped": (
        dict(
            history=[
                p
                for p in idle_history(300, state=GroupState.STABLE, members=2)
                if p.at_ms <= NOW - 100 * HOUR
            ]
        ),
        (
            PAUSED,
            EMPTY,
            "no commit progress in the 300 h of stored history (since 2023-11-10 18:13 UTC)",
            f"{NOT_MORE}: it had 2 member(s) in state Stable at 2023-11-19 00:13 UTC, 102 h ago, and no stored "
            "snapshot since",
            expiry("2023-11-23 06:13 UTC", "2023-11-30 06:13 UTC"),
            OK,
        ),
    ),
    "idle: no history": (dict(), (PAUSED, EMPTY, NO_HISTORY, NO_EXPIRY, OK)),
    "idle: progress, then idle": (
        dict(
            committed={tp("orders", 0): 150},
            history=idle_history(100)[:-2]
            + [
                GroupHistoryPoint(
                    NOW - 6 * HOUR, GroupState.EMPTY, 0, {tp("orders", 0): 150}, {tp("orders", 0): 160}
                )
            ],
        ),
        (
            PAUSED,
            EMPTY,
            "last commit progress 6 h ago (2023-11-23 00:13 UTC)",
            f"idle for at least 6 h: {RUN} 2023-11-23 00:13 UTC (before that, its committed offsets changed after "
            "2023-11-22 14:13 UTC); less than idle_hours=48",
            expiry("2023-11-19 02:13 UTC", "2023-11-26 02:13 UTC"),
            OK,
        ),
    ),
    "idle: progress now": (
        dict(committed={tp("orders", 0): 120}, history=idle_history(100)),
        (
            PAUSED,
            EMPTY,
            "last commit progress 0 s ago (2023-11-23 06:13 UTC)",
            f"not idle by the history: its committed offsets changed after 2023-11-23 02:13 UTC; {IDLE_MEANS}",
            expiry("2023-11-19 02:13 UTC", "2023-11-26 02:13 UTC"),
            OK,
        ),
    ),
    "idle: seconds": (
        dict(
            history=[GroupHistoryPoint(NOW - 72_500, GroupState.EMPTY, 0, COMMITTED, BACKLOG)],
            rules=DeadGroupRules(idle_hours=0.02),
        ),
        (
            "dead: no commit progress for at least 1 min 12 s while Empty with records to read (idle_hours=0.02)",
            EMPTY,
            "no commit progress in the 1 min 12 s of stored history (since 2023-11-23 06:12 UTC)",
            f"idle for at least 1 min 12 s: {RUN} 2023-11-23 06:12 UTC",
            expiry("2023-11-23 06:12 UTC", "2023-11-30 06:12 UTC"),
            OK,
        ),
    ),
    "topics: deleted": (
        dict(topics=("other",), checks={"orders": ABSENT}),
        (
            "dead: every topic it committed to was deleted",
            EMPTY,
            "every committed topic was deleted (UNKNOWN_TOPIC_OR_PARTITION by name): orders",
            NO_HISTORY,
            NO_EXPIRY,
            OK,
        ),
    ),
    "topics: hidden": (
        dict(topics=("other",), checks={"orders": NOT_VISIBLE}),
        (
            PAUSED,
            EMPTY,
            "cannot tell whether every committed topic was deleted: orders not visible to this principal "
            "(TOPIC_AUTHORIZATION_FAILED)",
            NO_HISTORY,
            NO_EXPIRY,
            OK,
        ),
    ),
    "topics: listing only": (
        dict(topics=("other",)),
        (
            PAUSED,
            EMPTY,
            "cannot tell whether every committed topic was deleted: orders not in the topic list (which "
            "leaves out topics the principal may not Describe) and not checked by name",
            NO_HISTORY,
            NO_EXPIRY,
            OK,
        ),
    ),
    "topics: mixed": (
        dict(
            committed={tp(t, 0): 1 for t in "abcd"},
            topics=(),
            checks={"a": ABSENT, "b": NOT_VISIBLE, "c": Failure(7, "timed out")},
        ),
        (
            PAUSED,
            EMPTY,
            "1 of 4 committed topics no longer exist (checked by name): a",
            "cannot tell whether every committed topic was deleted: b not visible to this principal "
            "(TOPIC_AUTHORIZATION_FAILED); the check of c (REQUEST_TIMED_OUT: timed out) failed; d not checked by name",
            NO_HISTORY,
            NO_EXPIRY,
            OK,
        ),
    ),
    "topics: some not listed": (
        dict(committed={tp("orders", 0): 1, tp("gone", 0): 1}),
        (
            PAUSED,
            EMPTY,
            "1 of 2 committed topics are not in the topic list (not checked by name): gone",
            NO_HISTORY,
            NO_EXPIRY,
            OK,
        ),
    ),
    "commits: none visible": (
        dict(committed={}),
        (
            PAUSED,
            EMPTY,
            "no committed offsets",
            "cannot tell whether it has no committed offset at all: a fetch of all "
            "its offsets leaves out topics the principal may not Describe (set assume_full_visibility only if it may "
            "Describe every topic and group)",
            NO_HISTORY,
            OK,
        ),
    ),
    "commits: none at all": (
        dict(committed={}, rules=FULL),
        (
            "dead: it has no committed offset at all (assume_full_visibility)",
            EMPTY,
            "no committed offsets",
            NO_HISTORY,
            OK,
        ),
    ),
    "commits: unreadable": (
        dict(group_offsets=UNREADABLE, checks={"old": ABSENT, "orders": EXISTS}),
        (
            PAUSED,
            EMPTY,
            "cannot tell what it committed on orders[0] (UNSTABLE_OFFSET_COMMIT): its committed offsets there "
            "could not be read",
            "1 of 2 committed topics no longer exist (checked by name): old",
            NO_HISTORY,
            NO_EXPIRY,
            OK,
        ),
    ),
    "protocol connect": (
        dict(group_id="conn-worker", protocol_type="connect", history=idle_history(12)),
        (
            PAUSED,
            EMPTY,
            "protocol type 'connect' is not a plain consumer group: neither a missing commit nor a lack "
            "of commit progress is evidence against it",
            "no commit progress in the 12 h of stored history (since 2023-11-22 18:13 UTC)",
            f"idle for at least 12 h: {RUN} 2023-11-22 18:13 UTC; less than idle_hours=48",
            expiry("2023-11-22 18:13 UTC", "2023-11-29 18:13 UTC"),
            OK,
        ),
    ),
    "share, Empty": (
        dict(group_type="share", protocol_type="share"),
        (f"paused: state Empty, {not_judged('share')}", OK),
        (not_judged("share"),),
    ),
    "streams, Stable": (
        dict(group_type="streams", protocol_type="streams", state="Stable", members={"m": [tp("orders", 0)]}),
        ("state Stable with 1 member(s)", not_judged("streams"), OK),
    ),
    "deny": (
        dict(
            group_id="keep-me",
            rules=DeadGroupRules(allow=("re:.*",), deny=("keep-*",)),
            state="Stable",
            members={"m": []},
        ),
        ("state Stable with 1 member(s)", "matches the deny pattern 'keep-*': never deletable"),
    ),
    "allow": (
        dict(
            group_id="connect-old-1",
            rules=DeadGroupRules(allow=("connect-old-*",)),
            state="Stable",
            members={"m": []},
        ),
        ("state Stable with 1 member(s)", "matches the allow pattern 'connect-old-*'"),
    ),
    "not allowed": (
        dict(rules=DeadGroupRules(allow=("x-*",)), state="Stable", members={"m": []}),
        ("state Stable with 1 member(s)", "matches no allow pattern: not deletable"),
    ),
    "default deny": (
        dict(group_id="schema-registry", state="Stable", members={"m": []}),
        (
            "state Stable with 1 member(s)",
            "matches the default deny pattern 'schema-registry*' (a system group): not deletable",
        ),
    ),
    "streams app": (
        dict(
            group_id="wordcount",
            state="Stable",
            members={"m": []},
            topics=("wordcount-counts-changelog", "wordcount-x-repartition"),
        ),
        (
            "state Stable with 1 member(s)",
            "looks like a Kafka Streams application id (topic(s) "
            "wordcount-counts-changelog, wordcount-x-repartition exist): not deletable",
        ),
    ),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_finding_and_permission_in_words(name):
    kwargs, lines, *cannot_tell = SCENARIOS[name]
    r = report(**kwargs)
    assert r.evidence == lines
    assert r.cannot_tell == (
        cannot_tell[0]
        if cannot_tell
        else tuple(line for line in lines if line.startswith(("cannot tell", "a streams")))
    )
    assert r.to_dict()["evidence"] == list(lines)


@pytest.mark.parametrize(
    "ms, text",
    [
        (0, "0 s"),
        (999, "0 s"),
        (59_999, "59 s"),
        (60_000, "1 min"),
        (72_500, "1 min 12 s"),
        (HOUR - 1, "59 min 59 s"),
        (HOUR, "1 h"),
        (HOUR + 59_999, "1 h"),
        (216 * HOUR + 5 * MINUTE + 59_000, "216 h 5 min"),
        (-5, "0 s"),
    ],
)
def test_durations_are_floored(ms, text):
    assert format_duration(ms) == text
