"""The label page's header in a real headless Chromium against a real server: in a search it
says which match is shown and where the matches end, the search box stays open with its count,
and the time the rest of the queue takes follows the labels as they are saved."""
from __future__ import annotations

import re

import pytest
from browser_kit import settled, signed_in_page
from sqlmodel import Session

from annotate import service
from db import get_engine

pytestmark = pytest.mark.browser


def test_the_time_left_follows_the_labels_as_they_are_saved(app_db, launch_app, chromium):
    """A new annotator's first finished item gives a pace at once: the pace was re-read every
    300 s, so "about – left" stayed on after 40 finished items (issue 42)."""
    from playwright.sync_api import expect

    page = signed_in_page(chromium, launch_app(app_db).url)
    head = page.locator(".nlce-head")
    expect(head).to_contain_text("about – left")  # nothing finished: no pace yet
    page.keyboard.press("1")
    settled(page)
    page.keyboard.press("s")
    expect(page.get_by_text("Item 2 of 6")).to_be_visible(timeout=20000)
    expect(head).to_contain_text(re.compile(r"about \d+:\d\d left"), timeout=20000)


def test_a_search_shows_match_k_of_m_and_says_where_the_matches_end(app_db, ids, launch_app,
                                                                     chromium):
    """A search for a path that 2 of bas's 6 items have, both flagged and answered by the lead:
    the header says "Match 1 of 2", not only the queue's "Item n of 6" (issue 42); the search
    box stays open with its count, though the lead's answer now shows above the header (it
    shifted the header, and the box closed); N goes to match 2 of 2, and N again says that it
    was the last match instead of doing nothing in silence."""
    from playwright.sync_api import expect

    with Session(get_engine(app_db)) as session:
        views = [service.load_item(session, e.generation_id, ids["bas"])
                 for e in service.queue_for(session, ids["bas"])]
        path = next(v.path for v in views if v.path != views[0].path)
        for view in (v for v in views if v.path == path):
            service.save_label(session, generation_id=view.generation_id,
                               annotator_id=ids["bas"], accuracy=None, codes=[], note="why?",
                               seconds_spent=3.0, status="flagged", expected_revision=None)
            service.answer_flag(session, generation_id=view.generation_id,
                                annotator_id=ids["bas"], text="Because it says so.",
                                acting=ids["lead"])
        session.commit()
    page = signed_in_page(chromium, launch_app(app_db).url)
    head = page.locator(".nlce-head")
    page.get_by_role("button", name="Search").click()
    box = page.get_by_label("Text or #id")
    box.press_sequentially(path.rsplit("/", 1)[-1], delay=90)
    box.press("Enter")
    expect(head).to_contain_text(re.compile(r"Match 1 of 2 \(item \d of 6\)"), timeout=20000)
    expect(page.get_by_text("Because it says so.")).to_be_visible()
    settled(page)
    expect(page.get_by_text("2 items match")).to_be_visible()  # the box is still open
    page.keyboard.press("Escape")
    page.mouse.click(720, 890)
    page.keyboard.press("n")
    expect(head).to_contain_text(re.compile(r"Match 2 of 2 \(item \d of 6\)"), timeout=20000)
    settled(page)
    page.keyboard.press("n")
    expect(page.get_by_text("That is the last of the 2 items that match")).to_be_visible(
        timeout=20000)
    expect(head).to_contain_text(re.compile(r"Match 2 of 2 \(item \d of 6\)"))
