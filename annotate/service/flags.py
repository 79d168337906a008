"""Flags: the lead's list of flagged labels and the answer to each, which the annotator then
sees on the item (the annotator's label itself is not touched)."""
from __future__ import annotations

from sqlalchemy import func, select
from sqlmodel import Session

from annotate.service.accounts import Operator, require_role
from annotate.service.errors import LabelError
from db import models as m
from db.targets import TARGET_LANGUAGE, with_source

MAX_REPLY_CHARS = 4000


def flagged_items(session: Session, *, acting: int | Operator) -> list[dict]:
    """Every flagged label with its note and the answer so far, oldest first (a lead action)."""
    require_role(session, acting, "read_flags")
    rows = session.exec(
        with_source(select(m.Annotation.generation_id, m.Annotator.id, m.Annotator.username,
                           TARGET_LANGUAGE, m.Annotation.note, m.FlagReply.text)
                    .join(m.Annotator, m.Annotator.id == m.Annotation.annotator_id)
                    .join(m.Generation, m.Generation.id == m.Annotation.generation_id)
                    .join(m.Target, m.Target.id == m.Generation.target_id))
        .outerjoin(m.FlagReply, m.FlagReply.annotation_id == m.Annotation.id)
        .where(m.Annotation.status == "flagged")
        .order_by(m.Annotation.updated_at, m.Annotation.id)).all()
    return [{"generation_id": gid, "annotator_id": aid, "annotator": user, "language": lang,
             "note": note or "", "reply": reply or ""}
            for gid, aid, user, lang, note, reply in rows]


def open_flag_count(session: Session, *, acting: int | Operator) -> int:
    """How many flagged labels have no answer yet (the navigation shows it to the lead)."""
    require_role(session, acting, "read_flags")
    return int(session.exec(
        select(func.count()).select_from(m.Annotation)
        .outerjoin(m.FlagReply, m.FlagReply.annotation_id == m.Annotation.id)
        .where(m.Annotation.status == "flagged", m.FlagReply.id.is_(None))).scalar_one())


def _annotation(session: Session, generation_id: int, annotator_id: int) -> m.Annotation | None:
    return session.exec(select(m.Annotation).where(
        m.Annotation.generation_id == generation_id,
        m.Annotation.annotator_id == annotator_id)).scalars().first()


def answer_flag(session: Session, *, generation_id: int, annotator_id: int, text: str,
                acting: int | Operator) -> None:
    """Store (or replace) the lead's answer to an annotator's label (a lead action)."""
    lead = require_role(session, acting, "answer_flag")
    text = (text or "").strip()
    if not text:
        raise LabelError("Not saved: the answer is empty")
    if len(text) > MAX_REPLY_CHARS:
        raise LabelError(f"Not saved: the answer has {len(text)} characters, at most "
                         f"{MAX_REPLY_CHARS}")
    annotation = _annotation(session, generation_id, annotator_id)
    if annotation is None:
        raise LabelError(f"Not saved: account #{annotator_id} has no label on item "
                         f"#{generation_id}")
    reply = session.exec(select(m.FlagReply).where(
        m.FlagReply.annotation_id == annotation.id)).scalars().first()
    reply = reply or m.FlagReply(annotation_id=annotation.id, lead_id=0)
    reply.lead_id = lead.id if lead else annotation.annotator_id
    reply.text = text
    reply.created_at = m.utcnow()
    session.add(reply)
    session.flush()


def flag_answer(session: Session, generation_id: int, annotator_id: int) -> str | None:
    """The lead's answer to the caller's own label on an item, if any."""
    return session.exec(
        select(m.FlagReply.text).join(m.Annotation, m.Annotation.id == m.FlagReply.annotation_id)
        .where(m.Annotation.generation_id == generation_id,
               m.Annotation.annotator_id == annotator_id)).scalars().first()
