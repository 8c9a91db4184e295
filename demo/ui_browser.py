"""Headless Chromium (Debian's ``chromium`` package, /usr/bin/chromium) driven by Playwright,
for the Consumer groups page: log in, open the page inside the Airflow UI, take screenshots.

Playwright never downloads a browser here: it launches the system's Chromium with the flags
this machine needs (no sandbox as root, no background networking to a closed network).
Used by the page's browser tests and by ``make demo``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_missing() -> str | None:
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        return (
            "Debian's Chromium is not installed: apt-get install chromium chromium-driver "
            "(the README's prerequisites)"
        )
    try:
        import playwright  # noqa: F401 - only whether it imports
    except ImportError:
        return "playwright is not installed: pip install --group test ."
    return None


@contextmanager
def browser_page(
    base_url: str, token: str, *, dark: bool = False, width: int = 1440, height: int = 1000
) -> Iterator[object]:
    """A Playwright page with Airflow's login cookie (``_token``) set for ``base_url``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            args=FLAGS,
            headless=True,
        )
        try:
            context = browser.new_context(
                viewport={"width": width, "height": height}, color_scheme="dark" if dark else "light"
            )
            context.add_cookies([{"name": "_token", "value": token, "url": base_url}])
            if dark:  # the Airflow UI's own setting (next-themes), which the page follows
                context.add_init_script("try { localStorage.setItem('theme', 'dark') } catch (e) {}")
            page = context.new_page()
            yield page
        finally:
            browser.close()


def frame_of(page):
    """The Consumer groups page inside the Airflow UI (the external view's iframe)."""
    return page.frame_locator("iframe")
