"""The page in a real headless browser: Debian's Chromium driven by Playwright, logged in to a
real api-server. Screenshots go to ``KGROUPS_UI_SHOTS`` (default: the test's tmp dir) and the
test says where; the assertions are on what the page shows: the group's latest lag, the number
of points the chart holds (as ECharts itself reports it), a deleted group's restore command."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlencode

import pytest

from demo.ui_browser import browser_page, chromium_missing, frame_of
from tests.support.ui_seeded import LATEST_LAG, POINTS

pytestmark = pytest.mark.skipif(chromium_missing() is not None, reason=str(chromium_missing()))
WAIT_MS = 120_000


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("KGROUPS_UI_SHOTS") or tmp_path_factory.mktemp("shots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_overview_inside_the_airflow_ui(page_server, shots):
    with browser_page(page_server.base, page_server.token("viewer")) as page:
        page.goto(f"{page_server.base}/plugin/consumer-groups")
        frame = frame_of(page)
        row = frame.locator("tr[data-group='orders-landing']")
        row.wait_for(timeout=WAIT_MS)
        assert row.locator("td.lag").inner_text() == f"{LATEST_LAG:,}"
        assert frame.locator("#shown").inner_text() == "3 of 3 groups"
        frame.locator("tr[data-group='weekly-report']").get_by_text("paused").first.wait_for(timeout=WAIT_MS)
        assert frame.locator("tr[data-group='orders-landing'] .spark canvas").count() == 1  # drawn by ECharts
        assert frame.locator("tr[data-group='legacy-etl'] .badge", has_text="deleted by cleanup").count() == 1
        page.screenshot(path=str(shots / "overview.png"))
        frame.locator("#pattern").fill("weekly")
        frame.locator("#shown", has_text="1 of 3 groups").wait_for(timeout=WAIT_MS)
    print(f"screenshot: {shots / 'overview.png'}")


def _group_url(base: str, group_id: str, **params: str) -> str:
    return f"{base}/kgroups/#/group?{urlencode({'id': group_id, **params})}"


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_group_page_shows_latest_lag_points_and_thresholds(page_server, shots, dark):
    with browser_page(page_server.base, page_server.token("viewer"), dark=dark, height=1800) as page:
        page.goto(_group_url(page_server.base, "orders-landing", window="24h"))
        page.locator("#points[data-lag-points]").wait_for(timeout=WAIT_MS)
        assert page.locator("#latest-lag").inner_text() == f"{LATEST_LAG:,}"
        assert page.locator("#points").get_attribute("data-lag-points") == str(3 * POINTS)
        plotted = page.evaluate("() => window.kgCharts.lag.getOption().series.map(s => s.data.length)")
        assert plotted == [POINTS, POINTS, POINTS]
        marks = page.evaluate(
            "() => window.kgCharts.lag.getOption().series[0].markLine.data.map(d => d.name)"
        )
        assert "gate_orders.wait_for_orders max_total_lag" in marks
        assert page.locator("#gates").get_by_text("max_total_lag=1500, max_lag_seconds=900").count() == 1
        assert page.evaluate("() => document.documentElement.classList.contains('dark')") is dark
        name = f"group-{'dark' if dark else 'light'}.png"
        page.screenshot(path=str(shots / name), full_page=True)
    print(f"screenshot: {shots / name}")


def test_deleted_group_shows_its_audit_record_and_restore_command(page_server, shots):
    backup = page_server.seeded["backup"]
    with browser_page(page_server.base, page_server.token("viewer"), height=1600) as page:
        page.goto(_group_url(page_server.base, "legacy-etl", window="14d"))
        restore = page.locator("#cleanups pre.restore-cli")
        restore.wait_for(timeout=WAIT_MS)
        assert restore.inner_text() == f"kgroups restore {backup} legacy-etl"
        assert page.locator("#cleanups pre.restore-hook").inner_text() == (
            f"KafkaGroupsHook('kgroups_prod').restore_offsets({backup!r}, ['legacy-etl'])"
        )
        assert page.locator("#evidence").get_by_text("idle for at least").count() == 1
        page.screenshot(path=str(shots / "deleted-group.png"), full_page=True)
        with page.expect_popup() as popup:
            page.locator("#cleanups a", has_text=Path(backup).name).click()
        assert '"legacy-etl"' in popup.value.content()
    print(f"screenshot: {shots / 'deleted-group.png'}")


def test_group_ids_are_shown_as_text_never_as_markup(page_server):
    hostile = "<img src=x onerror=window.pwned=1>"
    with browser_page(page_server.base, page_server.token("viewer")) as page:
        page.goto(_group_url(page_server.base, hostile))
        page.locator("#not-found").wait_for(timeout=WAIT_MS)
        assert page.locator("#group-id").inner_text() == hostile
        assert page.evaluate("() => window.pwned === undefined")
