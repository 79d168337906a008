"""Issue 26.4 in real headless Chromium against `python -m annotate`: the sign-in page's guards
are per client. Two browsers stand for two addresses (each sends the X-Forwarded-For header that
a TLS proxy on the server's machine would add; the server takes it from loopback peers only): an
outsider who guesses anna's password locks only themselves out and is rate-limited, while anna
signs in from her own address."""
from __future__ import annotations

import time

import pytest
from browser_kit import PASSWORD
from sqlmodel import Session

from annotate import service
from annotate.service.signin import throttle_key
from db import get_engine
from db import models as m

pytestmark = pytest.mark.browser

FAILED = "Sign-in failed: wrong username or password"
TOO_MANY = "Too many sign-in attempts from this address"


def _try(page, username: str, password: str, settle: float = 2.0) -> None:
    """Send the form, then give the server time to answer (a submit during a run interrupts it)."""
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    time.sleep(settle)


def _locked(db_url: str) -> bool:
    """Whether a lockout row of anna from the outsider's address is locked now."""
    with Session(get_engine(db_url)) as session:
        row = session.get(m.SignInThrottle, throttle_key("anna", "ip:203.0.113.9"))
        return row is not None and row.locked_until is not None


def test_an_outsider_locks_only_their_own_address_and_is_rate_limited(app_db, launch_app,
                                                                       chromium):
    from playwright.sync_api import expect

    url = launch_app(app_db).url
    outsider = chromium.new_context(extra_http_headers={"X-Forwarded-For": "203.0.113.9"})
    page = outsider.new_page()
    page.goto(url)
    alerts = page.get_by_role("alert")
    for k in range(8):  # wrong guesses until the lockout of this address (5 counted ones)
        _try(page, "anna", f"guess-{k}")
        if _locked(app_db):
            break
    assert _locked(app_db)
    time.sleep(service.RATE_INTERVAL + 0.5)  # a token again: the right password, still locked
    _try(page, "anna", PASSWORD, settle=3.0)
    expect(alerts.filter(has_text=FAILED)).to_have_count(1, timeout=20000)
    expect(page.get_by_role("textbox", name="Username")).to_be_visible()  # not signed in
    for k in range(10):  # then names in quick succession: over the rate, whatever the name
        _try(page, f"name{k}", PASSWORD, settle=1.0)
        if alerts.filter(has_text=TOO_MANY).count():
            break
    expect(alerts.filter(has_text=TOO_MANY)).to_have_count(1, timeout=20000)

    anna = chromium.new_context(extra_http_headers={"X-Forwarded-For": "198.51.100.4"})
    page = anna.new_page()
    page.goto(url)
    _try(page, "anna", PASSWORD)
    expect(page.get_by_text("Item 1 of")).to_be_visible(timeout=30000)
