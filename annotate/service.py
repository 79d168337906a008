"""What the labelling app does, as functions over a database session and plain data: sign-in,
queues and progress, saving labels (through `db.annotations`, which keeps the history and the
optimistic-concurrency check), skip and flag, assignment planning, adjudication into gold
labels, the study's Tables 1 and 2, and the label sets the agreement page hands to
`metrics.align`. The Streamlit pages are a thin shell around this module.

Blindness lives here too: the only labels `load_item` returns are the caller's own."""
from __future__ import annotations

import csv
import io
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from sqlalchemy import and_, delete, func, select
from sqlmodel import Session

from annotate.auth import DUMMY_HASH, hash_password, verify_password
from db import models as m
from db.annotations import (AnnotationError, StaleAnnotationError, save_annotation,
                            save_gold_label)
from taxonomy import ACCURACY_LABELS, LANGUAGES, AccuracyLabel, TaxonomyError, default_taxonomy

ROLES = m.ANNOTATOR_ROLES
LEAD_ROLES = ("lead",)
MAX_SECONDS_PER_VISIT = 30 * 60  # a tab left open over lunch is not labelling time


# ------------------------------------------------------------------------------ errors

class AnnotateError(Exception):
    """A problem the app shows to its user as one clear sentence; nothing was changed."""


class AuthError(AnnotateError):
    pass


class ItemGoneError(AnnotateError):
    pass


class NotAssignedError(AnnotateError):
    pass


class LabelError(AnnotateError):
    pass


# ------------------------------------------------------------------------------ accounts

@dataclass(frozen=True)
class AnnotatorInfo:
    id: int
    username: str
    display_name: str
    languages: tuple[str, ...]
    interface_language: str
    role: str

    @property
    def is_lead(self) -> bool:
        return self.role in LEAD_ROLES


def _info(row: m.Annotator) -> AnnotatorInfo:
    return AnnotatorInfo(row.id, row.username, row.display_name or row.username,
                         tuple(row.languages or ()), row.interface_language or "en", row.role)


def _check_languages(languages: Iterable[str]) -> tuple[str, ...]:
    out = tuple(dict.fromkeys(str(lang).strip().lower() for lang in languages if str(lang).strip()))
    unknown = [lang for lang in out if lang not in LANGUAGES]
    if unknown:
        raise AnnotateError(f"unknown language {unknown[0]!r}; expected some of "
                            f"{', '.join(LANGUAGES)}")
    return out


def create_annotator(session: Session, *, username: str, password: str | None,
                     languages: Iterable[str], role: str = "annotator", display_name: str = "",
                     interface_language: str = "en") -> AnnotatorInfo:
    """A new account; the password is stored as a scrypt hash only (None: sign-in by OIDC only)."""
    username = (username or "").strip()
    if not username:
        raise AnnotateError("a username is required")
    if role not in ROLES:
        raise AnnotateError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    exists = session.exec(select(m.Annotator.id).where(
        func.lower(m.Annotator.username) == username.lower())).first()
    if exists:
        raise AnnotateError(f"an account named {username!r} already exists")
    langs = _check_languages(languages)
    if not langs and role == "annotator":
        raise AnnotateError(f"annotator {username!r} needs at least one language")
    if interface_language not in LANGUAGES:
        raise AnnotateError(f"unknown interface language {interface_language!r}")
    row = m.Annotator(username=username, display_name=display_name or username,
                      languages=list(langs), role=role, interface_language=interface_language,
                      password_hash=hash_password(password) if password else None)
    session.add(row)
    session.flush()
    return _info(row)


def authenticate(session: Session, username: str, password: str) -> AnnotatorInfo:
    """The account for these credentials, else AuthError saying what was wrong."""
    username = (username or "").strip()
    row = session.exec(select(m.Annotator).where(
        func.lower(m.Annotator.username) == username.lower())).scalars().first()
    if row is None:
        verify_password(password or "", DUMMY_HASH)  # same work as a real check
        raise AuthError(f"No account named {username!r}. Ask your lead to create one.")
    if not row.password_hash:
        raise AuthError(f"Account {row.username!r} signs in through single sign-on only.")
    if not verify_password(password or "", row.password_hash):
        raise AuthError(f"Wrong password for {row.username!r}.")
    if not row.active:
        raise AuthError(f"Account {row.username!r} is deactivated.")
    return _info(row)


