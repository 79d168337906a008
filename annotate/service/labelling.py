"""One item as its annotator sees it (blind: only the caller's own label), and saving that
label through `db.annotations` (history and the optimistic-concurrency check)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from sqlalchemy import and_, func, select
from sqlmodel import Session

from annotate.service.errors import ItemGoneError, LabelError, NotAssignedError
from db import models as m
from db.annotations import (
    AnnotationError,
    CheckedLabel,
    StaleAnnotationError,
    check_label,
    save_annotation,
)

MAX_SECONDS_PER_VISIT = 30 * 60  # a tab left open over lunch is not labelling time


@dataclass(frozen=True)
class OwnLabel:
    accuracy: str | None = None
    codes: tuple[str, ...] = ()
    note: str = ""
    seconds_spent: float = 0.0
    status: str | None = None
    revision: int | None = None  # None: nothing stored yet
    history: int = 0  # how many saves the history holds


@dataclass(frozen=True)
class ItemView:
    generation_id: int
    language: str
    programming_language: str
    path: str
    model: str
    content: str
    span_start: int
    span_end: int
    original_comment: str
    predicted_comment: str
    raw_output: str
    own: OwnLabel = field(default_factory=OwnLabel)
    is_pairs: bool = False  # a pairs item: no source file; `context` (if any) is shown instead
    context: str = ""
    model_wrote_nothing: bool = False  # `Generation.is_empty`: shown as such, not as a diff


def _require_generation(session: Session, generation_id: int) -> m.Generation:
    generation = session.get(m.Generation, generation_id)
    if generation is None:
        raise ItemGoneError(f"Item #{generation_id} was removed from the database; "
                            f"your queue has been refreshed.")
    return generation


def _require_assignment(session: Session, generation_id: int, annotator_id: int) -> None:
    found = session.exec(select(m.Assignment.id).where(
        m.Assignment.generation_id == generation_id,
        m.Assignment.annotator_id == annotator_id)).first()
    if found is None:
        raise NotAssignedError(f"Item #{generation_id} is not (or no longer) in your queue.")


def own_label(session: Session, generation_id: int, annotator_id: int) -> OwnLabel:
    # One query: the row, its codes (aggregated) and how many saves its history holds.
    codes = (select(func.aggregate_strings(m.AnnotationCode.code, " "))
             .where(m.AnnotationCode.annotation_id == m.Annotation.id).scalar_subquery())
    history = (select(func.count()).select_from(m.AnnotationEvent)
               .where(m.AnnotationEvent.annotation_id == m.Annotation.id).scalar_subquery())
    row = session.execute(select(
        m.Annotation.accuracy, m.Annotation.note, m.Annotation.seconds_spent,
        m.Annotation.status, m.Annotation.revision, codes, history).where(
        m.Annotation.generation_id == generation_id,
        m.Annotation.annotator_id == annotator_id)).first()
    if row is None:
        return OwnLabel()
    accuracy, note, seconds, status, revision, joined, saves = row
    return OwnLabel(accuracy, tuple(sorted((joined or "").split())), note or "",
                    float(seconds or 0), status, revision, int(saves))


def _check_assigned(session: Session, generation_id: int, annotator_id: int) -> None:
    """ItemGoneError or NotAssignedError, in one query (the label page's hot path)."""
    found = session.execute(
        select(m.Generation.id, m.Assignment.id).select_from(m.Generation)
        .outerjoin(m.Assignment, and_(m.Assignment.generation_id == m.Generation.id,
                                      m.Assignment.annotator_id == annotator_id))
        .where(m.Generation.id == generation_id).limit(1)).first()
    if found is None:
        _require_generation(session, generation_id)  # raises ItemGoneError
    if found is None or found[1] is None:
        _require_assignment(session, generation_id, annotator_id)  # raises NotAssignedError


def load_item(session: Session, generation_id: int, annotator_id: int) -> ItemView:
    """Everything the item view shows, with the caller's own label only (blind by design).
    The item, its target and file (none for a pairs target) and the assignment check are one
    query."""
    row = session.execute(
        select(m.Generation.id, m.Generation.model, m.Generation.predicted_comment,
               m.Generation.raw_output, m.Target.span_start, m.Target.span_end,
               m.Target.original_comment, m.Target.source_file_id, m.Target.external_id,
               m.Target.context, m.Target.natural_language.label("item_language"),
               m.SourceFile.natural_language, m.SourceFile.programming_language,
               m.SourceFile.path, m.SourceFile.content,
               m.Assignment.id.label("assignment_id"))
        .select_from(m.Generation)
        .join(m.Target, m.Target.id == m.Generation.target_id)
        .outerjoin(m.SourceFile, m.SourceFile.id == m.Target.source_file_id)
        .outerjoin(m.Assignment, and_(m.Assignment.generation_id == m.Generation.id,
                                      m.Assignment.annotator_id == annotator_id))
        .where(m.Generation.id == generation_id).limit(1)).first()
    if row is None or row.assignment_id is None:
        _check_assigned(session, generation_id, annotator_id)
    is_pairs = row.source_file_id is None
    place = (dict(language=row.item_language or "", programming_language="",
                  path=row.external_id or "", content="", span_start=0, span_end=0)
             if is_pairs else
             dict(language=row.natural_language, programming_language=row.programming_language or "",
                  path=row.path or "", content=row.content or "", span_start=row.span_start,
                  span_end=row.span_end))
    predicted, raw = row.predicted_comment or "", row.raw_output or ""
    return ItemView(
        generation_id=row.id, model=row.model, original_comment=row.original_comment or "",
        predicted_comment=predicted, raw_output=raw,
        own=own_label(session, generation_id, annotator_id),
        is_pairs=is_pairs, context=(row.context or "") if is_pairs else "",
        model_wrote_nothing=not predicted.strip() and not raw.strip(), **place)


def own_history(session: Session, generation_id: int, annotator_id: int) -> list[dict]:
    """The caller's own earlier versions of a label, newest first."""
    rows = session.exec(
        select(m.AnnotationEvent).join(m.Annotation,
                                       m.Annotation.id == m.AnnotationEvent.annotation_id)
        .where(m.Annotation.generation_id == generation_id,
               m.Annotation.annotator_id == annotator_id)
        .order_by(m.AnnotationEvent.revision.desc())).scalars().all()
    return [{"revision": r.revision, "accuracy": r.accuracy, "status": r.status,
             "codes": " ".join(r.codes or ()), "note": r.note, "saved": r.created_at}
            for r in rows]


# ------------------------------------------------------------------------------ saving

def validate_label(accuracy, codes: Iterable[str], *, status: str = "done", note: str = "",
                   seconds_spent: float = 0.0) -> CheckedLabel:
    """The label checked by `db.annotations.check_label`, the one check every writer of labels
    goes through; a refusal is a LabelError "Not saved: ..." for the page to show."""
    try:
        return check_label(accuracy, list(codes), status=status, note=note,
                           seconds_spent=seconds_spent)
    except AnnotationError as error:
        raise LabelError(f"Not saved: {error}") from error


def validate_codes(codes: Iterable[str]) -> tuple[str, ...]:
    """Codes in canonical spelling, only labelable ones; anything else raises LabelError."""
    return tuple(sorted(validate_label(None, codes, status="draft").codes))


def visit_seconds(base: float, shown_at: float, now: float) -> float:
    """Time spent on an item: what earlier visits stored plus this visit (capped)."""
    return round(float(base) + min(max(0.0, now - shown_at), MAX_SECONDS_PER_VISIT), 1)


@dataclass(frozen=True)
class Saved:
    revision: int
    status: str


def save_label(session: Session, *, generation_id: int, annotator_id: int,
               accuracy: str | None, codes: Iterable[str], note: str, seconds_spent: float,
               status: str, expected_revision: int | None) -> Saved:
    """Store the annotator's label now (one new history entry).

    Raises ItemGoneError (generation deleted), NotAssignedError, LabelError (unknown code or
    label) or db.annotations.StaleAnnotationError (someone saved since `expected_revision`)."""
    _check_assigned(session, generation_id, annotator_id)
    label = validate_label(accuracy, codes, status=status, note=note, seconds_spent=seconds_spent)
    try:
        row = save_annotation(session, generation_id=generation_id, annotator_id=annotator_id,
                              accuracy=label.accuracy, codes=sorted(label.codes), note=label.note,
                              seconds_spent=label.seconds_spent, status=label.status,
                              expected_revision=expected_revision or 0, checked=True)
    except AnnotationError as error:
        if isinstance(error, StaleAnnotationError):
            raise
        raise LabelError(f"Not saved: {error}") from error
    return Saved(int(row.revision), row.status)


def status_after_change(current: str | None, accuracy: str | None) -> str:
    """The status an autosave keeps: skipped/flagged stay; else done once there is an accuracy
    label, draft before."""
    if current in ("skipped", "flagged"):
        return current
    return "done" if accuracy else "draft"


def is_stale_error(error: BaseException) -> bool:
    return isinstance(error, StaleAnnotationError)
