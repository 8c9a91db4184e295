"""Kafka's own ``kafka-consumer-groups.sh`` as a test oracle: run the release's tool on a
:class:`~demo.apache_kafka.KafkaCluster` and read its tables.

    tool = ConsumerGroupsTool(cluster)
    rows = tool.table("--describe", "--group", "g", "--offsets")   # [{"GROUP": "g", "LAG": "3", ...}]
    blocks = tool.blocks("--describe", "--all-groups", "--state")  # one table per group

The tool prints left-aligned columns padded to the widest value (``ConsumerGroupCommand``'s
``%-Ns`` formats), so a row is cut at the positions where the header's names start; a header
name may hold a space ("COORDINATOR (ID)"), so the names are matched from a known list. "-"
is the tool's "none" and is kept as the string "-" (a test says what it expects there).
Lines that are not part of a table ("Consumer group 'g' has no active members.", warnings)
are kept in :attr:`ToolRun.notes`.

Also: :class:`LiveMember`, a confluent-kafka consumer polling in a thread (classic or KIP-848
protocol), to give a group a member whose id, host and client id both tools report.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from demo.apache_kafka import KafkaCluster
from demo.seed import Seeder, wait_until

__all__ = [
    "ConsumerGroupsTool",
    "LiveMember",
    "ToolError",
    "ToolRun",
    "kgroups_members_view",
    "kgroups_offsets_view",
    "kgroups_state_view",
    "parse_assignment",
    "parse_blocks",
    "tool_members_view",
    "tool_offsets_view",
    "tool_state_view",
    "wait_for_leaders",
]

#: Every column name the tool prints (4.x and 2.8), and kafka-streams-groups.sh's (4.4), longest
#: first so "COORDINATOR (ID)" wins.
KNOWN_HEADERS = sorted(
    [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "START-OFFSET",  # kafka-share-groups.sh --describe (KIP-932)
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "ASSIGNMENT",
        "COORDINATOR (ID)",
        "ASSIGNMENT-STRATEGY",
        "STATE",
        "#MEMBERS",
        "NEW-OFFSET",
        "STATUS",
        "TYPE",
        "PROTOCOL",
        "GROUP-EPOCH",
        "CURRENT-EPOCH",
        "CURRENT-ASSIGNMENT",
        "TARGET-EPOCH",
        "TARGET-ASSIGNMENT-EPOCH",
        "MEMBER-EPOCH",
        "TARGET-ASSIGNMENT",
        "LEADER-EPOCH",
        "PROTOCOL-TYPE",
        "ERROR",
        "UPGRADED",
        # kafka-streams-groups.sh (StreamsGroupCommand)
        "OFFSET-LAG",
        "MEMBER",
        "PROCESS",
        "ASSIGNMENTS",
        "ASSIGNOR",
        "TOPOLOGY-EPOCH",
        "MEMBER-PROTOCOL",
    ],
    key=len,
    reverse=True,
)


class ToolError(AssertionError):
    """The tool exited with an error the test did not expect."""


def _header_positions(line: str) -> list[tuple[int, str]] | None:
    """Where each column of a header line starts, or None when the line is not a header."""
    found: list[tuple[int, str]] = []
    pos = 0
    while pos < len(line):
        if line[pos] == " ":
            pos += 1
            continue
        for name in KNOWN_HEADERS:
            end = pos + len(name)
            if line.startswith(name, pos) and (end == len(line) or line[end] == " "):
                found.append((pos, name))
                pos = end
                break
        else:
            return None
    return found if len(found) >= 2 and found[0][1] in ("GROUP", "TOPIC") else None


def _cut(line: str, positions: list[tuple[int, str]]) -> dict[str, str]:
    row = {}
    for i, (start, name) in enumerate(positions):
        end = positions[i + 1][0] if i + 1 < len(positions) else len(line)
        row[name] = line[start:end].strip()
    return row


def parse_blocks(text: str) -> tuple[list[list[dict[str, str]]], list[str]]:
    """The tables in the tool's output (each a list of rows keyed by column name) and the other lines."""
    blocks: list[list[dict[str, str]]] = []
    notes: list[str] = []
    positions = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            positions = None
            continue
        header = _header_positions(line)
        if header is not None:
            positions = header
            blocks.append([])
            continue
        if positions is None:
            notes.append(line.strip())
            continue
        blocks[-1].append(_cut(line, positions))
    return blocks, notes


