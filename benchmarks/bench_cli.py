"""``kgroups`` as users run it: whole processes (interpreter start, imports, connect, calls,
output), side by side with bare kafka-python 3 scripts doing the same job, on a fake
cluster in its own process. Prints tables; asserts nothing.

The peers: ``kafka-python`` (``kp_lag.py``, the benchmark's first peer: sorted rows of dicts written
with ``json.dump``) and ``kafka-python plain`` (``kp_lag_plain.py``: the shortest script, one
admin client, one batched call for the commits and one for the log ends, written with
``json.dumps``). ``floor`` (``floor.py``): the same requests sent and their answers decoded on
the client's transport with nothing else, what no client of this transport can beat.

Scenarios (each a fresh fake-cluster process, ``benchmarks/fake_server.py``):

  lag      9 brokers, 3,000 ``acc-g*`` groups (+60 others), 30 topics x 12 partitions,
           10 ms per request: ``kgroups lag -p 'acc-g*'`` (json, jsonl, table) vs ``kp_lag.py``
  mixed    9 brokers, 3,000 ``acc-g*`` groups on 5 topics of 1-6 partitions, each on about a third
           of the topics and not on a fifth of their partitions, 10 ms per request: ``kgroups --format
           json lag -p 'acc-g*'`` vs both peers and the floor, each checked for the exact total lag
  old      the same as lag, brokers below FindCoordinator v4 / OffsetFetch v8 (one group per request)
  tansu    the lag scenario on the embedded broker (Tansu) behind ``proxy.VirtualCluster``: 9 virtual
           brokers, 10 ms per request, 3,000 groups committing 12 partitions each, then 1 each
           (``tansu_server.py``); kgroups json vs both peers, each checked for the exact total lag
  kafka    the mixed shape on Apache Kafka (``kafka_server.py``: the real broker, one node from Maven
           Central's jars, seeded through it) behind ``proxy.VirtualCluster``: 9 virtual brokers, 10 ms
           per request; kgroups json vs both peers and the floor, each checked for the exact total lag
  help     ``kgroups --help``
  big      9 brokers (--big-brokers), 100,000 groups of 4 partitions: ``kgroups lag`` (the table, and
           jsonl) and ``take_snapshot`` in a process, each checked for the exact total lag

Each command runs ``--repeat`` times, the commands interleaved round by round; a row shows
the median wall time and the median CPU (user + system) of the child process, its peak RSS,
and, from the fake's request log, the requests per API and the round trips on the critical
path (see ``fake_server.waves``) of the median run. The machine may be shared: medians of
interleaved runs, and the fake's own CPU is shown apart.

    python benchmarks/bench_cli.py [--scenarios mixed,lag,old,tansu,kafka,help,big] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
KGROUPS = [PY, "-m", "airflow_provider_kgroups"]
API_COLUMNS = (
    "ListGroups",
    "DescribeGroups",
    "ConsumerGroupDescribe",
    "FindCoordinator",
    "OffsetFetch",
    "Metadata",
    "ListOffsets",
)


class FakeServer:
    """A broker side in a process of its own (``fake_server.py``, or ``tansu_server.py``: the same
    protocol), driven over its stdin and stdout."""

    def __init__(self, *args: str, script: str = "fake_server.py") -> None:
        self.proc = subprocess.Popen(
            [PY, str(ROOT / "benchmarks" / script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        first = json.loads(self.proc.stdout.readline())
        self.bootstrap = first["bootstrap"]
        self.seeded = first

    def ask(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def __enter__(self) -> FakeServer:
        return self

    def __exit__(self, *exc) -> None:
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait(30)


def run_child(
    argv: list[str] | tuple[list[str], Path],
    server: FakeServer | None,
    check: Callable[[BinaryIO], bool] | None = None,
) -> dict:
    """One run; ``check(stdout)``: whether the output is exact (``result["exact"]``).

    stdout goes to a temporary file, not into this process: a child started by vfork (as
    subprocess does) reports this process's peak RSS as its own when that is higher (Linux
    keeps the larger ``maxrss`` across exec), so this process must stay small (73 MB of jsonl
    read here once made every later child "use" 529 MB)."""
    argv, cwd = argv if isinstance(argv, tuple) else (argv, ROOT)
    if server:
        server.ask("reset")
    import tempfile
    import threading

    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, cwd=cwd)
        err: list[bytes] = []
        reader = threading.Thread(target=lambda: err.append(proc.stderr.read()))
        reader.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        reader.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        size = out.seek(0, os.SEEK_END)
        out.seek(max(0, size - 400))
        result = {
            "wall": wall,
            "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024,
            "out_bytes": size,
            "out_tail": out.read().decode(errors="replace"),
            "exit": proc.returncode,
            "err": err[0].decode()[-300:],
        }
        if server:
            result["stats"] = server.ask("stats")
        if check is not None:
            out.seek(0)
            result["exact"] = check(out)
    return result


def measure(
    commands: dict[str, list[str]],
    server: FakeServer | None,
    repeat: int,
    scenario: str,
    checks: dict[str, Callable[[bytes], bool]] | None = None,
) -> list[dict]:
    runs: dict[str, list[dict]] = {name: [] for name in commands}
    for round_ in range(repeat):
        for name, argv in commands.items():
            runs[name].append(run_child(argv, server, (checks or {}).get(name)))
            print(
                f"  {scenario} {name} run {round_ + 1}/{repeat}: {runs[name][-1]['wall']:.3f}s",
                file=sys.stderr,
                flush=True,
            )
    rows = []
    for name, results in runs.items():
        by_wall = sorted(results, key=lambda r: r["wall"])
        row = dict(by_wall[len(by_wall) // 2])
        row["cpu"] = sorted(r["cpu"] for r in results)[len(results) // 2]
        row.update(
            scenario=scenario,
            command=name,
            walls=[r["wall"] for r in results],
            rss_range=(min(r["rss_mb"] for r in results), max(r["rss_mb"] for r in results)),
        )
        if "exact" in results[0]:
            row["exact"] = all(r["exact"] for r in results)
        rows.append(row)
    return rows


def kgroups(bootstrap: str, *args: str) -> list[str]:
    return [*KGROUPS, "-b", bootstrap, *args]


def peer(bootstrap: str, pattern: str, script: str = "kp_lag.py") -> list[str]:
    """A script of ``benchmarks/`` run as ``script BOOTSTRAP PATTERN`` (a peer, the floor)."""
    return [PY, str(ROOT / "benchmarks" / script), bootstrap, pattern]


def print_table(rows: list[dict], baseline: str = "kafka-python") -> None:
    """One line per command; ``x kafka-python``, ``x plain``, ``x floor``: its median wall over that
    of ``kp_lag.py``, ``kp_lag_plain.py`` and the floor in the same scenario (``-`` without one)."""
    base = {r["scenario"]: r["wall"] for r in rows if r["command"] == baseline}
    plain = {r["scenario"]: r["wall"] for r in rows if r["command"] == "kafka-python plain"}
    floor = {r["scenario"]: r["wall"] for r in rows if r["command"] == "floor"}
    header = (
        "scenario",
        "command",
        "median wall s",
        "x kafka-python",
        "x plain",
        "x floor",
        "median CPU s",
        "peak RSS MB",
        "out KB",
        "exit",
        "round trips",
        "floor s",
        *API_COLUMNS,
        "total req",
        "fake CPU s",
    )
    lines = []
    for r in rows:
        stats = r.get("stats") or {}
        req = stats.get("requests", {})
        ratios = [
            f"{r['wall'] / to[r['scenario']]:.2f}" if r["scenario"] in to else "-"
            for to in (base, plain, floor)
        ]
        trips = stats.get("round_trips")
        lines.append(
            (
                r["scenario"],
                r["command"],
                f"{r['wall']:.3f}",
                *ratios,
                f"{r['cpu']:.3f}",
                f"{r['rss_mb']:.0f}",
                f"{r['out_bytes'] / 1024:.0f}",
                r["exit"],
                trips if trips is not None else "-",
                f"{trips * r.get('latency', 0):.2f}" if trips else "-",
                *(req.get(api, 0) if stats else "-" for api in API_COLUMNS),
                sum(req.values()) if stats else "-",
                f"{stats['fake_cpu_s']:.2f}" if stats else "-",
            )
        )
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*header))
    for line in lines:
        print(fmt.format(*map(str, line)))
    for r in rows:
        stats = r.get("stats") or {}
        if r["scenario"] == "big" and "largest_request" in stats:
            print(
                f"# {r['scenario']} {r['command']}: largest request {stats['largest_request']:,} bytes, "
                f"largest response {stats['largest_response']:,} bytes, every run exact: "
                f"{('yes' if r['exact'] else 'NO') if 'exact' in r else 'not checked'}; peak RSS {r['rss_range'][0]:.0f}-{r['rss_range'][1]:.0f} MB, "
                f"wall {min(r['walls']):.1f}-{max(r['walls']):.1f} s over {len(r['walls'])} runs"
            )
    for r in rows:
        if (r["scenario"] == "mixed" or r["scenario"].startswith("kafka-")) and "exact" in r:
            print(
                f"# {r['scenario']} {r['command']}: every run exact (all groups, the seeded total lag): "
                f"{'yes' if r['exact'] else 'NO'}; wall {min(r['walls']):.3f}-{max(r['walls']):.3f} s over "
                f"{len(r['walls'])} runs; critical path: {(r.get('stats') or {}).get('critical_path', '?')}"
            )
    for r in rows:
        if r["scenario"].startswith("tansu") and "exact" in r:
            print(
                f"# {r['scenario']} {r['command']}: every run exact (all groups, the seeded total lag): "
                f"{'yes' if r['exact'] else 'NO'}; wall {min(r['walls']):.3f}-{max(r['walls']):.3f} s over "
                f"{len(r['walls'])} runs; broker side CPU (Tansu + proxy) {(r.get('stats') or {}).get('fake_cpu_s', 0):.2f} s"
            )
    for r in rows:
        if r["exit"] not in (0,) and r["err"]:
            print(f"# {r['scenario']} {r['command']} exit {r['exit']}: {r['err'].strip().splitlines()[-1]}")


def before_tree(rev: str) -> Path:
    """The package as of ``rev`` (git archive into a temporary directory): ``python -m`` there
    runs that version, side by side with this one in the same interleaved rounds."""
    target = Path(f"/tmp/kgroups-bench-before-{rev}")
    if not (target / "airflow_provider_kgroups").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "airflow_provider_kgroups"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
        compile_tree(target)
    return target


def compile_tree(root: Path) -> None:
    """Byte-compile the package as ``pip install`` does: with PYTHONDONTWRITEBYTECODE set (as in
    some CI and sandbox shells), every run would otherwise compile ~100 modules (~0.1-0.3 s)
    that no installed copy compiles."""
    subprocess.run([PY, "-m", "compileall", "-q", str(root / "airflow_provider_kgroups")], check=True)


def scenario_lag(args, old: bool) -> list[dict]:
    """The fake's ``--cache`` (unless ``--no-fake-cache``): it replays its kept answers after each
    command's warm-up run, so its own CPU (0.3 s a run at 3,000 groups, on the same 2 cores) leaves
    the critical path of both clients; every request is still received, logged and delayed.
    A fixed hash seed makes every run of a command send the same bytes (set order follows it)."""
    name = "old" if old else "lag"
    groups = args.old_groups if old else args.groups
    with FakeServer(
        "--brokers",
        "9",
        "--groups",
        str(groups),
        "--latency",
        str(args.latency),
        *(["--old"] if old else []),
        *(["--cache"] if args.fake_cache else []),
    ) as server:
        b = server.bootstrap
        seeded = ["env", "PYTHONHASHSEED=0"]
        json_cmd = [*seeded, *kgroups(b, "--format", "json", "lag", "-p", "acc-g*")]
        table_cmd = [*seeded, *kgroups(b, "lag", "-p", "acc-g*")]
        commands: dict = {"kafka-python": [*seeded, *peer(b, "acc-g*")], "kgroups json": json_cmd}
        if args.before:
            commands["kgroups json (before)"] = (json_cmd, before_tree(args.before))
        if not old:
            commands["kgroups table"] = table_cmd
            if args.before:
                commands["kgroups table (before)"] = (table_cmd, before_tree(args.before))
            if args.jsonl:
                commands["kgroups jsonl"] = [*seeded, *kgroups(b, "--format", "jsonl", "lag", "-p", "acc-g*")]
        for argv in commands.values():
            run_child(argv, server)  # warm-up: page cache, and the answers the fake keeps with --cache
        rows = measure(commands, server, args.repeat, name)
    for r in rows:
        r["latency"] = args.latency
    return rows


def nine_brokers(args, *more: str) -> list[str]:
    """A world's options: 9 brokers, ``--groups`` groups, ``--latency`` a request, then ``more``."""
    return ["--brokers", "9", "--groups", str(args.groups), "--latency", str(args.latency), *more]


