"""The lead's pages under Streamlit's AppTest: "assign by need" on the Assign page previews a
plan's summary, stores it and assigns the drawn items on confirmation (nothing before), says a
refusal in the lead's interface language and stores nothing; the Team page shows each plan's
stop rule."""
from __future__ import annotations

from plan_kit import add_judge, add_labels, plan_tables
from sqlalchemy import select
from sqlmodel import Session

from annotate import i18n, service
from annotate.plan_views import STATUS_COLUMNS
from db import get_engine
from db import models as m
from testing.apptest import signed_in

PASSWORD = "s3cret-pass"  # the accounts of conftest.app_db


def _judged(app_db) -> dict:
    """app_db's 12 generations (nl and zh, 3 targets x 2 models) with a judge's ok verdicts and
    human labels on 6 of them (three classes): a pool of 6."""
    judge = add_judge(app_db)
    ids = sorted(judge["truth"])
    add_labels(app_db, "anna", dict(zip(ids[::2], (0, 1, 2, 0, 1, 2))))
    return {**judge, "pool": ids[1::2]}


def _widget(widgets, key: str, lang: str = "en"):
    label = i18n.text(key, lang)
    return next(w for w in widgets if w.label == label)


def _assign_page(lead="lead"):
    at = signed_in(lead, PASSWORD)
    at.switch_page("views/assign.py").run()
    assert not at.exception, at.exception
    return at


def _preview(at, budget: int, lang: str = "en"):
    _widget(at.number_input, "plan.budget", lang).set_value(budget)
    _widget(at.button, "plan.preview", lang).click().run()
    assert not at.exception, at.exception


def test_assign_by_need_previews_then_stores_and_assigns(app_db, ids):
    judge = _judged(app_db)
    with Session(get_engine(app_db)) as session:
        queued = session.execute(select(m.Assignment.generation_id, m.Assignment.annotator_id)
                                 ).all()
    at = _assign_page()
    assert _widget(at.selectbox, "plan.predictor").value == judge["key"]
    _preview(at, 3)
    summary = [e.value for e in at.info]
    assert any(s.startswith("Plan synthetic\\-all\\-1: a pilot of 6 labelled generation(s); a "
                            "pool of 6 without a human label") for s in summary), summary
    assert any("; 3.0 labels expected, " in s for s in summary), summary  # the budget's
    assert any("How the probabilities were made: learned from a pilot of 6" in c.value
               for c in at.caption)
    assert plan_tables(app_db) == ([], [])  # a preview stores nothing
    at.button(key="plan_confirm").click().run()
    assert not at.exception, at.exception
    (stored,) = [s.value for s in at.success]
    assert stored.startswith("Stored plan synthetic\\-all\\-1 (")
    plans, items = plan_tables(app_db)
    assert [p[:3] for p in plans] == [("synthetic-all-1", "mean_score", 3.0)] and len(items) == 12
    drawn = {g for _, g, pilot, _, d in items if d and not pilot}
    with Session(get_engine(app_db)) as session:
        after = session.execute(select(m.Assignment.generation_id, m.Assignment.annotator_id)
                                ).all()
        speakers = {a.id: a.languages for a in service.list_annotators(
            session, acting=service.OPERATOR) if a.role == "annotator"}
    new = set(after) - set(queued)
    assert {g for g, _ in queued} | {g for g, _ in new} >= drawn  # each drawn one is queued
    assert all(a in speakers for _, a in new)
    at.run()  # the preview is gone: a second click cannot store the plan twice
    assert not [b for b in at.button if b.key == "plan_confirm"]


def test_a_refusal_is_said_in_the_leads_language_and_nothing_is_stored(app_db, ids):
    _judged(app_db)
    with Session(get_engine(app_db)) as session:
        service.set_interface_language(session, ids["lead"], "nl")
        session.commit()
    at = _assign_page()
    _preview(at, 9, "nl")
    assert [e.value for e in at.error] == [i18n.text("plan.error.budget", "nl", budget="9",
                                                     pool=6)]
    assert not [b for b in at.button if b.key == "plan_confirm"]
    assert plan_tables(app_db) == ([], [])


def test_the_team_page_shows_each_plans_stop_rule(app_db, ids):
    judge = _judged(app_db)
    at = signed_in("lead", PASSWORD)
    at.switch_page("views/team.py").run()
    assert not at.exception, at.exception
    assert i18n.text("plan.none", "en") in [i.value for i in at.info]
    with Session(get_engine(app_db)) as session:
        service.make_plan(session, service.PlanRequest(
            dataset="synthetic", predictor=judge["key"], budget=3, target_width=0.5,
            name="p1"), acting=service.OPERATOR)
        session.commit()
    at.run()
    assert not at.exception, at.exception
    assert any(md.value.startswith("Plan p1: judge\\-x") for md in at.markdown)
    (table,) = [d.value for d in at.dataframe if list(d.value.columns) == STATUS_COLUMNS]
    assert set(table.estimand) == set(m.PLAN_ESTIMANDS)
    assert table.estimand.iloc[0] == "mean_score"  # the plan's own first
    overall = table[(table.slice == "all") & (table.estimand == "mean_score")].iloc[0]
    assert (overall.target_width, overall.labels_done) == (0.5, 6)
