"""Each page's logic through Streamlit's AppTest (the real script, a simulated browser):
sign-in, labelling with autosave, next/previous/skip/flag, history, stale and deleted items,
and the lead's pages."""
from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import select
from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from annotate import service
from db import get_engine
from db import models as m

PASSWORD = "s3cret-pass"  # the accounts of conftest.app_db

APP = str(Path(__file__).resolve().parents[2] / "annotate" / "app.py")


def _app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=60)


def signed_in(username: str) -> AppTest:
    at = _app().run()
    at.text_input(key="sign_in_user").input(username)
    at.text_input(key="sign_in_password").input(PASSWORD)
    at.button[0].click().run()
    assert not at.exception, at.exception
    return at


def stored(db_url: str, username: str) -> dict[int, dict]:
    with Session(get_engine(db_url)) as session:
        aid = session.exec(select(m.Annotator.id).where(
            m.Annotator.username == username)).scalar_one()
        out = {}
        for entry in service.queue_for(session, aid):
            if entry.status:
                own = service.own_label(session, entry.generation_id, aid)
                out[entry.generation_id] = {"accuracy": own.accuracy, "codes": own.codes,
                                            "status": own.status, "note": own.note,
                                            "history": own.history,
                                            "seconds": own.seconds_spent}
        return out


def shown(markdown: str) -> str:
    """Markdown source as the reader sees it: ui.plain escapes user text with backslashes."""
    return re.sub(r"\\(.)", r"\1", markdown)


def texts(at: AppTest) -> str:
    parts = [e.value for e in at.markdown] + [e.value for e in at.error]
    parts += [e.value for e in at.warning] + [e.value for e in at.info] + [
        e.value for e in at.success] + [e.value for e in at.toast]
    parts += [getattr(e, "proto", None) and e.proto.body or "" for e in at.get("html")]
    return shown("\n".join(str(p) for p in parts))


def current_gid(at: AppTest) -> int:
    return at.session_state["lbl_item"]["gid"]


# ---------------------------------------------------------------- sign-in

def test_sign_in_errors_are_clear(app_db):
    at = _app().run()
    at.text_input(key="sign_in_user").input("nobody")
    at.text_input(key="sign_in_password").input("x")
    at.button[0].click().run()
    unknown_name = at.error[0].value
    at.text_input(key="sign_in_user").input("anna")
    at.text_input(key="sign_in_password").input("wrong")
    at.button[0].click().run()
    # one message for every failure: it never tells whether the name exists
    assert at.error[0].value == unknown_name
    assert shown(unknown_name) == service.SIGN_IN_FAILED


def test_annotator_sees_label_page_and_no_lead_pages(app_db):
    at = signed_in("bas")
    assert "Item 1 of 6" in texts(at)
    assert at.session_state["nlce_user"].username == "bas"
    at.switch_page("views/team.py").run()  # a lead's address: said to be the lead's (issue 42:
    assert [e.value for e in at.error] == ["This page is for the lead only."]  # "Page not found")
    assert not at.dataframe and not at.header  # and nothing of it shown


# ---------------------------------------------------------------- labelling

def test_label_autosaves_every_change(app_db):
    at = signed_in("bas")
    gid = current_gid(at)
    at.checkbox(key="lbl_code_LG-GR1").check().run()
    assert stored(app_db, "bas")[gid] == {**stored(app_db, "bas")[gid], "status": "draft",
                                          "accuracy": None, "codes": ("LG-GR1",)}
    assert at.session_state["lbl_pace"] is None  # nothing done yet: no pace for the time left
    at.button(key="lbl_acc_partial").click().run()
    label = stored(app_db, "bas")[gid]
    assert label["accuracy"] == "partial" and label["status"] == "done"
    assert at.session_state["lbl_pace"] == label["seconds"]  # the first done item's, at once
    at.text_area(key="lbl_note_").input("verb form wrong").run()
    label = stored(app_db, "bas")[gid]
    assert label["note"] == "verb form wrong" and label["codes"] == ("LG-GR1",)
    assert at.session_state["lbl_pace"] == label["seconds"]
    assert label["history"] == 3 and label["seconds"] >= 0
    assert not at.error