def annotator_for_email(session: Session, email: str | None) -> AnnotatorInfo:
    """The account of a user signed in through OIDC: the username equals their e-mail."""
    if not email:
        raise AuthError("The identity provider sent no e-mail address.")
    row = session.exec(select(m.Annotator).where(
        func.lower(m.Annotator.username) == email.strip().lower())).scalars().first()
    if row is None or not row.active:
        raise AuthError(f"No active account for {email!r}. Ask your lead to create one with "
                        f"that e-mail address as its username.")
    return _info(row)


def get_annotator(session: Session, annotator_id: int, *, active_only: bool = False
                  ) -> AnnotatorInfo:
    row = session.get(m.Annotator, annotator_id)
    if row is None:
        raise AuthError(f"account #{annotator_id} no longer exists")
    if active_only and not row.active:
        raise AuthError(f"Account {row.username!r} is deactivated.")
    return _info(row)


def update_annotator(session: Session, annotator_id: int, *, languages: Iterable[str] | None = None,
                     role: str | None = None, active: bool | None = None,
                     password: str | None = None) -> AnnotatorInfo:
    """Change an account's languages, role, active flag or password (None: leave as is).
    Labels are never touched; items in a dropped language just leave the queue."""
    row = session.get(m.Annotator, annotator_id)
    if row is None:
        raise AuthError(f"account #{annotator_id} no longer exists")
    if languages is not None:
        langs = _check_languages(languages)
        if not langs and (role or row.role) == "annotator":
            raise AnnotateError(f"annotator {row.username!r} needs at least one language")
        row.languages = list(langs)
    if role is not None:
        if role not in ROLES:
            raise AnnotateError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        row.role = role
    if active is not None:
        row.active = bool(active)
    if password:
        row.password_hash = hash_password(password)
    session.add(row)
    session.flush()
    return _info(row)


def list_annotators(session: Session) -> list[AnnotatorInfo]:
    rows = session.exec(select(m.Annotator).order_by(m.Annotator.username)).scalars().all()
    return [_info(r) for r in rows]


def set_interface_language(session: Session, annotator_id: int, lang: str) -> None:
    if lang not in LANGUAGES:
        raise AnnotateError(f"unknown interface language {lang!r}")
    row = session.get(m.Annotator, annotator_id)
    if row is None:
        raise AuthError(f"account #{annotator_id} no longer exists")
    row.interface_language = lang
    session.add(row)


# ------------------------------------------------------------------------------ queue

@dataclass(frozen=True)
class QueueEntry:
    generation_id: int
    position: int
    language: str
    model: str
    status: str | None  # None: not touched yet; else the stored Annotation.status
    accuracy: str | None

    @property
    def state(self) -> str:
        """todo | draft (saved codes/note, no accuracy yet) | done | skipped | flagged."""
        return "todo" if self.status is None else self.status

    @property
    def is_open(self) -> bool:
        return self.state in ("todo", "draft")


def queue_for(session: Session, annotator_id: int, *, language: str | None = None
              ) -> list[QueueEntry]:
    """The annotator's assigned items in their languages, in assignment order."""
    annotator = session.get(m.Annotator, annotator_id)
    if annotator is None:
        raise AuthError(f"account #{annotator_id} no longer exists")
    langs = [language] if language else list(annotator.languages or ())
    if language and language not in (annotator.languages or ()):
        return []
    stmt = (
        select(m.Assignment.generation_id, m.Assignment.position, m.SourceFile.natural_language,
               m.Generation.model, m.Annotation.status, m.Annotation.accuracy)
        .join(m.Generation, m.Generation.id == m.Assignment.generation_id)
        .join(m.Target, m.Target.id == m.Generation.target_id)
        .join(m.SourceFile, m.SourceFile.id == m.Target.source_file_id)
        .outerjoin(m.Annotation, and_(m.Annotation.generation_id == m.Assignment.generation_id,
                                      m.Annotation.annotator_id == m.Assignment.annotator_id))
        .where(m.Assignment.annotator_id == annotator_id,
               m.SourceFile.natural_language.in_(langs))
        .order_by(m.Assignment.position, m.Assignment.generation_id)
    )
    return [QueueEntry(*row) for row in session.exec(stmt).all()]


