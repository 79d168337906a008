"""The label page's header in a real headless Chromium against a real server: the time the rest
of the queue takes follows the labels as they are saved."""
from __future__ import annotations

import re

import pytest
from browser_kit import settled, signed_in_page

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
