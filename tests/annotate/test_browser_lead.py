"""The lead's pages in a real headless Chromium against a real server, on a team that works on
pairs items (`db import --format pairs`): every lead page works on them, Assign says what it
could not do, the pages speak the interface language and keep the lead's place, and the review
queue, the export, the search and the open flags count are there."""
from __future__ import annotations

import json
import re
import time

import pytest
from browser_kit import settled, submit_sign_in, wait_for
from sqlalchemy import select
from sqlmodel import Session

from annotate import i18n, service
from db import get_engine, session_scope
from db import models as m
from db.importer import import_pairs
from taxonomy import default_taxonomy

pytestmark = pytest.mark.browser

ROWS = [
    {"item_id": "p-1", "language": "nl", "model": "sys-a", "reference": "Tel twee getallen op.",
     "prediction": "Som van twee getallen.", "context": "def optellen(a, b): ..."},
    {"item_id": "p-2", "language": "nl", "model": "sys-a", "reference": "Geef de lijst terug.",
     "prediction": "Lijst."},
    {"item_id": "p-3", "language": "nl", "model": "sys-a", "reference": "Sluit het bestand.",
     "prediction": "Bestand dicht."},
]


@pytest.fixture
def team(app_db, tmp_path):
    """anna and bas label the pairs items: they disagree on p-1 and p-2, bas flags p-3."""
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    with session_scope(app_db) as session:
        import_pairs(session, [path], dataset="mine")
    with Session(get_engine(app_db)) as session:
        ids = {a.username: a.id for a in service.list_annotators(session,
                                                                 acting=service.OPERATOR)}
        service.assign(session, acting=service.OPERATOR, annotator_ids=[ids["anna"], ids["bas"]],
                       models=["sys-a"], per_item=2)
        gids = {g.target_id: g.id for g in session.exec(
            select(m.Generation).where(m.Generation.model == "sys-a")).scalars()}
        items = [gids[t] for t in sorted(gids)]
        for who, labels in (("anna", ("correct", "correct", "correct")),
                            ("bas", ("incorrect", "partial", None))):
            for gid, accuracy in zip(items, labels):
                service.save_label(session, generation_id=gid, annotator_id=ids[who],
                                   accuracy=accuracy, codes=[], note=f"{who} on {gid}",
                                   seconds_spent=12.0, status="done" if accuracy else "flagged",
                                   expected_revision=None)
        session.commit()
    return {"url": app_db, "ids": ids, "items": items}


def _page(chromium, server, username, lang="en"):
    from playwright.sync_api import expect

    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    submit_sign_in(page, server, username)
    expect(page.get_by_text(i18n.text("sidebar.sign_out", lang))).to_be_attached(timeout=30000)
    return page


def _open(page, server, path, expected):
    """Open a page by its URL path; fails on any exception the app shows."""
    from playwright.sync_api import expect

    page.goto(f"{server}/{path}")
    expect(page.get_by_text(expected).first).to_be_visible(timeout=30000)
    settled(page, 30000)
    assert page.locator('[data-testid="stException"]').count() == 0, f"{path}: an exception"


def _choose(page, label, option):
    """Pick one option of the multiselect labelled `label` with the mouse."""
    page.locator('[data-testid="stMultiSelect"]').filter(has_text=label).locator("input").click()
    page.get_by_role("option", name=option, exact=True).click()
    page.keyboard.press("Escape")


def test_every_lead_page_works_on_pairs_items(team, launch_app, chromium):
    from playwright.sync_api import expect

    server = launch_app(team["url"]).url
    page = _page(chromium, server, "lead")
    _open(page, server, "adjudicate", "2 items with disagreement")
    expect(page.get_by_text("def optellen(a, b): ...")).to_be_visible()  # the item's context
    _open(page, server, "team", i18n.text("flags.header", "en"))
    expect(page.get_by_text(f"bas on {team['items'][2]}")).to_be_visible()  # the pairs flag
    for path, expected in (("assign", "Assign items"), ("agreement", "agreement"),
                           ("summary", "Table 1"), ("review", "Review queue")):
        _open(page, server, path, expected)
    with Session(get_engine(team["url"])) as session:  # what the Team page's table shows
        rows = service.team_progress(session, acting=team["ids"]["lead"])
    assert all(r["median_seconds"] == 12.0 for r in rows if r["done"])


