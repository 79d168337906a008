"""The labelling view's keyboard in a real headless Chromium against a real server: the code
picker ticks exactly the code typed (an exact id or a unique start, never "all matches", also at
a fast pace), the shortcuts work after a mouse click on a code, and a note is never lost (a
reload, a server killed mid-typing, a tab closed: each keeps what was typed)."""
from __future__ import annotations

import signal
import time

import pytest
from browser_kit import (
    first_label,
    note_reported_stored,
    settled,
    signed_in_page,
    wait_for,
)
from sqlalchemy import select
from sqlmodel import Session

from annotate import service
from db import get_engine
from db import models as m

pytestmark = pytest.mark.browser


def _codes(db_url):
    return first_label(db_url, "bas").codes


def test_the_code_picker_ticks_exactly_what_was_typed(app_db, launch_app, chromium):
    from playwright.sync_api import expect

    page = signed_in_page(chromium, launch_app(app_db).url)
    page.keyboard.press("c")
    page.keyboard.type("SE-MD")  # an exact id that starts no other id, but is in four names
    page.keyboard.press("Enter")
    wait_for(lambda: _codes(app_db) == ("SE-MD",), what="exactly SE-MD")
    settled(page)
    page.keyboard.type("URL")  # a code's whole name (MS-ME2): that code, not every fuzzy match
    page.keyboard.press("Enter")
    wait_for(lambda: _codes(app_db) == ("MS-ME2", "SE-MD"), what="exactly MS-ME2 added")
    settled(page)
    page.keyboard.type("GR")  # five codes start so: nothing is ticked, the matches are named
    page.keyboard.press("Enter")
    expect(page.get_by_text("“GR” matches 5 codes")).to_be_visible(timeout=20000)
    page.keyboard.press("ArrowDown")  # an empty query: no "select all" from the keyboard
    page.keyboard.press("Enter")
    settled(page)
    assert _codes(app_db) == ("MS-ME2", "SE-MD")
    # at a fast pace: no waiting for the page between the keys
    page.keyboard.type("gr1")
    page.keyboard.press("Enter")
    page.keyboard.type("SE-MD")  # picked again: removed
    page.keyboard.press("Enter")
    page.keyboard.type("EX")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    page.keyboard.press("3")
    label = wait_for(lambda: (lambda l: l if l.accuracy == "incorrect" and l.codes == (
        "EX", "LG-GR1", "MS-ME2") else None)(first_label(app_db, "bas")),
        what="fast keys stored exactly", timeout=30)
    assert label.codes == ("EX", "LG-GR1", "MS-ME2")


def test_shortcuts_work_after_a_mouse_click_on_a_code(app_db, launch_app, chromium):
    from playwright.sync_api import expect

    page = signed_in_page(chromium, launch_app(app_db).url)
    page.keyboard.press("3")
    wait_for(lambda: first_label(app_db, "bas").accuracy == "incorrect", what="key 3")
    settled(page)
    page.get_by_text("LG-GR1", exact=False).first.click()  # the mouse on a code ...
    wait_for(lambda: _codes(app_db) == ("LG-GR1",), what="mouse code")
    page.keyboard.press("s")  # ... at once S: saved and on to the next item
    expect(page.get_by_text("Item 2 of 6")).to_be_visible(timeout=20000)
    assert first_label(app_db, "bas").status == "done"
    settled(page)
    page.get_by_text("LG-GR2", exact=False).first.click()  # and again, without waiting
    page.keyboard.press("p")
    expect(page.get_by_text("Item 1 of 6")).to_be_visible(timeout=20000)


def _type_note(page, text):
    page.keyboard.press("m")
    page.keyboard.type(text, delay=40)


def test_a_note_survives_a_reload_right_after_typing(app_db, launch_app, chromium):
    server = launch_app(app_db).url
    page = signed_in_page(chromium, server)
    _type_note(page, "reload at once")
    page.reload()  # well within a second of the last key
    # what the page reports, not a clock: the note stored after the reload took 27 s with the
    # server and the browser at 3% of a core (issue 41: a 20 s wait timed out under load)
    note_reported_stored(page, "reload at once")
    assert first_label(app_db, "bas").note == "reload at once"


def test_a_note_survives_a_server_killed_mid_typing(app_db, launch_app, chromium):
    app = launch_app(app_db)
    page = signed_in_page(chromium, app.url)
    _type_note(page, "typed just before the server died")
    app.proc.send_signal(signal.SIGKILL)  # at once after the last key: nothing was sent yet
    app.proc.wait(timeout=20)
    assert first_label(app_db, "bas").note == ""
    launch_app(app_db, port=app.port)  # the page reconnects by itself
    wait_for(lambda: first_label(app_db, "bas").note == "typed just before the server died",
             what="the note stored once the server is back", timeout=60)


# What the browser does when a tab is closed: run the beforeunload handlers; a cancelled event
# is the "leave the page?" question (headless Chromium closes without showing it).
LEAVING_ASKS = """(() => { const e = new Event("beforeunload", {cancelable: true});
  window.dispatchEvent(e); return e.defaultPrevented; })()"""


def test_closing_the_tab_while_typing_warns_and_keeps_the_note(app_db, launch_app, chromium):
    server = launch_app(app_db).url
    context = chromium.new_context()  # one browser profile: its storage stays
    page = signed_in_page(context, server)
    text = "six seconds of typing without a pause " * 4
    _type_note(page, text)  # ~6 s, never a pause long enough to send it
    assert page.evaluate(LEAVING_ASKS)  # closing now would ask first
    page.close()
    again = context.new_page()  # the same browser, later: still signed in by its cookie
    again.goto(server)
    wait_for(lambda: first_label(app_db, "bas").note == text, what="the note stored", timeout=30)
    settled(again)
    assert not again.evaluate(LEAVING_ASKS)  # stored: nothing to ask
    again.close()


def test_3_a_click_on_a_code_and_s_at_once_save_and_move_on(app_db, launch_app, chromium):
    """3, a click on a code, S, each within a few hundredths of a second, on every item: a key
    or click that arrives while the page stores the one before stops that run (Streamlit's
    fast reruns) right after the database took the label; the page must still know the
    revision it stored, or the next save of the same tab is refused as "changed in another tab
    or session" (3 of 26 tries at 0.1 s)."""
    from playwright.sync_api import expect

    page = signed_in_page(chromium, launch_app(app_db).url)
    for n in range(1, 7):
        expect(page.get_by_text(f"Item {n} of 6")).to_be_visible(timeout=20000)
        settled(page)
        page.keyboard.press("3")
        time.sleep(0.03)
        page.get_by_text("LG-GR1", exact=False).first.click(delay=20)
        time.sleep(0.03)
        page.keyboard.press("s")
        if n < 6:
            expect(page.get_by_text(f"Item {n + 1} of 6")).to_be_visible(timeout=20000)
        assert page.get_by_text("changed in another tab or session").count() == 0, f"item {n}"
    settled(page)
    assert page.get_by_text("changed in another tab or session").count() == 0
    with Session(get_engine(app_db)) as session:
        bas = session.exec(select(m.Annotator.id).where(m.Annotator.username == "bas")
                           ).scalar_one()
        labels = [service.own_label(session, e.generation_id, bas)
                  for e in service.queue_for(session, bas)]
    assert [(l.accuracy, l.codes, l.status) for l in labels] == [
        ("incorrect", ("LG-GR1",), "done")] * 6
