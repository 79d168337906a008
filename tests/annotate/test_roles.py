"""Least privilege in the service layer: every lead action takes the acting account and refuses
anyone who is not an active lead, whatever the UI shows; the refusal changes nothing."""
from __future__ import annotations

import pytest
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


def _first_item(session, ids) -> int:
    return service.queue_for(session, ids["bas"])[0].generation_id


# one entry per lead action: (name, call(session, ids, acting))
LEAD_ACTIONS = {
    "create_annotator": lambda s, ids, acting: service.create_annotator(
        s, acting=acting, username="mallory", password="long-enough-pw", languages=["nl"],
        role="lead"),
    "update_annotator": lambda s, ids, acting: service.update_annotator(
        s, ids["bas"], acting=acting, role="lead"),
    "list_annotators": lambda s, ids, acting: service.list_annotators(s, acting=acting),
    "assign": lambda s, ids, acting: service.assign(
        s, acting=acting, annotator_ids=[ids["bas"]], languages=["nl"], per_item=3),
    "unassign_open": lambda s, ids, acting: service.unassign_open(s, ids["anna"], acting=acting),
    "team_progress": lambda s, ids, acting: service.team_progress(s, acting=acting),
    "finished_labels": lambda s, ids, acting: service.finished_labels(s, acting=acting),
    "gold_labels": lambda s, ids, acting: service.gold_labels(s, acting=acting),
    "comment_pair": lambda s, ids, acting: service.comment_pair(
        s, _first_item(s, ids), acting=acting),
    "item_for_review": lambda s, ids, acting: service.item_for_review(
        s, _first_item(s, ids), acting=acting),
    "gold_history": lambda s, ids, acting: service.gold_history(
        s, _first_item(s, ids), acting=acting),
    "adjudicate": lambda s, ids, acting: service.adjudicate(
        s, generation_id=_first_item(s, ids), adjudicator_id=acting, accuracy="correct",
        codes=[]),
    "flagged_items": lambda s, ids, acting: service.flagged_items(s, acting=acting),
    "open_flag_count": lambda s, ids, acting: service.open_flag_count(s, acting=acting),
    "answer_flag": lambda s, ids, acting: service.answer_flag(
        s, generation_id=_done_item(s, ids), annotator_id=ids["bas"], text="ok", acting=acting),
    "models_to_assign": lambda s, ids, acting: service.models_to_assign(s, acting=acting),
    "accept_label": lambda s, ids, acting: service.accept_label(
        s, generation_id=_done_item(s, ids), annotator_id=ids["bas"], acting=acting),
    "reject_label": lambda s, ids, acting: service.reject_label(
        s, generation_id=_done_item(s, ids), annotator_id=ids["bas"], reason="look again",
        acting=acting),
    "export_jsonl": lambda s, ids, acting: service.export_jsonl(s, acting=acting),
}


def _done_item(session, ids) -> int:
    """bas's first item, with a finished label (stored once)."""
    gid = _first_item(session, ids)
    if service.own_label(session, gid, ids["bas"]).revision is None:
        service.save_label(session, generation_id=gid, annotator_id=ids["bas"],
                           accuracy="partial", codes=["LG-GR1"], note="", seconds_spent=1.0,
                           status="done", expected_revision=None)
    return gid


def _snapshot(session) -> tuple:
    """Everything a lead action could change."""
    accounts = session.exec(select(m.Annotator.username, m.Annotator.role, m.Annotator.active)
                            .order_by(m.Annotator.username)).all()
    counts = [session.exec(select(func.count()).select_from(t)).scalar_one()
              for t in (m.Assignment, m.GoldLabel)]
    return tuple(map(tuple, accounts)), tuple(counts)


@pytest.mark.parametrize("action", sorted(LEAD_ACTIONS))
def test_an_annotator_is_refused_every_lead_action(session, ids, action):
    before = _snapshot(session)
    with pytest.raises(service.NotAllowedError,
                       match=r"Not allowed to .*: only a lead.* may, and 'bas' is an annotator"):
        LEAD_ACTIONS[action](session, ids, ids["bas"])
    session.rollback()
    assert _snapshot(session) == before


