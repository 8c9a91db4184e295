"""The first open of a store never rolled up: the page's API answers 202 with how many of the
history files are rolled up so far, the work goes on (a request meanwhile joins it), and the
answer comes once it is done."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import Future

import pytest
from fastapi.testclient import TestClient

from airflow_provider_kgroups.history.rollup_cache import HistoryRollups
from airflow_provider_kgroups.history.store import HistoryStore
from airflow_provider_kgroups.ui import app as page_app
from airflow_provider_kgroups.ui.data import PageData
from airflow_provider_kgroups.ui.overview import build_overview
from airflow_provider_kgroups.ui.security import require_reader
from airflow_provider_kgroups.ui.settings import PageSettings
from tests.support.builders import HOUR
from tests.support.ui_histories import idle_history

DAY = 24 * HOUR


def test_a_first_open_says_how_far_the_rollups_are_until_its_answer_is_ready(tmp_path, monkeypatch):
    store = HistoryStore(str(tmp_path / "h"))
    for snapshot in idle_history(3, groups=5, points=30, step_ms=2 * HOUR):
        store.append(snapshot)
    files = len(store.files())
    expected = json.loads(
        build_overview(
            PageData(PageSettings(history_url=store.url), save_rollups=False), "30d", 30 * DAY, None, "lag"
        )
    )
    held, release, rolled = threading.Event(), threading.Event(), []
    original = HistoryRollups._from_rows

    def slow(self, *args, **kwargs):  # the third file's rollup waits until the test lets it go
        rolled.append(args[0])
        if len(rolled) == 3:
            held.set()
            release.wait(60)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(HistoryRollups, "_from_rows", slow)
    monkeypatch.setattr(page_app, "ANSWER_WAIT_S", 0.2)
    app = page_app.create_app(PageSettings(history_url=store.url))
    app.dependency_overrides[require_reader] = lambda: "viewer"
    client = TestClient(app)
    first = client.get("/api/groups", params={"window": "30d"})
    assert held.wait(30)
    assert first.status_code == 202 and first.headers["retry-after"] == "1"
    assert first.json() == {"preparing": {"files": 2, "of": files}}
    again = client.get("/api/groups", params={"window": "30d"})  # joins the same work
    assert again.status_code == 202 and len(rolled) == 3
    release.set()
    deadline = time.monotonic() + 60
    while (answer := client.get("/api/groups", params={"window": "30d"})).status_code == 202:
        assert time.monotonic() < deadline, answer.json()
        time.sleep(0.05)
    assert answer.status_code == 200 and answer.json()["groups"] == expected["groups"]
    assert len(rolled) == files  # each file rolled up once


def _state(tmp_path) -> page_app._State:
    store = HistoryStore(str(tmp_path / "h"))
    for snapshot in idle_history(3, groups=2, points=3, step_ms=HOUR):
        store.append(snapshot)
    return page_app._State(PageSettings(history_url=store.url))


def test_an_answer_built_before_its_callback_is_added_leaves_the_page_answering(tmp_path, monkeypatch):
    """A build can finish before the request adds its done-callback (an overview from the caches takes
    a millisecond); the callback then runs in the request's own thread and must not wait on a lock
    that thread holds, or every later request hangs."""
    state = _state(tmp_path)

    def already_done(build):
        done = Future()
        done.set_result(build())
        return done

    monkeypatch.setattr(state._pool, "submit", already_done)
    answers = []
    worker = threading.Thread(
        target=lambda: answers.extend(state.answer(("groups",), lambda n=n: n) for n in (1, 2)), daemon=True
    )
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "the page locked itself"
    assert answers == [1, 2]


def test_a_build_that_fails_after_the_wait_is_reported_to_the_next_poll_not_started_again(
    tmp_path, monkeypatch, caplog
):
    state = _state(tmp_path)
    monkeypatch.setattr(page_app, "ANSWER_WAIT_S", 0.1)
    release = threading.Event()

    def failing():
        release.wait(30)
        raise OSError("the store timed out")

    first = state.answer(("groups", "30d"), failing)
    assert first.status_code == 202
    release.set()
    deadline = time.monotonic() + 30
    while not state._running[("groups", "30d")].done():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with pytest.raises(
        OSError, match="the store timed out"
    ):  # the poll gets the failure (a 500), not a new 202
        state.answer(("groups", "30d"), lambda: "a new build")
    assert "the page's groups answer failed: OSError: the store timed out" in caplog.text
    assert (
        state.answer(("groups", "30d"), lambda: "a new build") == "a new build"
    )  # reported once, then built again
