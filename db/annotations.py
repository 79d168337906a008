"""The one home for writing human labels: the importer, the labelling app and the adjudication
page all go through these functions, so every save is validated the same way, bumps the
annotation's `revision` and appends one `AnnotationEvent` holding the full label.

Concurrency: a save is an optimistic compare-and-set. `expected_revision` is the revision the
caller last saw (0 or None for "none yet"); if someone else saved in between, the save raises
`StaleAnnotationError` and changes nothing. Without `expected_revision` the last writer wins,
but revisions and history stay exact. Writes start with an UPDATE (which takes the row lock on
PostgreSQL and the write lock on SQLite) and fall back to an INSERT inside a savepoint; losing
an insert race (IntegrityError on the unique (generation, annotator) key) turns into an update.

These functions never commit: the caller's transaction (e.g. `session_scope`) decides.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from db.formats.errors import FormatError
from db.formats.text import TextLimits
from db.models import (
    ANNOTATION_STATUSES,
    ANNOTATOR_ROLES,
    Annotation,
    AnnotationCode,
    AnnotationEvent,
    Annotator,
    Generation,
    GoldLabel,
    GoldLabelCode,
    GoldLabelEvent,
    utcnow,
)
from nlce.cli import InputError
from taxonomy import AccuracyLabel, TaxonomyError, default_taxonomy

ADJUDICATOR_ROLES = ("lead", "expert")
_MAX_RACE_RETRIES = 5


class AnnotationError(InputError):
    """A label that cannot be stored; the message says what and where."""


class StaleAnnotationError(AnnotationError):
    """Someone saved this annotation since the revision the caller last saw."""

    def __init__(self, generation_id: int, annotator_id: int, expected: int, actual: int):
        self.generation_id, self.annotator_id = generation_id, annotator_id
        self.expected, self.actual = expected, actual
        super().__init__(
            f"annotation of generation {generation_id} by annotator {annotator_id} changed "
            f"since you loaded it (you had revision {expected}, it is now at {actual}); "
            f"reload it and save again")


@dataclass(frozen=True)
class CheckedLabel:
    """A label after validation: canonical accuracy value and code ids."""
    accuracy: str | None
    codes: tuple[str, ...]
    status: str
    note: str
    seconds_spent: float


def max_note_chars() -> int:
    """The most characters a note may hold: the import's text limit (`db.formats.text`), so
    whatever the app stores an export -> import moves whole."""
    return TextLimits.from_env().text


def check_label(accuracy, codes: Iterable[str] | None, *, status: str = "done", note: str = "",
                seconds_spent: float = 0.0, note_limit: int | None = None) -> CheckedLabel:
    """Validate a label (pure): the one check every writer of labels (the app, adjudication,
    every import) goes through. `accuracy` may be None only when status is not 'done'; the
    note holds at most `note_limit` characters (an import's --max-text-chars; by default
    `max_note_chars()`) and nothing a database cannot store."""
    if status not in ANNOTATION_STATUSES:
        raise AnnotationError(f"unknown annotation status {status!r}; expected one of "
                              f"{', '.join(ANNOTATION_STATUSES)}")
    if accuracy is None or accuracy == "":
        if status == "done":
            raise AnnotationError("a 'done' annotation needs an accuracy label "
                                  "(incorrect, partial or correct)")
        value = None
    else:
        try:
            value = AccuracyLabel.parse(accuracy).value
        except TaxonomyError as error:
            raise AnnotationError(str(error)) from error
    try:
        checked = default_taxonomy().validate_codes(list(codes or ()))
    except TaxonomyError as error:
        raise AnnotationError(str(error)) from error
    try:
        seconds = float(seconds_spent or 0.0)
    except (TypeError, ValueError):
        raise AnnotationError(f"seconds_spent must be a number, got {seconds_spent!r}") from None
    if seconds < 0:
        raise AnnotationError(f"seconds_spent must be >= 0, got {seconds}")
    note = note or ""
    try:
        TextLimits(text=note_limit or max_note_chars()).check(note, "note")
    except FormatError as error:
        raise AnnotationError(f"the note: {error.message}") from None
    return CheckedLabel(value, checked, status, note, seconds)


# ------------------------------------------------------------------------------ annotators

def get_or_create_annotator(session: Session, username: str, *, role: str = "annotator",
                            languages: Sequence[str] = (), display_name: str = "",
                            password_hash: str | None = None) -> Annotator:
    """The annotator with this username, created (with these attributes) if missing.

    An existing annotator is returned unchanged. Safe against a concurrent creation.
    """
    username = (username or "").strip()
    if not username:
        raise AnnotationError("an annotator needs a non-empty username")
    if role not in ANNOTATOR_ROLES:
        raise AnnotationError(f"unknown annotator role {role!r}; expected one of "
                              f"{', '.join(ANNOTATOR_ROLES)}")
    for _ in range(_MAX_RACE_RETRIES):
        # A write first, even when it changes nothing: it opens the write transaction (pysqlite
        # opens none for SELECT or SAVEPOINT, and a SAVEPOINT outside one would commit on release)
        # and locks an existing row on PostgreSQL.
        touched = session.execute(update(Annotator).where(Annotator.username == username)
                                  .values(username=username)
                                  .execution_options(synchronize_session=False)).rowcount
        if touched:
            return session.execute(select(Annotator).where(Annotator.username == username)
                                   ).scalars().one()
        annotator = Annotator(username=username, role=role, languages=list(languages),
                              display_name=display_name or username, password_hash=password_hash)
        try:
            with session.begin_nested():
                session.add(annotator)
            return annotator
        except IntegrityError:
            continue  # created by someone else meanwhile: read it
    raise AnnotationError(f"could not create annotator {username!r}")


# ------------------------------------------------------------------------------ annotations

def _require(session: Session, model, key: int, what: str):
    row = session.get(model, key)
    if row is None:
        raise AnnotationError(f"{what} {key} does not exist")
    return row


def _find_annotation(session: Session, generation_id: int, annotator_id: int
                     ) -> Annotation | None:
    statement = (select(Annotation)
                 .where(Annotation.generation_id == generation_id,
                        Annotation.annotator_id == annotator_id)
                 .execution_options(populate_existing=True))
    return session.execute(statement).scalars().first()


def save_annotation(session: Session, *, generation_id: int, annotator_id: int, accuracy,
                    codes: Iterable[str] | None, note: str = "", seconds_spent: float = 0.0,
                    status: str = "done", expected_revision: int | None = None,
                    checked: bool = False, note_limit: int | None = None) -> Annotation:
    """Insert or update the (generation, annotator) label; returns the stored Annotation.

    Validates accuracy (any spelling AccuracyLabel.parse accepts) and codes (taxonomy leaves and
    meta codes), replaces the annotation's codes, bumps `revision` and appends an
    AnnotationEvent with the full label. `expected_revision` (0 = "not saved yet") makes the
    save conditional; a mismatch raises StaleAnnotationError and writes nothing. `checked`:
    the caller has just seen the generation and the annotator exist (one round trip less each).
    `note_limit`: an import's own text limit (see `check_label`).
    """
    label = check_label(accuracy, codes, status=status, note=note, seconds_spent=seconds_spent,
                        note_limit=note_limit)
    session.flush()
    if not checked:
        _require(session, Generation, generation_id, "generation")
        _require(session, Annotator, annotator_id, "annotator")
    version = default_taxonomy().version
    values = dict(accuracy=label.accuracy, status=label.status, note=label.note,
                  seconds_spent=label.seconds_spent, taxonomy_version=version,
                  updated_at=utcnow())

    annotation = fresh = None
    for _ in range(_MAX_RACE_RETRIES):
        # 1. update in place (compare-and-set on the revision when one is expected), RETURNING
        # the row (one round trip). Skipped when the caller expects nothing stored yet: the
        # insert below then fails on the unique key if someone saved meanwhile.
        if expected_revision != 0:
            statement = (update(Annotation)
                         .where(Annotation.generation_id == generation_id,
                                Annotation.annotator_id == annotator_id)
                         .values(revision=Annotation.revision + 1, **values)
                         .returning(Annotation)
                         .execution_options(synchronize_session=False, populate_existing=True))
            if expected_revision is not None:
                statement = statement.where(Annotation.revision == expected_revision)
            annotation = session.execute(statement).scalars().first()
            if annotation is not None:
                break
            existing = _find_annotation(session, generation_id, annotator_id)
            if existing is not None:
                if expected_revision is not None:
                    raise StaleAnnotationError(generation_id, annotator_id, expected_revision,
                                               existing.revision)
                continue  # it appeared between our update and read: update it
            if expected_revision:  # the caller saw a revision, but the annotation is gone
                raise StaleAnnotationError(generation_id, annotator_id, expected_revision, 0)
        # 2. first save: insert, and treat losing the insert race like a concurrent save
        fresh = Annotation(generation_id=generation_id, annotator_id=annotator_id, revision=1,
                           created_at=values["updated_at"], **values)
        try:
            with session.begin_nested():
                session.add(fresh)
            annotation = fresh
            break
        except IntegrityError:
            if expected_revision is not None:  # caller expected none, someone else saved first
                other = _find_annotation(session, generation_id, annotator_id)
                raise StaleAnnotationError(generation_id, annotator_id, expected_revision,
                                           other.revision if other else 0) from None
            continue
    if annotation is None:
        raise AnnotationError(f"could not save the annotation of generation {generation_id} by "
                              f"annotator {annotator_id} (kept colliding with other writers)")

    if annotation is not fresh:  # a row inserted just now has no codes to replace
        session.execute(delete(AnnotationCode).where(AnnotationCode.annotation_id == annotation.id)
                        .execution_options(synchronize_session=False))
    session.add_all(AnnotationCode(annotation_id=annotation.id, code=code) for code in label.codes)
    session.add(AnnotationEvent(annotation_id=annotation.id, annotator_id=annotator_id,
                                revision=annotation.revision, accuracy=label.accuracy,
                                status=label.status, codes=list(label.codes), note=label.note,
                                seconds_spent=label.seconds_spent, created_at=values["updated_at"]))
    session.flush()
    return annotation


def insert_new_annotations(session: Session,
                           labels: Sequence[tuple[int, int, CheckedLabel]]) -> int:
    """First saves of many labels at once (the bulk import): (generation id, annotator id,
    checked label) each, none of them stored yet. Writes what `save_annotation` writes on a
    first save (revision 1, the codes, one AnnotationEvent) in three multi-row inserts; the
    caller guarantees that the generations and annotators exist and that no label is stored
    (the unique key refuses a second one). Returns how many were inserted."""
    if not labels:
        return 0
    version, now = default_taxonomy().version, utcnow()
    session.flush()
    session.execute(insert(Annotation.__table__), [
        dict(generation_id=g, annotator_id=a, accuracy=label.accuracy, status=label.status,
             note=label.note, seconds_spent=label.seconds_spent, taxonomy_version=version,
             revision=1, created_at=now, updated_at=now) for g, a, label in labels])
    wanted = {(g, a) for g, a, _ in labels}
    ids = {}
    generation_ids = sorted({g for g, _ in wanted})
    for at in range(0, len(generation_ids), 900):  # an IN list every backend takes
        for row in session.execute(select(Annotation.id, Annotation.generation_id,
                                          Annotation.annotator_id).where(
                Annotation.generation_id.in_(generation_ids[at:at + 900]))):
            if (row.generation_id, row.annotator_id) in wanted:
                ids[(row.generation_id, row.annotator_id)] = row.id
    codes = [dict(annotation_id=ids[(g, a)], code=code) for g, a, label in labels
             for code in label.codes]
    if codes:
        session.execute(insert(AnnotationCode.__table__), codes)
    session.execute(insert(AnnotationEvent.__table__), [
        dict(annotation_id=ids[(g, a)], annotator_id=a, revision=1, accuracy=label.accuracy,
             status=label.status, codes=list(label.codes), note=label.note,
             seconds_spent=label.seconds_spent, created_at=now) for g, a, label in labels])
    return len(labels)


def annotation_codes_of(session: Session, annotation_ids: Sequence[int]
                        ) -> dict[int, tuple[str, ...]]:
    """The codes of many annotations: annotation id -> sorted codes (absent: no codes)."""
    found: dict[int, list[str]] = {}
    ids = sorted(set(annotation_ids))
    for at in range(0, len(ids), 900):
        for annotation_id, code in session.execute(
                select(AnnotationCode.annotation_id, AnnotationCode.code)
                .where(AnnotationCode.annotation_id.in_(ids[at:at + 900]))):
            found.setdefault(annotation_id, []).append(code)
    return {k: tuple(sorted(v)) for k, v in found.items()}


def get_annotation(session: Session, generation_id: int, annotator_id: int) -> Annotation | None:
    return _find_annotation(session, generation_id, annotator_id)


def annotation_codes(session: Session, annotation_id: int) -> tuple[str, ...]:
    """The codes of an annotation, sorted."""
    rows = session.execute(select(AnnotationCode.code)
                        .where(AnnotationCode.annotation_id == annotation_id)).scalars()
    return tuple(sorted(rows))


def annotation_history(session: Session, annotation_id: int) -> list[AnnotationEvent]:
    """Every saved state of an annotation, oldest first."""
    return list(session.execute(select(AnnotationEvent)
                             .where(AnnotationEvent.annotation_id == annotation_id)
                             .order_by(AnnotationEvent.revision, AnnotationEvent.id)).scalars())


# ------------------------------------------------------------------------------ adjudication

def save_gold_label(session: Session, *, generation_id: int, adjudicator_id: int, accuracy,
                    codes: Iterable[str] | None, note: str = "",
                    note_limit: int | None = None) -> GoldLabel:
    """Store (or replace) the adjudicated label of a generation, with one new history row
    (gold_label_event: earlier gold labels are kept). Annotators' own labels are not touched.
    The adjudicator must have role lead or expert."""
    label = check_label(accuracy, codes, status="done", note=note, note_limit=note_limit)
    session.flush()
    _require(session, Generation, generation_id, "generation")
    adjudicator = _require(session, Annotator, adjudicator_id, "annotator")
    if adjudicator.role not in ADJUDICATOR_ROLES:
        raise AnnotationError(f"annotator {adjudicator.username!r} has role {adjudicator.role!r} "
                              f"and may not adjudicate (needs {' or '.join(ADJUDICATOR_ROLES)})")
    values = dict(adjudicator_id=adjudicator_id, accuracy=label.accuracy, note=label.note,
                  taxonomy_version=default_taxonomy().version, created_at=utcnow())
    gold = None
    for _ in range(_MAX_RACE_RETRIES):
        statement = (update(GoldLabel).where(GoldLabel.generation_id == generation_id)
                     .values(**values).execution_options(synchronize_session=False))
        if session.execute(statement).rowcount == 1:
            gold = session.execute(select(GoldLabel).where(GoldLabel.generation_id == generation_id)
                                .execution_options(populate_existing=True)).scalars().one()
            break
        fresh = GoldLabel(generation_id=generation_id, **values)
        try:
            with session.begin_nested():
                session.add(fresh)
            gold = fresh
            break
        except IntegrityError:
            continue
    if gold is None:
        raise AnnotationError(f"could not save the gold label of generation {generation_id}")
    session.execute(delete(GoldLabelCode).where(GoldLabelCode.gold_label_id == gold.id)
                    .execution_options(synchronize_session=False))
    session.add_all(GoldLabelCode(gold_label_id=gold.id, code=code) for code in label.codes)
    session.add(GoldLabelEvent(gold_label_id=gold.id, adjudicator_id=adjudicator_id,
                               accuracy=label.accuracy, codes=list(label.codes), note=label.note,
                               created_at=values["created_at"]))
    session.flush()
    return gold


def gold_label_codes(session: Session, gold_label_id: int) -> tuple[str, ...]:
    rows = session.execute(select(GoldLabelCode.code)
                        .where(GoldLabelCode.gold_label_id == gold_label_id)).scalars()
    return tuple(sorted(rows))


def active_annotators(session: Session, *, within_minutes: float = 15) -> int:
    """How many annotators use the labelling app now: signed in (a session neither revoked nor
    expired) and signed in or saved a label during the last `within_minutes` (the import CLI
    warns then: on SQLite their saves wait while an import holds the write lock). Labels that
    an import or the demo wrote just now are nobody labelling: sessions only come from
    signing in to the app (no import or demo makes one)."""
    from datetime import datetime, timedelta, timezone

    from sqlalchemy import func, union

    from db.models import AnnotationEvent, AnnotatorSession

    now = datetime.now(timezone.utc)
    since = now - timedelta(minutes=within_minutes)
    live = (select(AnnotatorSession.annotator_id)
            .where(AnnotatorSession.revoked_at.is_(None), AnnotatorSession.expires_at > now))
    recent = union(
        select(AnnotationEvent.annotator_id).where(AnnotationEvent.created_at >= since,
                                                   AnnotationEvent.annotator_id.in_(live)),
        live.where(AnnotatorSession.created_at >= since))
    return int(session.execute(select(func.count()).select_from(recent.subquery())).scalar_one())
