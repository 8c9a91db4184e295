"""The fake cluster's pytest plugin (loaded by tests/conftest.py): a test fails when a handler of
the fake raised while it ran, whether or not the test looked.

A handler error is a bug of the fake that the client may survive by retrying (the connection
closes unanswered), so a test that forgot to check ``cluster.handler_errors`` could pass over it.
The autouse fixture ``fake_handler_errors`` reads :data:`tests.support.fakekafka.handler_errors.RAISED`
(every cluster's errors, threaded clusters' and module-scoped ones' included) before and after
each test, and fails the test at teardown naming each error. A test that provokes handler errors
on purpose says so with ``@pytest.mark.fake_handler_errors`` and asserts them itself.

Nothing is imported for tests that never load the fake (the module is looked up in sys.modules).
"""

from __future__ import annotations

import sys
import traceback

import pytest

_MODULE = "tests.support.fakekafka.handler_errors"
MARKER = "fake_handler_errors"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: the test makes the fake cluster's handlers raise on purpose and asserts "
        "cluster.handler_errors itself (the fake_handler_errors fixture does not fail it)",
    )


def _raised() -> list:
    module = sys.modules.get(_MODULE)
    return module.RAISED if module is not None else []


@pytest.fixture(autouse=True)
def fake_handler_errors(request: pytest.FixtureRequest):
    """Fails the test at teardown if a handler of any fake cluster raised while it ran."""
    before = len(_raised())
    yield
    raised = _raised()[before:]
    if not raised or request.node.get_closest_marker(MARKER) is not None:
        return
    details = "\n".join(f"- {e}\n" + "".join(traceback.format_exception(e.error)) for e in raised)
    pytest.fail(
        f"{len(raised)} handler error(s) in the fake cluster during this test (a bug of the fake; "
        f"mark the test @pytest.mark.{MARKER} if it provokes them on purpose and asserts them):\n"
        f"{details}",
        pytrace=False,
    )
