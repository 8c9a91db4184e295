"""Every snippet the documentation marks runnable (``:class: runnable``) runs against a fake
cluster, so the docs cannot drift from the code: Python snippets are executed as written (their
imports, constructors and calls), console snippets run each ``kgroups`` line and expect exit 0.
Only the broker list is swapped for the fake cluster's (tests/support/doc_snippets.py)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from tests.support.doc_snippets import ROOT, console_commands, runnable_snippets
from tests.support.fakekafka import FakeCluster, Member

SNIPPETS = runnable_snippets()


@pytest.fixture(scope="module")
def world():
    """What the snippets speak of: topics ``orders`` and ``retired-topic``, landing groups behind and
    caught up, a live group, a leftover ``tmp-1``, a share group ``jobs-nightly``."""
    with FakeCluster.running_in_thread(brokers=3) as cluster:
        cluster.add_topic("orders", partitions=2, end_offsets=1000)
        cluster.add_topic("retired-topic", partitions=1, end_offsets=10)
        cluster.add_group(
            "orders-landing", offsets={("orders", 0): 990, ("orders", 1): 1000, ("retired-topic", 0): 10}
        )
        cluster.add_group("orders-landing-eu", offsets={("orders", 0): 1000, ("orders", 1): 1000})
        cluster.add_group(
            "billing",
            offsets={("orders", 0): 1000, ("orders", 1): 700},
            members=[Member("m-1", assignment={"orders": [0, 1]})],
        )
        cluster.add_group("tmp-1", offsets={("orders", 0): 10})
        cluster.add_group("jobs-nightly", group_type="share")
        cluster.set_share_offsets("jobs-nightly", {("orders", 0): 900, ("orders", 1): 950})
        yield cluster


def test_the_documentation_has_runnable_snippets():
    languages = {snippet.language for snippet in SNIPPETS}
    assert languages == {"python", "console"}, languages
    assert len(SNIPPETS) >= 10, [snippet.id for snippet in SNIPPETS]


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[snippet.id for snippet in SNIPPETS])
def test_snippet_runs(snippet, world, kgroups_conn, monkeypatch, tmp_path):
    bootstrap = world.bootstrap
    kgroups_conn("kgroups_default", host=bootstrap)
    monkeypatch.chdir(tmp_path)  # what a snippet writes (backups, files) stays in the test's folder
    code = snippet.for_world(bootstrap)
    if snippet.language == "python":
        exec(compile(code, snippet.id, "exec"), {"__name__": "docs_snippet"})
        return
    commands = console_commands(code)
    assert commands, f"{snippet.id}: a runnable console snippet without a kgroups command"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for command in commands:
        result = subprocess.run(
            [sys.executable, "-m", "airflow_provider_kgroups", *shlex.split(command)[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, (
            f"{snippet.id}: {command}\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
