"""The app's logic, straight on a real SQLite database: accounts, queues, saving with history
and revision checks, skip/flag, assignment plans, adjudication, summaries, agreement."""
from __future__ import annotations

import pytest
import scipy.stats
from sqlalchemy import func, select
from sqlmodel import Session

from annotate import service
from db import get_engine
from db import models as m

PASSWORD = "s3cret-pass"  # the accounts of conftest.app_db


@pytest.fixture
def session(app_db):
    with Session(get_engine(app_db)) as s:
        yield s


def _save(session, gid, aid, *, accuracy="correct", codes=(), note="", status="done",
          expected=None, seconds=3.0):
    saved = service.save_label(session, generation_id=gid, annotator_id=aid, accuracy=accuracy,
                               codes=codes, note=note, seconds_spent=seconds, status=status,
                               expected_revision=expected)
    session.commit()
    return saved


# ---------------------------------------------------------------- accounts

def test_authenticate(session):
    user = service.authenticate(session, "Anna", PASSWORD)
    assert user.username == "anna" and user.languages == ("nl", "zh") and not user.is_lead
    assert service.authenticate(session, "lead", PASSWORD).is_lead
    for name, password in (("nobody", PASSWORD), ("anna", "wrong")):
        with pytest.raises(service.AuthError) as failed:
            service.authenticate(session, name, password)
        assert str(failed.value) == service.SIGN_IN_FAILED


def test_password_is_stored_hashed_only(session):
    stored = session.exec(select(m.Annotator.password_hash).where(
        m.Annotator.username == "anna")).scalar_one()
    assert stored.startswith("scrypt$") and PASSWORD not in stored


def test_create_annotator_rejects_bad_input(session):
    with pytest.raises(service.AnnotateError,
                       match="'ANNA' differs only in case from the account 'anna'"):
        service.create_annotator(session, username="ANNA", password="x", languages=["nl"],
                                 acting=service.OPERATOR)
    with pytest.raises(service.AnnotateError, match="unknown language 'de'"):
        service.create_annotator(session, username="carl", password="x", languages=["de"],
                                 acting=service.OPERATOR)
    with pytest.raises(service.AnnotateError, match="at least one language"):
        service.create_annotator(session, username="carl", password="x", languages=[],
                                 acting=service.OPERATOR)


def test_oidc_email_maps_to_account(session):
    service.create_annotator(session, username="eva@example.org", password=None,
                             languages=["el"], acting=service.OPERATOR)
    assert service.annotator_for_email(session, "Eva@Example.org").languages == ("el",)
    with pytest.raises(service.AuthError, match="Sign-in failed"):
        service.authenticate(session, "eva@example.org", "anything")
    with pytest.raises(service.AuthError, match="No active account for 'x@example.org'"):
        service.annotator_for_email(session, "x@example.org")


# ---------------------------------------------------------------- queues

def test_queue_holds_only_own_languages_in_order(session, ids):
    queue = service.queue_for(session, ids["bas"])
    assert len(queue) == 6 and {e.language for e in queue} == {"nl"}
    assert [e.position for e in queue] == sorted(e.position for e in queue)
    anna = service.queue_for(session, ids["anna"])
    assert len(anna) == 12 and {e.language for e in anna} == {"nl", "zh"}
    # stratified: the first four items already mix both languages and both models
    assert {(e.language, e.model) for e in anna[:4]} == {
        ("nl", "model-a"), ("nl", "model-b"), ("zh", "model-a"), ("zh", "model-b")}
    # a language the annotator does not speak gives nothing, even if assigned
    row = session.exec(select(m.Annotator).where(m.Annotator.username == "anna")).scalar_one()
    row.languages = ["zh"]
    session.add(row)
    session.commit()
    assert {e.language for e in service.queue_for(session, ids["anna"])} == {"zh"}