@dataclass(frozen=True)
class Progress:
    assigned: int = 0
    done: int = 0
    draft: int = 0
    skipped: int = 0
    flagged: int = 0

    @property
    def remaining(self) -> int:
        return self.assigned - self.done - self.skipped - self.flagged

    @property
    def fraction(self) -> float:
        return self.done / self.assigned if self.assigned else 0.0


def progress_of(queue: Sequence[QueueEntry]) -> dict[str, Progress]:
    """Progress per language, plus '*' for all of them together."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for entry in queue:
        for key in (entry.language, "*"):
            counts[key]["assigned"] += 1
            if entry.state != "todo":
                counts[key][entry.state] += 1
    return {lang: Progress(**{k: c[k] for k in ("assigned", "done", "draft", "skipped",
                                                 "flagged")})
            for lang, c in sorted(counts.items())}


def index_of(queue: Sequence[QueueEntry], generation_id: int | None) -> int | None:
    for i, entry in enumerate(queue):
        if entry.generation_id == generation_id:
            return i
    return None


def first_open(queue: Sequence[QueueEntry]) -> int | None:
    """Where to start: the first item not labelled yet (None when everything is done)."""
    return next((i for i, e in enumerate(queue) if e.is_open), None)


def step(queue: Sequence[QueueEntry], current: int | None, delta: int) -> int | None:
    """The neighbour of `current` in queue order (clamped to the ends)."""
    if not queue:
        return None
    if current is None:
        return 0 if delta > 0 else len(queue) - 1
    return max(0, min(len(queue) - 1, current + delta))


def next_open(queue: Sequence[QueueEntry], current: int | None) -> int | None:
    """The next unlabelled item after `current`, wrapping round; None when none is left."""
    n = len(queue)
    start = -1 if current is None else current
    for k in range(1, n + 1):
        i = (start + k) % n
        if queue[i].is_open and i != current:
            return i
    return None


# ------------------------------------------------------------------------------ items

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
    """Everything the item view shows, with the caller's own label only (blind by design)."""
    generation = _require_generation(session, generation_id)
    _require_assignment(session, generation_id, annotator_id)
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

def validate_codes(codes: Iterable[str]) -> tuple[str, ...]:
    """Codes in canonical spelling, only labelable ones; anything else raises LabelError."""
    taxonomy = default_taxonomy()
    try:
        checked = tuple(taxonomy.validate_codes(list(codes)))
    except TaxonomyError as error:
        raise LabelError(f"Not saved: {error}") from error
    not_labelable = [c for c in checked if not taxonomy.code(c).labelable]
    if not_labelable:
        raise LabelError(f"Not saved: {not_labelable[0]} is a {taxonomy.code(not_labelable[0]).level}"
                         f"; choose one of its error codes instead")
    return tuple(sorted(set(checked)))


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
    _require_generation(session, generation_id)
    _require_assignment(session, generation_id, annotator_id)
    if accuracy is not None:
        try:
            accuracy = AccuracyLabel.parse(accuracy).value
        except TaxonomyError as error:
            raise LabelError(f"Not saved: {error}") from error
    if status not in m.ANNOTATION_STATUSES:
        raise LabelError(f"Not saved: unknown status {status!r}")
    if status == "done" and accuracy is None:
        raise LabelError("Not saved as done: choose an accuracy label first")
    checked = validate_codes(codes)
    try:
        row = save_annotation(session, generation_id=generation_id, annotator_id=annotator_id,
                              accuracy=accuracy, codes=list(checked), note=note or "",
                              seconds_spent=float(seconds_spent), status=status,
                              expected_revision=expected_revision or 0)
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


# ------------------------------------------------------------------------------ assignment

@dataclass(frozen=True)
class ItemRef:
    generation_id: int
    language: str
    model: str


