"""Install the provider into each older Airflow it supports, as a team would, and run the Airflow
layer's tests there (``make test-airflow``; CI runs it after ``make test``, which runs everything on
the newest Airflow).

For each version in :data:`VERSIONS`, in a virtual environment of its own under ``.airflow-venvs/``:

1. that Airflow alone, as a deployment holds it (``apache-airflow==X`` and the pins of
   :data:`PINS`: Airflow's constraints files live on a host these machines cannot reach, so the
   few pins the run needs are written here, each with the reason), installed with uv (fast; the
   environment is what is under test, not how it was made);
2. ``pip install <the provider's wheel>[spark,history,ui]`` with pip and no constraint, as a user
   types it: Airflow's version must not change;
3. the same install resolved from scratch under a constraints-style pin of that Airflow (``pip
   install --dry-run --ignore-installed -c``): it must resolve;
4. ``scripts/check_install.py`` (``pip check``, no file owned twice, the modules import) and
   ``airflow providers get`` (Airflow registers the provider);
5. the test tools (the project's ``test`` group, under the same pins), then pytest on
   :data:`AIRFLOW_TESTS` with the checkout's tests.

Prints one line per step and a table at the end; exits 1 when a version failed.

    python scripts/airflow_versions.py                  # every version
    python scripts/airflow_versions.py --jobs 2         # two installs at a time, tests one at a time (CI)
    python scripts/airflow_versions.py 2.11.0 3.1.8     # some
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / ".airflow-venvs"
#: The lower bound (pyproject.toml), then the newest patch release of each 3.x line below the one
#: `make test` runs (3.3).
VERSIONS = ("2.11.0", "3.0.6", "3.1.8", "3.2.2")
#: What Airflow's constraints file for that version would pin and the run needs: version -> pins.
PINS: dict[str, tuple[str, ...]] = {
    # The oldest Airflow also holds the oldest common-compat and asgiref the provider allows
    # (pyproject.toml's lower bounds), so those bounds are tested.
    "2.11.0": ("apache-airflow-providers-common-compat==1.23.0", "asgiref==3.8.1"),
    # Airflow 3.0's execution API answers 422 to every task start with cadwyn 9 / FastAPI 0.165
    # (released after it; its constraints pin older ones): dag.test() cannot start a task.
    "3.0.6": ("cadwyn==5.4.6", "fastapi==0.117.1", "starlette==0.48.0"),
    # Airflow 3.2's in-process execution API (dag.test()) fails every task with FastAPI 0.165
    # ("__pydantic_core_schema__") and, with svcs 26, answers no request ("KeyError: 'svcs_registry'");
    # these are the versions Airflow 3.3.2 resolves to, svcs the oldest 3.2 allows.
    "3.2.2": ("cadwyn==7.0.0", "fastapi==0.136.3", "svcs==25.1.0"),
}
EXTRAS = "spark,history,ui"
#: The Airflow layer's tests: provider registration, the example DAGs (parsed, and run with
#: dag.test()), the sensor in poke and deferrable mode against Apache Kafka, the operators, the
#: hooks (secrets kept out of logs, XCom and trigger kwargs; no sync lookup on an event loop),
#: errors that end a task at once, the [kgroups] section, OpenLineage and metrics.
AIRFLOW_TESTS = (
    "tests/airflow/test_provider_info.py",
    "tests/airflow/test_dags.py",
    "tests/airflow/test_sensor.py",
    "tests/airflow/test_operators.py",
    "tests/airflow/test_offset_dags.py",
    "tests/airflow/test_hook.py",
    "tests/airflow/test_not_retriable.py",
    "tests/airflow/test_settings.py",
    "tests/airflow/test_lineage.py",
    "tests/airflow/test_metrics.py",
)
#: Tests of features that need a newer Airflow: (major, minor) -> tests. Below it, the feature's
#: refusal is what is tested (tests/airflow/test_dags.py: the example DAG fails to parse, saying why).
NEWER_TESTS = {(3, 0): ("tests/airflow/test_event_trigger.py",)}


def tests_for(version: str) -> list[str]:
    running = tuple(int(part) for part in version.split(".")[:2])
    return [*AIRFLOW_TESTS, *(t for needed, ts in NEWER_TESTS.items() if running >= needed for t in ts)]


@dataclass
class Outcome:
    version: str
    steps: list[str] = field(default_factory=list)
    failed: str | None = None
    tests: str = ""
    seconds: float = 0.0


class StepFailed(Exception):
    pass


def run(outcome: Outcome, what: str, cmd: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    took = time.monotonic() - started
    print(
        f"  [{outcome.version}] {what}: {'ok' if done.returncode == 0 else 'FAILED'} ({took:.0f} s)",
        flush=True,
    )
    if done.returncode != 0:
        print((done.stdout + done.stderr)[-4000:], flush=True)
        raise StepFailed(f"{what} failed (exit {done.returncode})")
    return done


def build_wheel(out: Path) -> Path:
    # setuptools builds in the tree: what it leaves there is removed (an egg-info in the checkout
    # would make Airflow see the distribution twice when the checkout is on sys.path)
    leftovers = [ROOT / "build", ROOT / "airflow_provider_kgroups.egg-info"]
    existed = {path for path in leftovers if path.exists()}
    try:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--wheel-dir",
                str(out),
                str(ROOT),
            ],
            check=True,
        )
    finally:
        for path in set(leftovers) - existed:
            shutil.rmtree(path, ignore_errors=True)
    (wheel,) = out.glob("airflow_provider_kgroups-*.whl")
    return wheel


def airflow_version(python: Path) -> str:
    code = "from importlib.metadata import version; print(version('apache-airflow'))"
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


#: The versions' installs run ``--jobs`` at a time, their test sessions one at a time: two sessions,
#: each with its own Kafka broker, on a 2-core CI machine starved kafka-python's group consumer in the
#: tests' live groups (a member that joined and then never heartbeat again, or never got its
#: assignment) in 4 of 7 such sessions on one day, against none in the main session, run alone.
ONE_TEST_SESSION = threading.Lock()


def _run_tests(python: Path, version: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--disable-warnings",
            *tests_for(version),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def check_version(version: str, wheel: Path, uv: str) -> Outcome:
    outcome = Outcome(version)
    started = time.monotonic()
    venv = VENVS / version
    python = venv / "bin" / "python"
    pins = (f"apache-airflow=={version}", *PINS.get(version, ()))
    with tempfile.TemporaryDirectory() as tmp:
        constraints = Path(tmp) / "constraints.txt"
        constraints.write_text("\n".join(pins) + "\n")
        try:
            shutil.rmtree(venv, ignore_errors=True)
            run(outcome, "venv", [uv, "venv", "--quiet", "--seed", "--python", sys.executable, str(venv)])
            run(
                outcome,
                f"Airflow {version} alone",
                [uv, "pip", "install", "--quiet", "--python", str(python), *pins],
            )
            run(
                outcome,
                "pip install the provider (no constraint)",
                [str(python), "-m", "pip", "install", "--quiet", f"{wheel}[{EXTRAS}]"],
            )
            kept = airflow_version(python)
            if kept != version:
                raise StepFailed(f"pip install changed Airflow {version} to {kept}")
            outcome.steps.append("kept")
            run(
                outcome,
                "pip resolves it from scratch under a constraints-style pin",
                [
                    str(python),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--dry-run",
                    "--ignore-installed",  # every requirement resolved again, not read off what is there
                    "-c",
                    str(constraints),
                    f"{wheel}[{EXTRAS}]",
                ],
            )
            run(
                outcome,
                "check_install (pip check, files, imports)",
                [str(python), str(ROOT / "scripts" / "check_install.py")],
            )
            outcome.steps.append("pip check")
            with tempfile.TemporaryDirectory() as home:
                env = {**os.environ, "AIRFLOW_HOME": home, "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
                got = run(
                    outcome,
                    "airflow providers get",
                    [
                        str(venv / "bin" / "airflow"),
                        "providers",
                        "get",
                        "airflow-provider-kgroups",
                        "-o",
                        "json",
                    ],
                    env=env,
                    cwd=home,
                )
            if "airflow-provider-kgroups" not in got.stdout:
                raise StepFailed("Airflow does not list the provider")
            outcome.steps.append("registered")
            run(
                outcome,
                "test tools",
                [
                    uv,
                    "pip",
                    "install",
                    "--quiet",
                    "--python",
                    str(python),
                    "-c",
                    str(constraints),
                    "--group",
                    "test",
                ],
                cwd=ROOT,
            )
            with ONE_TEST_SESSION:  # installs overlap; test sessions do not (see ONE_TEST_SESSION)
                done = _run_tests(python, version)
            summary = [
                line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed|error)", line)
            ]
            outcome.tests = (summary or ["(no summary)"])[-1].strip("= ")  # Spark's py4j may print after it
            print(f"  [{version}] pytest: {outcome.tests}", flush=True)
            if done.returncode != 0:
                print(done.stdout[-16000:] + done.stderr[-2000:], flush=True)
                raise StepFailed("tests failed")
        except StepFailed as exc:
            outcome.failed = str(exc)
    outcome.seconds = time.monotonic() - started
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", default=list(VERSIONS), help="Airflow versions (default: all)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="versions checked at once (each test session starts its own Kafka broker; default 1)",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.versions) - set(VERSIONS))
    if unknown:
        parser.error(f"not a tested version: {', '.join(unknown)} (tested: {', '.join(VERSIONS)})")
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        parser.error("uv is missing: it comes with the project's test group (make install)")
    with tempfile.TemporaryDirectory() as out:
        wheel = build_wheel(Path(out))
        print(f"The provider's wheel: {wheel.name}; Airflow versions: {', '.join(args.versions)}", flush=True)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:  # each check runs processes
            outcomes = list(pool.map(lambda version: check_version(version, wheel, uv), args.versions))
    print("\nAirflow   kept  pip check  registered  tests                                  seconds")
    for o in outcomes:
        marks = ["yes" if step in o.steps else "no" for step in ("kept", "pip check", "registered")]
        tests = o.tests or (o.failed or "")
        print(f"{o.version:<9} {marks[0]:<5} {marks[1]:<10} {marks[2]:<11} {tests[:38]:<38} {o.seconds:7.0f}")
    failed = [o for o in outcomes if o.failed]
    for o in failed:
        print(f"Airflow {o.version}: {o.failed}")
    print(json.dumps({"failed": [o.version for o in failed]}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
