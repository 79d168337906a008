"""An annotator's queue: the assigned items in order, progress counts, moving between items,
and the queue held between page runs (`QueueState`)."""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Sequence

from sqlalchemy import and_, func, or_, select
from sqlmodel import Session

from annotate.service.errors import AuthError
from db import models as m
from db.targets import TARGET_LANGUAGE, with_source


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
        with_source(
            select(m.Assignment.generation_id, m.Assignment.position, TARGET_LANGUAGE,
                   m.Generation.model, m.Annotation.status, m.Annotation.accuracy)
            .join(m.Generation, m.Generation.id == m.Assignment.generation_id)
            .join(m.Target, m.Target.id == m.Generation.target_id))
        .outerjoin(m.Annotation, and_(m.Annotation.generation_id == m.Assignment.generation_id,
                                      m.Annotation.annotator_id == m.Assignment.annotator_id))
        .where(m.Assignment.annotator_id == annotator_id, TARGET_LANGUAGE.in_(langs))
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


MAX_SEARCH_CHARS = 500  # what a search looks for at most (SQLite refuses a LIKE pattern of 50 KB)


def search_queue(session: Session, annotator_id: int, text: str) -> set[int]:
    """The annotator's assigned items whose id is `text` (with or without '#'), or whose
    original or predicted comment, file path or pairs item id contains it (any case); a text
    longer than MAX_SEARCH_CHARS is cut there (the page says so)."""
    text = (text or "").strip()[:MAX_SEARCH_CHARS]
    if not text:
        return set()
    if text.lstrip("#").isdigit():
        wanted = int(text.lstrip("#"))
        found = session.exec(select(m.Assignment.generation_id).where(
            m.Assignment.annotator_id == annotator_id,
            m.Assignment.generation_id == wanted)).scalars().all()
        return set(found)
    pattern = "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    fields = (m.Target.original_comment, m.Generation.predicted_comment, m.SourceFile.path,
              m.Target.external_id)
    stmt = (with_source(select(m.Assignment.generation_id)
                        .join(m.Generation, m.Generation.id == m.Assignment.generation_id)
                        .join(m.Target, m.Target.id == m.Generation.target_id))
            .where(m.Assignment.annotator_id == annotator_id,
                   or_(*(func.lower(f).like(pattern, escape="\\") for f in fields))))
    return set(session.exec(stmt).scalars().all())


def median_done_seconds(session: Session, annotator_id: int) -> float | None:
    """The annotator's median time per finished item (None before the first one)."""
    spent = sorted(float(s or 0) for s in session.exec(
        select(m.Annotation.seconds_spent).where(m.Annotation.annotator_id == annotator_id,
                                                 m.Annotation.status == "done")).scalars())
    return spent[len(spent) // 2] if spent else None


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