@dataclass
class ToolRun:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    blocks: list[list[dict[str, str]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> list[dict[str, str]]:
        return [row for block in self.blocks for row in block]

    def check(self) -> ToolRun:
        if self.returncode != 0:
            raise ToolError(
                f"kafka-consumer-groups {' '.join(self.args)} exited {self.returncode}:\n"
                f"{self.stdout}\n{self.stderr}"
            )
        return self


class ConsumerGroupsTool:
    """``kafka-consumer-groups.sh --bootstrap-server <cluster>`` of the cluster's own release."""

    def __init__(self, cluster: KafkaCluster, *, bootstrap: str | None = None) -> None:
        self.cluster = cluster
        self.bootstrap = bootstrap or cluster.bootstrap

    def run(self, *args: str, timeout: float = 120.0, input_text: str | None = None) -> ToolRun:
        # --describe waits --timeout for its admin calls, 5 s by default: a busy two-core machine
        # has seen 2.8.2's FindCoordinator take longer ("Timed out waiting for a node assignment").
        patience = ("--timeout", "60000") if "--describe" in args and "--timeout" not in args else ()
        done: subprocess.CompletedProcess[str] = self.cluster.run_tool(
            self.cluster.consumer_groups_tool,
            "--bootstrap-server",
            self.bootstrap,
            *args,
            *patience,
            timeout=timeout,
            input_text=input_text,
        )
        blocks, notes = parse_blocks(done.stdout)
        return ToolRun(args, done.returncode, done.stdout, done.stderr, blocks, notes)

    def table(self, *args: str) -> list[dict[str, str]]:
        """Every row of a run that must succeed."""
        return self.run(*args).check().rows

    def list_groups(self, *args: str) -> set[str] | list[dict[str, str]]:
        """``--list``: the ids (no extra column asked) or rows (with ``--state`` / ``--type``)."""
        run = self.run("--list", *args).check()
        if run.blocks:
            return run.rows
        return {line for line in run.notes}


class LiveMember:
    """A confluent-kafka consumer that subscribes and polls in a thread until :meth:`stop`, never
    committing (so the group's committed offsets stay what the test seeded). ``protocol`` is
    ``classic`` or ``consumer`` (KIP-848)."""

    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        topics: Iterable[str],
        *,
        client_id: str,
        protocol: str = "classic",
    ) -> None:
        from confluent_kafka import Consumer

        config = {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "client.id": client_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "group.protocol": protocol,
        }
        if protocol == "classic":
            config["session.timeout.ms"] = 10_000
        self.group_id = group_id
        self._consumer = Consumer(config)
        self._consumer.subscribe(list(topics))
        self._assigned: list[tuple[str, int]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name=f"live-{group_id}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self._consumer.poll(0.1)
                assignment = [(tp.topic, tp.partition) for tp in self._consumer.assignment()]
                with self._lock:
                    self._assigned = assignment
        except BaseException as exc:  # reported by wait_assigned
            self.error = exc
        finally:
            self._consumer.close()

    @property
    def assigned(self) -> list[tuple[str, int]]:
        with self._lock:
            return list(self._assigned)

    def wait_assigned(self, count: int, timeout: float = 60.0) -> list[tuple[str, int]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.error is not None:
                raise AssertionError(f"live member of {self.group_id!r} failed: {self.error!r}")
            if len(self.assigned) >= count:
                return self.assigned
            time.sleep(0.05)
        raise AssertionError(
            f"live member of {self.group_id!r}: {count} partition(s) not assigned within "
            f"{timeout:.0f} s (has {self.assigned})"
        )

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


# -- the same view of a group from both tools (``kgroups --format json`` on one side) ---------------


def _none(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def parse_assignment(text: str) -> dict[str, list[int]]:
    """The tool's assignment column: ``t:0,1,2;u:0`` (3.x/4.x) or ``t(0,1,2),u(0)`` (2.8); "-" or blank: none."""
    text = text.strip()
    if text in ("", "-"):
        return {}
    if "(" in text:
        pairs = [(t, ps.rstrip(")")) for t, ps in (part.split("(", 1) for part in text.split("),") if part)]
    else:
        pairs = [tuple(part.rsplit(":", 1)) for part in text.split(";") if part]  # type: ignore[misc]
    return {topic: sorted(int(p) for p in partitions.split(",") if p) for topic, partitions in pairs}


def tool_offsets_view(rows: list[dict[str, str]]) -> dict[tuple[str, str, int], tuple[str, ...]]:
    """``--describe --offsets``: (group, topic, partition) -> current, log end, lag, consumer id, host, client id."""
    return {
        (r["GROUP"], r["TOPIC"], int(r["PARTITION"])): tuple(
            _none(r[c])
            for c in ("CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")
        )
        for r in rows
    }


def kgroups_offsets_view(lag: dict, described: dict) -> dict[tuple[str, str, int], tuple[str, ...]]:
    """The same from ``kgroups lag`` (offsets, owner's member id) and ``kgroups describe`` (the owner's host, client id)."""
    view = {}
    for group, data in lag["groups"].items():
        by_member = {m["member_id"]: m for m in described[group]["members"]}
        for p in data["partitions"]:
            owner = by_member.get(p["assigned_to"]) or {}
            view[(group, p["topic"], p["partition"])] = (
                _none(p["committed"]),
                _none(p["log_end"]),
                _none(p["lag"]),
                _none(owner.get("member_id")),
                _none(owner.get("client_host")),
                _none(owner.get("client_id")),
            )
    return view


def tool_members_view(rows: list[dict[str, str]]) -> dict[tuple[str, str], tuple]:
    """``--describe --members --verbose``: (group, member id) -> host, client id, #partitions, assignment."""
    column = "CURRENT-ASSIGNMENT" if rows and "CURRENT-ASSIGNMENT" in rows[0] else "ASSIGNMENT"
    return {
        (r["GROUP"], r["CONSUMER-ID"]): (
            r["HOST"],
            r["CLIENT-ID"],
            int(r["#PARTITIONS"]),
            parse_assignment(r[column]),
        )
        for r in rows
    }


def kgroups_members_view(described: dict) -> dict[tuple[str, str], tuple]:
    return {
        (group, m["member_id"]): (
            m["client_host"],
            m["client_id"],
            sum(len(ps) for ps in m["assignment"].values()),
            {t: sorted(ps) for t, ps in m["assignment"].items()},
        )
        for group, d in described.items()
        for m in d["members"]
    }


def tool_state_view(rows: list[dict[str, str]]) -> dict[str, tuple[str, str, str, str]]:
    """``--describe --state``: group -> coordinator id, assignment strategy, state, member count."""
    return {
        r["GROUP"]: (
            r["COORDINATOR (ID)"].rsplit("(", 1)[1].rstrip(")"),
            _none(r["ASSIGNMENT-STRATEGY"]),
            r["STATE"],
            r["#MEMBERS"],
        )
        for r in rows
    }


def kgroups_state_view(described: dict) -> dict[str, tuple[str, str, str, str]]:
    return {
        g: (str(d["coordinator_id"]), _none(d["protocol"]), d["state"], str(len(d["members"])))
        for g, d in described.items()
    }


def wait_for_leaders(seed: Seeder, topics: dict[str, int], timeout: float = 30.0) -> None:
    """Wait until every partition's leader answers ListOffsets: metadata may name a leader a
    moment before that broker takes the partition (a produce then fails NOT_LEADER_OR_FOLLOWER)."""
    from kafka.errors import KafkaError

    def answered() -> bool:
        try:
            for topic, partitions in topics.items():
                seed.end_offsets(topic, range(partitions))
        except KafkaError:
            return False
        return True

    wait_until(answered, timeout, f"leaders of {sorted(topics)}", interval=0.1)