def plan_assignments(items: Sequence[ItemRef], annotators: Sequence[tuple[int, Sequence[str]]],
                     *, per_item: int = 1, strategy: str = "random", seed: int = 0,
                     existing: dict[int, set[int]] | None = None,
                     load: dict[int, int] | None = None) -> list[tuple[int, int]]:
    """Which annotator gets which item: (generation_id, annotator_id) pairs in queue order.

    Each item goes to `per_item` different annotators who speak its language (counting those
    it already has in `existing`), always to the least-loaded ones (ties broken by the seed).
    `random` shuffles the items; `stratified` interleaves them by (language, model) so every
    queue gets an even mix of models from the first item on. Same inputs, same plan."""
    if per_item < 1:
        raise AnnotateError("per_item must be at least 1")
    if strategy not in ("random", "stratified"):
        raise AnnotateError(f"unknown strategy {strategy!r}; expected random or stratified")
    rng = random.Random(seed)
    ordered = sorted(items, key=lambda it: it.generation_id)
    if strategy == "random":
        rng.shuffle(ordered)
    else:
        strata: dict[tuple[str, str], list[ItemRef]] = defaultdict(list)
        for item in ordered:
            strata[(item.language, item.model)].append(item)
        for bucket in strata.values():
            rng.shuffle(bucket)
        keys = sorted(strata)
        ordered = []
        for k in range(max((len(b) for b in strata.values()), default=0)):
            for key in keys:
                if k < len(strata[key]):
                    ordered.append(strata[key][k])
    existing = existing or {}
    load = Counter(load or {})
    tiebreak = {aid: rng.random() for aid, _ in annotators}
    speakers: dict[str, list[int]] = defaultdict(list)
    for aid, langs in annotators:
        for lang in langs:
            speakers[lang].append(aid)
    plan: list[tuple[int, int]] = []
    for item in ordered:
        have = existing.get(item.generation_id, set())
        need = per_item - len(have)
        candidates = [a for a in speakers.get(item.language, []) if a not in have]
        candidates.sort(key=lambda a: (load[a], tiebreak[a]))
        for aid in candidates[:max(0, need)]:
            plan.append((item.generation_id, aid))
            load[aid] += 1
    return plan


def assign(session: Session, *, annotator_ids: Sequence[int] | None = None,
           languages: Sequence[str] | None = None, models: Sequence[str] | None = None,
           per_item: int = 1, strategy: str = "random", seed: int = 0,
           limit: int | None = None) -> int:
    """Add assignments for the chosen items (by language and model) to the chosen annotators;
    existing assignments are kept and count towards `per_item`. Returns how many were added."""
    # Default: every annotator and expert; a lead labels only when chosen explicitly.
    people = [a for a in list_annotators(session) if a.languages and (
        a.id in annotator_ids if annotator_ids is not None else not a.is_lead)]
    if not people:
        raise AnnotateError("no annotators to assign to (accounts need at least one language)")
    langs = _check_languages(languages) if languages else None
    stmt = (select(m.Generation.id, m.SourceFile.natural_language, m.Generation.model)
            .join(m.Target, m.Target.id == m.Generation.target_id)
            .join(m.SourceFile, m.SourceFile.id == m.Target.source_file_id)
            .order_by(m.Generation.id))
    if langs:
        stmt = stmt.where(m.SourceFile.natural_language.in_(langs))
    if models:
        stmt = stmt.where(m.Generation.model.in_(list(models)))
    items = [ItemRef(*row) for row in session.exec(stmt).all()]
    if limit is not None:
        items = random.Random(seed).sample(items, min(limit, len(items))) if limit < len(
            items) else items
    existing: dict[int, set[int]] = defaultdict(set)
    for gid, aid in session.exec(select(m.Assignment.generation_id, m.Assignment.annotator_id)):
        existing[gid].add(aid)
    load = Counter(aid for holders in existing.values() for aid in holders)
    plan = plan_assignments(items, [(a.id, a.languages) for a in people], per_item=per_item,
                            strategy=strategy, seed=seed, existing=existing, load=load)
    next_position: dict[int, int] = dict(session.exec(
        select(m.Assignment.annotator_id, func.max(m.Assignment.position))
        .group_by(m.Assignment.annotator_id)).all())
    for gid, aid in plan:
        position = next_position.get(aid, -1) + 1
        next_position[aid] = position
        session.add(m.Assignment(generation_id=gid, annotator_id=aid, position=position))
    session.flush()
    return len(plan)


