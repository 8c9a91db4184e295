"""The package's layering, checked with ``scripts/import_graph.py`` (``ast`` only): no import runs
from a lower layer to a higher one, neither the folders nor the files import each other in a
loop, every folder has a layer, and nothing below the Airflow layer imports Airflow."""

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
    assert result["file_cycles"] == []
    assert result["unplaced"] == []
    assert result["airflow_below"] == []
    assert ("lag", "client") in result["folder_edges"]  # the scan did read the package
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Upward imports (lower layer -> higher layer): 0" in out.stdout
    assert "File cycles: 0" in out.stdout


def test_the_script_sees_an_upward_import_a_cycle_an_unplaced_folder_and_airflow_below(tmp_path):
    """The check can fail: a made-up package with each fault is reported."""
    graph = load_script()
    pkg = tmp_path / graph.PACKAGE
    for folder, text in {
        "client": "from ..lag import model\n",  # client (0) -> lag (2): upward
        "lag": "def f():\n    from ..client import x\n",  # lazy imports count too
        "hooks": "from ..sensors import s\n",
        "sensors": "from ..hooks import h\nimport airflow\n",  # hooks <-> sensors: a cycle
        "extras": "",  # no layer given
        "history": "from airflow.sdk import BaseHook\n",  # Airflow below the hooks
    }.items():
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
        name = {
            "client": "x",
            "lag": "model",
            "hooks": "h",
            "sensors": "s",
            "extras": "e",
            "history": "store",
        }[folder]
        (pkg / folder / f"{name}.py").write_text(text)
    (pkg / "__init__.py").write_text("")
    result = graph.analyse(pkg)
    assert result["upward"] == [(f"{graph.PACKAGE}.client.x", f"{graph.PACKAGE}.lag.model")]
    assert result["cycles"] == [["client", "lag"], ["hooks", "sensors"]]  # client -> lag -> client, too
    assert result["unplaced"] == ["extras"]
    assert result["airflow_below"] == [f"{graph.PACKAGE}.history.store"]
    assert result["folder_edges"][("lag", "client")] == 1
    assert not graph.ok(result)


def test_the_script_sees_files_that_import_each_other_inside_one_folder(tmp_path):
    """A circle between files of one folder (the driver and the handler base class once were
    one, through a TYPE_CHECKING import) is no folder cycle, but the file check finds it, also
    round a longer loop and through a package ``__init__``; files importing one way pass."""
    graph = load_script()
    pkg = tmp_path / graph.PACKAGE
    (pkg / "client" / "handlers").mkdir(parents=True)
    for path, text in {
        "__init__.py": "",
        "client/__init__.py": "",
        "client/driver.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .handlers.base import H\n",
        "client/handlers/__init__.py": "from .base import H\n",
        "client/handlers/base.py": "from ..driver import Outcome\n",  # driver <-> handlers.base
        "client/a.py": "from . import b\n",
        "client/b.py": "from .c import f\n",
        "client/c.py": "def f():\n    from .a import x\n",  # a -> b -> c -> a
        "client/contract.py": "",
        "client/lookup.py": "from .contract import Outcome\n",  # one way: no circle
    }.items():
        (pkg / path).write_text(text)
    result = graph.analyse(pkg)
    assert result["cycles"] == []
    assert sorted(result["file_cycles"]) == [
        [f"{graph.PACKAGE}.client.a", f"{graph.PACKAGE}.client.b", f"{graph.PACKAGE}.client.c"],
        [f"{graph.PACKAGE}.client.driver", f"{graph.PACKAGE}.client.handlers.base"],
    ]
    assert not graph.ok(result)
    assert "File cycles: 2" in graph.report(result)
