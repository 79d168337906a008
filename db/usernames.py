"""Which account a typed name means, the same on every backend: the account of that exact name,
else the one whose `username_key` (`db.models.username_key`: NFKC + str.casefold, computed in
Python) is the name's. Sign-in, single sign-on, creating accounts and imports go through here,
so 'ŁUKASZ' signs in as 'Łukasz' on SQLite as on PostgreSQL, and no second account may take a
name that differs from one only in case."""
from __future__ import annotations

from sqlalchemy import select
from sqlmodel import Session

from db.models import Annotator, username_key


def account_named(session: Session, name: str) -> Annotator | None:
    """The account `name` means: its exact name first (an account that an older release let in
    beside its case twin has no key), then its key."""
    name = (name or "").strip()
    if not name:
        return None
    return (session.execute(select(Annotator).where(Annotator.username == name)
                            ).scalars().first()
            or session.execute(select(Annotator).where(
                Annotator.username_key == username_key(name))).scalars().first())


def case_twin(session: Session, name: str) -> Annotator | None:
    """An account whose name differs from `name` only in case (or Unicode form), if any."""
    name = (name or "").strip()
    twin = session.execute(select(Annotator).where(
        Annotator.username_key == username_key(name), Annotator.username != name)
    ).scalars().first()
    return twin


def twin_message(name: str, twin: Annotator) -> str:
    """What a refusal of `name` says (the Team page, `--add-user`, an import)."""
    state = "active" if twin.active else "deactivated"
    return (f"account {name!r} differs only in case from the account {twin.username!r} "
            f"({state}), and sign-in does not tell them apart: use {twin.username!r} or "
            f"another name")
