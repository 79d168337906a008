"""The lead's table downloads, clicked in a real headless Chromium: a model named like a
spreadsheet formula heads columns of Table 2, and the downloaded CSV shows it as text (a leading
single quote, `nlce.outputs`), as every CSV the project writes."""
from __future__ import annotations

import csv
import json

import pytest
from browser_kit import submit_sign_in

from annotate import i18n
from db import session_scope
from db.importer import import_pairs
from nlce.outputs import FORMULA_STARTS

pytestmark = pytest.mark.browser

HOSTILE = '=HYPERLINK("http://host/x","click")'


def test_the_table_2_download_shows_a_formula_named_model_as_text(app_db, launch_app, chromium,
                                                                   tmp_path):
    from playwright.sync_api import expect

    rows = [{"item_id": f"p-{i}", "language": "nl", "model": model, "reference": f"Tel {i} op.",
             "prediction": f"Som {i}.", "label": ("correct", "partial", "incorrect")[i % 3]}
            for i in range(3) for model in (HOSTILE, "@SUM(1+1)")]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with session_scope(app_db) as session:
        import_pairs(session, [path], dataset="mine")  # labels by 'expert': finished, resolved
    server = launch_app(app_db).url
    page = chromium.new_page(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    submit_sign_in(page, server, "lead")
    expect(page.get_by_text(i18n.text("sidebar.sign_out", "en"))).to_be_attached(timeout=30000)
    page.goto(f"{server}/summary")
    button = page.get_by_role("button", name=i18n.text("summary.download2", "en"))
    expect(button).to_be_visible(timeout=30000)
    with page.expect_download(timeout=30000) as download:
        button.click()
    with open(download.value.path(), newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    assert f"'{HOSTILE} correct" in table[0] and "'@SUM(1+1) partial" in table[0]
    assert not [cell for row in table for cell in row if cell.startswith(FORMULA_STARTS)]


def _signed_in(chromium, server, username):
    from playwright.sync_api import expect

    context = chromium.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    page = context.new_page()
    submit_sign_in(page, server, username)
    expect(page.get_by_text(i18n.text("sidebar.sign_out", "en"))).to_be_attached(timeout=30000)
    return context, page


def test_downloads_go_to_a_signed_in_lead_only(app_db, launch_app, chromium):
    """The whole export, clicked by the lead, from its address: a request without a cookie,
    with an annotator's cookie, or with the lead's cookie once the lead signed out gets 403 and
    no byte of it (issue 42: HTTP 200 and the 339,904 bytes of export.jsonl to anyone with the
    address, 53 minutes after the lead's browser closed)."""
    import httpx
    from playwright.sync_api import expect

    from annotate.ui import COOKIE_NAME

    server = launch_app(app_db).url
    context, page = _signed_in(chromium, server, "lead")
    page.goto(f"{server}/summary")
    button = page.get_by_role("button", name=i18n.text("summary.export_download", "en"))
    expect(button).to_be_visible(timeout=30000)
    with page.expect_download(timeout=30000) as download:
        button.click()
    url = download.value.url
    exported = open(download.value.path(), "rb").read()
    assert url.startswith(f"{server}/media/") and b'"annotator": "bas"' in exported
    nobody = httpx.get(url)  # no cookie: a copied address, a proxy's log, a shared history
    assert nobody.status_code == 403 and b"bas" not in nobody.content
    lead_cookie = {COOKIE_NAME: next(c["value"] for c in context.cookies()
                                     if c["name"] == COOKIE_NAME)}
    again = httpx.get(url, cookies=lead_cookie)  # the lead's own session: served, not cached
    assert (again.status_code, again.content) == (200, exported)
    assert again.headers["cache-control"] == "no-store, private"
    _, annotator = _signed_in(chromium, server, "bas")
    bas_cookie = {COOKIE_NAME: next(c["value"] for c in annotator.context.cookies()
                                    if c["name"] == COOKIE_NAME)}
    page.locator('[data-testid="stExpandSidebarButton"]').click()
    page.get_by_role("button", name=i18n.text("sidebar.sign_out", "en")).click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible(timeout=30000)
    for cookies in (bas_cookie, lead_cookie):  # an annotator, the lead once signed out
        refused = httpx.get(url, cookies=cookies)
        assert refused.status_code == 403 and b"bas" not in refused.content, cookies
