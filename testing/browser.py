"""Headless Chromium for tests: Debian's build driven through Playwright, with the flags this
closed network needs (no background connections). A test that uses it is marked `browser`
(testing/markers.py watches Playwright's launch)."""
from __future__ import annotations

from contextlib import contextmanager

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


@contextmanager
def chromium_browser():
    """One launched browser, closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()
