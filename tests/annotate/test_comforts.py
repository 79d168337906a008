"""Annotator comforts in the labelling view, through AppTest: undo and restoring an earlier
version, the filter that reaches skipped and flagged items, the time line."""
from __future__ import annotations

import re

from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from annotate import service
from db import get_engine
from testing.apptest import signed_in

PASSWORD = "s3cret-pass"  # the accounts of conftest.app_db


def _signed_in(username: str) -> AppTest:
    return signed_in(username, PASSWORD)


def _first_own(db_url, annotator_id):
    with Session(get_engine(db_url)) as session:
        gid = service.queue_for(session, annotator_id)[0].generation_id
        return service.own_label(session, gid, annotator_id)


def test_undo_and_restore_an_earlier_version(app_db, ids):
    at = _signed_in("bas")
    at.button(key="lbl_acc_correct").click().run()
    at.button(key="lbl_acc_incorrect").click().run()
    assert _first_own(app_db, ids["bas"]).accuracy == "incorrect"
    at.button(key="lbl_undo").click().run()
    own = _first_own(app_db, ids["bas"])
    assert (own.accuracy, own.history) == ("correct", 3)  # undone by a new version
    assert at.button(key="lbl_acc_correct").proto.type == "primary"
    at.selectbox(key="lbl_restore_pick").set_value(2).run()
    at.button(key="lbl_restore").click().run()
    own = _first_own(app_db, ids["bas"])
    assert (own.accuracy, own.history) == ("incorrect", 4)
    assert any("2" in toast.value for toast in at.toast)


def test_the_filter_reaches_skipped_and_flagged_items(app_db, ids):
    at = _signed_in("bas")
    html = lambda: " ".join(e.proto.body for e in at.get("html"))  # noqa: E731
    assert "Item 1 of 6" in html()
    at.button(key="lbl_skip").click().run()  # item 1 skipped, on to item 2
    at.button(key="lbl_flag").click().run()  # item 2 flagged
    at.button(key="lbl_next").click().run()
    assert "Item 3 of 6" in html()
    at.selectbox(key="lbl_filter_en").set_value("skipped").run()
    assert "Item 1 of 6" in html() and "skipped" in html()
    at.button(key="lbl_next").click().run()  # no other skipped item: stays
    assert "Item 1 of 6" in html()
    at.selectbox(key="lbl_filter_en").set_value("flagged").run()
    assert "Item 2 of 6" in html()
    at.selectbox(key="lbl_filter_en").set_value("done").run()  # nothing done yet: says so
    assert any("done" in toast.value for toast in at.toast)
    assert "on this item" in html() and "left at your median pace" in html()


def test_the_guidelines_page_shows_every_code_with_its_criteria_in_the_interface_language(
        app_db, ids):
    from annotate import i18n
    from taxonomy import default_taxonomy

    with Session(get_engine(app_db)) as session:
        service.set_interface_language(session, ids["bas"], "pl")
        session.commit()
    at = _signed_in("bas")
    at.switch_page("views/guidelines.py").run()
    assert not at.exception, at.exception
    shown = " ".join(m.value for m in at.markdown).replace("\\", "")
    taxonomy = default_taxonomy()
    for code in taxonomy.labelable():
        assert f"{code.id} · {code.text('name', 'pl')}" in shown
    assert i18n.text("label.include_if", "pl") in shown
    assert taxonomy.code("LG-GR1").text("inclusion", "pl")[0] in shown


def test_more_code_around_the_comment_on_demand(app_db):
    at = _signed_in("bas")
    code = lambda: next(e.proto.body for e in at.get("html")  # noqa: E731
                        if "nlce-code" in e.proto.body)
    lines = code().count('class="nlce-ln"')
    at.toggle(key="lbl_more_context").set_value(True).run()
    assert code().count('class="nlce-ln"') >= lines
    assert not at.exception


def test_the_lead_answers_a_flag_and_the_annotator_sees_the_answer(app_db, ids):
    import pytest

    at = _signed_in("bas")
    at.text_area(key="lbl_note_").input("Is a URL in a comment MS-ME2?").run()
    at.button(key="lbl_flag").click().run()
    with Session(get_engine(app_db)) as session:
        gid = service.queue_for(session, ids["bas"])[0].generation_id
        with pytest.raises(service.NotAllowedError):
            service.answer_flag(session, generation_id=gid, annotator_id=ids["bas"],
                                text="yes", acting=ids["anna"])
        with pytest.raises(service.LabelError, match="empty"):
            service.answer_flag(session, generation_id=gid, annotator_id=ids["bas"],
                                text="  ", acting=ids["lead"])
    lead = _signed_in("lead")
    lead.switch_page("views/team.py").run()
    assert not lead.exception, lead.exception
    assert "Is a URL in a comment MS-ME2?" in [e.value for e in lead.text]
    lead.text_area[0].input("Only when the URL is made up: see ![x](http://h/x) MS-ME2.")
    next(b for b in lead.button if b.label == "Send answer").click().run()
    assert not lead.exception, lead.exception
    with Session(get_engine(app_db)) as session:
        flagged = service.flagged_items(session, acting=ids["lead"])
    assert [(f["generation_id"], f["annotator"], f["reply"][:9]) for f in flagged] == [
        (gid, "bas", "Only when")]
    again = _signed_in("bas")  # a new visit of the item shows the answer, as typed
    again.selectbox(key="lbl_filter_en").set_value("flagged").run()
    shown = [e.value for e in again.text]
    assert "Only when the URL is made up: see ![x](http://h/x) MS-ME2." in shown


def test_a_very_long_search_is_cut_with_a_message_not_an_error(app_db, ids):
    """60,000 characters in the search box (a paste gone wrong): SQLite refuses a LIKE pattern
    of 50 KB ("LIKE or GLOB pattern too complex") and the page showed Streamlit's error; the
    search now looks for the first MAX_SEARCH_CHARS characters and says so."""
    from annotate import i18n

    with Session(get_engine(app_db)) as session:
        assert service.search_queue(session, ids["bas"], "Controleert " * 5000) == set()
    at = _signed_in("bas")
    at.text_input(key="lbl_search").input("x" * 60_000).run()
    assert not at.exception, at.exception
    said = i18n.text("search.cut", "en", limit=service.MAX_SEARCH_CHARS)
    assert said in [re.sub(r"\\(.)", r"\1", t.value) for t in at.toast]  # (ui.plain's escapes)
    assert at.session_state["lbl_found"] == set()


def test_a_search_that_finds_nothing_says_so_in_words(app_db, ids):
    """A search with no hit said "No item of your queue is all items." (the state filter's
    name put where a state belongs); it says that nothing matches the search and filter."""
    from annotate import i18n

    at = _signed_in("bas")
    at.text_input(key="lbl_search").input("zzz-nothing-has-this").run()
    assert not at.exception, at.exception
    toasts = [re.sub(r"\\(.)", r"\1", t.value) for t in at.toast]
    assert i18n.text("label.no_items_match", "en") in toasts
    assert not any("all items" in toast for toast in toasts)