def test_assign_says_which_items_are_short_and_an_empty_password_is_refused(
        team, launch_app, chromium):
    from playwright.sync_api import expect

    server = launch_app(team["url"]).url
    page = _page(chromium, server, "lead")
    _open(page, server, "assign", "Assign items")
    page.get_by_label("Annotators per item").fill("2")
    _choose(page, "Languages (empty: all)", "zh")
    page.get_by_role("button", name="Assign", exact=True).click()
    expect(page.get_by_text("only 1 of the chosen annotators speak zh")).to_be_visible(
        timeout=30000)

    _open(page, server, "team", "New account")
    page.get_by_label(i18n.text("team.username", "en")).fill("dora")
    _choose(page, i18n.text("team.languages", "en"), "nl")
    page.get_by_role("button", name=i18n.text("team.create", "en")).click()
    expect(page.get_by_text("a password needs at least")).to_be_visible(timeout=30000)
    with Session(get_engine(team["url"])) as session:
        assert session.exec(select(m.Annotator).where(m.Annotator.username == "dora")
                            ).first() is None


def test_pages_speak_the_interface_language_and_keep_the_leads_place(app_db, ids, launch_app,
                                                                     chromium):
    """On file items (the pairs fixture is for the pairs test)."""
    from playwright.sync_api import expect

    with Session(get_engine(app_db)) as session:
        service.set_interface_language(session, ids["lead"], "nl")
        items = [e.generation_id for e in service.queue_for(session, ids["bas"])[:2]]
        for gid in items:  # two items where anna and bas disagree
            for who, accuracy in (("anna", "correct"), ("bas", "incorrect")):
                service.save_label(session, generation_id=gid, annotator_id=ids[who],
                                   accuracy=accuracy, codes=[], note="", seconds_spent=2.0,
                                   status="done", expected_revision=None)
        session.commit()
    team = {"url": app_db, "items": sorted(items)}
    server = launch_app(app_db).url
    page = _page(chromium, server, "lead", "nl")
    _open(page, server, "adjudicate", i18n.text("adj.header", "nl"))
    dutch = default_taxonomy().accuracy_text("correct", "nl")[0]
    expect(page.get_by_text(f"anna: {dutch}").first).to_be_visible()  # a rater card in Dutch
    first = team["items"][0]
    choice = page.get_by_role("combobox", name=i18n.text("adj.item", "nl"))
    expect(choice).to_have_value(re.compile(f"^#{first} "))
    page.locator(".st-key-adj_gold").get_by_text(dutch, exact=True).click()
    page.get_by_role("button", name=i18n.text("adj.store", "nl")).click()
    wait_for(lambda: _gold(team["url"], first), what="gold label stored")
    settled(page, 30000)
    expect(choice).to_have_value(re.compile(f"^#{first} "))  # still on that item

    annotator = _page(chromium, server, "bas")  # the Show filter follows a language change
    annotator.locator('[data-testid="stExpandSidebarButton"]').click()
    settled(annotator, 30000)
    cut = annotator.evaluate("""[...document.querySelectorAll('[data-testid="stMain"] '
        + '[data-testid^="stBaseButton"] *')].filter(p => p.scrollWidth > p.clientWidth + 1)
        .map(p => p.textContent)""")
    assert cut == [], f"buttons cut off with the sidebar open: {cut}"
    annotator.get_by_role("combobox", name=i18n.text("sidebar.interface_language", "en")).click()
    annotator.get_by_role("option", name="Polski").click()
    expect(annotator.get_by_text(i18n.text("filter.label", "pl"))).to_be_visible(timeout=30000)
    settled(annotator, 30000)
    show = annotator.get_by_role("combobox", name=i18n.text("filter.label", "pl"))
    expect(show).to_have_value(i18n.text("filter.all", "pl"))


def _gold(url, gid):
    with Session(get_engine(url)) as session:
        return session.exec(select(m.GoldLabel).where(m.GoldLabel.generation_id == gid)).first()