@pytest.mark.parametrize("action", sorted(LEAD_ACTIONS))
def test_a_deactivated_lead_is_refused_every_lead_action(session, ids, action):
    service.update_annotator(session, ids["anna"], acting=service.OPERATOR, role="lead")
    service.update_annotator(session, ids["lead"], acting=service.OPERATOR, active=False)
    session.commit()
    with pytest.raises(service.NotAllowedError, match="'lead' is deactivated"):
        LEAD_ACTIONS[action](session, ids, ids["lead"])


@pytest.mark.parametrize("action", sorted(LEAD_ACTIONS))
def test_an_active_lead_may_do_every_lead_action(session, ids, action):
    LEAD_ACTIONS[action](session, ids, ids["lead"])  # raises nothing


def test_an_expert_may_adjudicate_but_not_manage_accounts(session, ids):
    expert = service.create_annotator(session, acting=ids["lead"], username="erik",
                                      password="long-enough-pw", languages=["nl"], role="expert")
    LEAD_ACTIONS["adjudicate"](session, ids, expert.id)
    with pytest.raises(service.NotAllowedError, match="'erik' is an expert"):
        LEAD_ACTIONS["update_annotator"](session, ids, expert.id)


def test_an_unknown_acting_account_is_refused(session, ids):
    with pytest.raises(service.NotAllowedError, match="account #999999 does not exist"):
        service.team_progress(session, acting=999999)


@pytest.mark.parametrize("acting", [True, False, 1.0, "1", None])
def test_an_acting_id_that_is_not_an_int_is_refused(db_url, acting):
    """Issue 26.4: `acting=True` was account #1 (a bool is an int to Python)."""
    with Session(get_engine(db_url)) as session:
        boss = service.create_annotator(session, acting=service.OPERATOR, username="boss",
                                        password=PASSWORD, languages=["nl"], role="lead")
        assert boss.id == 1 and boss.is_lead  # so True would act as a lead
        with pytest.raises(service.NotAllowedError, match="must be an account id"):
            service.create_annotator(session, acting=acting, username="mallory",
                                     password=PASSWORD, languages=["nl"], role="lead")
        with pytest.raises(service.NotAllowedError, match="must be an account id"):
            service.update_annotator(session, True, acting=boss.id, role="annotator")
        assert [a.username for a in service.all_annotators(session)] == ["boss"]
        assert service.get_annotator(session, boss.id).is_lead


def test_a_role_change_applies_to_the_next_action_at_once(session, ids):
    service.update_annotator(session, ids["anna"], acting=ids["lead"], role="lead")
    assert service.team_progress(session, acting=ids["anna"])
    service.update_annotator(session, ids["anna"], acting=ids["lead"], role="annotator")
    with pytest.raises(service.NotAllowedError):
        service.team_progress(session, acting=ids["anna"])


def test_the_last_active_lead_cannot_demote_or_deactivate_itself(session, ids):
    for change in ({"role": "annotator"}, {"active": False}):
        with pytest.raises(service.AnnotateError, match="'lead' is the only active lead"):
            service.update_annotator(session, ids["lead"], acting=ids["lead"], **change)
    service.update_annotator(session, ids["anna"], acting=ids["lead"], role="lead")
    assert service.update_annotator(session, ids["lead"], acting=ids["lead"],
                                    role="annotator").role == "annotator"


def test_the_policy_table_is_the_whole_policy():
    """Every lead action names a row of service.POLICY (no free-text actions), and every row is
    used: read from the service's source."""
    import re
    from pathlib import Path

    source = "".join(p.read_text(encoding="utf-8")
                     for p in Path(service.__file__).parent.glob("*.py"))
    named = set(re.findall(r'require_role\(session, \w+, "([^"]+)"\)', source))
    calls = len(re.findall(r"require_role\(session,", source))
    assert calls == len(re.findall(r'require_role\(session, \w+, "[a-z_]+"\)', source))
    assert named == set(service.POLICY)


def test_the_pages_reach_the_database_through_the_service_only():
    from pathlib import Path

    views = Path(service.__file__).parents[1] / "views"
    for page in views.glob("*.py"):
        text = page.read_text(encoding="utf-8")
        for forbidden in ("from db import models", "from sqlalchemy", "session.exec(",
                          "session.execute("):
            assert forbidden not in text, f"{page.name}: {forbidden}"
