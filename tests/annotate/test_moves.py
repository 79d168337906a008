"""Nothing lost in the documented move (`python -m db export` -> `python -m db import`): a note
is held to the import's limit where it is typed, in the real browser; the lead's flag answers
and the gold label history move with the labels; a parquet export carries pairs targets."""
from __future__ import annotations

import json

import pytest
from browser_kit import first_label, signed_in_page, wait_for
from sqlalchemy import select
from sqlmodel import Session

from annotate import service
from db import get_engine, session_scope
from db import models as m
from db.__main__ import main as db_main
from db.importer import import_pairs


def _move(url, tmp_path, fmt="jsonl"):
    """Export `url` and import it into a fresh database (as the README says); its URL."""
    out = tmp_path / f"export-{fmt}"
    assert db_main(["export", "--format", fmt, "--out", str(out), "--db", url]) == 0
    copy = f"sqlite:///{tmp_path / f'copy-{fmt}.db'}"
    source = out / "export.jsonl" if fmt == "jsonl" else out
    assert db_main(["import", "--format", fmt, "--accounts", "--account-privileges", str(source),
                    "--db", copy]) == 0
    return copy


def _team_history(url):
    """Flag answers and gold label history, by natural keys."""
    with Session(get_engine(url)) as session:
        replies = sorted(session.execute(
            select(m.Annotator.username, m.FlagReply.text)
            .join(m.Annotation, m.Annotation.id == m.FlagReply.annotation_id)
            .join(m.Annotator, m.Annotator.id == m.Annotation.annotator_id)).all())
        gold = [(e.accuracy, tuple(e.codes), e.note) for e in session.execute(
            select(m.GoldLabelEvent).order_by(m.GoldLabelEvent.id)).scalars()]
    return replies, gold


def _lead_work(url, ids):
    with Session(get_engine(url)) as session:
        gid = service.queue_for(session, ids["bas"])[0].generation_id
        for who in ("anna", "bas"):
            service.save_label(session, generation_id=gid, annotator_id=ids[who],
                               accuracy="partial", codes=["LG-GR1"], note=f"unsure, {who}",
                               seconds_spent=3.0, status="flagged", expected_revision=None)
        service.answer_flag(session, generation_id=gid, annotator_id=ids["bas"],
                            text="Plural: count it as LG-GR1", acting=ids["lead"])
        for accuracy, codes, note in (("partial", ["LG-GR1"], "first"),
                                      ("incorrect", ["LG-GR1", "SE-MD"], "second")):
            service.adjudicate(session, generation_id=gid, adjudicator_id=ids["lead"],
                               accuracy=accuracy, codes=codes, note=note)
        session.commit()


def test_flag_answers_and_gold_history_move_in_jsonl_and_parquet(app_db, ids, tmp_path):
    _lead_work(app_db, ids)
    before = _team_history(app_db)
    assert before[0] == [("bas", "Plural: count it as LG-GR1")] and len(before[1]) == 2
    for fmt in ("jsonl", "parquet"):
        copy = _move(app_db, tmp_path, fmt)
        assert _team_history(copy) == before, fmt
        twice = _move(copy, tmp_path / "again", fmt)  # a second move adds nothing
        assert _team_history(twice) == before, fmt


def test_a_parquet_move_keeps_pairs_items(app_db, tmp_path):
    rows = [{"item_id": "p-1", "language": "nl", "model": "sys-a", "reference": "Tel op.",
             "prediction": "Som.", "context": "def optellen(a, b): ..."}]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with session_scope(app_db) as session:
        import_pairs(session, [path], dataset="mine")
    copy = _move(app_db, tmp_path, "parquet")
    with Session(get_engine(copy)) as session:
        pairs = session.execute(select(m.Target.external_id, m.Target.natural_language,
                                       m.Target.context).where(
            m.Target.source_file_id.is_(None))).all()
        files = session.execute(select(m.Target.id).where(
            m.Target.source_file_id.is_not(None))).all()
    assert pairs == [("p-1", "nl", "def optellen(a, b): ...")] and len(files) == 6


def test_one_note_limit_where_the_text_enters(app_db, ids):
    too_long = "x" * (service.max_note_chars() + 1)
    with Session(get_engine(app_db)) as session:
        gid = service.queue_for(session, ids["bas"])[0].generation_id
        with pytest.raises(service.LabelError, match="the note: 10001 characters, over the "
                                                     "limit of 10000"):
            service.save_label(session, generation_id=gid, annotator_id=ids["bas"],
                               accuracy=None, codes=[], note=too_long, seconds_spent=1.0,
                               status="draft", expected_revision=None)
        with pytest.raises(service.LabelError, match="the note: 10001 characters"):
            service.adjudicate(session, generation_id=gid, adjudicator_id=ids["lead"],
                               accuracy="correct", codes=[], note=too_long)


def _pasted(page, text):
    """Paste `text` as the note and leave the field (which sends it)."""
    page.keyboard.press("m")
    page.locator(".st-key-lbl_note_ textarea").fill(text)
    page.keyboard.press("Escape")


@pytest.mark.browser
def test_a_note_pasted_in_the_browser_moves_whole(app_db, launch_app, chromium, tmp_path):
    import time

    page = signed_in_page(chromium, launch_app(app_db).url)
    limit = service.max_note_chars()
    _pasted(page, "x" * (limit + 2_000))  # over the limit: the field does not take it
    time.sleep(3)
    assert len(first_label(app_db, "bas").note) <= limit
    note = ("long note " * limit)[:limit]  # at the limit: stored, and moved whole
    _pasted(page, note)
    wait_for(lambda: first_label(app_db, "bas").note == note, what="the note stored")
    copy = _move(app_db, tmp_path)
    with Session(get_engine(copy)) as session:
        assert session.execute(select(m.Annotation.note)).scalars().all() == [note]
