"""client/gcpause.py: the collector's young threshold is raised while at least one large read
runs, and put back by the last one to finish, whatever the nesting, the threads or an error."""

from __future__ import annotations

import gc
import threading

import pytest

from airflow_provider_kgroups.client.gcpause import YOUNG_THRESHOLD, fewer_collections


@pytest.fixture(autouse=True)
def default_thresholds():
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_raised_inside_and_put_back_after_nested_calls():
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        with fewer_collections():
            assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)  # the outer call still runs
    assert gc.get_threshold() == (700, 10, 10)


def test_put_back_when_the_call_raises():
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_calls_in_two_threads_the_last_to_finish_puts_back():
    inside, release = threading.Event(), threading.Event()
    released = []

    def other():
        with fewer_collections():
            inside.set()
            released.append(release.wait(30))

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(30)
    with fewer_collections():
        pass
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)  # the other thread's call still runs
    release.set()
    thread.join(30)
    assert released == [True]  # the other thread's call ended when told to, not at its timeout
    assert gc.get_threshold() == (700, 10, 10)


def test_a_threshold_set_by_the_application_is_left_alone():
    gc.set_threshold(0, 10, 10)  # collection off by threshold: stays off
    with fewer_collections():
        assert gc.get_threshold() == (0, 10, 10)
    assert gc.get_threshold() == (0, 10, 10)
    gc.set_threshold(5_000_000, 5, 5)  # already higher: kept
    with fewer_collections():
        assert gc.get_threshold() == (5_000_000, 5, 5)
    assert gc.get_threshold() == (5_000_000, 5, 5)
    gc.set_threshold(700, 10, 10)
    with fewer_collections():
        gc.set_threshold(1234, 10, 10)  # changed by the application meanwhile: its choice stays
    assert gc.get_threshold() == (1234, 10, 10)
