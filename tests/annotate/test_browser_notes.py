"""The note field in a real headless Chromium against a real server, typed as a person types
(a key every ~60 ms, pauses of seconds): a key typed in the note never reaches a shortcut, on
the first item after signing in as on any other, and what is typed while the server is away or
pasted past the note's limit is kept or said, never dropped in silence."""
from __future__ import annotations

import signal
import time

import pytest
from browser_kit import first_label, note_reported_stored, settled, signed_in_page, wait_for

pytestmark = pytest.mark.browser

TYPING_MS = 60  # between two keys of one person typing


def _labels(db_url, username="bas"):
    from sqlalchemy import select
    from sqlmodel import Session

    from annotate import service
    from db import get_engine
    from db import models as m

    with Session(get_engine(db_url)) as session:
        aid = session.exec(select(m.Annotator.id).where(
            m.Annotator.username == username)).scalar_one()
        return [service.own_label(session, e.generation_id, aid)
                for e in service.queue_for(session, aid)]


def _note_with_a_pause(page, first, then, lose_focus=False):
    """M, some words, a pause of 2 s (the page stores what was typed and reruns), the rest.
    `lose_focus`: the field loses its focus in the pause without the typist's doing, as when a
    rerun redraws it."""
    page.keyboard.press("m")
    page.keyboard.type(first, delay=TYPING_MS)
    time.sleep(2.0)  # a person thinks
    if lose_focus:
        page.evaluate("document.activeElement.blur()")
    page.keyboard.type(then, delay=TYPING_MS)


def test_keys_typed_in_the_note_never_reach_a_shortcut(app_db, launch_app, chromium):
    """On the first item after signing in (the cookie's script was drawn in that run only: the
    next run shifted the page and redrew the note field, whose focus went to the page, so
    "then" was t-h-e-N(ext) and "more" M(ote) on the next item), on an item reached with S,
    and when the field loses its focus while the annotator types."""
    from playwright.sync_api import expect

    page = signed_in_page(chromium, launch_app(app_db).url, click_page=False)  # M at once
    _note_with_a_pause(page, "first words. ", "then more about the summary")
    wanted = ["first words. then more about the summary", "", "", "", "", ""]
    wait_for(lambda: [label.note for label in _labels(app_db)] == wanted,
             what=f"notes {wanted}", timeout=30)
    expect(page.get_by_text("Item 1 of 6")).to_be_visible()
    page.keyboard.press("Escape")
    page.keyboard.press("1")
    wait_for(lambda: first_label(app_db, "bas").accuracy == "correct", what="key 1")
    settled(page)
    page.keyboard.press("s")
    expect(page.get_by_text("Item 2 of 6")).to_be_visible(timeout=20000)
    settled(page)
    _note_with_a_pause(page, "second item. ", "then more, no next", lose_focus=True)
    wanted[1] = "second item. then more, no next"
    wait_for(lambda: [label.note for label in _labels(app_db)] == wanted,
             what=f"notes {wanted}", timeout=30)
    expect(page.get_by_text("Item 2 of 6")).to_be_visible()
    page.keyboard.press("Escape")  # out of the note, the keys are shortcuts again
    page.keyboard.press("n")
    expect(page.get_by_text("Item 3 of 6")).to_be_visible(timeout=20000)


def test_text_typed_while_the_server_is_down_is_stored_once_it_is_back(
        app_db, launch_app, chromium):
    """A restart in the middle of a note: the page greys the field out (its focus goes to the
    page) and then shows a "Connection error" box, while the annotator goes on typing and
    clicks into the note; what they typed is kept in the browser and stored once the server is
    back, and no key of it was a shortcut."""
    from playwright.sync_api import expect

    app = launch_app(app_db)
    page = signed_in_page(chromium, app.url)
    page.keyboard.press("m")
    page.keyboard.type("typed before the restart. ", delay=TYPING_MS)
    wait_for(lambda: first_label(app_db, "bas").note == "typed before the restart. ",
             what="the first words stored")
    app.proc.send_signal(signal.SIGTERM)  # a restart, as a service manager does it
    app.proc.wait(timeout=20)
    page.wait_for_function(  # the page has noticed: the field is greyed out
        "document.querySelector('.st-key-lbl_note_ textarea').disabled", timeout=20000)
    page.keyboard.type("Then 3 more lines, typed while it was down.", delay=TYPING_MS)
    dialog = page.locator('[data-testid="stDialog"]')  # Streamlit's "Connection error" box
    expect(dialog).to_be_visible(timeout=20000)
    page.locator(".st-key-lbl_note_ textarea").click(force=True)  # a click on the note ...
    expect(dialog).to_be_hidden()  # ... closes the box
    page.keyboard.type(" And a click.", delay=TYPING_MS)
    launch_app(app_db, port=app.port)
    wanted = ("typed before the restart. Then 3 more lines, typed while it was down."
              " And a click.")
    wait_for(lambda: first_label(app_db, "bas").note == wanted,
             what="the whole note stored once the server is back", timeout=60)
    expect(page.get_by_text("Item 1 of 6")).to_be_visible()
    assert [label.note for label in _labels(app_db)][1:] == [""] * 5
    assert first_label(app_db, "bas").accuracy is None  # the "3" was no shortcut


