"""End to end in a real headless Chromium (Debian's /usr/bin/chromium through Playwright):
start `python -m annotate` on a free loopback port against a temp database, sign in, label an
item with the keyboard and the mouse, reload, and find the label in the database and on screen."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from browser_kit import (
    first_label,
    signed_in_page,
    submit_sign_in,
    wait_for,
)
from sqlalchemy import select
from sqlmodel import Session

from annotate import service
from db import get_engine
from db import models as m
from testing.browser import chromium_browser
from testing.local_server import LocalServer

pytestmark = pytest.mark.browser


@pytest.fixture
def server(app_db, launch_app):
    return launch_app(app_db).url


def test_sign_in_label_with_keyboard_and_mouse_reload(server, app_db, tmp_path):
    from playwright.sync_api import expect

    from taxonomy import default_taxonomy

    partial_name = default_taxonomy().accuracy_text("partial", "en")[0]
    shots = Path(os.environ.get("NLCE_SCREENSHOTS", tmp_path))
    with chromium_browser() as browser:
        page = signed_in_page(browser, server)
        page.keyboard.press("2")  # shortcut: partially correct
        assert wait_for(lambda: first_label(app_db, "bas").accuracy == "partial",
                         what="keyboard label stored")
        page.get_by_text("LG-GR1", exact=False).first.click()  # mouse: a code
        label = wait_for(lambda: (lambda l: l if l.codes == ("LG-GR1",) else None)(
            first_label(app_db, "bas")), what="mouse code stored")
        assert label.status == "done" and label.history == 2
        page.screenshot(path=str(shots / "item_view.png"))

        page.reload()
        expect(page.get_by_text("Item 1 of 6")).to_be_visible(timeout=30000)
        chosen = page.locator('[data-testid="stBaseButton-primary"]', has_text=partial_name)
        expect(chosen.first).to_be_visible(timeout=10000)
        box = page.locator('[data-testid="stCheckbox"]', has_text="LG-GR1").locator("input")
        expect(box).to_be_checked()
        page.screenshot(path=str(shots / "after_reload.png"))
        assert first_label(app_db, "bas").accuracy == "partial"


@pytest.fixture
def beacon():
    """A local HTTP server that records every request: the host a note's image or link names."""
    import http.server

    hits: list[str] = []

    class Record(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the http.server API)
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    with LocalServer(Record) as server:
        yield server.origin, hits


def test_adjudicate_shows_notes_as_plain_text_no_image_no_link(server, app_db, beacon):
    """A note with Markdown (an image that would make the lead's browser fetch a host, a link, an
    autolink, raw HTML) shows as typed on the lead's Adjudicate page: no <img>, no <a>, and the
    host never hears from the lead's browser."""
    from playwright.sync_api import expect

    host, hits = beacon
    note = (f"![beacon]({host}/beacon.png) [click here]({host}/phish) {host}/autolink "
            f"<img src=\"{host}/raw.png\"> **bold**")
    with Session(get_engine(app_db)) as session:
        people = {a.username: a.id for a in service.list_annotators(session,
                                                                    acting=service.OPERATOR)}
        gid = service.queue_for(session, people["bas"])[0].generation_id
        for who, accuracy, text in (("anna", "correct", ""), ("bas", "incorrect", note)):
            service.save_label(session, generation_id=gid, annotator_id=people[who],
                               accuracy=accuracy, codes=[], note=text, seconds_spent=1.0,
                               status="done", expected_revision=None)
        session.commit()
    with chromium_browser() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        submit_sign_in(page, server, "lead")
        expect(page.get_by_text("Sign out")).to_be_attached(timeout=30000)
        page.goto(f"{server}/adjudicate")
        expect(page.get_by_text("1 item with disagreement")).to_be_visible(timeout=30000)
        expect(page.get_by_text(f"![beacon]({host}/beacon.png)", exact=False)).to_be_visible(
            timeout=10000)
        time.sleep(1.0)  # give any image or prefetch time to reach the beacon
        assert page.locator(f'img[src*="{host}"]').count() == 0
        assert page.locator(f'a[href*="{host}"]').count() == 0
        assert page.locator("strong", has_text="bold").count() == 0
        assert hits == []


def test_a_restart_keeps_people_signed_in_and_sign_out_revokes_a_copied_cookie(app_db,
                                                                                 launch_app):
    """Sign in, restart the server on the same port (stopped with TERM): the tab is still
    signed in. Sign out: the cookie copied before, replayed in a fresh browser, signs nobody in."""
    from playwright.sync_api import expect

    app = launch_app(app_db)
    with chromium_browser() as browser:
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        submit_sign_in(page, app.url, "bas")
        expect(page.get_by_text("Item 1 of 6")).to_be_visible(timeout=30000)
        copied = wait_for(lambda: [c for c in context.cookies()
                                    if c["name"] == "nlce_session" and c["value"]],
                           what="session cookie")

        app.proc.send_signal(signal.SIGTERM)  # the command itself, as a service manager does
        app.proc.wait(timeout=20)
        launch_app(app_db, port=app.port)  # the same port: nothing was left holding it
        page.reload()
        expect(page.get_by_text("Item 1 of 6")).to_be_visible(timeout=30000)

        page.locator('[data-testid="stExpandSidebarButton"]').click()
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("button", name="Sign in")).to_be_visible(timeout=30000)

        thief = browser.new_context(viewport={"width": 1440, "height": 900})
        thief.add_cookies(copied)
        stolen = thief.new_page()
        stolen.goto(app.url)
        expect(stolen.get_by_role("button", name="Sign in")).to_be_visible(timeout=30000)
        assert stolen.get_by_text("Item 1 of 6").count() == 0
    with Session(get_engine(app_db)) as session:
        rows = session.exec(select(m.AnnotatorSession)).scalars().all()
        assert rows and all(r.revoked_at is not None for r in rows)
