"""The documentation site builds with no warning (``-W --keep-going -n``: nitpicky references),
and what it generates from the code is all there: every ``kgroups`` option, every ``[kgroups]``
option, both connection forms, every benchmark table, the OpenLineage facet schemas at the URLs
their ``$id`` names, and a Documentation project URL that points at the site."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once as ``make docs`` builds it (a fresh environment, warnings as errors)."""
    out = tmp_path_factory.mktemp("site")
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-E",
            "-W",
            "--keep-going",
            "-n",
            "-q",
            "-b",
            "html",
            str(DOCS),
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert result.returncode == 0 and not warnings, (
        f"the docs build failed or warned ({len(warnings)} warning(s)):\n{result.stderr[-6000:]}"
    )
    print(f"docs built in {time.monotonic() - started:.1f} s")
    return out


def _text(site: Path, page: str) -> str:
    return (site / page).read_text(encoding="utf-8")


def test_every_kgroups_option_is_documented(site):
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from kgroups_docs import cli_parser
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    parser = cli_parser()
    page = _text(site, "cli.html")
    verbs = parser._subparsers._group_actions[0].choices
    assert verbs, "the parser has no verbs"
    for name, verb in {"kgroups": parser, **verbs}.items():
        assert f'id="{name}"' in page or name == "kgroups", f"verb {name} has no section in cli.html"
        for action in verb._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                assert option in page, f"{name} {option} is not in cli.html"


def test_every_configuration_option_is_documented(site):
    from airflow_provider_kgroups.get_provider_info import get_provider_info

    page = _text(site, "configuration.html")
    for section, spec in get_provider_info()["config"].items():
        for option, decl in spec["options"].items():
            assert f'id="config-{section}-{option.replace("_", "-")}"' in page, f"[{section}] {option}"
            assert f"AIRFLOW__{section.upper()}__{option.upper()}" in page
            assert decl["type"] in page


def test_both_connection_forms_are_documented(site):
    from airflow_provider_kgroups.get_provider_info import get_provider_info

    page = _text(site, "connections.html")
    for conn in get_provider_info()["connection-types"]:
        for field in conn.get("conn-fields", {}):
            assert f'<span class="pre">{field}</span>' in page, f"{conn['connection-type']}: {field}"


def test_every_benchmark_table_is_included():
    """A new benchmarks/RESULTS-*.txt is shown by some page (included, never copied)."""
    sources = "\n".join(path.read_text(encoding="utf-8") for path in DOCS.glob("*.rst"))
    included = set(re.findall(r"\.\. literalinclude:: \.\./benchmarks/(RESULTS-[\w-]+\.txt)", sources))
    assert included == {path.name for path in (ROOT / "benchmarks").glob("RESULTS-*.txt")}


def test_openlineage_facet_schemas_are_published_where_their_ids_say(site):
    import airflow_provider_kgroups.observability as observability
    from airflow_provider_kgroups.observability.facets import SCHEMA_BASE

    documentation = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Documentation"]
    assert documentation + "_static/openlineage/" == SCHEMA_BASE
    schemas = sorted((Path(observability.__file__).parent / "schemas").glob("*.json"))
    assert schemas
    for schema in schemas:
        published = site / "_static" / "openlineage" / schema.name
        assert published.read_bytes() == schema.read_bytes(), schema.name
        assert json.loads(schema.read_text())["$id"] == SCHEMA_BASE + schema.name


def test_the_documentation_url_is_the_site_read_the_docs_builds():
    documentation = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Documentation"]
    assert documentation == "https://airflow-provider-kgroups.readthedocs.io/en/latest/"
    readthedocs = (ROOT / ".readthedocs.yaml").read_text()
    assert "configuration: docs/conf.py" in readthedocs and "fail_on_warning: true" in readthedocs
    assert "--group docs" in readthedocs


def test_the_changelog_is_a_page(site):
    changelog = (ROOT / "CHANGELOG.rst").read_text()
    first_heading = changelog.splitlines()[0]
    assert first_heading in _text(site, "changelog.html")


def test_the_architecture_picture_shows_every_folder_of_the_layering_check(site):
    """The picture is drawn from scripts/import_graph.py at build time: every folder it places is a
    box of the inline SVG (a folder added to the package and placed shows up without a drawing)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import import_graph
    finally:
        sys.path.pop(0)
    page = (site / "architecture.html").read_text()
    start = page.index('<svg class="kgl"')
    svg = page[start : page.index("</svg>", start)]
    placed = [
        folder for folder in import_graph.LAYERS if folder != "(root)"
    ]  # the root holds only the version
    missing = [folder for folder in placed if f'data-name="{folder}"' not in svg]
    assert not missing, missing