def json_against_peer(server: FakeServer, args, floor: bool = False) -> tuple[dict, dict]:
    """``kgroups --format json lag -p 'acc-g*'`` (and the ``--before`` tree's) against both peers
    (kp_lag.py, kp_lag_plain.py) and with ``floor`` the floor (floor.py), each checked for every
    group and the seeded total lag."""
    seeded = ["env", "PYTHONHASHSEED=0"]
    b = server.bootstrap
    json_cmd = [*seeded, *kgroups(b, "--format", "json", "lag", "-p", "acc-g*")]
    commands: dict = {
        "kafka-python": [*seeded, *peer(b, "acc-g*")],
        "kafka-python plain": [*seeded, *peer(b, "acc-g*", "kp_lag_plain.py")],
    }
    if floor:
        commands["floor"] = [*seeded, *peer(b, "acc-g*", "floor.py")]
    commands["kgroups json"] = json_cmd
    if args.before:
        commands["kgroups json (before)"] = (json_cmd, before_tree(args.before))
    checks = {
        name: exact_json(server.seeded)
        if name.startswith("kgroups")
        else exact_floor(server.seeded)
        if name == "floor"
        else exact_peer(server.seeded)
        for name in commands
    }
    return commands, checks


def scenario_mixed(args) -> list[dict]:
    """Issue 31's shape: 9 brokers, 3,000 ``acc-g*`` groups on 5 topics of 1 to 6 partitions,
    each group committed on about a third of the topics and not on about a fifth of their
    partitions (``fake_server.seed_mixed``), 10 ms a request, the fake's answers replayed after
    a warm-up run (``--cache``: what is left is each client plus the latency). Both outputs are
    checked: every group, the seeded total lag."""
    with FakeServer(*nine_brokers(args, "--mixed", *(["--cache"] if args.fake_cache else []))) as server:
        print(
            f"  mixed: {server.seeded['group_partitions']:,} committed group-partitions",
            file=sys.stderr,
            flush=True,
        )
        commands, checks = json_against_peer(server, args, floor=True)
        for argv in commands.values():
            run_child(argv, server)  # warm-up: page cache, and the answers the fake keeps with --cache
        rows = measure(commands, server, args.repeat, "mixed", checks)
    for r in rows:
        r["latency"] = args.latency
    return rows