# The moment Streamlit greys the note out when the connection drops, made to come at the next key:
# the field is disabled in that key's keydown, before the note takes it, while it has the focus.
GREY_OUT_AT_THE_NEXT_KEY = """() => { const box = document.querySelector('.st-key-lbl_note_ textarea');
  window.addEventListener('keydown', () => { box.disabled = true; }, {capture: true, once: true});
}"""


def test_the_key_typed_as_the_server_stops_is_kept(app_db, launch_app, chromium):
    """A server stopped (TERM) while the annotator types: Streamlit greys the note out while it
    still has the focus, and a key pressed in that moment (~15 ms, until the browser moves the
    focus) went to the greyed-out field and was dropped (issue 42: 4 of 5 runs lost a key at
    40-90 ms per key). Here that moment comes at a known key; every key is stored once the
    server is back."""
    app = launch_app(app_db)
    page = signed_in_page(chromium, app.url)
    page.keyboard.press("m")
    page.keyboard.type("typed before. ", delay=TYPING_MS)
    app.proc.send_signal(signal.SIGTERM)  # a restart, as a service manager does it
    page.evaluate(GREY_OUT_AT_THE_NEXT_KEY)
    page.keyboard.type("Typed on as it stopped.", delay=TYPING_MS)  # T: in the greyed-out box
    app.proc.wait(timeout=20)
    launch_app(app_db, port=app.port)
    wanted = "typed before. Typed on as it stopped."
    note_reported_stored(page, wanted)
    assert first_label(app_db, "bas").note == wanted


def test_a_paste_past_the_notes_limit_is_cut_to_fit_and_said(app_db, launch_app, chromium):
    """Ctrl+V of 12,000 characters (with emoji) after 7 typed ones, with the limit at 10,000:
    the first 9,993 go in, and a notice says that 2,007 were left out, in the unit the database
    counts (Unicode code points; the browser counted UTF-16 units, two per emoji: issue 42, a
    paste cut at 9,707 characters, "2,727 left out" where 2,646 were). A key past the limit
    is refused with a notice too."""
    from playwright.sync_api import expect

    from annotate import i18n, service

    limit = service.max_note_chars()
    context = chromium.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = signed_in_page(context, launch_app(app_db).url)
    pasted = ("Δεν ταιριάζει 👍. " * 800)[:12000]  # 12,000 characters, 705 of them emoji
    page.evaluate("(text) => navigator.clipboard.writeText(text)", pasted)
    page.keyboard.press("m")
    page.keyboard.type("start: ", delay=TYPING_MS)
    page.keyboard.press("Control+V")
    kept = limit - len("start: ")
    expect(page.locator(".nlce-notice")).to_have_text(
        i18n.text("note.cut", "en", limit=limit, dropped=len(pasted) - kept), timeout=10000)
    wanted = "start: " + pasted[:kept]
    wait_for(lambda: first_label(app_db, "bas").note == wanted,
             what="the note cut to the limit stored", timeout=30)
    page.evaluate("document.querySelector('.nlce-notice').hidden = true")
    page.keyboard.type("x", delay=TYPING_MS)  # one more
    expect(page.locator(".nlce-notice")).to_have_text(i18n.text("note.full", "en", limit=limit),
                                                      timeout=10000)
    time.sleep(2.0)  # a pause: the page stores the note
    assert first_label(app_db, "bas").note == wanted
    assert page.locator(".st-key-lbl_note_ textarea").input_value() == wanted


def test_a_new_tab_after_closing_one_mid_note_opens_the_same_item(app_db, launch_app, chromium):
    """On the third item, a note half typed, the tab closed; a new tab of the same browser
    (the plain address, no ?item=) opens the third item again, where the note is stored."""
    from playwright.sync_api import expect

    server = launch_app(app_db).url
    context = chromium.new_context()  # one browser profile: cookies and storage stay
    page = signed_in_page(context, server)
    for n in (2, 3):
        page.keyboard.press("n")
        expect(page.get_by_text(f"Item {n} of 6")).to_be_visible(timeout=20000)
        settled(page)
    page.keyboard.press("m")
    page.keyboard.type("half a thought on the third", delay=TYPING_MS)
    page.close()
    again = context.new_page()
    again.set_viewport_size({"width": 1440, "height": 900})
    again.goto(server)
    expect(again.get_by_text("Item 3 of 6")).to_be_visible(timeout=30000)
    wait_for(lambda: [label.note for label in _labels(app_db)] == [
        "", "", "half a thought on the third", "", "", ""], what="the note on item 3")