def test_progress_and_navigation(session, ids):
    queue = service.queue_for(session, ids["bas"])
    first, second = queue[0].generation_id, queue[1].generation_id
    _save(session, first, ids["bas"], accuracy="partial", codes=["LG-GR1"])
    _save(session, second, ids["bas"], accuracy=None, codes=["SE-MD"], status="draft")
    queue = service.queue_for(session, ids["bas"])
    assert [queue[0].state, queue[1].state, queue[2].state] == ["done", "draft", "todo"]
    progress = service.progress_of(queue)
    assert progress["nl"].done == 1 and progress["nl"].draft == 1 and progress["*"].assigned == 6
    assert service.first_open(queue) == 1
    assert service.next_open(queue, 1) == 2
    assert service.step(queue, 0, -1) == 0 and service.step(queue, 5, +1) == 5


# ---------------------------------------------------------------- saving

def test_save_keeps_history_and_load_shows_own_label_only(session, ids):
    gid = service.queue_for(session, ids["bas"])[0].generation_id
    first = _save(session, gid, ids["bas"], accuracy="incorrect", codes=["se-ha2"], note="x")
    second = _save(session, gid, ids["bas"], accuracy="partial", codes=["SE-HA2", "LG-IS"],
                   expected=first.revision)
    assert second.revision == first.revision + 1
    _save(session, gid, ids["anna"], accuracy="correct")
    view = service.load_item(session, gid, ids["bas"])
    assert view.own.accuracy == "partial" and view.own.codes == ("LG-IS", "SE-HA2")
    assert view.own.history == 2
    history = service.own_history(session, gid, ids["bas"])
    assert [h["accuracy"] for h in history] == ["partial", "incorrect"]
    # blind: anna's "correct" is nowhere in what bas's view carries
    assert "correct" not in repr(view.own) and view.original_comment.startswith("# ")


def test_stale_revision_is_refused_and_changes_nothing(session, ids):
    gid = service.queue_for(session, ids["bas"])[0].generation_id
    first = _save(session, gid, ids["bas"], accuracy="correct")
    _save(session, gid, ids["bas"], accuracy="partial", expected=first.revision)  # other tab
    with pytest.raises(Exception) as caught:
        _save(session, gid, ids["bas"], accuracy="incorrect", expected=first.revision)
    assert service.is_stale_error(caught.value)
    session.rollback()
    assert service.load_item(session, gid, ids["bas"]).own.accuracy == "partial"


def test_unknown_code_is_refused_with_its_name(session, ids):
    gid = service.queue_for(session, ids["bas"])[0].generation_id
    with pytest.raises(service.LabelError, match="XX-YY"):
        _save(session, gid, ids["bas"], codes=["XX-YY"])
    with pytest.raises(service.LabelError, match="category|group"):
        _save(session, gid, ids["bas"], codes=["SE"])
    session.rollback()
    assert service.load_item(session, gid, ids["bas"]).own.revision is None


def test_deleted_item_and_foreign_item(session, ids):
    queue = service.queue_for(session, ids["bas"])
    gid = queue[0].generation_id
    session.delete(session.get(m.Generation, gid))
    session.commit()
    with pytest.raises(service.ItemGoneError, match=f"#{gid}"):
        service.load_item(session, gid, ids["bas"])
    with pytest.raises(service.ItemGoneError):
        _save(session, gid, ids["bas"])
    zh = next(e for e in service.queue_for(session, ids["anna"]) if e.language == "zh")
    with pytest.raises(service.NotAssignedError):
        service.load_item(session, zh.generation_id, ids["bas"])


def test_skip_and_flag_are_statuses(session, ids):
    queue = service.queue_for(session, ids["bas"])
    _save(session, queue[0].generation_id, ids["bas"], accuracy=None, status="skipped")
    _save(session, queue[1].generation_id, ids["bas"], accuracy="partial", status="flagged",
          note="ask lead")
    states = [e.state for e in service.queue_for(session, ids["bas"])][:2]
    assert states == ["skipped", "flagged"]
    assert service.visit_seconds(10, 100.0, 105.5) == 15.5
    assert service.visit_seconds(0, 0.0, 10 ** 6) == service.MAX_SECONDS_PER_VISIT