def scenario_tansu(args) -> list[dict]:
    """``lag`` on the embedded broker (Tansu) instead of the fake: Tansu holds and answers the
    data, ``proxy.VirtualCluster`` shows it as ``--brokers`` (9) brokers with ``--latency`` per
    request (see ``tansu_server.py``). 3,000 groups; ``--tansu-group-partitions`` partitions
    committed per group (12: 36,000 committed offsets, as the fake's lag scenario; 1: a small
    world where start-up and fixed costs dominate)."""
    rows = []
    for per_group in (int(n) for n in args.tansu_group_partitions.split(",")):
        name = f"tansu/{per_group}p"
        with FakeServer(
            *nine_brokers(args, "--group-partitions", str(per_group)),
            script="tansu_server.py",
        ) as server:
            print(f"  {name}: seeded in {server.seeded['seconds']} s", file=sys.stderr, flush=True)
            commands, checks = json_against_peer(server, args)
            for argv in commands.values():
                run_child(argv, server)  # warm-up: page cache, the proxy's kept rewrites
            for row in measure(commands, server, args.repeat, name, checks):
                row["latency"] = args.latency
                rows.append(row)
    return rows


def scenario_kafka(args) -> list[dict]:
    """The mixed shape on Apache Kafka (``kafka_server.py``: the real broker from Maven Central's
    jars, seeded through it with ``fake_server.seed_mixed``'s world, shown as 9 brokers with 10 ms
    a request by ``proxy.VirtualCluster``): kgroups json against both peers and the floor, each
    checked for every group and the seeded total lag. The broker does every answer's work, so its
    CPU (the last column) shares the cores with the clients."""
    with FakeServer(*nine_brokers(args, "--version", args.kafka_version), script="kafka_server.py") as server:
        name = f"kafka-{server.seeded['version']}"
        print(
            f"  {name}: {server.seeded['group_partitions']:,} committed group-partitions, started and "
            f"seeded in {server.seeded['seconds']} s",
            file=sys.stderr,
            flush=True,
        )
        commands, checks = json_against_peer(server, args, floor=True)
        for argv in commands.values():
            run_child(argv, server)  # warm-up: page cache, the broker's JIT, the proxy's kept rewrites
        rows = measure(commands, server, args.repeat, name, checks)
    for r in rows:
        r["latency"] = args.latency
    return rows


