"""History rows in the order they were saved, not in the order the import replays them.

An import writes a label's history when it reads that label's record, so the rows of labels
revised out of id order (one label, another, the first again) would get ids in another order
than in the database they came from. An export gives each history entry `seq`, its place among
all history rows of its table (db.exporter); once the import has written them, the ids it gave
those rows are handed out again in `seq` order. Only ids this import allocated are permuted, so
rows already in the database keep theirs, and a move into an empty database keeps every id where
none had been deleted (docs/db.md). Nothing refers to a history row's id.
"""
from __future__ import annotations

from sqlalchemy import bindparam, update
from sqlmodel import Session

from db import models as m
from db.importer.errors import Reject

EVENT_TABLES = (m.AnnotationEvent, m.GoldLabelEvent)


def history_seq(entry: dict, field: str) -> int | None:
    """An entry's `seq` (a whole number, 0 or more), or None when it has none."""
    seq = entry.get("seq")
    if seq is None:
        return None
    if type(seq) is not int or seq < 0:
        raise Reject(f"expected a whole number 0 or more, got {seq!r:.40}", field)
    return seq


class EventOrder:
    """The (seq, id) of every history row an import wrote from an entry with `seq`."""

    def __init__(self) -> None:
        self._written: dict[type, list[tuple[int, int]]] = {model: [] for model in EVENT_TABLES}

    def note(self, model, seq: int | None, event_id: int) -> None:
        if seq is not None:
            self._written[model].append((seq, event_id))

    def forget(self) -> None:
        """After a rolled-back savepoint some noted rows are gone (a check writes nothing)."""
        for written in self._written.values():
            written.clear()

    def apply(self, session: Session) -> int:
        """Give the noted rows their ids again, in `seq` order; returns how many moved."""
        moved = 0
        for model, written in self._written.items():
            ids = sorted(event_id for _, event_id in written)
            wanted = {old: new for (_, old), new in zip(sorted(written), ids) if old != new}
            written.clear()
            if not wanted:
                continue
            table = model.__table__
            session.flush()
            renumber = (update(table).where(table.c.id == bindparam("old"))
                        .values(id=bindparam("new")).execution_options(synchronize_session=False))
            # through negative ids, unused, so that no two rows share an id on the way
            session.execute(renumber, [{"old": old, "new": -new} for old, new in wanted.items()])
            session.execute(renumber, [{"old": -new, "new": new} for new in wanted.values()])
            for row in [r for r in session.identity_map.values() if isinstance(r, model)]:
                session.expunge(row)  # loaded under an id that may now be another row's
            moved += len(wanted)
        return moved