def unassign_open(session: Session, annotator_id: int) -> int:
    """Take back an annotator's items they have not touched (their labels stay)."""
    touched = select(m.Annotation.generation_id).where(m.Annotation.annotator_id == annotator_id)
    result = session.exec(delete(m.Assignment).where(
        m.Assignment.annotator_id == annotator_id, m.Assignment.generation_id.not_in(touched)))
    return int(result.rowcount or 0)


def team_progress(session: Session) -> list[dict]:
    """One row per annotator and language: assigned, done, draft, skipped, flagged, remaining,
    and the median seconds per finished item. One aggregate query, whatever the queue sizes."""
    stmt = (select(m.Annotator.username, m.Annotator.role, m.SourceFile.natural_language,
                   m.Annotation.status, func.count())
            .select_from(m.Assignment)
            .join(m.Annotator, m.Annotator.id == m.Assignment.annotator_id)
            .join(m.Generation, m.Generation.id == m.Assignment.generation_id)
            .join(m.Target, m.Target.id == m.Generation.target_id)
            .join(m.SourceFile, m.SourceFile.id == m.Target.source_file_id)
            .outerjoin(m.Annotation, and_(m.Annotation.generation_id == m.Assignment.generation_id,
                                          m.Annotation.annotator_id == m.Assignment.annotator_id))
            .group_by(m.Annotator.username, m.Annotator.role, m.SourceFile.natural_language,
                      m.Annotation.status))
    counts: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for user, role, lang, status, n in session.exec(stmt).all():
        counts[(user, role, lang)]["assigned"] += n
        if status:
            counts[(user, role, lang)][status] += n
    seconds: dict[str, list[float]] = defaultdict(list)
    for user, spent in session.exec(
            select(m.Annotator.username, m.Annotation.seconds_spent)
            .join(m.Annotator, m.Annotator.id == m.Annotation.annotator_id)
            .where(m.Annotation.status == "done")).all():
        seconds[user].append(float(spent or 0))
    rows = []
    for (user, role, lang), c in sorted(counts.items()):
        spent = sorted(seconds.get(user, ()))
        p = Progress(c["assigned"], c["done"], c["draft"], c["skipped"], c["flagged"])
        rows.append({"annotator": user, "role": role, "language": lang, "assigned": p.assigned,
                     "done": p.done, "draft": p.draft, "skipped": p.skipped,
                     "flagged": p.flagged, "remaining": p.remaining,
                     "median_seconds": spent[len(spent) // 2] if spent else None})
    return rows


class QueueState:
    """An annotator's queue held between page runs, so moving to the next item does not re-read
    thousands of rows: statuses are updated in place after each own save, progress is kept as
    running counts, and the whole queue is re-read only when it is older than `max_age_s` (or
    after an error), to pick up new assignments."""

    def __init__(self, entries: Sequence[QueueEntry], loaded_at: float = 0.0):
        self.entries = list(entries)
        self.loaded_at = loaded_at
        self._index = {e.generation_id: i for i, e in enumerate(self.entries)}
        self._counts: Counter = Counter()
        for entry in self.entries:
            self._count(entry, +1)

    @classmethod
    def load(cls, session: Session, annotator_id: int, now: float) -> "QueueState":
        return cls(queue_for(session, annotator_id), loaded_at=now)

    def _count(self, entry: QueueEntry, sign: int) -> None:
        for key in (entry.language, "*"):
            self._counts[(key, "assigned")] += sign
            if entry.state != "todo":
                self._counts[(key, entry.state)] += sign

    def __len__(self) -> int:
        return len(self.entries)

    def index_of(self, generation_id: int | None) -> int | None:
        return self._index.get(generation_id)

    def is_stale(self, now: float, max_age_s: float) -> bool:
        return now - self.loaded_at > max_age_s

    def record(self, generation_id: int, status: str | None, accuracy: str | None) -> None:
        """What a save just stored for one item."""
        i = self._index.get(generation_id)
        if i is None:
            return
        old = self.entries[i]
        new = QueueEntry(old.generation_id, old.position, old.language, old.model, status,
                         accuracy)
        self._count(old, -1)
        self._count(new, +1)
        self.entries[i] = new

    def progress(self) -> dict[str, Progress]:
        """The same as progress_of(self.entries), from the running counts."""
        langs = sorted({lang for lang, _ in self._counts if self._counts[(lang, "assigned")]})
        return {lang: Progress(*(self._counts[(lang, k)] for k in
                                 ("assigned", "done", "draft", "skipped", "flagged")))
                for lang in langs}


# ------------------------------------------------------------------------------ labels for analysis

@dataclass(frozen=True)
class HumanLabel:
    generation_id: int
    language: str
    model: str
    annotator: str
    accuracy: str
    codes: tuple[str, ...]
    note: str = ""


def finished_labels(session: Session, *, language: str | None = None) -> list[HumanLabel]:
    """Every finished label (status done, accuracy set), for the lead's pages only."""
    stmt = (select(m.Annotation.id, m.Annotation.generation_id, m.SourceFile.natural_language,
                   m.Generation.model, m.Annotator.username, m.Annotation.accuracy,
                   m.Annotation.note)
            .join(m.Generation, m.Generation.id == m.Annotation.generation_id)
            .join(m.Target, m.Target.id == m.Generation.target_id)
            .join(m.SourceFile, m.SourceFile.id == m.Target.source_file_id)
            .join(m.Annotator, m.Annotator.id == m.Annotation.annotator_id)
            .where(m.Annotation.status == "done", m.Annotation.accuracy.is_not(None))
            .order_by(m.Annotation.generation_id, m.Annotator.username))
    if language:
        stmt = stmt.where(m.SourceFile.natural_language == language)
    rows = session.exec(stmt).all()
    codes: dict[int, list[str]] = defaultdict(list)
    ids = [r[0] for r in rows]
    for chunk in range(0, len(ids), 900):  # stay under SQLite's bound-parameter limit
        part = ids[chunk:chunk + 900]
        for aid, code in session.exec(select(m.AnnotationCode.annotation_id, m.AnnotationCode.code)
                                      .where(m.AnnotationCode.annotation_id.in_(part))):
            codes[aid].append(code)
    return [HumanLabel(gid, lang, model, user, acc, tuple(sorted(codes[aid])), note or "")
            for aid, gid, lang, model, user, acc, note in rows]


def accuracy_matrix(labels: Sequence[HumanLabel]) -> tuple[list[str], list[int], list[list]]:
    """(annotators, generation ids, rows of labels-or-None per annotator) for items labelled by
    at least two annotators: the shape reliability statistics take."""
    by_item: dict[int, dict[str, str]] = defaultdict(dict)
    for label in labels:
        by_item[label.generation_id][label.annotator] = label.accuracy
    items = sorted(g for g, who in by_item.items() if len(who) >= 2)
    people = sorted({a for g in items for a in by_item[g]})
    return people, items, [[by_item[g].get(a) for g in items] for a in people]


# ------------------------------------------------------------------------------ adjudication

@dataclass(frozen=True)
class Disagreement:
    generation_id: int
    language: str
    model: str
    labels: tuple[HumanLabel, ...]
    kinds: tuple[str, ...]  # "accuracy" and/or "codes"
    gold: dict | None = None


def find_disagreements(labels: Sequence[HumanLabel], gold: dict[int, dict] | None = None,
                       *, include_resolved: bool = False) -> list[Disagreement]:
    """Items whose annotators differ on the accuracy label or on the codes."""
    gold = gold or {}
    by_item: dict[int, list[HumanLabel]] = defaultdict(list)
    for label in labels:
        by_item[label.generation_id].append(label)
    out = []
    for gid in sorted(by_item):
        group = by_item[gid]
        if len(group) < 2:
            continue
        kinds = []
        if len({l.accuracy for l in group}) > 1:
            kinds.append("accuracy")
        if len({l.codes for l in group}) > 1:
            kinds.append("codes")
        if not kinds or (gid in gold and not include_resolved):
            continue
        out.append(Disagreement(gid, group[0].language, group[0].model, tuple(group),
                                tuple(kinds), gold.get(gid)))
    return out


def comment_pair(session: Session, generation_id: int) -> tuple[str, str] | None:
    """(original comment, predicted comment) of a generation; None when it is gone."""
    row = session.exec(select(m.Target.original_comment, m.Generation.predicted_comment)
                       .join(m.Target, m.Target.id == m.Generation.target_id)
                       .where(m.Generation.id == generation_id)).first()
    return (row[0] or "", row[1] or "") if row else None


def gold_labels(session: Session) -> dict[int, dict]:
    rows = session.exec(select(m.GoldLabel, m.Annotator.username)
                        .join(m.Annotator, m.Annotator.id == m.GoldLabel.adjudicator_id)).all()
    codes: dict[int, list[str]] = defaultdict(list)
    for gid, code in session.exec(select(m.GoldLabelCode.gold_label_id, m.GoldLabelCode.code)):
        codes[gid].append(code)
    return {g.generation_id: {"accuracy": g.accuracy, "codes": tuple(sorted(codes[g.id])),
                              "note": g.note, "adjudicator": user}
            for g, user in rows}


def adjudicate(session: Session, *, generation_id: int, adjudicator_id: int, accuracy: str,
               codes: Iterable[str], note: str = "") -> None:
    """Store the gold label for an item (the annotators' own labels stay untouched)."""
    _require_generation(session, generation_id)
    adjudicator = get_annotator(session, adjudicator_id)
    if not adjudicator.is_lead and adjudicator.role != "expert":
        raise AuthError(f"{adjudicator.username!r} may not adjudicate (role {adjudicator.role})")
    try:
        accuracy = AccuracyLabel.parse(accuracy).value
    except TaxonomyError as error:
        raise LabelError(f"Not saved: {error}") from error
    try:
        save_gold_label(session, generation_id=generation_id, adjudicator_id=adjudicator_id,
                        accuracy=accuracy, codes=list(validate_codes(codes)), note=note or "")
    except AnnotationError as error:
        raise LabelError(f"Not saved: {error}") from error


# ------------------------------------------------------------------------------ tables 1 and 2

@dataclass(frozen=True)
class ResolvedLabel:
    generation_id: int
    language: str
    model: str
    accuracy: str
    codes: tuple[str, ...]
    source: str  # "gold" | "single" | "agreed"


def resolve_labels(labels: Sequence[HumanLabel], gold: dict[int, dict]
                   ) -> tuple[list[ResolvedLabel], list[int]]:
    """One label per item for the summary tables, by the label policy SUMMARY_POLICY
    (`agreement.labels`: the gold label where adjudicated, else the annotators' label when there
    is one or they all agree). Returns the items left unresolved."""
    from agreement.labels import SUMMARY_POLICY, Gold, Vote, resolve

    first: dict[int, HumanLabel] = {}
    for label in labels:
        first.setdefault(label.generation_id, label)
    chosen = resolve([Vote(l.generation_id, l.annotator, "", l.accuracy, frozenset(l.codes))
                      for l in labels],
                     {g: Gold(v["accuracy"], frozenset(v["codes"])) for g, v in gold.items()
                      if g in first}, SUMMARY_POLICY)
    resolved, unresolved = [], []
    for gid in sorted(first):
        if gid not in chosen:
            unresolved.append(gid)
            continue
        r, item = chosen[gid], first[gid]
        source = r.source if r.source == "gold" else "single" if r.n_annotators == 1 else "agreed"
        resolved.append(ResolvedLabel(gid, item.language, item.model, r.accuracy,
                                      tuple(sorted(r.codes)), source))
    return resolved, unresolved


def error_table(resolved: Sequence[ResolvedLabel], languages: Sequence[str] = LANGUAGES
                ) -> list[dict]:
    """Table 1: how many items carry each code, per language, parents counting their
    sub-codes once per item (as in the study)."""
    taxonomy = default_taxonomy()
    counts: dict[str, Counter] = defaultdict(Counter)
    for label in resolved:
        hit = set()
        for code in label.codes:
            try:
                hit.add(taxonomy.code(code).id)
                hit.update(a.id for a in taxonomy.ancestors(code))
            except TaxonomyError:
                hit.add(code)  # a code of an older taxonomy still gets counted, under its name
        for code in hit:
            counts[code][label.language] += 1
    rows = []
    for code in taxonomy.codes.values():
        c = counts.get(code.id, Counter())
        rows.append({"code": code.id, "level": code.level, "name": code.text("name", "en"),
                     "total": sum(c[l] for l in languages), **{l: c[l] for l in languages}})
    for extra in sorted(set(counts) - set(taxonomy.codes)):
        c = counts[extra]
        rows.append({"code": extra, "level": "unknown", "name": "(not in this taxonomy)",
                     "total": sum(c[l] for l in languages), **{l: c[l] for l in languages}})
    return rows


def accuracy_table(resolved: Sequence[ResolvedLabel]) -> list[dict]:
    """Table 2: accuracy counts per language (rows) and model (columns, per label)."""
    models = sorted({r.model for r in resolved})
    counts = Counter((r.language, r.model, r.accuracy) for r in resolved)
    rows = []
    for lang in sorted({r.language for r in resolved}):
        row: dict = {"language": lang}
        for model in models:
            for label in reversed(ACCURACY_LABELS):  # correct, partial, incorrect as in Table 2
                row[f"{model} {label}"] = counts[(lang, model, label)]
        rows.append(row)
    return rows


def rows_to_csv(rows: Sequence[dict]) -> str:
    if not rows:
        return ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0].keys()), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


# ------------------------------------------------------------------------------ agreement

@dataclass
class LanguageAgreement:
    language: str
    raters: list[str]
    n_items: int  # items with at least two finished labels
    pairs: object  # DataFrame from metrics.align.pairwise_kappa
    alpha: float | None  # Krippendorff's alpha (ordinal) when more than two raters
    codes: object  # DataFrame: per code alpha (nominal, presence) and pairwise F1


def agreement_by_language(labels: Sequence[HumanLabel], codes: Sequence[str]
                          ) -> list[LanguageAgreement]:
    """Inter-annotator agreement per language, with the statistics of `metrics.align`:
    quadratically weighted kappa per pair, Krippendorff's alpha (ordinal) for more than two
    annotators, and per code the alpha of presence/absence and the mean pairwise F1."""
    import pandas as pd

    from agreement.statistics import code_precision_recall, krippendorff_alpha, pairwise_kappa

    out = []
    for lang in sorted({l.language for l in labels}):
        subset = [l for l in labels if l.language == lang]
        raters, items, matrix = accuracy_matrix(subset)
        by_rater: dict[str, dict[int, str]] = defaultdict(dict)
        code_sets: dict[str, dict[int, set]] = defaultdict(dict)
        for l in subset:
            if l.generation_id in items:
                by_rater[l.annotator][l.generation_id] = l.accuracy
                code_sets[l.annotator][l.generation_id] = set(l.codes)
        pairs = pairwise_kappa({r: by_rater[r] for r in raters})
        alpha = (krippendorff_alpha(matrix, level="ordinal") if len(raters) > 2 and items
                 else None)
        rows = []
        for code in codes:
            presence = [[(code in code_sets[r][g]) if g in code_sets[r] else None for g in items]
                        for r in raters]
            used = sum(1 for g in items if any(code in code_sets[r].get(g, ()) for r in raters))
            code_alpha = (krippendorff_alpha(presence, labels=[False, True], level="nominal")
                          if items and used else float("nan"))
            f1s = []
            for i, ra in enumerate(raters):
                for rb in raters[i + 1:]:
                    shared = [g for g in items if g in code_sets[ra] and g in code_sets[rb]]
                    if shared:
                        table = code_precision_recall([code_sets[ra][g] for g in shared],
                                                      [code_sets[rb][g] for g in shared], [code])
                        f1s.append(float(table.loc[code, "f1"]))
            valid = [f for f in f1s if f == f]
            rows.append({"code": code, "items_with_code": used, "alpha_nominal": code_alpha,
                         "mean_pair_f1": sum(valid) / len(valid) if valid else float("nan")})
        out.append(LanguageAgreement(lang, raters, len(items), pairs, alpha,
                                     pd.DataFrame(rows)))
    return out
