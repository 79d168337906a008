"""Label plans in annotate.service.plans on real SQLite and PostgreSQL: the pilot and the pool
as the issue defines them, probabilities from agreement.active (floored, capped, summing to
the budget), the same draws for the same seed, the plan stored whole and read back by
agreement.plans, each bad input refused with one sentence and nothing stored, and the drawn
generations assigned to active speakers of their language, fairly, never twice to one person."""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from plan_kit import add_judge, add_labels, plan_tables
from sqlalchemy import select
from sqlmodel import Session

from agreement import active
from agreement.plans import estimand_value, load_plans, plan_rows
from annotate import service
from annotate.service.assignment import add_assignments
from annotate.service.plans import PlanError, PlanRequest
from db import get_engine, session_scope
from db import models as m
from testing.synthetic import add_synthetic_corpus

PASSWORD = "s3cret-pass"


@pytest.fixture
def team(any_db_url):
    """nl and el, 20 targets each, models model-a and model-b (80 generations); anna (nl, el),
    bas (nl) and lead; a judge right 75% of the time with 4 failed verdicts; 30 generations
    labelled by anna (the pilot)."""
    url = any_db_url
    with Session(get_engine(url)) as session:
        add_synthetic_corpus(session, targets_per_language=20, languages=("nl", "el"),
                             models=("model-a", "model-b"))
        for name, languages, role in (("anna", ["nl", "el"], "annotator"),
                                      ("bas", ["nl"], "annotator"),
                                      ("lead", ["nl", "el"], "lead")):
            service.create_annotator(session, username=name, password=PASSWORD,
                                     languages=languages, role=role, acting=service.OPERATOR)
        session.commit()
    judge = add_judge(url, failed=4)
    ids = sorted(judge["truth"])
    pilot = [int(g) for g in np.random.default_rng(1).choice(ids, 30, replace=False)]
    add_labels(url, "anna", {g: judge["truth"][g] for g in pilot})
    yield {"url": url, **judge, "pilot": set(pilot), "ids": ids}
    get_engine(url).dispose()
    get_engine.cache_clear()


def _draft(url, **choices):
    request = PlanRequest(**{"dataset": "synthetic", "budget": 12, **choices})
    with session_scope(url) as session:
        return service.draft_plan(session, request, acting=service.OPERATOR)


def test_the_pilot_and_the_pool_and_their_probabilities(team):
    draft = _draft(team["url"], predictor=team["key"])
    failed = set(team["ids"][:4])
    assert set(draft.pilot) == team["pilot"] - failed  # labelled, with an ok verdict
    pool = [i.generation_id for i in draft.planned]
    assert pool == sorted(set(team["ids"]) - team["pilot"] - failed)  # ok, no human label
    assert draft.left_out == 4
    pi = np.array([i.probability for i in draft.planned])
    assert pi.sum() == pytest.approx(12) and pi.min() >= 0.05 - 1e-12 and pi.max() <= 1
    # exactly agreement.active over the same arrays
    value = {g: estimand_value("mean_score", [c])[0] for g, c in team["said"].items()}
    pilot = sorted(draft.pilot)
    scale, how = active.error_scale([value[g] for g in pilot],
                                    [team["truth"][g] / 2 for g in pilot],
                                    [value[g] for g in pool])
    expected = active.sampling_probabilities(scale, len(pool), 12, 0.05)
    assert pi == pytest.approx(expected)
    assert [i.drawn for i in draft.planned] == list(active.draw(expected, 0))
    assert draft.method == how and not draft.uniform
    assert [i.predictor_value for i in draft.planned] == [value[g] for g in pool]
    assert draft.name == "synthetic-all-1"


def test_the_same_seed_gives_the_same_draws_and_another_seed_others(team):
    first = _draft(team["url"], predictor=team["key"], seed=7)
    again = _draft(team["url"], predictor=str(team["run_id"]), seed=7)  # by run id too
    other = _draft(team["url"], predictor=team["key"], seed=8)
    assert first.same_draw(again) and first.predictor == again.predictor == team["key"]
    assert [i.drawn for i in first.planned] != [i.drawn for i in other.planned]


def test_without_a_pilot_the_draw_is_uniform_and_says_so(team):
    with session_scope(team["url"]) as session:  # nothing labelled: no pilot
        session.execute(m.Annotation.__table__.delete())
    draft = _draft(team["url"], predictor=team["key"], language="el")
    pi = {round(i.probability, 12) for i in draft.planned}
    assert draft.uniform and len(pi) == 1 and not draft.pilot
    assert draft.method.startswith("uniform: no pilot")
    asked = _draft(team["url"], predictor=team["key"], uniform=True)
    assert asked.uniform and len({round(i.probability, 12) for i in asked.planned}) == 1


