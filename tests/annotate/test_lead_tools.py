"""The lead's tools: re-activating an account, gold label history and the majority starting
point of adjudication (and a gold label without an accuracy refused in the lead's words),
imported expert labels kept apart from the team's raters, the Team page's median time per
annotator and language, and a review reason that stays with its label."""
from __future__ import annotations

from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from annotate import service
from db import get_engine
from testing.apptest import signed_in

PASSWORD = "s3cret-pass"  # the accounts of conftest.app_db


def _signed_in(username: str) -> AppTest:
    return signed_in(username, PASSWORD)


def _label(session, gid, annotator_id, accuracy, codes=(), seconds=1.0):
    service.save_label(session, generation_id=gid, annotator_id=annotator_id, accuracy=accuracy,
                       codes=list(codes), note="", seconds_spent=seconds, status="done",
                       expected_revision=None)


def test_a_deactivated_account_can_be_reactivated_and_the_list_shows_who_is_active(app_db, ids):
    with Session(get_engine(app_db)) as session:
        service.update_annotator(session, ids["bas"], acting=ids["lead"], active=False)
        listed = {p.username: p.active for p in service.list_annotators(session,
                                                                         acting=ids["lead"])}
        assert listed == {"anna": True, "bas": False, "lead": True}
        service.update_annotator(session, ids["bas"], acting=ids["lead"], active=True)
        session.commit()
        assert service.authenticate(session, "bas", PASSWORD).active
    at = _signed_in("lead")
    at.switch_page("views/team.py").run()
    assert not at.exception, at.exception
    accounts = at.dataframe[0].value  # the accounts table comes first
    assert dict(zip(accounts["username"], accounts["active"])) == {
        "anna": True, "bas": True, "lead": True}


def test_gold_labels_keep_their_history(app_db, ids):
    with Session(get_engine(app_db)) as session:
        gid = service.queue_for(session, ids["bas"])[0].generation_id
        service.adjudicate(session, generation_id=gid, adjudicator_id=ids["lead"],
                           accuracy="partial", codes=["LG-GR1"], note="first")
        service.adjudicate(session, generation_id=gid, adjudicator_id=ids["lead"],
                           accuracy="incorrect", codes=["SE-HA2", "LG-GR1"], note="second")
        session.commit()
        history = service.gold_history(session, gid, acting=ids["lead"])
        gold = service.gold_labels(session, acting=ids["lead"])[gid]
    assert [(h["accuracy"], h["codes"], h["note"], h["adjudicator"]) for h in history] == [
        ("incorrect", "LG-GR1 SE-HA2", "second", "lead"), ("partial", "LG-GR1", "first", "lead")]
    assert (gold["accuracy"], gold["codes"]) == ("incorrect", ("LG-GR1", "SE-HA2"))


def test_a_gold_label_without_an_accuracy_is_refused_in_the_leads_words(app_db, ids):
    """Two raters who disagree: the form starts with no accuracy; Store says to choose one
    (it spoke of "a 'done' annotation"), and so does the service."""
    import pytest

    from annotate import i18n

    with Session(get_engine(app_db)) as session:
        gid = service.queue_for(session, ids["bas"])[0].generation_id
        _label(session, gid, ids["anna"], "correct")
        _label(session, gid, ids["bas"], "incorrect")
        session.commit()
        with pytest.raises(service.LabelError, match="a gold label needs an accuracy"):
            service.adjudicate(session, generation_id=gid, adjudicator_id=ids["lead"],
                               accuracy="", codes=[])
    at = _signed_in("lead")
    at.switch_page("views/adjudicate.py").run()
    at.button[0].click().run()  # the form's Store, no accuracy chosen
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [i18n.text("adj.choose_accuracy", "en")]
    with Session(get_engine(app_db)) as session:
        assert service.gold_labels(session, acting=ids["lead"]) == {}


