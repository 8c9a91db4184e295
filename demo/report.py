"""What the demo prints after the flagship DAG's run: the gate's wait, the cleanup's decisions,
what Spark produced from the landing files and from Kafka, each checked against the
producer's own log of the range. Read from the run's outputs (manifests, the audit record,
the Airflow metadata database), never from the DAG's code."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from datetime import datetime
from pathlib import Path

from demo.landing import expected_totals
from demo.scenario import DAG_ID, LANDING_GROUP, ROOT, TOPIC, WORK
from demo.source_check import COLUMNS, NotCompared, SourceComparison


def say(text: str = "") -> None:
    print(text, flush=True)


def rel(path) -> str:
    text = str(path)
    return text[len(str(ROOT)) + 1 :] if text.startswith(str(ROOT) + "/") else text


def task_states() -> dict[str, str]:
    """Task states of the run, read from the sqlite metadata database (read-only)."""
    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{WORK / 'airflow' / 'airflow.db'}?mode=ro", uri=True)
        ) as db:
            rows = db.execute(
                "SELECT task_id, state FROM task_instance WHERE dag_id = ?", (DAG_ID,)
            ).fetchall()
        return {task: state or "none" for task, state in rows}
    except sqlite3.Error as exc:
        return {"(unreadable)": str(exc)}


def offsets_of(text: str) -> dict[int, int]:
    return {int(p): o for p, o in json.loads(text).get(TOPIC, {}).items()}


def fmt_offsets(offsets: dict) -> str:
    return "  ".join(f"{TOPIC}[{p}]={o}" for p, o in sorted(offsets.items(), key=lambda kv: int(kv[0])))


def summary(records, log: Path, interval_end: datetime | None = None) -> bool:
    """``interval_end``: the data interval's end the gate's barrier was fixed at (None: the log end, on Tansu)."""
    states = task_states()
    say(
        "\ntasks      "
        + ", ".join(f"{t} {s}" for t, s in sorted(states.items(), key=lambda kv: ORDER.get(kv[0], 9)))
    )
    manifests = sorted((WORK / "output").glob("run=*/source=landing/_manifest.json"))
    audits = sorted((WORK / "history" / "_audit").glob("*.json"))
    ok = True

    if manifests:
        manifest = json.loads(manifests[-1].read_text())
        gate = manifest["gate"]
        barrier = offsets_of(manifest["endingOffsets"])
        reached = {int(p): o for p, o in gate["reached"].get(LANDING_GROUP, {}).get(TOPIC, {}).items()}
        say("\nGate (wait_for_landing, deferrable ConsumerLagSensor, barrier mode)")
        say(
            f"  waited   {gate['waited_s']:.1f} s over {gate['checks']} checks, then opened: {LANDING_GROUP} had "
            f"committed up to the barrier on all {len(barrier)} partitions"
        )
        if interval_end is None:
            say(
                f"  barrier  {fmt_offsets(barrier)}   (the log end at the first check: Tansu 0.6.0 cannot answer "
                "ListOffsets by timestamp, so the run used barrier='log_end')"
            )
        else:
            end_ms = int(interval_end.timestamp() * 1000)
            below = [r for r in records if r.offset < barrier.get(r.partition, 0)]
            late = [r for r in records if r.offset >= barrier.get(r.partition, 0) and r.timestamp_ms < end_ms]
            exact = all(r.timestamp_ms < end_ms for r in below) and not late
            say(
                f"  barrier  {fmt_offsets(barrier)}   (per partition, the first offset written at or after "
                f"{interval_end:%Y-%m-%d %H:%M:%S} UTC, the data interval's end: ListOffsets by timestamp)"
            )
            say(
                f"  check    every one of the {len(below)} records below the barrier was written before the interval's "
                f"end, every record at or above it after: {'yes' if exact else 'NO'}"
            )
            ok = ok and exact
        say(f"  reached  {fmt_offsets(reached)}   (committed offsets at the check that opened it)")
    else:
        ok = False
        say("\nGate: no Spark output, so no record of the gate's result (see the log)")

    if audits:
        audit = json.loads(audits[-1].read_text())
        decisions = audit["decisions"]
        s = audit["summary"]
        say(
            f"\nCleanup (clean_dead_groups, dry run {'ON' if s['dry_run'] else 'off'}; caps: "
            f"{audit['rules']['max_deletions']} deletions and {audit['rules']['max_deletions_percent']:g} % of the "
            "candidates per run; default deny patterns; a second describe before deleting; backups)"
        )
        order = {"deleted": 0, "would_delete": 1, "skip": 2, "failed": 3, "not_found": 4, "keep": 5}
        for group_id, d in sorted(decisions.items(), key=lambda kv: (order.get(kv[1]["decision"], 9), kv[0])):
            label = {"keep": "kept", "skip": "skipped", "not_found": "not found"}.get(
                d["decision"], d["decision"]
            )
            say(f"  {label:8} {group_id:20} {_short_reason(d['reason'])}")
        connect_lines = {g: d["connect"] for g, d in decisions.items() if d.get("connect")}
        if connect_lines:
            say(f"  Kafka Connect evidence ({', '.join(audit.get('connect_clusters') or [])}):")
            for group_id, verdict in sorted(connect_lines.items()):
                say(f"  connect  {group_id:20} {verdict['status'].upper()}: {verdict['reason']}")
        elif any(g.startswith("connect-") for g in decisions):
            ok = False
            say("  connect  no Kafka Connect evidence in the audit record (connect_conn_ids not set?)")
        if s.get("backup_url"):
            say(
                f"  backup   {rel(s['backup_url'])}   (undo: KafkaGroupsHook('kgroups_default')"
                f".restore_offsets({s['backup_url']!r}))"
            )
    else:
        ok = False
        say("\nCleanup: no audit record (see the log)")

    if manifests:
        landing = manifest["landing"]
        starting = offsets_of(manifest["startingOffsets"])
        ranges = {
            (TOPIC, p): (None if starting.get(p, -2) < 0 else starting[p], end) for p, end in barrier.items()
        }
        expected = expected_totals(records, ranges)
        produced_totals = {k: {"records": n, "qty": q} for k, (n, q) in expected.items()}
        matches = manifest["totals"] == produced_totals and not manifest["totals_truncated"]
        after = sum(1 for r in records if r.offset >= barrier.get(r.partition, 0))
        above = 0  # records in the chosen files at or above the barrier (filtered out)
        for p, part in landing["partitions"].get(TOPIC, {}).items():
            if part["files"]:
                last_end = int(part["files"][-1].split("-")[1].split(".")[0])
                above += max(0, last_end - barrier[int(p)])
        say("\nSpark (totals_from_landing, @task with spark_session, local[*])")
        say(
            "  range    "
            + "  ".join(
                f"{TOPIC}[{p}] [{'earliest' if s_ is None else s_}, {e})"
                for (_, p), (s_, e) in sorted(ranges.items())
            )
            + "   (the gate's XCom)"
        )
        say(
            f"  read     {manifest['rows']} records from {landing['files']} landing files"
            f"{' (overlapping: duplicates dropped)' if landing['overlapping'] else ''}; "
            + (
                f"the files straddling the barrier held {above} records above it: filtered out"
                if above
                else "no file straddles the barrier"
            )
        )
        say(
            "  totals   "
            + "   ".join(
                f"{k}: {v['records']} records, qty {v['qty']}" for k, v in manifest["totals"].items()
            )
        )
        say(f"  output   {rel(manifest['output'])}/ (Parquet, {manifest['keys']} rows, + _manifest.json)")
        say(
            f"  check    equal, key by key, to the producer's own log of that range: {'yes' if matches else 'NO'}; "
            f"{after} records produced after the barrier are not in it"
        )
        ok = ok and matches
    kafka_manifests = sorted((WORK / "output").glob("run=*/source=kafka/_manifest.json"))
    if kafka_manifests and manifests:
        from_kafka = json.loads(kafka_manifests[-1].read_text())
        same = (
            from_kafka["totals"] == manifest["totals"]
            and from_kafka["partitions"] == manifest["partitions"]
            and not from_kafka["totals_truncated"]
        )
        source = (
            "the kgroups Python data source (spark-sql-kafka is not installed)"
            if from_kafka["source"] == "kgroups"
            else "Spark's JVM Kafka source"
        )
        say(f"\nKafka (totals_from_kafka, the same range read from the broker with {source})")
        say(f"  read     {from_kafka['rows']} records straight from Kafka, exactly the gate's range")
        say(
            f"  check    equal, key by key and partition by partition, to the landing-zone result: "
            f"{'yes' if same else 'NO'}"
        )
        ok = ok and same
    else:
        ok = False
        say(
            f"\nKafka (totals_from_kafka): {states.get('totals_from_kafka') or 'not run'}: no output (see the log)"
        )
    return ok


def sources(found: SourceComparison | NotCompared) -> bool:
    """The gate's range read by Spark's own Kafka source and by the ``kgroups`` source; False when
    they differ or the comparison failed (not when it could not run here)."""
    title = "Spark's Kafka source and the kgroups source"
    if isinstance(found, NotCompared):
        if found.failed:
            say(f"\n{title}: the comparison FAILED: {found.reason}")
        else:
            say(f"\n{title}: not compared here: {found.reason} (the DAG's run above does not depend on it)")
        return not found.failed
    starting, ending = offsets_of(found.starting), offsets_of(found.ending)
    say(
        f"\n{title} (the gate's range read again by both, in one Spark {found.spark} session with "
        "spark-sql-kafka-0-10)"
    )
    say(
        "  range    "
        + "  ".join(
            f"{TOPIC}[{p}] [{'earliest' if starting.get(p, -2) < 0 else starting[p]}, {e})"
            for p, e in sorted(ending.items())
        )
        + f"   (as the DAG read it: {rel(found.manifest)})"
    )
    say(
        f'  read     format("kafka") {found.kafka_records} records, format("kgroups") '
        f"{found.kgroups_records} records, includeHeaders=true"
    )
    if found.equal:
        say(f"  equal: yes   (row by row: {', '.join(COLUMNS)}; the schema too)")
    else:
        say(
            f"  equal: NO   (schema {'equal' if found.schema_equal else 'DIFFERENT'}; columns differing: "
            f"{', '.join(found.differing_columns) or 'none in the records both read'}; {found.difference})"
        )
    return found.equal


ORDER = {
    "wait_for_landing": 0,
    "clean_dead_groups": 1,
    "totals_from_landing": 2,
    "kafka_source_available": 3,
    "totals_from_kafka": 4,
}


def _short_reason(reason: str) -> str:
    return reason.split("; offsets backed up to ")[0] + (
        "; offsets backed up" if "; offsets backed up to " in reason else ""
    )
