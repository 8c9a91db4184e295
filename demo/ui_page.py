"""The demo's last step: the Consumer groups page on the demo's own api-server, photographed.

:func:`page_env` is what the api-server needs for the page (the demo's history store, a login
whose password the demo knows); :func:`capture` logs in, opens the page inside the Airflow UI and
one group's page in headless Chromium, and saves the screenshots under ``.demo/``. Without
Chromium it says how to install it and only prints the URL.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import requests

from demo.ui_browser import browser_page, chromium_missing, frame_of

USER = "admin"


def page_env(history_url: str, passwords_file: Path) -> dict[str, str]:
    password = secrets.token_urlsafe(12)
    passwords_file.write_text(json.dumps({USER: password}))
    return {
        "AIRFLOW__KGROUPS__HISTORY_URL": history_url,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords_file),
    }


def capture(
    base_url: str, passwords_file: Path, out_dir: Path, group_id: str, timeout_s: float = 180
) -> list[Path]:
    """Screenshots of the overview (inside the Airflow UI) and of ``group_id``'s page; returns their paths."""
    missing = chromium_missing()
    if missing:
        raise RuntimeError(missing)
    password = json.loads(passwords_file.read_text())[USER]
    token = requests.post(
        f"{base_url}/auth/token", json={"username": USER, "password": password}, timeout=30
    ).json()["access_token"]
    overview, group = out_dir / "ui-overview.png", out_dir / "ui-group.png"
    with browser_page(base_url, token) as page:
        page.goto(f"{base_url}/plugin/consumer-groups")
        frame = frame_of(page)
        frame.locator("#groups tbody tr").first.wait_for(timeout=timeout_s * 1000)
        frame.locator("#groups .spark canvas").first.wait_for(timeout=timeout_s * 1000)
        page.screenshot(path=str(overview))
    with browser_page(base_url, token, height=1700) as page:
        page.goto(
            f"{base_url}/kgroups/#/group?" + requests.compat.urlencode({"id": group_id, "window": "30d"})
        )
        page.locator("#cleanups h2").wait_for(timeout=timeout_s * 1000)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(group), full_page=True)
    return [overview, group]