# ---------------------------------------------------------------- assignment

def test_plan_assignments_is_balanced_seeded_and_language_aware():
    items = [service.ItemRef(i, "nl" if i % 2 else "zh", f"m{i % 3}") for i in range(60)]
    people = [(1, ["nl", "zh"]), (2, ["nl"]), (3, ["zh"]), (4, ["nl", "zh"])]
    plan = service.plan_assignments(items, people, per_item=2, strategy="stratified", seed=7)
    assert plan == service.plan_assignments(items, people, per_item=2, strategy="stratified",
                                            seed=7)
    per_item: dict[int, set] = {}
    for gid, aid in plan:
        per_item.setdefault(gid, set()).add(aid)
    assert all(len(v) == 2 for v in per_item.values()) and len(per_item) == 60
    lang = {it.generation_id: it.language for it in items}
    assert all(lang[g] in dict(people)[a] for g, a in plan)
    loads = [sum(1 for _, a in plan if a == p) for p, _ in people]
    assert max(loads) - min(loads) <= 2  # greedy, under language constraints
    other = service.plan_assignments(items, people, per_item=2, strategy="random", seed=8)
    assert [g for g, _ in other] != [g for g, _ in plan]


def test_assign_is_idempotent_and_filters_by_model(session, ids):
    before = session.exec(select(func.count()).select_from(m.Assignment)).scalar_one()
    assert service.assign(session, annotator_ids=[ids["anna"]], per_item=1, acting=ids["lead"]) == 0
    added = service.assign(session, annotator_ids=[ids["lead"]], models=["model-a"],
                           languages=["zh"], per_item=2, acting=ids["lead"])
    assert added == 3
    assert session.exec(select(func.count()).select_from(m.Assignment)).scalar_one() == before + 3
    assert {e.model for e in service.queue_for(session, ids["lead"])} == {"model-a"}


# ---------------------------------------------------------------- lead views

def _label_overlap(session, ids):
    """anna and bas both label the nl items: agree on 4, disagree on 2."""
    queue = service.queue_for(session, ids["bas"])
    plan = [("correct", "correct", [], []), ("partial", "partial", ["LG-GR1"], ["LG-GR1"]),
            ("incorrect", "incorrect", ["SE-HA2"], ["SE-HA2"]), ("correct", "correct", [], []),
            ("correct", "incorrect", [], ["SE-HA1"]), ("partial", "partial", ["LG-IS"], [])]
    for entry, (a, b, ca, cb) in zip(queue, plan):
        _save(session, entry.generation_id, ids["anna"], accuracy=a, codes=ca)
        _save(session, entry.generation_id, ids["bas"], accuracy=b, codes=cb)
    return queue


