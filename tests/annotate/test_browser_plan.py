"""Assign by need in a real headless Chromium against a real server: the lead types a budget and a
plan name as a person does (with pauses), previews the plan, stores it: the plan and its draws
are in the database, the drawn items in the queues of annotators who speak their language, and
the Team page shows the plan's stop rule."""
from __future__ import annotations

import pytest
from browser_kit import settled, submit_sign_in, wait_for
from plan_kit import add_judge, add_labels, plan_tables
from sqlalchemy import select
from sqlmodel import Session

from annotate import i18n, service
from db import get_engine
from db import models as m

pytestmark = pytest.mark.browser
TYPING_MS = 120


def test_assign_by_need_in_the_browser(app_db, ids, launch_app, chromium):
    from playwright.sync_api import expect

    judge = add_judge(app_db)
    generations = sorted(judge["truth"])
    add_labels(app_db, "anna", dict(zip(generations[::2], (0, 1, 2, 0, 1, 2))))
    with Session(get_engine(app_db)) as session:
        queued = set(session.execute(select(m.Assignment.generation_id,
                                            m.Assignment.annotator_id)).all())
    server = launch_app(app_db).url
    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    submit_sign_in(page, server, "lead")
    expect(page.get_by_text(i18n.text("sidebar.sign_out", "en"))).to_be_attached(timeout=30000)
    page.goto(f"{server}/assign")
    expect(page.get_by_text(i18n.text("plan.header", "en"))).to_be_visible(timeout=30000)
    settled(page, 30000)

    budget = page.get_by_label(i18n.text("plan.budget", "en"))
    budget.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("4", delay=TYPING_MS)
    name = page.get_by_label(i18n.text("plan.name", "en"))
    name.click()
    page.keyboard.type("by-need 1", delay=TYPING_MS)
    page.get_by_role("button", name=i18n.text("plan.preview", "en")).click()
    expect(page.get_by_text("Plan by-need 1: a pilot of 6 labelled generation(s)")
           ).to_be_visible(timeout=30000)
    settled(page, 30000)
    assert plan_tables(app_db) == ([], [])  # a preview stores nothing
    assert page.locator('[data-testid="stException"]').count() == 0

    page.get_by_role("button", name=i18n.text("plan.confirm", "en")).click()
    expect(page.get_by_text("Stored plan by-need 1")).to_be_visible(timeout=30000)
    plans, items = wait_for(lambda: plan_tables(app_db)[0] and plan_tables(app_db),
                            what="the plan stored")
    assert [p[:3] for p in plans] == [("by-need 1", "mean_score", 4.0)] and len(items) == 12
    drawn = {g for _, g, pilot, _, d in items if d and not pilot}
    with Session(get_engine(app_db)) as session:
        now = set(session.execute(select(m.Assignment.generation_id,
                                         m.Assignment.annotator_id)).all())
        speaks = {a.id: a.languages for a in service.list_annotators(
            session, acting=service.OPERATOR)}
        language = dict(session.execute(select(m.LabelPlanItem.generation_id,
                                               m.SourceFile.natural_language)
                                        .join(m.Generation, m.Generation.id
                                              == m.LabelPlanItem.generation_id)
                                        .join(m.Target, m.Target.id == m.Generation.target_id)
                                        .join(m.SourceFile, m.SourceFile.id
                                              == m.Target.source_file_id)).all())
    assert drawn <= {g for g, _ in now}  # every drawn item is in a queue
    assert all(language[g] in speaks[a] for g, a in now - queued)

    settled(page, 30000)
    page.goto(f"{server}/team")
    expect(page.get_by_text(i18n.text("plan.status_header", "en"))).to_be_visible(timeout=30000)
    expect(page.get_by_text("Plan by-need 1: judge-x[standard,en,v1], mean_score, label "
                            "policy auto")).to_be_visible(timeout=30000)
    settled(page, 30000)
    assert page.locator('[data-testid="stException"]').count() == 0