def exact_json(seeded: dict) -> Callable[[BinaryIO], bool]:
    """``kgroups --format json lag``: every group, none failed, the seeded total lag."""

    def check(out: BinaryIO) -> bool:
        result = json.loads(out.read())
        groups = result["groups"]
        return (
            len(groups) == seeded["groups"]
            and not result["failures"]
            and sum(g["total_lag"] for g in groups.values()) == seeded["total_lag"]
        )

    return check


def exact_peer(seeded: dict) -> Callable[[BinaryIO], bool]:
    """A peer's ``{group: {"total_lag": N, ...}}``: every group, the seeded total lag."""

    def check(out: BinaryIO) -> bool:
        result = json.loads(out.read())
        return (
            len(result) == seeded["groups"]
            and sum(g["total_lag"] for g in result.values()) == seeded["total_lag"]
        )

    return check


def exact_floor(seeded: dict) -> Callable[[BinaryIO], bool]:
    """floor.py's ``{"groups": N, "total_lag": L}``: every group read, the seeded total lag."""

    def check(out: BinaryIO) -> bool:
        result = json.loads(out.read())
        return result["groups"] == seeded["groups"] and result["total_lag"] == seeded["total_lag"]

    return check


def scenario_help(args) -> list[dict]:
    commands: dict = {"kgroups --help": [*KGROUPS, "--help"], "python -c pass": [PY, "-c", "pass"]}
    if args.before:
        commands["kgroups --help (before)"] = ([*KGROUPS, "--help"], before_tree(args.before))
    script = Path(PY).parent / "kgroups"
    if script.exists():  # the console script runs the package the environment has installed
        commands["kgroups --help (console script)"] = [str(script), "--help"]
    return measure(commands, None, args.repeat, "help")