def test_a_plan_is_stored_whole_and_read_back_by_agreement_plans(team):
    request = PlanRequest(dataset="synthetic", predictor=team["key"], budget=12,
                          language="nl", target_width=0.3, compare="nl:model-a:model-b")
    with session_scope(team["url"]) as session:
        draft = service.make_plan(session, request, acting=service.OPERATOR)
    assert draft.name == "synthetic-nl-1"
    labels = {g: ("incorrect", "partial", "correct")[team["truth"][g]] for g in team["ids"]}
    (plan,) = load_plans(team["url"], labels)
    frame = plan.frame.set_index("generation_id")
    assert frame.pilot.sum() == len(draft.pilot)
    for item in draft.planned:
        row = frame.loc[item.generation_id]
        assert (row.probability, bool(row.drawn), row.predictor_value, row.language) == (
            pytest.approx(item.probability), item.drawn, item.predictor_value, "nl")
    assert (plan.predictor, plan.language, plan.target_width) == (team["key"], "nl", 0.3)
    assert plan.compare == {"language": "nl", "a": "model-a", "b": "model-b"}
    rows = plan_rows(plan)
    assert any(r["slice"] == "all" and "estimate" in r for r in rows)
    with Session(get_engine(team["url"])) as session:
        stored = session.execute(select(m.LabelPlan)).scalar_one()
        assert (stored.label_policy, stored.seed, stored.budget) == ("auto", 0, 12.0)



def test_the_stop_rule_reads_the_plans_in_the_callers_session(team):
    """plan_statuses reads in the session it is given (the Team page's, the read-only one of
    `--status`), not a second one of its own: it sees what that session sees."""
    request = PlanRequest(dataset="synthetic", predictor=team["key"], budget=12, language="nl")
    with session_scope(team["url"]) as session:
        draft = service.make_plan(session, request, acting=service.OPERATOR)
        session.flush()  # written in this transaction, not committed: no other session sees it
        ((plan, policy, status),) = service.plan_statuses(session, acting=service.OPERATOR)
        session.rollback()
    assert (plan.name, policy, len(plan.frame)) == (draft.name, "auto",
                                                    len(draft.pilot) + len(draft.planned))
    assert set(status.plan) == {draft.name} and not status.decided.any()
    assert plan_tables(team["url"]) == ([], [])

@pytest.mark.parametrize("choices, key, says", [
    ({"budget": 500}, "plan.error.budget", "more than the"),
    ({"dataset": "nope"}, "plan.error.no_dataset", "No dataset named nope"),
    ({"predictor": "nobody[standard,en,v1]"}, "plan.error.no_predictor", "known: judge-x"),
    ({"language": "pl"}, "plan.error.no_language", "its languages: el, nl"),
    ({"estimand": "median"}, "plan.error.estimand", "Unknown estimand median"),
    ({"target_width": 1.5}, "plan.error.target_width", "not 1.5"),
    ({"compare": "nl:model-a:model-z"}, "plan.error.compare", "model-a, model-b"),
    ({"min_probability": 0.5}, "plan.error.reason", "below the minimum probability"),
    ({"labels": "annotator:nobody"}, "plan.error.reason", "annotator 'nobody'"),
])
def test_bad_input_is_refused_in_one_sentence_and_nothing_is_stored(team, choices, key, says):
    before = plan_tables(team["url"])
    request = {"predictor": team["key"], **choices}
    with pytest.raises(PlanError) as refused:
        with session_scope(team["url"]) as session:
            service.make_plan(session, PlanRequest(**{"dataset": "synthetic", "budget": 12,
                                                      **request}), acting=service.OPERATOR)
    assert refused.value.key == key and says in str(refused.value)
    assert "\n" not in str(refused.value)
    assert plan_tables(team["url"]) == before


def test_a_predictor_without_verdicts_a_one_class_pilot_and_a_mute_language(team):
    url = team["url"]
    broken = add_judge(url, model="broken", failed=10_000)  # every verdict a parse error
    with session_scope(url) as session:  # the page offers only predictors with an ok verdict
        options = service.plan_options(session, acting=service.OPERATOR)
    assert options == {"datasets": ["synthetic"], "predictors": [team["key"]],
                       "languages": ["el", "nl"]}
    with pytest.raises(PlanError, match="has no ok verdict on dataset synthetic"):
        _draft(url, predictor=broken["key"])
    with session_scope(url) as session:  # every pilot label "correct": one class
        session.execute(m.Annotation.__table__.update().values(accuracy="correct"))
    with pytest.raises(PlanError, match="all have mean_score = 1: it cannot tell"):
        _draft(url, predictor=team["key"])
    with session_scope(url) as session:  # anna was el's only speaker
        anna = session.execute(select(m.Annotator.id).where(m.Annotator.username == "anna")
                               ).scalar_one()
        service.update_annotator(session, anna, acting=service.OPERATOR, active=False)
    with pytest.raises(PlanError, match=r"No active annotator speaks el \(\d+ generation"):
        _draft(url, predictor=team["key"], uniform=True)
    assert plan_tables(url) == ([], [])