def test_disagreements_adjudication_and_tables(session, ids):
    queue = _label_overlap(session, ids)
    labels = service.finished_labels(session, acting=ids["lead"])
    found = service.find_disagreements(labels, service.gold_labels(session, acting=ids["lead"]))
    kinds = {d.generation_id: d.kinds for d in found}
    assert kinds == {queue[4].generation_id: ("accuracy", "codes"),
                     queue[5].generation_id: ("codes",)}
    with pytest.raises(service.AuthError, match="Not allowed to adjudicate"):
        service.adjudicate(session, generation_id=queue[4].generation_id,
                           adjudicator_id=ids["bas"], accuracy="correct", codes=[])
    service.adjudicate(session, generation_id=queue[4].generation_id,
                       adjudicator_id=ids["lead"], accuracy="incorrect", codes=["SE-HA1"],
                       note="hallucinated")
    session.commit()
    gold = service.gold_labels(session, acting=ids["lead"])
    assert gold[queue[4].generation_id]["accuracy"] == "incorrect"
    # the annotators' own labels stay as they were
    assert service.load_item(session, queue[4].generation_id, ids["anna"]).own.accuracy == (
        "correct")
    left = service.find_disagreements(service.finished_labels(session, acting=ids["lead"]), gold)
    assert [d.generation_id for d in left] == [queue[5].generation_id]

    resolved, unresolved = service.resolve_labels(service.finished_labels(session,
                                                                          acting=ids["lead"]), gold)
    assert unresolved == [queue[5].generation_id]
    table = {row["code"]: row for row in service.error_table(resolved)}
    assert table["SE-HA1"]["nl"] == 1 and table["SE-HA2"]["nl"] == 1
    assert table["SE-HA"]["nl"] == 2 and table["SE"]["nl"] == 2  # parents count once per item
    assert table["LG-GR"]["nl"] == 1 and table["LG"]["total"] == 1
    accuracy = service.accuracy_table(resolved)
    nl = next(r for r in accuracy if r["language"] == "nl")
    assert sum(v for k, v in nl.items() if k != "language") == len(resolved) - sum(
        1 for r in resolved if r.language != "nl")
    csv_text = service.rows_to_csv(accuracy)
    assert csv_text.splitlines()[0].startswith("language,")
    # Table 2 with its uncertainty: the counts above, with Wilson's and Student's t intervals
    quality = {(r["slice"], r["slice_value"]): r for r in service.quality_rows(resolved)}
    cell = next(r for r in accuracy if r["language"] == "nl")
    for model in {r.model for r in resolved if r.language == "nl"}:
        several = len({r.language for r in resolved}) > 1  # else the cells are the models
        row = quality[("language x model", f"nl x {model}") if several else ("model", model)]
        correct, n = cell[f"{model} correct"], sum(cell[f"{model} {label}"]
                                                   for label in ("correct", "partial", "incorrect"))
        assert row["n"] == n and row["share_correct"] == round(correct / n, 3)
        ci = scipy.stats.binomtest(correct, n).proportion_ci(method="wilson")
        assert row["share_correct_low"] == pytest.approx(ci.low, abs=5e-4)
        assert row["mean_score_low"] <= row["mean_score"] <= row["mean_score_high"]
    assert quality[("all", "all")]["n"] == len(resolved)


def test_agreement_uses_metrics_align(session, ids):
    from agreement.statistics import weighted_kappa

    queue = _label_overlap(session, ids)
    reports = service.agreement_by_language(service.finished_labels(session, acting=ids["lead"]),
                                            ["LG-GR1", "SE-HA1", "SE-HA2", "LG-IS"])
    nl = next(r for r in reports if r.language == "nl")
    assert nl.n_items == 6 and nl.raters == ["anna", "bas"] and nl.alpha is None
    anna = ["correct", "partial", "incorrect", "correct", "correct", "partial"]
    bas = ["correct", "partial", "incorrect", "correct", "incorrect", "partial"]
    assert nl.pairs.kappa[0] == pytest.approx(weighted_kappa(anna, bas))
    codes = nl.codes.set_index("code")
    assert codes.loc["SE-HA2", "mean_pair_f1"] == 1.0
    assert codes.loc["SE-HA1", "mean_pair_f1"] == 0.0
    assert len(queue) == 6


def test_queue_state_tracks_saves_like_a_fresh_read(session, ids):
    state = service.QueueState.load(session, ids["anna"], now=0.0)
    assert state.progress() == service.progress_of(state.entries)
    entries = state.entries[:3]
    for entry, (status, accuracy) in zip(entries, [("done", "correct"), ("draft", None),
                                                   ("skipped", None)]):
        saved = _save(session, entry.generation_id, ids["anna"], accuracy=accuracy,
                      status=status)
        state.record(entry.generation_id, saved.status, accuracy)
    fresh = service.queue_for(session, ids["anna"])
    assert state.entries == fresh
    assert state.progress() == service.progress_of(fresh)
    assert state.progress()["*"].done == 1 and state.progress()["*"].remaining == 10
    assert state.is_stale(now=301.0, max_age_s=300) and not state.is_stale(10.0, 300)


