"""Vendor Apache ECharts into the UI plugin's package data, from the npm registry.

    python scripts/vendor_echarts.py            # the pinned version: fetch, check, write
    python scripts/vendor_echarts.py --check    # the vendored files match VENDORED.md (tests run this)

Why ECharts: an Apache project (Apache-2.0, like Airflow), one self-contained file with no
build step, canvas rendering that stays responsive at 50,000 points per chart (with its own
LTTB sampling on top of the server's downsampling), time axes with zoom, mark lines for gate
thresholds and events, and a dark theme built in. uPlot is smaller and faster but has no
mark lines, event markers or legend toggles without plugins of our own; plotly.js is four
times larger.

``npm pack`` fetches the published tarball (no install, no scripts run); the script takes
``dist/echarts.min.js``, ``LICENSE`` and ``NOTICE`` from it and records their SHA-256 in
``VENDORED.md``, which ``--check`` compares.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "6.1.0"
STATIC = Path(__file__).resolve().parents[1] / "airflow_provider_kgroups" / "ui" / "static"
FILES = {
    "package/dist/echarts.min.js": "echarts.min.js",
    "package/LICENSE": "ECHARTS-LICENSE",
    "package/NOTICE": "ECHARTS-NOTICE",
}
MANIFEST = STATIC / "VENDORED.md"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest_lines() -> dict[str, str]:
    out = {}
    for line in MANIFEST.read_text().splitlines():
        parts = line.strip("| ").split(" | ")
        if len(parts) == 2 and len(parts[1]) == 64:
            out[parts[0].strip("`")] = parts[1]
    return out


def check() -> list[str]:
    recorded = manifest_lines()
    problems = [f"{name}: not recorded in {MANIFEST.name}" for name in FILES.values() if name not in recorded]
    problems += [
        f"{name}: sha256 {sha256(STATIC / name)} != recorded {digest}"
        for name, digest in recorded.items()
        if sha256(STATIC / name) != digest
    ]
    return problems


def vendor() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["npm", "pack", f"echarts@{VERSION}", "--silent"], cwd=tmp, check=True)
        with tarfile.open(Path(tmp) / f"echarts-{VERSION}.tgz") as tar:
            for member, name in FILES.items():
                (STATIC / name).write_bytes(tar.extractfile(member).read())
    rows = "\n".join(f"| `{name}` | {sha256(STATIC / name)} |" for name in FILES.values())
    MANIFEST.write_text(
        f"# Vendored files\n\nApache ECharts {VERSION} from the npm registry (`npm pack echarts@{VERSION}`),"
        " Apache License 2.0 (`ECHARTS-LICENSE`, `ECHARTS-NOTICE`). Re-vendor with\n"
        "`python scripts/vendor_echarts.py`; `--check` compares the files with this table.\n\n"
        f"| file | sha256 |\n|---|---|\n{rows}\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare the vendored files with VENDORED.md")
    if parser.parse_args().check:
        problems = check()
        print("\n".join(problems) or "vendored files match VENDORED.md")
        return 1 if problems else 0
    vendor()
    print(f"vendored echarts {VERSION} into {STATIC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
