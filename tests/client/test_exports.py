"""The client package's public names come from one table (``_HOMES``: name -> submodule): the
package derives ``__all__``, ``__getattr__`` and ``__dir__`` from it, and the imports that type
checkers read are held to it here (they are text a checker reads, so they cannot be derived).
That the names load lazily, and cheaply: tests/airflow/test_light_imports.py."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import airflow_provider_kgroups.client as package

SOURCE = Path(inspect.getfile(package))


def type_checking_imports() -> dict[str, str]:
    """name -> submodule of each ``from .<submodule> import <name> as <name>`` under ``if TYPE_CHECKING:``."""
    found: dict[str, str] = {}
    for node in ast.parse(SOURCE.read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.level == 1, ast.dump(statement)
                for alias in statement.names:
                    assert alias.asname == alias.name, f"{alias.name} is not exported as itself"
                    assert alias.name not in found, f"{alias.name} is imported twice"
                    found[alias.name] = str(statement.module)
    return found


def test_all_is_the_table():
    assert package.__all__ == list(package._HOMES)
    assert len(set(package.__all__)) == len(package.__all__)


def test_the_imports_type_checkers_read_are_the_table():
    assert type_checking_imports() == package._HOMES


def test_every_name_is_defined_in_its_home_and_loads_from_the_package():
    for name, home in package._HOMES.items():
        defined = getattr(importlib.import_module(f"{package.__name__}.{home}"), name)
        assert getattr(package, name) is defined, name
        assert name in dir(package)


def test_the_names_once_missing_from_a_list_are_there():
    """ShareGroupOffsets was in the table and ``__all__`` but not among the type checkers' imports."""
    assert "ShareGroupOffsets" in type_checking_imports()
    from airflow_provider_kgroups.client import ShareGroupOffsets
    from airflow_provider_kgroups.client.results import ShareGroupOffsets as defined

    assert ShareGroupOffsets is defined


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="NoSuchName"):
        package.NoSuchName