def test_a_reject_reason_is_not_carried_over_to_the_next_label(app_db, ids):
    from annotate import i18n

    with Session(get_engine(app_db)) as session:
        for entry in service.queue_for(session, ids["bas"])[:2]:
            _label(session, entry.generation_id, ids["bas"], "correct")
        session.commit()
    at = _signed_in("lead")
    at.switch_page("views/review.py").run()
    reason = lambda: next(x for x in at.text_input  # noqa: E731
                          if x.label == i18n.text("review.reason", "en"))
    first = at.selectbox(key="review_item").value
    reason().input("Look at the context again").run()
    next(b for b in at.button if b.label == i18n.text("review.reject", "en")).click().run()
    assert not at.exception, at.exception
    assert at.selectbox(key="review_item").value != first  # the next label
    assert reason().value == ""


def _human(annotator, accuracy, codes=()):
    return service.HumanLabel(1, "nl", "m", annotator, accuracy, tuple(codes))


def test_adjudication_starts_from_the_majority_or_from_nothing():
    three = [_human("anna", "incorrect", ["LG-GR1"]), _human("bas", "correct"),
             _human("cas", "incorrect", ["LG-GR1", "SE-HA2"])]
    assert service.majority_label(three) == ("incorrect", ("LG-GR1",))
    # two raters who disagree: no accuracy (not the alphabetically first rater's), no codes
    # only one of them chose
    assert service.majority_label([_human("anna", "correct"),
                                   _human("bas", "incorrect", ["SE-HA2"])]) == (None, ())


def test_imported_expert_labels_stay_apart_from_the_team_unless_asked(app_db, ids):
    with Session(get_engine(app_db)) as session:
        expert = service.create_annotator(session, username="expert", password=None,
                                          languages=["nl"], role="expert",
                                          acting=service.OPERATOR)
        queue = service.queue_for(session, ids["bas"])
        service.assign(session, annotator_ids=[expert.id], languages=["nl"], per_item=3,
                       acting=service.OPERATOR)
        gid = queue[0].generation_id
        _label(session, gid, ids["anna"], "correct")
        _label(session, gid, ids["bas"], "correct")
        _label(session, gid, expert.id, "incorrect", ["SE-HA2"])
        session.commit()
        team = service.finished_labels(session, acting=ids["lead"], include_expert=False)
        everyone = service.finished_labels(session, acting=ids["lead"], include_expert=True)
    assert {l.annotator for l in team} == {"anna", "bas"}
    assert {l.annotator for l in everyone} == {"anna", "bas", "expert"}
    assert service.find_disagreements(team) == []
    assert [d.generation_id for d in service.find_disagreements(everyone)] == [gid]
    at = _signed_in("lead")
    at.switch_page("views/agreement.py").run()
    assert not at.exception, at.exception
    assert at.dataframe[0].value["annotators"].tolist() == [2]
    at.switch_page("views/adjudicate.py").run()
    assert "0 items with disagreement" in "".join(c.value for c in at.caption)
    at.toggle(key="adj_expert").set_value(True).run()
    assert "1 item with disagreement" in "".join(c.value for c in at.caption)
    at.switch_page("views/assign.py").run()
    assert not at.exception, at.exception
    assert sorted(p.username for p in at.multiselect[0].value) == ["anna", "bas"]


def test_the_team_page_median_time_is_per_language(app_db, ids):
    with Session(get_engine(app_db)) as session:
        queue = service.queue_for(session, ids["anna"])
        first = {}
        for entry in queue:
            first.setdefault(entry.language, entry.generation_id)
        _label(session, first["nl"], ids["anna"], "correct", seconds=10)
        _label(session, first["zh"], ids["anna"], "correct", seconds=100)
        session.commit()
        rows = service.team_progress(session, acting=ids["lead"])
    medians = {r["language"]: r["median_seconds"] for r in rows if r["annotator"] == "anna"}
    assert medians == {"nl": 10.0, "zh": 100.0}



def test_assign_says_which_items_are_short_of_annotators(app_db, ids):
    """Two annotators per item where only anna speaks zh: the zh items get one, and the result
    says which and why (the Assign page shows it)."""
    with Session(get_engine(app_db)) as session:
        done = service.assign_items(session, acting=ids["lead"],
                                    annotator_ids=[ids["anna"], ids["bas"]], languages=["zh"],
                                    per_item=2)
        zh = {e.generation_id for e in service.queue_for(session, ids["anna"]) if
              e.language == "zh"}
    assert done.added == 0  # anna has them all already
    assert [(s.language, set(s.items), s.wanted, s.speakers) for s in done.short] == [
        ("zh", zh, 2, 1)]
    assert "only 1 of the chosen annotators speak zh" in done.short[0].sentence()


