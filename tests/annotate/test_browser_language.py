"""The interface in the annotator's language, in a real headless Chromium against a real server:
a lead's address opened by an annotator says that it is the lead's, a pairs item shows nothing
for a programming language it has none of and keeps its comments in view under a long context,
and the code picker's hint fits a phone's width in every interface language."""
from __future__ import annotations

import json

import pytest
from browser_kit import PASSWORD, ready_for_keys, signed_in_page, submit_sign_in
from sqlmodel import Session

from annotate import i18n, service
from db import get_engine, session_scope
from db.importer import import_pairs
from taxonomy import LANGUAGES

pytestmark = pytest.mark.browser

# the room the picker's input has for its hint: its width less its padding, in the input's font
HINT_ROOM = """([input, texts]) => {
  const style = getComputedStyle(input), canvas = document.createElement("canvas");
  const context = canvas.getContext("2d");
  context.font = style.font;
  const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return texts.map((text) => [Math.ceil(context.measureText(text).width), Math.floor(room)]);
}"""


def test_an_annotator_at_a_leads_address_is_told_it_is_the_leads(app_db, launch_app, chromium):
    """bas opens /team: "This page is for the lead only." (issue 42: Streamlit's "Page not
    found", in English, and the label page)."""
    from playwright.sync_api import expect

    server = launch_app(app_db).url
    page = signed_in_page(chromium, server)
    page.goto(f"{server}/team")
    expect(page.get_by_text(i18n.text("lead.only", "en"))).to_be_visible(timeout=30000)
    assert page.get_by_text("Page not found").count() == 0
    assert page.get_by_text(i18n.text("team.new_account", "en")).count() == 0


def test_a_pairs_item_shows_no_made_up_language_and_its_comments_under_a_long_context(
        app_db, launch_app, chromium, tmp_path):
    """A pairs item with 50 lines of context: no "?" where a file item names its programming
    language, and the two comments in view at 1440x900 (issue 42: below the fold)."""
    from playwright.sync_api import expect

    context = "\n".join(f"    step_{i} = compute(step_{i - 1})  # line {i}" for i in range(50))
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"item_id": "p-1", "language": "nl", "model": "sys-a",
                                "reference": "Tel alle stappen op.",
                                "prediction": "Som van de stappen.",
                                "context": context}) + "\n", encoding="utf-8")
    with session_scope(app_db) as session:
        import_pairs(session, [path], dataset="mine")
    with Session(get_engine(app_db)) as session:
        cleo = service.create_annotator(session, username="cleo", password=PASSWORD,
                                        languages=["nl"], acting=service.OPERATOR)
        service.assign(session, annotator_ids=[cleo.id], models=["sys-a"], per_item=1,
                       acting=service.OPERATOR)
        session.commit()
    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    submit_sign_in(page, launch_app(app_db).url, "cleo")
    head = page.locator(".nlce-head")
    expect(head).to_contain_text("Item 1 of 1", timeout=30000)
    ready_for_keys(page)
    assert " ? " not in head.inner_text()
    comments = page.locator(".nlce-diff").bounding_box()
    assert comments["y"] + comments["height"] <= 900, comments


def test_the_pickers_hint_fits_a_phones_width_in_every_language(app_db, launch_app, chromium):
    """At 390 px wide the hint in the code picker was cut (issue 42)."""
    page = chromium.new_page(viewport={"width": 390, "height": 844})
    submit_sign_in(page, launch_app(app_db).url, "bas")
    picker = page.locator(".st-key-lbl_codepick input")
    picker.wait_for(timeout=30000)
    ready_for_keys(page)
    hints = [i18n.text("label.picker", lang) for lang in LANGUAGES]
    widths = page.evaluate(HINT_ROOM, [picker.element_handle(), hints])
    cut = {lang: width for lang, width in zip(LANGUAGES, widths) if width[0] > width[1]}
    assert not cut, f"hint wider than its field (text px, room px): {cut}"


def test_while_the_server_is_away_a_line_in_the_annotators_language_says_typing_is_kept(
        app_db, ids, launch_app, chromium):
    """Streamlit's own "Connection error" box is English only (it has no translations, nor a
    setting for them); beside it the page says in the interface language that what is typed
    is kept, until the server is back."""
    import signal

    from playwright.sync_api import expect

    with Session(get_engine(app_db)) as session:
        service.set_interface_language(session, ids["bas"], "el")
        session.commit()
    app = launch_app(app_db)
    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    submit_sign_in(page, app.url, "bas")
    expect(page.get_by_text(i18n.text("label.item_of", "el", n=1, total=6))).to_be_visible(
        timeout=30000)
    ready_for_keys(page)
    app.proc.send_signal(signal.SIGTERM)
    app.proc.wait(timeout=20)
    notice = page.locator(".nlce-notice")
    expect(notice).to_have_text(i18n.text("note.away", "el"), timeout=20000)
    launch_app(app_db, port=app.port)
    expect(notice).to_be_hidden(timeout=60000)