def test_team_progress_counts_per_annotator_and_language(session, ids):
    queue = service.queue_for(session, ids["bas"])
    _save(session, queue[0].generation_id, ids["bas"], accuracy="correct", seconds=12.0)
    _save(session, queue[1].generation_id, ids["bas"], accuracy=None, status="flagged")
    rows = {(r["annotator"], r["language"]): r for r in service.team_progress(session,
                                                                              acting=ids["lead"])}
    assert rows[("bas", "nl")] == {**rows[("bas", "nl")], "assigned": 6, "done": 1,
                                   "flagged": 1, "remaining": 4, "median_seconds": 12.0}
    assert rows[("anna", "zh")]["assigned"] == 6 and ("bas", "zh") not in rows


@pytest.mark.postgres
def test_queue_save_stale_and_tables_on_sqlite_and_postgresql(app_any_db):
    with Session(get_engine(app_any_db)) as session:
        people = {a.username: a.id for a in service.list_annotators(session,
                                                                    acting=service.OPERATOR)}
        queue = service.queue_for(session, people["bas"])
        assert len(queue) == 6
        gid = queue[0].generation_id
        first = _save(session, gid, people["bas"], accuracy="partial", codes=["LG-GR1"])
        _save(session, gid, people["anna"], accuracy="incorrect", codes=["SE-HA2"])
        with pytest.raises(service.StaleAnnotationError):
            _save(session, gid, people["bas"], accuracy="correct", expected=0)
        session.rollback()
        assert service.own_label(session, gid, people["bas"]).revision == first.revision
        labels = service.finished_labels(session, acting=people["lead"])
        assert [d.generation_id for d in service.find_disagreements(labels)] == [gid]
        rows = {(r["annotator"], r["language"]): r for r in service.team_progress(session,
                                                                                  acting=people["lead"])}
        assert rows[("bas", "nl")]["done"] == 1
        assert service.assign(session, annotator_ids=[people["lead"]], per_item=3,
                              acting=people["lead"]) > 0
        session.commit()


def test_unassign_open_keeps_started_items(session, ids):
    queue = service.queue_for(session, ids["bas"])
    _save(session, queue[0].generation_id, ids["bas"], accuracy="correct")
    assert service.unassign_open(session, ids["bas"], acting=ids["lead"]) == 5
    session.commit()
    assert [e.generation_id for e in service.queue_for(session, ids["bas"])] == [
        queue[0].generation_id]


def test_update_annotator_languages_password_and_deactivation(session, ids):
    changed = service.update_annotator(session, ids["bas"], languages=["zh"],
                                       password="new-password", acting=ids["lead"])
    session.commit()
    assert changed.languages == ("zh",)
    assert service.queue_for(session, ids["bas"]) == []  # nl items leave the queue ...
    assert session.exec(select(func.count()).select_from(m.Assignment).where(
        m.Assignment.annotator_id == ids["bas"])).scalar_one() == 6  # ... but stay assigned
    assert service.authenticate(session, "bas", "new-password").id == ids["bas"]
    service.update_annotator(session, ids["bas"], active=False, acting=ids["lead"])
    session.commit()
    with pytest.raises(service.AuthError, match="Sign-in failed"):
        service.authenticate(session, "bas", "new-password")
    with pytest.raises(service.AuthError, match="deactivated"):
        service.get_annotator(session, ids["bas"], active_only=True)
    with pytest.raises(service.AnnotateError, match="unknown language"):
        service.update_annotator(session, ids["anna"], languages=["xx"], acting=ids["lead"])