def test_next_previous_and_back_with_history(app_db):
    at = signed_in("bas")
    first = current_gid(at)
    at.button(key="lbl_acc_correct").click().run()
    at.checkbox(key="lbl_code_SE-MD").check().run()
    at.button(key="lbl_next").click().run()
    second = current_gid(at)
    assert second != first and "Item 2 of 6" in texts(at)
    assert not any(c.value for c in at.checkbox)  # nothing carried over from item 1
    at.button(key="lbl_prev").click().run()
    assert current_gid(at) == first
    assert at.session_state["lbl_item"]["accuracy"] == "correct"  # shown again from the DB
    assert at.checkbox(key="lbl_code_SE-MD").value
    at.button(key="lbl_acc_incorrect").click().run()
    label = stored(app_db, "bas")[first]
    assert label["accuracy"] == "incorrect" and label["history"] == 3
    assert label["codes"] == ("SE-MD",)


def test_next_and_previous_at_the_ends_of_the_queue_say_so(app_db):
    """N on the last item, P on the first: the page says why nothing moved (issue 42: at the
    last match of a search N did nothing, in silence)."""
    at = signed_in("bas")
    at.button(key="lbl_prev").click().run()
    assert "That is the first item of your queue." in texts(at) and "Item 1 of 6" in texts(at)
    for _ in range(6):
        at.button(key="lbl_next").click().run()
    assert "That is the last item of your queue." in texts(at) and "Item 6 of 6" in texts(at)


def test_save_and_next_needs_accuracy_then_moves_on(app_db):
    at = signed_in("bas")
    first = current_gid(at)
    at.button(key="lbl_save").click().run()
    assert "Choose an accuracy label first" in texts(at)
    assert current_gid(at) == first
    at.button(key="lbl_acc_correct").click().run()
    at.button(key="lbl_save").click().run()
    assert current_gid(at) != first


def test_skip_and_flag(app_db):
    at = signed_in("bas")
    first = current_gid(at)
    at.button(key="lbl_skip").click().run()
    second = current_gid(at)
    assert second != first and stored(app_db, "bas")[first]["status"] == "skipped"
    at.button(key="lbl_acc_partial").click().run()
    at.button(key="lbl_flag").click().run()
    assert stored(app_db, "bas")[second]["status"] == "flagged"
    assert "Flagged for discussion" in texts(at)
    at.button(key="lbl_flag").click().run()
    assert stored(app_db, "bas")[second]["status"] == "done"


def test_stale_item_keeps_the_other_save_and_says_so(app_db, ids):
    at = signed_in("bas")
    gid = current_gid(at)
    at.button(key="lbl_acc_correct").click().run()
    with Session(get_engine(app_db)) as session:  # the same user in another tab
        service.save_label(session, generation_id=gid, annotator_id=ids["bas"],
                           accuracy="incorrect", codes=["SE-HA2"], note="other tab",
                           seconds_spent=1, status="done", expected_revision=1)
        session.commit()
    at.button(key="lbl_acc_partial").click().run()
    assert "changed in another tab" in texts(at)
    label = stored(app_db, "bas")[gid]
    assert label["accuracy"] == "incorrect" and label["note"] == "other tab"
    assert at.session_state["lbl_item"]["accuracy"] == "incorrect"  # reloaded from the DB


def test_item_deleted_meanwhile(app_db):
    at = signed_in("bas")
    gid = current_gid(at)
    with Session(get_engine(app_db)) as session:
        session.delete(session.get(m.Generation, gid))
        session.commit()
    at.button(key="lbl_acc_correct").click().run()
    assert f"Item #{gid} was removed" in texts(at)
    assert current_gid(at) != gid and "Item 1 of 5" in texts(at)


