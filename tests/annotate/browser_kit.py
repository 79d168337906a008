"""What the Chromium tests of the labelling app share (imported as `browser_kit`; the browser
itself is `testing.browser.chromium_browser`): the accounts' password, polling, signing in,
and reading a stored label back."""
from __future__ import annotations

import time

from sqlalchemy import select
from sqlmodel import Session

from annotate import service
from db import get_engine
from db import models as m

PASSWORD = "s3cret-pass"  # the accounts of conftest.app_db


def wait_for(predicate, timeout=20.0, what="condition"):
    """predicate's first truthy value, polled every 0.2 s; AssertionError naming `what` after
    `timeout` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def first_label(db_url: str, username: str):
    """The user's own label of the first item in their queue, as the database holds it."""
    with Session(get_engine(db_url)) as session:
        aid = session.exec(select(m.Annotator.id).where(
            m.Annotator.username == username)).scalar_one()
        gid = service.queue_for(session, aid)[0].generation_id
        return service.own_label(session, gid, aid)


def submit_sign_in(page, url: str, username: str) -> None:
    """Open the app and send the English sign-in form (what follows is the test's to check)."""
    page.goto(url)
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def _run_ended(page, timeout_ms: int) -> None:
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
        timeout=timeout_ms)


def settled(page, timeout_ms: int = 20000) -> None:
    """Wait for the app's rerun to finish: keys pressed while the page is redrawn are lost
    (a person reads the page before the next key; a test must wait for it)."""
    time.sleep(0.3)
    _run_ended(page, timeout_ms)
    time.sleep(0.3)


def ready_for_keys(page) -> None:
    """Wait until keys reach the app: keyboard.js is in the page and the run that drew it has
    ended (a loaded machine takes seconds), then a moment for the shortcuts to bind (a person
    reads the item before the first key)."""
    page.wait_for_function("window.nlceKeyboard === true", timeout=30000)
    _run_ended(page, 30000)
    time.sleep(1.0)


def note_reported_stored(page, text: str, timeout_ms: int = 180000) -> None:
    """Wait until the page says the database holds `text` as the shown item's note (the
    `.nlce-note-state` a run draws after storing it). The page gets there by its own steps (a
    reload, the run that draws the item, the push of the browser's draft, the run that stores
    it), each slower on a loaded machine: the bound only ends a test that will not get there."""
    from annotate.ui import note_hash

    page.wait_for_function(
        "(h) => (document.querySelector('.nlce-note-state') || {dataset: {}}).dataset.stored"
        " === h", arg=note_hash(text), timeout=timeout_ms)


def signed_in_page(browser, url: str, username: str = "bas", click_page: bool = True):
    """A new 1440x900 page signed in on the first of the user's 6 items, ready for keys; unless
    `click_page` is False, the page (not a field) has been clicked, so keys go to the app."""
    from playwright.sync_api import expect

    page = browser.new_page()  # a Browser or a BrowserContext (storage kept between pages)
    page.set_viewport_size({"width": 1440, "height": 900})
    submit_sign_in(page, url, username)
    expect(page.get_by_text("Item 1 of 6")).to_be_visible(timeout=30000)
    expect(page.get_by_role("button", name="Save")).to_be_visible(timeout=30000)
    ready_for_keys(page)
    if click_page:
        page.mouse.click(720, 890)
    return page
