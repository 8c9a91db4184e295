"""README.rst is the front page (PyPI shows it too): what the provider is, how to install it, the
two commands, one example (run by test_snippets.py), links into the documentation; short, and
rendered by docutils as PyPI renders it, without a warning."""

from __future__ import annotations

import io
import re
import tomllib
from pathlib import Path

import docutils.core

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.rst"
MAX_LINES = 300


def test_readme_is_a_front_page_of_at_most_300_lines():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES, "README.rst is the front page: move the detail to docs/"
    for command in ("make demo", "make test", "pip install airflow-provider-kgroups"):
        assert command in text, command
    assert re.search(r"^\.\. code-block:: python\n   :class: runnable$", text, re.MULTILINE), (
        "one runnable example"
    )


def test_readme_links_into_the_documentation():
    text = README.read_text(encoding="utf-8")
    documentation = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Documentation"]
    pages = re.findall(re.escape(documentation) + r"([\w-]+)\.html", text)
    assert documentation in text and pages
    for page in pages:
        assert (ROOT / "docs" / f"{page}.rst").exists(), (
            f"README links to {page}.html, which docs/ does not build"
        )


def test_readme_renders_without_warnings():
    warnings = io.StringIO()
    docutils.core.publish_string(
        README.read_text(encoding="utf-8"),
        writer="html",
        settings_overrides={"warning_stream": warnings, "report_level": 2, "halt_level": 5},
    )
    assert warnings.getvalue() == ""