def test_blind_no_other_labels_on_screen(app_db, ids):
    with Session(get_engine(app_db)) as session:
        gid = service.queue_for(session, ids["bas"])[0].generation_id
        service.save_label(session, generation_id=gid, annotator_id=ids["anna"],
                           accuracy="incorrect", codes=["MS-IG"], note="ANNA-SECRET-NOTE",
                           seconds_spent=1, status="done", expected_revision=0)
        session.commit()
    at = signed_in("bas")
    assert current_gid(at) == gid
    assert "ANNA-SECRET-NOTE" not in texts(at)
    assert at.session_state["lbl_item"]["accuracy"] is None
    assert not any(c.value for c in at.checkbox)


# ---------------------------------------------------------------- lead pages

def test_lead_team_page_creates_an_account(app_db):
    at = signed_in("lead")
    at.switch_page("views/team.py").run()
    assert not at.exception, at.exception
    at.text_input[0].input("carla")
    at.text_input[1].input("pw-carla-long")
    at.multiselect[0].select("el")
    at.button[0].click().run()
    assert "Created carla" in shown(at.success[0].value)
    with Session(get_engine(app_db)) as session:
        assert service.authenticate(session, "carla", "pw-carla-long").languages == ("el",)
    at.text_input[0].input("carla")
    at.text_input[1].input("x")
    at.button[0].click().run()
    assert "already exists" in shown(at.error[0].value)
    at.text_input[0].input("dora")
    at.text_input[1].input("too-short")
    at.multiselect[0].select("el")
    at.button[0].click().run()
    assert "a password needs at least 10 characters (this one has 9)" in shown(at.error[0].value)


def test_lead_assign_page(app_db, ids):
    at = signed_in("lead")
    at.switch_page("views/assign.py").run()
    assert not at.exception, at.exception
    assert [p.username for p in at.multiselect[0].value] == ["anna", "bas"]  # not the lead
    at.multiselect[0].set_value([p for p in at.multiselect[0].value if p.username == "anna"])
    at.multiselect[1].set_value(["nl"])
    at.number_input[0].set_value(2)
    at.button[0].click().run()
    assert "Added 0 assignments" in shown(at.success[0].value)  # anna already holds every nl item
    with Session(get_engine(app_db)) as session:
        lead_before = len(service.queue_for(session, ids["lead"]))
    at.multiselect[0].set_value([])
    at.button[0].click().run()
    assert "no annotators to assign to" in shown(at.error[0].value)
    assert lead_before == 0


def test_lead_agreement_adjudication_and_summary(app_db, ids):
    with Session(get_engine(app_db)) as session:
        queue = service.queue_for(session, ids["bas"])
        for i, entry in enumerate(queue):
            for who, acc in (("anna", "correct"), ("bas", "correct" if i else "incorrect")):
                service.save_label(session, generation_id=entry.generation_id,
                                   annotator_id=ids[who], accuracy=acc,
                                   codes=["SE-HA2"] if acc == "incorrect" else [], note="",
                                   seconds_spent=2, status="done", expected_revision=0)
        session.commit()
    at = signed_in("lead")
    at.switch_page("views/agreement.py").run()
    assert not at.exception, at.exception
    overview = at.dataframe[0].value  # the overview table comes first
    assert overview.to_dict("records")[0]["items (2+ labels)"] == 6
    at.switch_page("views/adjudicate.py").run()
    assert not at.exception, at.exception
    assert "1 item with disagreement" in "".join(c.value for c in at.caption)
    at.get("button_group")[1].set_value("incorrect") if len(at.get("button_group")) > 1 else None
    at.button[0].click().run()
    assert "Gold label stored" in texts(at)
    with Session(get_engine(app_db)) as session:
        gold = service.gold_labels(session, acting=service.OPERATOR)
    assert gold[queue[0].generation_id]["accuracy"] == "incorrect"
    at.switch_page("views/summary.py").run()
    assert not at.exception, at.exception
    assert "items counted: 6 " in "".join(c.value for c in at.caption)
    at.switch_page("views/analysis.py").run()
    assert not at.exception, at.exception
    at.button(key="analysis_run").click().run(timeout=120)
    assert not at.exception, at.exception
    shown = [h.value for h in at.subheader] + [e.value for e in at.error]
    assert shown  # align's tables, or its own message when there is nothing to align


