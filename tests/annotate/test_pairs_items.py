"""Pairs items (targets without a source file) reach annotators: they are assigned, queued,
shown with their own context, labelled and counted, on SQLite and PostgreSQL; an empty
generation is flagged as "the model wrote nothing"."""
from __future__ import annotations

import json

from sqlalchemy import select
from sqlmodel import Session

from annotate import service
from db import get_engine, session_scope
from db import models as m
from db.importer import import_pairs

ROWS = [
    {"item_id": "p-1", "language": "nl", "model": "sys-a", "reference": "Tel twee getallen op.",
     "prediction": "Som van twee getallen.", "context": "def optellen(a, b): ..."},
    {"item_id": "p-1", "language": "nl", "model": "sys-b", "reference": "Tel twee getallen op.",
     "prediction": "", "context": "def optellen(a, b): ..."},  # the model wrote nothing
    {"item_id": "p-2", "language": "nl", "model": "sys-a", "reference": "Geef de lijst terug.",
     "prediction": "Lijst."},  # no context
]


def _import_pairs(url, tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    with session_scope(url) as session:
        import_pairs(session, [path], dataset="mine")


def test_pairs_items_are_assigned_labelled_and_counted(app_any_db, tmp_path):
    _import_pairs(app_any_db, tmp_path)
    with Session(get_engine(app_any_db)) as session:
        people = {a.username: a.id for a in service.list_annotators(
            session, acting=service.OPERATOR)}
        pairs_gids = set(session.execute(
            select(m.Generation.id).join(m.Target, m.Target.id == m.Generation.target_id)
            .where(m.Target.source_file_id.is_(None))).scalars())
        assert len(pairs_gids) == 3
        added = service.assign(session, annotator_ids=[people["bas"]], models=["sys-a", "sys-b"],
                               per_item=1, acting=people["lead"])
        assert added == 3
        queue = service.queue_for(session, people["bas"])
        assert pairs_gids <= {e.generation_id for e in queue}
        assert {e.language for e in queue if e.generation_id in pairs_gids} == {"nl"}

        views = {v.model + "/" + v.path: v for v in (
            service.load_item(session, gid, people["bas"]) for gid in sorted(pairs_gids))}
        written, empty, bare = views["sys-a/p-1"], views["sys-b/p-1"], views["sys-a/p-2"]
        assert written.is_pairs and written.context == "def optellen(a, b): ..."
        assert written.language == "nl" and written.original_comment == "Tel twee getallen op."
        assert not written.model_wrote_nothing and empty.model_wrote_nothing
        assert bare.context == "" and bare.content == ""

        service.save_label(session, generation_id=empty.generation_id,
                           annotator_id=people["bas"], accuracy="incorrect", codes=[],
                           note="", seconds_spent=3.0, status="done", expected_revision=None)
        session.commit()
        labels = service.finished_labels(session, acting=people["lead"], language="nl")
        assert empty.generation_id in {label.generation_id for label in labels}
        rows = {(r["annotator"], r["language"]): r
                for r in service.team_progress(session, acting=people["lead"])}
        assert rows[("bas", "nl")]["assigned"] == 6 + 3 and rows[("bas", "nl")]["done"] == 1


def test_a_file_item_is_not_a_pairs_item(app_db):
    with Session(get_engine(app_db)) as session:
        people = {a.username: a.id for a in service.list_annotators(
            session, acting=service.OPERATOR)}
        entry = service.queue_for(session, people["bas"])[0]
        view = service.load_item(session, entry.generation_id, people["bas"])
        assert not view.is_pairs and view.context == "" and view.content


def test_the_labelling_page_shows_context_and_an_empty_output(app_db, tmp_path):
    from test_app import current_gid, signed_in, texts

    _import_pairs(app_db, tmp_path)
    with Session(get_engine(app_db)) as session:
        cleo = service.create_annotator(session, username="cleo", password="s3cret-pass",
                                        languages=["nl"], acting=service.OPERATOR)
        service.assign(session, annotator_ids=[cleo.id], models=["sys-a", "sys-b"],
                       per_item=1, acting=service.OPERATOR)
        session.commit()
        views = {gid: service.load_item(session, gid, cleo.id)
                 for gid in (e.generation_id for e in service.queue_for(session, cleo.id))}
    at = signed_in("cleo")
    seen = {}
    for _ in views:
        assert not at.exception, at.exception
        seen[current_gid(at)] = texts(at)
        at.button(key="lbl_next").click().run()
    assert set(seen) == set(views)
    for gid, page in seen.items():
        view = views[gid]
        assert ("def optellen(a, b): ..." in page) == bool(view.context)
        assert ("The model wrote nothing." in page) == view.model_wrote_nothing
        assert "Original comment" in page and "nlce-code" not in page.split("<style>")[0]
        if view.model_wrote_nothing:  # the original in full, no diff against nothing
            assert f"<pre>{view.original_comment}</pre>" in page and "nlce-diff\"" not in page