def scenario_big(args) -> list[dict]:
    # 4 partitions a group (not 12): the fake answers 400,000 committed offsets, not 1.2 million,
    # so that on a small machine the client's time, not the fake's, is what shows
    # --cache: after the warm-up run of each command the fake replays its answers, so its own CPU
    # (decoding 100,000 groups' requests, encoding 400,000 offsets) no longer competes with the
    # client's for the 2 cores; its remaining CPU is shown in the last column (--no-fake-cache:
    # the fake computes every answer, as before, to show what its CPU costs the client)
    with FakeServer(
        "--brokers",
        str(args.big_brokers),
        "--groups",
        str(args.big_groups),
        "--latency",
        str(args.latency),
        "--partitions",
        "4",
        *(["--cache"] if args.fake_cache else []),
    ) as server:
        b = server.bootstrap
        # a fixed hash seed: the same groups go in the same order into the same requests every
        # run (set order follows the seed), so the fake's kept answers match; a generous timeout,
        # as the machine is shared
        seeded = ["env", "PYTHONHASHSEED=0"]
        jsonl = [*seeded, *kgroups(b, "--timeout", "600", "--format", "jsonl", "lag", "-p", "acc-g*")]
        snapshot = [*seeded, PY, str(ROOT / "benchmarks" / "snapshot_process.py"), b, "acc-g*"]
        table = [*seeded, *kgroups(b, "--timeout", "600", "lag", "-p", "acc-g*")]
        commands: dict = {"kgroups table": table, "kgroups jsonl": jsonl, "take_snapshot": snapshot}
        formats = {  # json is checked for exactness (in a child process), the others are not
            f"kgroups {fmt}": [
                *seeded,
                *kgroups(b, "--timeout", "600", "--format", fmt, "lag", "-p", "acc-g*"),
            ]
            for fmt in (args.big_formats.split(",") if args.big_formats else ())
        }
        commands.update(formats)
        if args.before:
            before = before_tree(args.before)
            commands["kgroups table (before)"] = (table, before)
            commands["kgroups jsonl (before)"] = (jsonl, before)
            commands["take_snapshot (before)"] = (snapshot_before(snapshot, before), before)
            for name, argv in formats.items():
                commands[f"{name} (before)"] = (argv, before)
        if args.fake_cache:
            for argv in commands.values():
                run_child(argv, server)  # warm-up: the fake keeps these requests' answers
        rows = measure(
            commands,
            server,
            max(1, args.repeat // 2),
            "big",
            {
                name: exact_jsonl(server.seeded)
                if "jsonl" in name
                else exact_json_in_child(server.seeded)
                if "json" in name
                else exact_table(server.seeded)
                if "table" in name
                else exact_snapshot(server.seeded)
                for name in commands
                if "json" in name or "snapshot" in name or "table" in name
            },
        )
    for r in rows:
        r["latency"] = args.latency
    return rows


def exact_jsonl(seeded: dict) -> Callable[[BinaryIO], bool]:
    """Every group once, none failed, each total known, their sum the seeded one (read line by
    line: see run_child on this process's size)."""

    def check(out: BinaryIO) -> bool:
        ids, total = set(), 0
        for raw in out:
            if not raw.strip():
                continue
            line = json.loads(raw)
            if "failure" in line or line.get("group_id") in ids or line.get("total_lag") is None:
                return False
            ids.add(line["group_id"])
            total += line["total_lag"]
        return len(ids) == seeded["groups"] and total == seeded["total_lag"]

    return check


def exact_json_in_child(seeded: dict) -> Callable[[BinaryIO], bool]:
    """``kgroups --format json lag`` of many groups: every group, none failed, no ``error``, the
    seeded total lag, read by a child process (the document is one value: read here, it would
    grow this process and every later child's RSS with it, see run_child)."""
    script = (
        "import json, sys\n"
        "d = json.load(sys.stdin.buffer)\n"
        "g = d['groups']\n"
        "ok = list(d) == ['taken_at_ms', 'policy', 'groups', 'failures'] and not d['failures']\n"
        "ok = ok and all(v['total_lag'] is not None for v in g.values())\n"
        "print(json.dumps([ok, len(g), sum(v['total_lag'] or 0 for v in g.values())]))\n"
    )

    def check(out: BinaryIO) -> bool:
        done = subprocess.run([PY, "-c", script], stdin=out, capture_output=True)
        if done.returncode:
            return False
        ok, groups, total = json.loads(done.stdout)
        return bool(ok) and groups == seeded["groups"] and total == seeded["total_lag"]

    return check


def exact_table(seeded: dict) -> Callable[[BinaryIO], bool]:
    """``kgroups lag`` as a table: one TOTAL row per group, each known, their sum the seeded one
    (read line by line: see run_child on this process's size)."""

    def check(out: BinaryIO) -> bool:
        ids, total = set(), 0
        for raw in out:
            cells = raw.split()
            if len(cells) > 2 and cells[1] == b"TOTAL":
                if cells[0] in ids or not cells[2].isdigit():
                    return False
                ids.add(cells[0])
                total += int(cells[2])
            elif len(cells) > 1 and cells[1] in (b"ERROR", b"NOT"):
                return False
        return len(ids) == seeded["groups"] and total == seeded["total_lag"]

    return check


def exact_snapshot(seeded: dict) -> Callable[[BinaryIO], bool]:
    def check(out: BinaryIO) -> bool:
        result = json.loads(out.read().strip().splitlines()[-1])
        return (
            result["groups"] == seeded["groups"]
            and result["failures"] == 0
            and result["unknown_totals"] == 0
            and result.get("total_lag") == seeded["total_lag"]
        )

    return check


def snapshot_before(argv: list[str], before: Path) -> list[str]:
    """snapshot_process.py put first on the path the ``before`` tree (it inserts its own checkout
    otherwise): a copy of it beside that tree."""
    script = before / "snapshot_process.py"
    source = (
        Path(argv[-3])
        .read_text()
        .replace("Path(__file__).resolve().parents[1]", "Path(__file__).resolve().parent")
    )
    script.write_text(source)
    return [*argv[:-3], str(script), *argv[-2:]]


def scenario_cold(args) -> list[dict]:
    """The cold call in-process (imports excluded): seconds against the floor of its round trips.
    With ``--before``, the same script runs on that revision's package, interleaved."""
    rows = []
    with FakeServer("--brokers", "9", "--groups", str(args.groups), "--latency", str(args.latency)) as server:
        script = ROOT / "benchmarks" / "cold_call.py"
        commands: dict = {}
        for n in (1, args.groups):
            commands[f"cold call, {n} group(s)"] = [PY, str(script), server.bootstrap, str(n)]
            commands[f"cold call, {n} group(s) (floor, driverless)"] = [
                PY,
                str(script),
                server.bootstrap,
                str(n),
                "--floor",
            ]
            if args.before:
                tree = before_tree(args.before)
                (tree / "benchmarks").mkdir(exist_ok=True)
                (tree / "benchmarks" / script.name).write_text(
                    script.read_text()
                )  # imports the tree's package
                commands[f"cold call, {n} group(s) (before)"] = (
                    [PY, str(tree / "benchmarks" / script.name), server.bootstrap, str(n)],
                    tree,
                )
        run_child(commands[f"cold call, {args.groups} group(s)"], server)  # warm-up: the fake's first answers
        for row in measure(commands, server, args.repeat, "cold"):
            runs = [json.loads(line) for line in [row["out_tail"].strip().splitlines()[-1]]]
            row["call_s"] = runs[0]["seconds"]
            row["call_cpu_s"] = runs[0].get("cpu_s")
            row["latency"] = args.latency
            rows.append(row)
    return rows


def print_cold(rows: list[dict]) -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.floor import cold_call_floor

    print("\ncold call (in process, imports excluded): seconds vs the floor of its sequential round trips")
    print(
        "  round trips: the waves the brokers saw (fake_server.waves); floor: the fewest a correct client needs "
        "(floor.cold_call_floor) x the latency;\n  x measured: call s / the floor's steps run driverless on this "
        "harness, codecs compiled before the clock (floor.run_cold_floor); fake CPU: the brokers' process"
    )
    print(
        f"{'call':45s}  {'call s':>7s}  {'CPU s':>6s}  {'round trips':>11s}  {'floor trips':>11s}  {'floor s':>7s}  "
        f"{'x floor':>7s}  {'x measured':>10s}  {'requests':>8s}  {'fake CPU s':>10s}"
    )
    paths = []
    measured = {
        r["command"].split(" (")[0]: r["call_s"] for r in rows if r["command"].endswith("(floor, driverless)")
    }
    for r in rows:
        stats = r["stats"]
        nodes = stats.get("nodes", {})
        steps = cold_call_floor(
            stats.get("first_node"), set(nodes.get("OffsetFetch", [])), set(nodes.get("ListOffsets", []))
        )
        floor = len(steps) * r["latency"]
        cpu = f"{r['call_cpu_s']:6.3f}" if r.get("call_cpu_s") is not None else f"{'-':>6s}"
        base = measured.get(r["command"].split(" (")[0])
        print(
            f"{r['command']:45s}  {r['call_s']:7.3f}  {cpu}  {stats['round_trips']:11d}  {len(steps):11d}  "
            f"{floor:7.3f}  {r['call_s'] / floor:7.2f}  {r['call_s'] / base if base else 0:10.2f}  "
            f"{sum(stats['requests'].values()):8d}  {stats['fake_cpu_s']:10.3f}"
        )
        paths.append(f"  {r['command']}: {stats.get('critical_path', '?')}")
        paths.append(f"  {'':{len(r['command'])}s}  floor: {' | '.join(steps)}")
    print("critical path (waves the brokers saw, median run) and the floor's steps:")
    print("\n".join(paths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default="mixed,lag,old,help")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--groups", type=int, default=3000)
    parser.add_argument(
        "--old-groups",
        type=int,
        default=1000,
        help="groups in the old-broker scenario (kafka-python asks one group per request)",
    )
    parser.add_argument(
        "--before", help="a git revision to run side by side (e.g. the commit before a change)"
    )
    parser.add_argument("--big-groups", type=int, default=100_000)
    parser.add_argument(
        "--big-brokers", type=int, default=9, help="big: brokers (issue 31 measured 9; earlier tables 30)"
    )
    parser.add_argument(
        "--tansu-group-partitions",
        default="12,1",
        help="tansu: partitions each group commits, one world per value",
    )
    parser.add_argument(
        "--kafka-version", default="4.4.0", help="kafka: Apache Kafka's version (its jars from Maven Central)"
    )
    parser.add_argument("--latency", type=float, default=0.010)
    parser.add_argument("--no-jsonl", dest="jsonl", action="store_false")
    parser.add_argument(
        "--big-formats",
        default="",
        help="big: also kgroups lag in these formats, e.g. json (json checked for exactness), and with "
        "--before the same commands on that revision",
    )
    parser.add_argument(
        "--no-fake-cache",
        dest="fake_cache",
        action="store_false",
        help="lag, old, big: the fake computes every answer (no replay after a warm-up; its CPU "
        "then shares the cores with the clients)",
    )
    args = parser.parse_args()
    compile_tree(ROOT)
    load_at_start = os.getloadavg()[0]
    rows, cold = [], []
    for scenario in args.scenarios.split(","):
        if scenario in ("lag", "old"):
            rows += scenario_lag(args, scenario == "old")
        elif scenario == "mixed":
            rows += scenario_mixed(args)
        elif scenario == "tansu":
            rows += scenario_tansu(args)
        elif scenario == "kafka":
            rows += scenario_kafka(args)
        elif scenario == "help":
            rows += scenario_help(args)
        elif scenario == "big":
            rows += scenario_big(args)
        elif scenario == "cold":
            cold = scenario_cold(args)
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores (shared, load average "
        f"{load_at_start:.1f} at start, {os.getloadavg()[0]:.1f} at end), median of {args.repeat} interleaved runs, "
        f"{args.latency * 1000:.0f} ms per request"
        + (
            f", lag/old: the fake's answers {'kept after a warm-up run' if args.fake_cache else 'computed every time (--no-fake-cache)'}"
            if {"lag", "old", "big"} & set(args.scenarios.split(","))
            else ""
        )
    )
    if rows:
        print_table(rows)
    if cold:
        print_cold(cold)


if __name__ == "__main__":
    main()
