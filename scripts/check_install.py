"""Check that an environment holding this provider is coherent; exit 1 naming what is not.

- ``pip check`` passes (every installed distribution's requirements are met);
- no file is installed by two distributions (``pyspark`` and ``pyspark-client`` both write the
  ``pyspark`` package: the Python side of one release then runs against the jars of another);
- ``pyspark.__version__`` equals the installed pyspark distribution's version, when present;
- the provider's modules import (the client and CLI without loading Airflow), and the
  ``kgroups`` command starts;
- where the ``ui`` extra is installed (all its requirements are) and Airflow shows the page (3.1+),
  the Consumer groups page's modules import and its app is built.

Run it with the environment's own interpreter: ``.venv/bin/python scripts/check_install.py``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections import defaultdict
from importlib import metadata

# Files that several distributions may legitimately list (bytecode caches, shared folders).
_IGNORED_SUFFIXES = (".pyc",)
_IGNORED_PARTS = ("__pycache__",)
#: Imports run from here, so they load the installed package, not a checkout in the working directory.
_OUTSIDE = tempfile.gettempdir()


def overlapping_files() -> dict[str, set[str]]:
    owners: dict[str, set[str]] = defaultdict(set)
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        for path in dist.files or ():
            text = str(path)
            if text.endswith(_IGNORED_SUFFIXES) or any(part in text for part in _IGNORED_PARTS):
                continue
            if ".dist-info/" in text or ".egg-info/" in text or text.startswith("__editable__"):
                continue
            owners[str(dist.locate_file(path))].add(name)
    return {path: names for path, names in owners.items() if len(names) > 1}


def extra_installed(extra: str) -> bool:
    """Whether every requirement the provider declares for ``extra`` is installed."""
    from packaging.requirements import Requirement

    wanted = [Requirement(r) for r in metadata.requires("airflow-provider-kgroups") or ()]
    wanted = [
        r
        for r in wanted
        if r.marker is not None
        and r.marker.evaluate({"extra": extra})
        and not r.marker.evaluate({"extra": ""})
    ]
    for requirement in wanted:
        try:
            metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            return False
    return bool(wanted)


#: The Consumer groups page (Airflow loads ``plugin``; the rest is imported when the page is first served).
UI_MODULES = (
    "plugin",
    "app",
    "security",
    "settings",
    "data",
    "overview",
    "group",
    "judging",
    "series",
    "gates",
    "trail",
    "live",
)


def page_shown() -> bool:
    """Whether this Airflow shows the page (3.1+, ui/plugin.py's PAGE_NEEDS): below, its modules need
    an api-server Airflow does not have, and the plugin registers nothing."""
    from packaging.version import Version

    return Version(metadata.version("apache-airflow")).release[:2] >= (3, 1)


def main() -> int:
    problems: list[str] = []
    pip = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    if pip.returncode:
        problems.append(f"pip check failed:\n{pip.stdout}{pip.stderr}")
    shared = overlapping_files()
    if shared:
        by_pair: dict[tuple[str, ...], int] = defaultdict(int)
        for names in shared.values():
            by_pair[tuple(sorted(names))] += 1
        problems += [
            f"{count} file(s) installed by more than one distribution: {', '.join(pair)}"
            for pair, count in sorted(by_pair.items())
        ]
    try:
        installed = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        installed = None
    if installed is not None:
        import pyspark

        if pyspark.__version__ != installed:
            problems.append(
                f"pyspark.__version__ is {pyspark.__version__} but the installed pyspark is {installed}"
            )
    # The client, connect and lag packages load their modules on first use (PEP 562): name the modules
    # that do the work, so that a missing dependency of theirs shows here.
    code = (
        "import sys, airflow_provider_kgroups.client, airflow_provider_kgroups.cli, "
        "airflow_provider_kgroups.connect, airflow_provider_kgroups.connect.evidence, "
        "airflow_provider_kgroups.connect.rest, airflow_provider_kgroups.client.client, "
        "airflow_provider_kgroups.client.sync, airflow_provider_kgroups.lag.snapshot, "
        "airflow_provider_kgroups.lag.seconds; "
        "assert 'airflow' not in sys.modules, 'the client imported Airflow'; "
        "import airflow_provider_kgroups.hooks.groups, airflow_provider_kgroups.hooks.connect, "
        "airflow_provider_kgroups.sensors.lag, airflow_provider_kgroups.triggers.lag"
    )
    imports = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=_OUTSIDE)
    if imports.returncode:
        problems.append(f"the provider's modules do not import:\n{imports.stderr[-2000:]}")
    if extra_installed("ui") and page_shown():
        code = (
            "import importlib; "
            + "; ".join(f"importlib.import_module('airflow_provider_kgroups.ui.{m}')" for m in UI_MODULES)
            + "; from airflow_provider_kgroups.ui.app import create_app; create_app()"
        )
        ui = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=_OUTSIDE)
        if ui.returncode:
            problems.append(
                f"the ui extra is installed but the page's modules do not import:\n{ui.stderr[-2000:]}"
            )
    cli = subprocess.run(
        [sys.executable, "-m", "airflow_provider_kgroups", "--help"],
        capture_output=True,
        text=True,
        cwd=_OUTSIDE,
    )
    if cli.returncode:
        problems.append(f"kgroups --help failed:\n{cli.stderr[-2000:]}")
    label = f"{sys.prefix} (pyspark {installed or 'not installed'})"
    if problems:
        print(f"check_install: {label}: NOT coherent", file=sys.stderr)
        for problem in problems:
            print(f"- {problem}", file=sys.stderr)
        return 1
    page = ", the ui extra's page too" if extra_installed("ui") else ""
    print(f"check_install: {label}: pip check clean, no shared files, modules import{page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
