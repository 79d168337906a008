"""Signing in: password checks with a lockout against guessing, OIDC e-mail sign-in, and the
server-side sessions behind the browser cookie (revoked by sign-out, deactivation and a new
password; kept across server restarts because they live in the database).

Every failed password sign-in gets the same sentence (SIGN_IN_FAILED), whether the name exists,
the password is wrong, the account is locked, deactivated or single-sign-on only, so the
answers say nothing about which accounts exist."""
from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta, timezone

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from annotate.auth import DUMMY_HASH, verify_password
from annotate.service.accounts import AnnotatorInfo, _info
from annotate.service.errors import AuthError
from db import models as m

MAX_FAILURES = 5  # failed password sign-ins in a row before a name is locked
LOCKOUT = timedelta(minutes=15)
SESSION_LIFETIME = timedelta(hours=12)
SIGN_IN_FAILED = ("Sign-in failed: wrong username or password. After 5 failed tries in a row "
                  "an account waits 15 minutes; ask your lead if you cannot sign in.")


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(timezone.utc)


def _aware(value: datetime | None) -> datetime | None:
    """Stored times come back naive from some drivers; they are UTC."""
    return value.replace(tzinfo=timezone.utc) if value and value.tzinfo is None else value


def authenticate(session: Session, username: str, password: str, *,
                 now: datetime | None = None) -> AnnotatorInfo:
    """The active account for these credentials, else AuthError(SIGN_IN_FAILED).

    A name with MAX_FAILURES failures in a row is locked for LOCKOUT, the right password
    included. A failure is committed before AuthError is raised, so that the caller's rollback
    cannot erase it; a success clears the count. Every path does one scrypt check (same time)."""
    now = _now(now)
    key = (username or "").strip().lower()
    throttle = session.get(m.SignInThrottle, key) if key else None
    locked = throttle is not None and (_aware(throttle.locked_until) or now) > now
    row = session.exec(select(m.Annotator).where(
        func.lower(m.Annotator.username) == key)).scalars().first() if key else None
    stored = row.password_hash if row is not None else None
    matches = verify_password(password or "", stored or DUMMY_HASH) and stored is not None
    if matches and not locked and row.active:
        if throttle is not None:
            session.delete(throttle)
        return _info(row)
    if key and not locked:
        _record_failure(session, key, now)
    raise AuthError(SIGN_IN_FAILED)


def _record_failure(session: Session, key: str, now: datetime) -> None:
    for attempt in range(2):  # two first failures at once: the second insert loses, then counts
        throttle = session.get(m.SignInThrottle, key) or m.SignInThrottle(username=key,
                                                                          failures=0)
        throttle.failures += 1
        throttle.last_failure_at = now
        if throttle.failures >= MAX_FAILURES:
            throttle.locked_until = now + LOCKOUT
            throttle.failures = 0  # the next round of tries starts after the lock
        session.add(throttle)
        try:
            session.commit()
            return
        except IntegrityError:
            session.rollback()
            if attempt:
                raise


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


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def start_session(session: Session, annotator_id: int, *, now: datetime | None = None) -> str:
    """A new signed-in session for the cookie: a random token, of which only the SHA-256 is
    stored (a copy of the table signs nobody in). Sessions expired for a day are dropped."""
    now = _now(now)
    token = secrets.token_urlsafe(32)
    session.exec(delete(m.AnnotatorSession).where(
        m.AnnotatorSession.expires_at < now - timedelta(days=1)))
    session.add(m.AnnotatorSession(annotator_id=annotator_id, token_sha256=_digest(token),
                                   created_at=now, expires_at=now + SESSION_LIFETIME))
    session.flush()
    return token


def session_account(session: Session, token: str | None, *, now: datetime | None = None
                    ) -> AnnotatorInfo | None:
    """The account of a session token that is neither revoked nor expired, if that account is
    still active; None for anything else."""
    if not isinstance(token, str) or not token:
        return None
    row = session.exec(select(m.Annotator).join(
        m.AnnotatorSession, m.AnnotatorSession.annotator_id == m.Annotator.id).where(
        m.AnnotatorSession.token_sha256 == _digest(token),
        m.AnnotatorSession.revoked_at.is_(None),
        m.AnnotatorSession.expires_at > _now(now),
        m.Annotator.active.is_(True))).scalars().first()
    return _info(row) if row is not None else None


def end_session(session: Session, token: str | None) -> bool:
    """Revoke one session (sign-out): the token signs nobody in from now on, wherever it was
    copied to. True when it was open."""
    if not isinstance(token, str) or not token:
        return False
    result = session.exec(update(m.AnnotatorSession).where(
        m.AnnotatorSession.token_sha256 == _digest(token),
        m.AnnotatorSession.revoked_at.is_(None)).values(revoked_at=m.utcnow()))
    return bool(result.rowcount)