def test_oidc_sign_in_maps_the_email_to_an_account(app_db):
    with Session(get_engine(app_db)) as session:
        eva = service.create_annotator(session, username="eva@example.org", password=None,
                                       languages=["nl"], acting=service.OPERATOR)
        service.assign(session, annotator_ids=[eva.id], languages=["nl"], per_item=3,
                       acting=service.OPERATOR)
        session.commit()
    at = _app()
    at.secrets["auth"] = {"redirect_uri": "http://127.0.0.1:8501/oauth2callback",
                          "cookie_secret": "test-only", "client_id": "x", "client_secret": "y",
                          "server_metadata_url": "http://127.0.0.1:9/.well-known/x"}
    at.user = {"is_logged_in": True, "email": "Eva@example.org", "name": "Eva"}
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["nlce_user"].username == "eva@example.org"
    assert "Item 1 of 6" in texts(at)

    stranger = _app()
    stranger.secrets["auth"] = at.secrets["auth"]
    stranger.user = {"is_logged_in": True, "email": "mallory@example.org"}
    stranger.run()
    assert "No active account for 'mallory@example.org'" in shown(stranger.error[0].value)
    assert any(b.label == "Sign in with single sign-on" for b in stranger.button)


def test_unknown_stored_code_is_named_and_kept_in_history(app_db, ids):
    with Session(get_engine(app_db)) as session:
        gid = service.queue_for(session, ids["bas"])[0].generation_id
        service.save_label(session, generation_id=gid, annotator_id=ids["bas"],
                           accuracy="partial", codes=["LG-GR1"], note="", seconds_spent=1,
                           status="done", expected_revision=0)
        # a code of an older taxonomy release, still in the database
        session.add(m.ErrorCode(code="LG-OLD9", level="leaf", parent="LG", taxonomy_version="v0"))
        annotation_id = session.exec(select(m.Annotation.id).where(
            m.Annotation.generation_id == gid)).scalar_one()
        session.add(m.AnnotationCode(annotation_id=annotation_id, code="LG-OLD9"))
        session.commit()
    at = signed_in("bas")
    assert current_gid(at) != gid  # the labelled item is done: the queue starts after it
    at.button(key="lbl_prev").click().run()
    assert current_gid(at) == gid
    assert "LG-OLD9, which taxonomy" in shown(at.warning[0].value)
    at.button(key="lbl_acc_correct").click().run()
    assert not at.error
    label = stored(app_db, "bas")[gid]
    assert label["codes"] == ("LG-GR1",) and label["accuracy"] == "correct"


def test_sign_out_returns_to_the_sign_in_form(app_db):
    at = signed_in("anna")
    at.sidebar.button[0].click().run()
    assert "nlce_user" not in at.session_state
    assert at.text_input(key="sign_in_user").value == ""


def test_deactivated_account_is_signed_out_within_the_recheck_interval(app_db, ids):
    at = signed_in("bas")
    with Session(get_engine(app_db)) as session:
        service.update_annotator(session, ids["bas"], active=False, acting=service.OPERATOR)
        session.commit()
    at.session_state["nlce_user_checked"] = 0.0  # as if the 30 s interval had passed
    at.button(key="lbl_next").click().run()
    assert "nlce_user" not in at.session_state
    assert "deactivated" in shown(at.error[0].value)
