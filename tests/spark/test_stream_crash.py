"""A streaming ``kgroups`` job with ``commitToGroup`` SIGKILLed in the middle of a micro-batch: a
real child process (tests/support/stream_job.py: its own ``local[2]`` Spark, a parquet file sink,
``Trigger.AvailableNow``) on the session's Apache Kafka broker.

The child blocks inside one micro-batch (a ``mapInArrow`` stage that, on seeing a chosen
offset, creates a marker file and waits); the test waits for the marker, kills the child's whole
session (the driver JVM, the streaming source's Python runner, the Python workers) and checks,
with nothing left running: the group is never ahead of what the sink has committed (the
file sink's ``_spark_metadata`` log: ``spark.read.parquet`` reads only committed batches). A
rerun on the same checkpoint then ends the run: every record in the sink exactly once, and the
group at the log end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from airflow_provider_kgroups.client.config import ClientConfig
from airflow_provider_kgroups.client.sync import GroupsClient

ROOT = Path(__file__).resolve().parents[2]
PER_PARTITION = 1500  # two partitions
MAX_OFFSETS = 300  # 150 per partition and batch: 10 batches
BLOCK_AT = (0, 700)  # in batch 4 (offsets 600..749 of each partition): batches 0-3 are done by then
# deadlines: about 20 s each on an idle 2-core machine, up to 80 s seen under other jobs' load
START_S, RUN_S, KILL_S = 240.0, 240.0, 20.0


def seed_topic(bootstrap: str, topic: str) -> None:
    """Values "p<partition>-<offset>", unique over the topic; written in batches (a few hundred ms)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=20, batch_size=64 * 1024)
    try:
        futures = [
            producer.send(topic, value=b"p%d-%05d" % (partition, i), partition=partition)
            for partition in (0, 1)
            for i in range(PER_PARTITION)
        ]
        producer.flush(timeout=30)
        written = Counter(f.get(timeout=30).partition for f in futures)
    finally:
        producer.close(timeout=30)
    assert written == {0: PER_PARTITION, 1: PER_PARTITION}


def committed(bootstrap: str, group: str) -> dict[int, int]:
    with GroupsClient(ClientConfig.create(bootstrap)) as client:
        found = client.fetch_committed_offsets([group]).values[group]
    return {tp.partition: c.offset for tp, c in found.partitions.items() if c.offset is not None}


class Job:
    """tests/support/stream_job.py in a session of its own (start_new_session), output to files."""

    def __init__(self, argv: list[str], logs: Path) -> None:
        self.logs = logs
        self.out = open(logs.with_suffix(".out"), "w+b")  # noqa: SIM115 - closed in close()
        self.err = open(logs.with_suffix(".err"), "w+b")  # noqa: SIM115 - closed in close()
        env = {
            **os.environ,
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.stream_job", *argv],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.out,
            stderr=self.err,
            start_new_session=True,
        )
        self.sid = self.proc.pid  # setsid: the session and the process group are named after it

    def tail(self, most: int = 3000) -> str:
        texts = []
        for f, name in ((self.out, "stdout"), (self.err, "stderr")):
            f.flush()
            f.seek(0)
            texts.append(f"{name}: {f.read().decode(errors='replace')[-most:]}")
        return "\n".join(texts)

    def members(self) -> list[int]:
        """The live processes of the job's session. PySpark's worker daemon moves itself and its
        workers to a process group of its own (daemon.py: ``os.setpgid(0, 0)``), so the group
        is not enough; nothing here leaves the session."""
        found = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as handle:
                    stat = handle.read()
            except OSError:  # gone meanwhile
                continue
            fields = stat[stat.rindex(b")") + 2 :].split()  # state ppid pgrp session ...
            if int(fields[3]) == self.sid and fields[0] != b"Z":
                found.append(int(entry.name))
        return found

    def kill(self) -> None:
        """SIGKILL to every process of the job, then wait (with a deadline) until none is left."""
        try:
            os.killpg(self.sid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + KILL_S
        while left := self.members():
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            assert time.monotonic() < deadline, f"processes {left} of the job survived SIGKILL for {KILL_S} s"
            time.sleep(0.02)
        self.proc.wait(timeout=KILL_S)

    def wait_for(self, predicate, timeout: float, what: str) -> None:
        """Until ``predicate()``; fails when the job exits first or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while not predicate():
            code = self.proc.poll()
            assert code is None, f"the job exited ({code}) before {what}\n{self.tail()}"
            assert time.monotonic() < deadline, f"no {what} within {timeout} s\n{self.tail()}"
            time.sleep(0.02)

    def finish(self, timeout: float) -> str:
        """Its stdout once it exits by itself with 0."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the job did not end within {timeout} s\n{self.tail()}")
        assert code == 0, f"the job failed ({code})\n{self.tail()}"
        self.out.seek(0)
        return self.out.read().decode()

    def close(self) -> None:
        if self.proc.poll() is None or self.members():
            self.kill()
        self.out.close()
        self.err.close()


