"""The repository's top-level folders depend one way: tests may import the demo's world
(``demo/``), never the other way; the product (the package, the example DAGs), the demo and
the scripts import nothing from ``tests``; the benchmarks import only the fake cluster from
there (pure test infrastructure). And the wheel ships the package alone, not ``demo``.
Checked with ``ast`` (nothing is imported or run) and setuptools' own package discovery."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from setuptools import find_namespace_packages, find_packages

ROOT = Path(__file__).resolve().parents[1]
#: folder -> the ``tests`` modules it may import (none, or the fake cluster's package)
ALLOWED_FROM_TESTS = {
    "airflow_provider_kgroups": (),
    "dags": (),
    "demo": (),
    "scripts": (),
    "benchmarks": ("tests.support.fakekafka",),
}


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
    return names


def imports_of_tests(folder: str, root: Path = ROOT) -> dict[str, set[str]]:
    found = {}
    for path in sorted((root / folder).rglob("*.py")):
        modules = {m for m in imported_modules(path) if m == "tests" or m.startswith("tests.")}
        allowed = ALLOWED_FROM_TESTS[folder]
        bad = {m for m in modules if not any(m == a or m.startswith(a + ".") for a in allowed)}
        if bad:
            found[str(path.relative_to(root))] = bad
    return found


def test_nothing_outside_tests_imports_tests_except_the_benchmarks_fake_cluster():
    scanned = {folder: sorted((ROOT / folder).rglob("*.py")) for folder in ALLOWED_FROM_TESTS}
    assert all(scanned.values()), {f: len(p) for f, p in scanned.items()}  # every folder was read
    assert {folder: imports_of_tests(folder) for folder in ALLOWED_FROM_TESTS} == {
        folder: {} for folder in ALLOWED_FROM_TESTS
    }


def test_the_check_sees_an_import_of_tests(tmp_path):
    """The check can fail: a demo module importing tests.support is reported."""
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "bad.py").write_text(
        "from tests.support.live import LiveConsumer\nimport tests.support.wire\n"
    )
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "ok.py").write_text(
        "def f():\n    from tests.support.fakekafka import FakeCluster\n"
    )
    assert imports_of_tests("demo", tmp_path) == {"demo/bad.py": {"tests.support.live", "tests.support.wire"}}
    assert imports_of_tests("benchmarks", tmp_path) == {}


def test_the_wheel_ships_the_package_alone():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    find = find_namespace_packages if config.get("namespaces", True) else find_packages  # setuptools' default
    packages = find(str(ROOT), include=config["include"], exclude=config.get("exclude", ()))
    assert "airflow_provider_kgroups" in packages and "airflow_provider_kgroups.client" in packages
    assert {p.split(".")[0] for p in packages} == {"airflow_provider_kgroups"}
    assert (ROOT / "demo" / "__init__.py").exists()  # there is a demo package to leave out