def test_review_queue_export_search_and_open_flags(team, launch_app, chromium, tmp_path):
    from playwright.sync_api import expect

    server = launch_app(team["url"]).url
    page = _page(chromium, server, "lead")
    expect(page.get_by_text("Lead · 1 open flag")).to_be_visible(timeout=30000)
    _open(page, server, "team", i18n.text("flags.header", "en"))  # the lead answers the flag:
    page.get_by_label(i18n.text("flags.answer", "en")).fill("Yes, it counts.")
    page.get_by_role("button", name=i18n.text("flags.send", "en")).click()
    expect(page.get_by_text("Lead · 1 open flag")).to_be_hidden(timeout=30000)  # at once
    expect(page.get_by_text("Lead", exact=True)).to_be_visible()
    _open(page, server, "review", "Review queue")
    first = team["items"][0]
    page.get_by_label("Text or #id").fill(f"#{first}")
    page.keyboard.press("Enter")
    settled(page, 30000)
    page.get_by_role("button", name="Accept as gold label").click()
    wait_for(lambda: _gold(team["url"], first), what="accepted as gold")
    settled(page, 30000)
    second = team["items"][1]
    page.get_by_label("Text or #id").fill(f"#{second}")
    page.keyboard.press("Enter")
    settled(page, 30000)
    page.get_by_label("Reason (shown to the annotator)").fill("Look at the context again")
    page.keyboard.press("Enter")
    settled(page, 30000)
    page.get_by_role("button", name="Reject: back to the annotator").click()

    def sent_back():
        with Session(get_engine(team["url"])) as session:
            return session.exec(select(m.Annotation.status).join(
                m.FlagReply, m.FlagReply.annotation_id == m.Annotation.id).where(
                m.Annotation.generation_id == second)).first()
    assert wait_for(sent_back, what="rejected")[0] == "draft"

    _open(page, server, "summary", "Table 1")
    with page.expect_download(timeout=30000) as download:
        page.get_by_role("button", name="Download export.jsonl").click()
    records = [json.loads(line) for line in open(download.value.path(), encoding="utf-8")]
    assert any((r.get("reply") or {}).get("text") == "Look at the context again"
               for r in records if r["type"] == "annotation")
    assert not any("password_hash" in r for r in records)

    annotator = _page(chromium, server, "bas")  # search the queue by id
    wanted = team["items"][1]
    annotator.get_by_role("button", name="Search").click()
    annotator.get_by_label("Text or #id").fill(f"#{wanted}")
    annotator.keyboard.press("Enter")
    expect(annotator.get_by_text(f"· #{wanted} ·")).to_be_visible(timeout=30000)
    search = annotator.get_by_label("Text or #id")  # typed as a person types: nothing matches
    search.fill("")
    search.press_sequentially("nergens te vinden", delay=120)
    search.press("Enter")
    expect(annotator.get_by_text("No item of your queue matches this search and filter.")
           ).to_be_visible(timeout=30000)
    expect(annotator.get_by_text(f"· #{wanted} ·")).to_be_visible()  # the item shown stays


def test_a_click_on_the_chosen_gold_accuracy_keeps_it(team, launch_app, chromium):
    """On Adjudicate, "Correct" clicked, then clicked again (a second look, a double click):
    it stays chosen (a second click cleared it) and Store stores it."""
    from playwright.sync_api import expect

    server = launch_app(team["url"]).url
    page = _page(chromium, server, "lead")
    _open(page, server, "adjudicate", "2 items with disagreement")
    first = team["items"][0]  # anna correct, bas incorrect: the form starts with no accuracy
    form = page.locator(".st-key-adj_gold")
    correct = form.get_by_role("radio", name="Correct", exact=True)
    correct.click()
    expect(correct).to_have_attribute("aria-checked", "true")
    correct.click()
    time.sleep(0.5)  # what a second click would undo has happened by now
    expect(correct).to_have_attribute("aria-checked", "true")
    page.get_by_role("button", name="Store gold label").click()
    gold = wait_for(lambda: _gold(team["url"], first), what="gold label stored")
    assert gold[0].accuracy == "correct"
    assert page.get_by_text("annotation needs").count() == 0


def test_the_gold_codes_field_ticks_exactly_the_code_typed(team, launch_app, chromium):
    """Adjudicate, typed key by key as the lead types: `SE-MD` and Enter tick SE-MD alone
    (Streamlit's multiselect took its highlighted first option, "Select 4 matches", and stored
    SE-HA1, SE-CS1 and SE-OI too: issue 42), a code's name ticks that code, and a query that
    matches several codes ticks none and names them, as the annotator's picker does."""
    from playwright.sync_api import expect

    server = launch_app(team["url"]).url
    page = _page(chromium, server, "lead")
    _open(page, server, "adjudicate", "2 items with disagreement")
    first = team["items"][0]  # no codes from the raters: the form starts with none
    field = page.get_by_label(i18n.text("adj.gold_codes", "en"), exact=True)
    for query in ("SE-MD", "URL", "GR"):
        field.click()
        field.press_sequentially(query, delay=90)
        field.press("Enter")
        settled(page, 30000)
    expect(page.get_by_text("“GR” matches 5 codes")).to_be_visible()
    partial = default_taxonomy().accuracy_text("partial", "en")[0]
    page.get_by_role("radio", name=partial, exact=True).click()
    settled(page, 30000)
    page.get_by_role("button", name="Store gold label").click()
    gold = wait_for(lambda: _gold(team["url"], first), what="gold label stored")
    with Session(get_engine(team["url"])) as session:
        codes = service.gold_labels(session, acting=team["ids"]["lead"])[first]["codes"]
    assert (gold[0].accuracy, codes) == ("partial", ("MS-ME2", "SE-MD"))