def batch_ids(log: Path) -> list[int]:
    """The batch ids in a checkpoint's offsets/ or commits/ log."""
    return sorted(int(f.name) for f in log.iterdir() if f.name.isdigit())


def sink_rows(spark, out: Path) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every row the file sink has committed: with the sink's
    ``_spark_metadata`` log under ``out``, Spark reads only the files of committed batches."""
    assert (out / "_spark_metadata").is_dir()
    rows = spark.read.parquet(str(out)).select("partition", "offset", "value").collect()
    return [(r.partition, r.offset, bytes(r.value)) for r in rows]


def test_a_job_killed_in_a_batch_leaves_the_group_behind_its_sink_and_a_rerun_ends_exactly_once(
    spark_factory, broker, seed, name_prefix, tmp_path
):
    started = time.monotonic()
    timings: dict[str, float] = {}
    topic, group = f"{name_prefix}events", f"{name_prefix}stream-job"
    seed.create_topic(topic, 2)
    seed_topic(broker.bootstrap, topic)
    timings["seeded"] = time.monotonic() - started
    out, checkpoint, marker = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "blocked"
    argv = [broker.bootstrap, topic, group, str(out), str(checkpoint), str(MAX_OFFSETS)]
    jobs: list[Job] = []
    try:
        first = Job(
            [*argv, "--block-at", f"{BLOCK_AT[0]}:{BLOCK_AT[1]}", "--marker", str(marker)], tmp_path / "first"
        )
        jobs.append(first)
        spark = spark_factory()  # the test's own Spark (for reading the sink), started meanwhile
        first.wait_for(marker.exists, START_S, f"the marker (the batch with offset {BLOCK_AT} blocked)")
        timings["blocked"] = time.monotonic() - started
        first.kill()
        timings["killed"] = time.monotonic() - started
        assert first.proc.returncode == -signal.SIGKILL, f"the job ended by itself\n{first.tail()}"

        group_at_kill = committed(broker.bootstrap, group)
        planned, done = batch_ids(checkpoint / "offsets"), batch_ids(checkpoint / "commits")
        assert planned and max(planned) == max(done, default=-1) + 1, (
            f"not killed in a batch: offsets log {planned}, commit log {done}"
        )
        at_kill = sink_rows(spark, out)
        sink_end = {p: 1 + max(o for q, o, _ in at_kill if q == p) for p in {p for p, _, _ in at_kill}}
        print(f"at the kill: group {group_at_kill}, sink ends {sink_end} ({len(at_kill)} rows)")
        assert group_at_kill, "the group had no commit yet: the kill came too early to show anything"
        ahead = {p: o for p, o in group_at_kill.items() if o > sink_end.get(p, 0)}
        assert not ahead, f"the group {group_at_kill} is ahead of the sink {sink_end} in partition(s) {ahead}"
        assert not any(p == BLOCK_AT[0] and o >= BLOCK_AT[1] for p, o, _ in at_kill), (
            "the blocked batch is in the sink: the kill did not land in the middle of it"
        )
        timings["checked at the kill"] = time.monotonic() - started

        second = Job(argv, tmp_path / "second")
        jobs.append(second)
        summary = json.loads(second.finish(RUN_S).strip().splitlines()[-1])
        timings["rerun done"] = time.monotonic() - started
    finally:
        for job in jobs:
            job.close()

    rows = sink_rows(spark, out)
    expected = [(p, o) for p in (0, 1) for o in range(PER_PARTITION)]
    by_position = Counter((p, o) for p, o, _ in rows)
    assert [k for k, n in by_position.items() if n > 1] == [], "records in the sink twice"
    assert sorted(by_position) == expected, f"{len(expected) - len(by_position)} record(s) missing"
    by_value = Counter(v for _, _, v in rows)
    assert sorted(by_value) == sorted(b"p%d-%05d" % (p, o) for p, o in expected)
    assert max(by_value.values()) == 1
    # the rerun read the lost batch again, and the rest
    assert summary["rows"] == len(expected) - len(at_kill)
    assert seed.end_offsets(topic, [0, 1]) == {0: PER_PARTITION, 1: PER_PARTITION}
    assert committed(broker.bootstrap, group) == {0: PER_PARTITION, 1: PER_PARTITION}
    print(f"timings (s from the start): {json.dumps({k: round(v, 1) for k, v in timings.items()})}")
    print(f"rerun: {summary}")
