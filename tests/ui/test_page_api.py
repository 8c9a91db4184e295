"""The page's JSON API under a real api-server: what it answers for the seeded history, and
that it refuses anonymous, badly authenticated and unauthorized requests."""

from __future__ import annotations

import requests

from tests.support.ui_seeded import DELETED_AT, LATEST_LAG, POINTS


def test_the_plugin_is_loaded_with_its_nav_entry(page_server):
    plugins = page_server.get("/api/v2/plugins").json()["plugins"]
    (mine,) = [p for p in plugins if p["name"] == "kgroups"]
    assert mine["fastapi_apps"][0]["url_prefix"] == "/kgroups"
    assert mine["external_views"][0]["url_route"] == "consumer-groups"
    # Airflow's default (lazy) provider discovery: the plugin comes from its entry point, once, without errors
    assert page_server.get("/api/v2/plugins/importErrors").json()["import_errors"] == []


def test_overview_lists_the_seeded_groups_with_their_latest_numbers(page_server):
    data = page_server.get("/kgroups/api/groups", params={"window": "14d"}).json()
    groups = {g["group_id"]: g for g in data["groups"]}
    assert set(groups) == {"orders-landing", "weekly-report", "legacy-etl"}
    orders = groups["orders-landing"]
    assert (orders["total_lag"], orders["state"], orders["members"], orders["in_latest"]) == (
        LATEST_LAG,
        "Stable",
        2,
        True,
    )
    assert orders["lag_seconds"] > 0 and orders["lag_seconds_at_least"] is False
    # 144 five-minute snapshots in the last 12 h of 14 days: the last two of 48 slices, at the largest lag there
    assert [b for b, _ in orders["sparkline"]] == [data["spark_buckets"] - 2, data["spark_buckets"] - 1]
    assert orders["sparkline"][-1][1] >= LATEST_LAG
    assert groups["weekly-report"]["dead"]["health"] == "paused"
    assert groups["legacy-etl"]["in_latest"] is False and groups["legacy-etl"]["verdict"] == "UNKNOWN"
    deleted = groups["legacy-etl"]["deleted"]  # from the cleanup's audit record
    assert (deleted["at_ms"], deleted["seen_since"]) == (DELETED_AT, False)
    assert deleted["backup"] == page_server.seeded["backup"].rsplit("/", 1)[-1]
    assert deleted["restore"] == f"kgroups restore {page_server.seeded['backup']} legacy-etl"
    assert groups["orders-landing"]["deleted"] is None and groups["weekly-report"]["deleted"] is None
    assert next(g["group_id"] for g in data["groups"]) == "legacy-etl"  # sorted by total lag, largest first
    filtered = page_server.get("/kgroups/api/groups", params={"pattern": "orders", "sort": "name"}).json()
    assert [g["group_id"] for g in filtered["groups"]] == ["orders-landing"]


def test_group_page_data_has_series_thresholds_events_and_the_deleted_groups_restore(page_server):
    data = page_server.get("/kgroups/api/group", params={"id": "orders-landing", "window": "24h"}).json()
    assert data["latest"]["total_lag"] == LATEST_LAG
    lag = data["charts"]["lag"]
    assert [s["name"] for s in lag["series"]] == ["total", "orders", "payments"]
    assert lag["points"] == 3 * POINTS and lag["raw_points"] == 3 * POINTS
    assert lag["series"][0]["data"][-1] == [data["last_seen_ms"], LATEST_LAG]
    (gate,) = data["gates"]
    assert (gate["dag_id"], gate["task_id"]) == ("gate_orders", "wait_for_orders")
    assert gate["thresholds"] == {"max_total_lag": {"value": 1500}, "max_lag_seconds": {"value": 900}}
    per_partition = page_server.get(
        "/kgroups/api/group", params={"id": "orders-landing", "partitions": "1", "points": "200"}
    ).json()
    assert [s["name"] for s in per_partition["charts"]["lag"]["series"]] == [
        "total",
        "orders[0]",
        "orders[1]",
        "payments[0]",
    ]
    assert per_partition["charts"]["lag"]["points"] <= 200 < per_partition["charts"]["lag"]["raw_points"]

    deleted = page_server.get("/kgroups/api/group", params={"id": "legacy-etl", "window": "14d"}).json()
    assert deleted["dead"]["health"] == "dead" and deleted["dead"]["dead_reasons"] == ["idle"]
    (cleanup,) = deleted["cleanups"]
    assert cleanup["decision"]["decision"] == "deleted"
    backup = page_server.seeded["backup"]
    assert cleanup["restore"]["cli"] == f"kgroups restore {backup} legacy-etl"
    assert (
        cleanup["restore"]["hook"]
        == f"KafkaGroupsHook('kgroups_prod').restore_offsets({backup!r}, ['legacy-etl'])"
    )
    document = page_server.get(f"/kgroups/api/backups/{cleanup['backup']}").json()
    assert document["groups"] == {
        "legacy-etl": {"legacy-orders": {"0": {"offset": 3000, "metadata": "", "leader_epoch": None}}}
    }


def test_the_cleanup_trail_blanks_credentials_in_urls(page_server):
    text = page_server.get("/kgroups/api/cleanups").text
    assert "hunter2" not in text and "legacy-etl" in text


def test_anonymous_bad_token_and_unauthorized_requests_are_refused(page_server):
    for path in (
        "/kgroups/",
        "/kgroups/api/groups",
        "/kgroups/api/group?id=orders-landing",
        "/kgroups/api/cleanups",
        "/kgroups/static/app.js",
    ):
        assert page_server.get(path, user=None).status_code == 401, path
        bad = requests.get(
            f"{page_server.base}{path}", headers={"Authorization": "Bearer not-a-token"}, timeout=30
        )
        assert bad.status_code in (401, 403), path
        assert page_server.get(path, user="nodata").status_code == 403, path
    assert page_server.get("/kgroups/", user="viewer").status_code == 200
    refresh = requests.post(
        f"{page_server.base}/kgroups/api/group/refresh",
        params={"id": "orders-landing"},
        headers={"Authorization": f"Bearer {page_server.token()}"},
        timeout=30,
    )
    assert refresh.status_code == 403  # no X-Requested-With: a cross-site form cannot trigger a Kafka read


def test_bad_parameters_are_400s_that_name_the_parameter(page_server):
    for params, word in (
        ({"window": "forever"}, "window"),
        ({"sort": "drop table"}, "sort"),
        ({"pattern": "re:(unclosed"}, "pattern"),
        ({"pattern": "x" * 201}, "pattern"),
    ):
        response = page_server.get("/kgroups/api/groups", params=params)
        assert response.status_code == 400 and word in response.json()["detail"], params
    assert page_server.get("/kgroups/api/group", params={"id": "a\u0001b"}).status_code == 400
    assert page_server.get("/kgroups/api/group", params={"id": "x", "points": "10"}).status_code == 400
    assert page_server.get("/kgroups/api/backups/..%2F..%2Fetc%2Fpasswd").status_code in (400, 404)
    assert page_server.get("/kgroups/static/../plugin.py").status_code == 404