def test_a_plan_is_never_silently_redrawn(team):
    request = PlanRequest(dataset="synthetic", predictor=team["key"], budget=12, name="p")
    with session_scope(team["url"]) as session:
        service.make_plan(session, request, acting=service.OPERATOR)
    before = plan_tables(team["url"])
    with pytest.raises(PlanError, match="a plan is never silently redrawn; a new plan has a "
                                        "new name"):
        with session_scope(team["url"]) as session:
            service.make_plan(session, request, acting=service.OPERATOR)
    assert plan_tables(team["url"]) == before
    with session_scope(team["url"]) as session:  # a generated name is a new one
        second = service.make_plan(session, PlanRequest(
            dataset="synthetic", predictor=team["key"], budget=12), acting=service.OPERATOR)
    assert second.name == "synthetic-all-1"


def test_a_preview_is_stored_only_as_it_was_seen(team):
    request = PlanRequest(dataset="synthetic", predictor=team["key"], budget=12)
    preview = _draft(team["url"], predictor=team["key"])
    add_labels(team["url"], "bas", {next(i.generation_id for i in preview.planned): 2})
    with pytest.raises(PlanError, match="changed since the preview"):
        with session_scope(team["url"]) as session:
            service.make_plan(session, request, acting=service.OPERATOR, preview=preview)
    assert plan_tables(team["url"]) == ([], [])


def test_the_drawn_generations_go_to_active_speakers_fairly_and_once(team):
    url = team["url"]
    with session_scope(url) as session:
        ids = {a.username: a.id for a in service.list_annotators(session,
                                                                 acting=service.OPERATOR)}
        request = PlanRequest(dataset="synthetic", budget=12, predictor=team["key"],
                              language="nl")
        held = _draft(url, **request.__dict__).drawn[0]
        add_assignments(session, [(held.generation_id, ids["bas"])])  # in bas's queue already
        nl = service.make_plan(session, request, acting=service.OPERATOR)
        # what the draft read in this transaction (the command's and the page's way); el below
        # and the second round read and resolve the labels themselves
        assert set(nl.pilot) <= nl.labelled <= team["pilot"]
        assigned = service.assign_plan(session, nl.name, acting=service.OPERATOR,
                                       labelled=nl.labelled)
        el = service.make_plan(session, replace(request, language="el", budget=5),
                               acting=service.OPERATOR)
        service.assign_plan(session, el.name, acting=service.OPERATOR)
    with Session(get_engine(url)) as session:
        pairs = session.execute(select(m.Assignment.generation_id, m.Assignment.annotator_id)
                                ).all()
    holders = Counter(g for g, _ in pairs)
    assert set(holders) == {i.generation_id for i in (*nl.drawn, *el.drawn)}
    assert all(n == 1 for n in holders.values())  # never twice
    assert (assigned.added, assigned.held, assigned.waiting) == (len(nl.drawn) - 1, 1,
                                                                 len(nl.drawn))
    who = dict(pairs)
    assert {who[i.generation_id] for i in el.drawn} == {ids["anna"]}  # el's only speaker
    load = Counter(who[i.generation_id] for i in nl.drawn)  # the least loaded first
    assert abs(load[ids["anna"]] - load[ids["bas"]]) <= 1
    with session_scope(url) as session:  # again: nothing more to do
        assert service.assign_plan(session, nl.name, acting=service.OPERATOR).added == 0


def test_only_a_lead_plans(team):
    with session_scope(team["url"]) as session:
        bas = session.execute(select(m.Annotator.id).where(m.Annotator.username == "bas")
                              ).scalar_one()
        with pytest.raises(service.NotAllowedError, match="make label plans"):
            service.draft_plan(session, PlanRequest(dataset="synthetic", budget=3,
                                                    predictor=team["key"]), acting=bas)


def test_a_pilot_the_judge_never_errs_on_is_refused_unless_drawn_uniformly(team):
    with session_scope(team["url"]) as session:  # the pilot's labels: the judge's own
        for g in team["pilot"]:
            session.execute(m.Annotation.__table__.update()
                            .where(m.Annotation.generation_id == g)
                            .values(accuracy=("incorrect", "partial", "correct")[team["said"][g]]))
    with pytest.raises(PlanError, match=r"agrees with every label of the pilot: .* draw "
                                        r"uniformly instead \(annotate.plan --uniform\)"):
        _draft(team["url"], predictor=team["key"])
    assert _draft(team["url"], predictor=team["key"], uniform=True).uniform


def test_a_generated_name_names_the_language_as_stored(team):
    draft = _draft(team["url"], predictor=team["key"], language=" NL ")
    assert (draft.name, draft.language) == ("synthetic-nl-1", "nl")
    assert {i.language for i in draft.planned} == {"nl"}