def test_the_agreement_page_says_which_judges_pass_the_alternative_annotator_test(
        tmp_path, monkeypatch):
    """Three annotators label 40 Dutch and 40 Chinese generations with overlaps; a careful judge
    (right on every item but a few) and a careless one: the page's table is replace.csv's, per
    judge over all items and per language, with the reason where a language falls short."""
    import numpy as np
    import pandas as pd

    from agreement.judges import load_verdicts
    from agreement.replace import replace_tables
    from db.models import Generation, JudgeRun, JudgeVerdict
    from testing.synthetic import add_synthetic_corpus

    url = f"sqlite:///{tmp_path / 'alt.db'}"
    monkeypatch.setenv("NLCE_DATABASE_URL", url)
    rng = np.random.default_rng(3)
    labels = ("incorrect", "partial", "correct")
    with Session(get_engine(url)) as session:
        add_synthetic_corpus(session, targets_per_language=20, languages=("nl", "zh"),
                             models=("model-a", "model-b"))
        people = {name: service.create_annotator(session, username=name, password=PASSWORD,
                                                 languages=["nl", "zh"], acting=service.OPERATOR)
                  for name in ("anna", "bas", "cyd")}
        service.create_annotator(session, username="lead", password=PASSWORD,
                                 languages=["nl", "zh"], role="lead", acting=service.OPERATOR)
        service.assign(session, annotator_ids=[p.id for p in people.values()], per_item=3,
                       acting=service.OPERATOR)
        careful = JudgeRun(signature="careful", model="careful", strategy="standard",
                           prompt_language="en", prompt_version="v1")
        careless = JudgeRun(signature="careless", model="careless", strategy="standard",
                            prompt_language="en", prompt_version="v1")
        session.add_all([careful, careless])
        session.flush()
        for generation in session.exec(select(Generation).order_by(Generation.id)).all():
            truth = labels[int(rng.integers(3))]
            for name, person in people.items():
                # cyd labels only the Dutch items: too few to be tested in Chinese
                if name != "cyd" or generation.id % 2 == 0:
                    said = truth if rng.random() < 0.8 else labels[int(rng.integers(3))]
                    _label(session, generation.id, person.id, said)
            session.add(JudgeVerdict(run_id=careful.id, generation_id=generation.id,
                                     status="ok", accuracy=truth))
            session.add(JudgeVerdict(run_id=careless.id, generation_id=generation.id,
                                     status="ok", accuracy=labels[int(rng.integers(3))]))
        session.commit()
        everyone = service.finished_labels(session, acting=service.OPERATOR)

    def expected(epsilon):
        return replace_tables(
            pd.DataFrame([(r.generation_id, r.annotator, r.accuracy) for r in everyone],
                         columns=["generation_id", "annotator", "accuracy"]),
            load_verdicts(url), {r.generation_id: r.language for r in everyone},
            epsilon=epsilon)[0]

    def shown_as(table, expected):
        for row in expected.itertuples():
            cell = table.loc[row.judge, row.slice_value]
            if pd.isna(row.winning_rate):
                assert cell.startswith("– ") and "no annotator has 30" in cell, cell
            else:
                assert cell == (f"{'passes' if row.passed else 'fails'} (omega "
                                f"{row.winning_rate:.2f}, rho {row.advantage_probability:.2f})")

    at = _signed_in("lead")
    at.switch_page("views/agreement.py").run()
    assert not at.exception, at.exception
    table = at.dataframe[-1].value.set_index("judge")  # the last table on the page
    assert list(table.columns) == ["all", "nl", "zh"]
    shown_as(table, expected(0.2))
    assert table.loc["careful[standard,en,v1]", "all"].startswith("passes")
    assert table.loc["careless[standard,en,v1]", "all"].startswith("fails")
    at.number_input(key="agree_epsilon").set_value(0.9).run()  # a wider margin: another table
    assert not at.exception, at.exception
    wider = at.dataframe[-1].value.set_index("judge")
    shown_as(wider, expected(0.9))
    assert not wider.equals(table) and "at most 0.9 worse" in at.caption[-1].value
    get_engine(url).dispose()
    get_engine.cache_clear()
