"""The package's layering, checked with ``scripts/import_graph.py`` (``ast`` only): no import runs
from a lower layer to a higher one, the folders do not import each other in a loop, every
folder has a layer, and nothing below the Airflow layer imports Airflow."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "import_graph.py"


def load_script():
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_package_imports_one_way_with_no_folder_cycle():
    graph = load_script()
    result = graph.analyse()
    assert result["upward"] == []
    assert result["cycles"] == []
    assert result["unplaced"] == []
    assert result["airflow_below"] == []
    assert ("lag", "client") in result["folder_edges"]  # the scan did read the package
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Upward imports (lower layer -> higher layer): 0" in out.stdout


def test_the_script_sees_an_upward_import_a_cycle_an_unplaced_folder_and_airflow_below(tmp_path):
    """The check can fail: a made-up package with each fault is reported."""
    graph = load_script()
    pkg = tmp_path / graph.PACKAGE
    for folder, text in {
        "client": "from ..lag import model\n",                       # client (0) -> lag (2): upward
        "lag": "def f():\n    from ..client import x\n",          # lazy imports count too
        "hooks": "from ..sensors import s\n",
        "sensors": "from ..hooks import h\nimport airflow\n",       # hooks <-> sensors: a cycle
        "extras": "",                                                # no layer given
        "history": "from airflow.sdk import BaseHook\n",            # Airflow below the hooks
    }.items():
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
        name = {"client": "x", "lag": "model", "hooks": "h", "sensors": "s", "extras": "e", "history": "store"}[folder]
        (pkg / folder / f"{name}.py").write_text(text)
    (pkg / "__init__.py").write_text("")
    result = graph.analyse(pkg)
    assert result["upward"] == [(f"{graph.PACKAGE}.client.x", f"{graph.PACKAGE}.lag.model")]
    assert result["cycles"] == [["client", "lag"], ["hooks", "sensors"]]  # client -> lag -> client, too
    assert result["unplaced"] == ["extras"]
    assert result["airflow_below"] == [f"{graph.PACKAGE}.history.store"]
    assert result["folder_edges"][("lag", "client")] == 1
    assert not graph.ok(result)
