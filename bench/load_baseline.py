"""The label page's database work as it was before the load work of issue 17 (main at 648cf7f),
kept runnable so `bench/annotate_load.py` can measure both in one run: the same queries in the
same order, through the pool with no fair gate and one query per row looked at.

Per save: generation, assignment, annotator, UPDATE, SELECT of the row, DELETE codes, INSERT
codes, INSERT event, COMMIT (9 round trips plus the pool's ping); per next item: generation,
assignment, target, file, annotation, codes, history count, COMMIT (8 plus the ping). Benchmark
code only: the app runs annotate.service."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from sqlalchemy import delete, func, select, update
from sqlmodel import Session

from annotate.service.labelling import ItemView, OwnLabel, Saved, validate_codes
from db import get_engine
from db import models as m
from db.annotations import StaleAnnotationError, check_label
from taxonomy import default_taxonomy


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    with Session(get_engine(url)) as session:  # straight from the pool, no FairGate
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def _check(session: Session, generation_id: int, annotator_id: int) -> m.Generation:
    generation = session.get(m.Generation, generation_id)
    assigned = session.exec(select(m.Assignment.id).where(
        m.Assignment.generation_id == generation_id,
        m.Assignment.annotator_id == annotator_id)).first()
    if generation is None or assigned is None:
        raise LookupError(f"item #{generation_id} is not in the queue")
    return generation


def own_label(session: Session, generation_id: int, annotator_id: int) -> OwnLabel:
    row = session.exec(select(m.Annotation).where(
        m.Annotation.generation_id == generation_id,
        m.Annotation.annotator_id == annotator_id)).scalars().first()
    if row is None:
        return OwnLabel()
    codes = session.exec(select(m.AnnotationCode.code).where(
        m.AnnotationCode.annotation_id == row.id).order_by(m.AnnotationCode.code)).scalars().all()
    history = session.exec(select(func.count()).select_from(m.AnnotationEvent).where(
        m.AnnotationEvent.annotation_id == row.id)).scalar_one()
    return OwnLabel(row.accuracy, tuple(codes), row.note or "", float(row.seconds_spent or 0),
                    row.status, row.revision, int(history))


def load_item(session: Session, generation_id: int, annotator_id: int) -> ItemView:
    generation = _check(session, generation_id, annotator_id)
    target = session.get(m.Target, generation.target_id)
    source = session.get(m.SourceFile, target.source_file_id)
    return ItemView(
        generation_id=generation.id, language=source.natural_language,
        programming_language=source.programming_language or "", path=source.path or "",
        model=generation.model, content=source.content or "", span_start=target.span_start,
        span_end=target.span_end, original_comment=target.original_comment or "",
        predicted_comment=generation.predicted_comment or "",
        raw_output=generation.raw_output or "",
        own=own_label(session, generation_id, annotator_id))


def save_label(session: Session, *, generation_id: int, annotator_id: int, accuracy, codes,
               note: str, seconds_spent: float, status: str, expected_revision) -> Saved:
    _check(session, generation_id, annotator_id)
    label = check_label(accuracy, list(validate_codes(codes)), status=status, note=note,
                        seconds_spent=seconds_spent)
    session.flush()
    session.get(m.Generation, generation_id)
    session.get(m.Annotator, annotator_id)
    values = dict(accuracy=label.accuracy, status=label.status, note=label.note,
                  seconds_spent=label.seconds_spent,
                  taxonomy_version=default_taxonomy().version, updated_at=m.utcnow())
    expected = expected_revision or 0
    changed = session.execute(
        update(m.Annotation).where(m.Annotation.generation_id == generation_id,
                                   m.Annotation.annotator_id == annotator_id,
                                   m.Annotation.revision == expected)
        .values(revision=m.Annotation.revision + 1, **values)
        .execution_options(synchronize_session=False)).rowcount
    row = session.execute(select(m.Annotation).where(
        m.Annotation.generation_id == generation_id, m.Annotation.annotator_id == annotator_id)
        .execution_options(populate_existing=True)).scalars().first()
    if changed != 1:
        if row is not None:
            raise StaleAnnotationError(generation_id, annotator_id, expected, row.revision)
        row = m.Annotation(generation_id=generation_id, annotator_id=annotator_id, revision=1,
                           created_at=values["updated_at"], **values)
        with session.begin_nested():
            session.add(row)
    session.execute(delete(m.AnnotationCode).where(m.AnnotationCode.annotation_id == row.id)
                    .execution_options(synchronize_session=False))
    session.add_all(m.AnnotationCode(annotation_id=row.id, code=code) for code in label.codes)
    session.add(m.AnnotationEvent(annotation_id=row.id, annotator_id=annotator_id,
                                  revision=row.revision, accuracy=label.accuracy,
                                  status=label.status, codes=list(label.codes), note=label.note,
                                  seconds_spent=label.seconds_spent,
                                  created_at=values["updated_at"]))
    session.flush()
    return Saved(int(row.revision), row.status)
