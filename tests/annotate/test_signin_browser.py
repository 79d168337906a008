"""Issue 26.4 in real headless Chromium against `python -m annotate`: the sign-in page's guards
are per client. Two browsers stand for two addresses (each sends the X-Forwarded-For header that
a TLS proxy on the server's machine would add; the server takes it from loopback peers only): an
outsider who guesses anna's password locks only themselves out and is rate-limited, while anna
signs in from her own address."""
from __future__ import annotations

import time

import pytest
from browser_kit import PASSWORD

pytestmark = pytest.mark.browser

FAILED = "Sign-in failed: wrong username or password"
TOO_MANY = "Too many sign-in attempts from this address"


def _try(page, username: str, password: str) -> None:
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def test_an_outsider_locks_only_their_own_address_and_is_rate_limited(app_db, launch_app,
                                                                       chromium):
    from playwright.sync_api import expect

    url = launch_app(app_db).url
    outsider = chromium.new_context(extra_http_headers={"X-Forwarded-For": "203.0.113.9"})
    page = outsider.new_page()
    page.goto(url)
    alerts = page.get_by_role("alert")
    for k in range(5):  # five wrong guesses: the burst the rate allows
        _try(page, "anna", f"guess-{k}")
        expect(alerts.filter(has_text=FAILED)).to_have_count(1, timeout=20000)
        expect(page.get_by_role("button", name="Sign in")).to_be_enabled()
    time.sleep(6.5)  # one more attempt allowed: the right password, and still locked out here
    _try(page, "anna", PASSWORD)
    expect(alerts.filter(has_text=FAILED)).to_have_count(1, timeout=20000)
    _try(page, "bas", PASSWORD)  # at once: over the rate, whatever the name
    expect(alerts.filter(has_text=TOO_MANY)).to_have_count(1, timeout=20000)

    anna = chromium.new_context(extra_http_headers={"X-Forwarded-For": "198.51.100.4"})
    page = anna.new_page()
    page.goto(url)
    _try(page, "anna", PASSWORD)
    expect(page.get_by_text("Item 1 of")).to_be_visible(timeout=30000)
