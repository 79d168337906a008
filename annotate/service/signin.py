"""Signing in: password checks guarded against guessing, OIDC e-mail sign-in, and the
server-side sessions behind the browser cookie (revoked by sign-out, deactivation and a new
password; kept across server restarts because they live in the database).

Every failed password sign-in gets the same sentence (SIGN_IN_FAILED), whether the name exists,
the password is wrong, the account is locked, deactivated or single-sign-on only, so the
answers say nothing about which accounts exist.

Guessing is slowed where it happens, so that an outsider cannot lock a named annotator out
(docs/annotate.md, "Sign-in and guessing"):
- the lockout is kept per (name, client): MAX_FAILURES failures in a row from one client lock
  that name for LOCKOUT *from that client* only; the annotator signs in from their own client
  as usual;
- `SignInGate` (one per app process) lets each client try RATE_BURST sign-ins at once and then
  one every RATE_INTERVAL, whatever the names ("20 names in 7.5 s" from one client: 6 are
  checked), one at a time per client, and at most `slots` scrypt checks at once in the
  process (each takes 128 MiB).
A caller that names no client (commands with direct database access, tests) shares one lockout
per name, as before, and is not rate-limited."""
from __future__ import annotations

import hashlib
import os
import secrets
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterator

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from annotate.service.accounts import AnnotatorInfo, _info, account_id
from annotate.service.errors import AuthError
from db import models as m
from db.models import username_key
from db.passwords import dummy_hash, hash_password, needs_rehash, verify_password
from db.usernames import account_named

MAX_FAILURES = 5  # failed password sign-ins in a row, from one client, before it is locked out
LOCKOUT = timedelta(minutes=15)
SESSION_LIFETIME = timedelta(hours=12)
RATE_BURST = 5  # sign-in attempts a client may make at once ...
RATE_INTERVAL = 6.0  # ... and then one per this many seconds
SLOT_WAIT_S = 60.0  # how long an attempt waits for a free scrypt slot before "busy"
SIGN_IN_FAILED = ("Sign-in failed: wrong username or password. After 5 failed tries in a row "
                  "from this address, this name waits 15 minutes here (elsewhere it is not "
                  "affected); ask your lead if you cannot sign in.")


class TooManyAttempts(AuthError):
    """A client over its sign-in rate (or with one already running); nothing was checked."""

    def __init__(self, retry_after: float):
        self.retry_after = max(1, int(retry_after + 0.999))
        super().__init__(f"Too many sign-in attempts from this address: wait "
                         f"{self.retry_after} seconds and try again.")


class SignInGate:
    """Per-client token buckets, one attempt at a time per client, and a cap on concurrent
    scrypt checks in this process. Thread-safe (Streamlit runs each session in a thread)."""

    def __init__(self, *, burst: int = RATE_BURST, interval: float = RATE_INTERVAL,
                 slots: int | None = None, clock: Callable[[], float] = time.monotonic,
                 slot_wait: float = SLOT_WAIT_S):
        self.burst, self.interval, self.clock, self.slot_wait = burst, interval, clock, slot_wait
        self.slots = slots or max(1, min(4, os.cpu_count() or 1))
        self._hashing = threading.BoundedSemaphore(self.slots)
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, at)
        self._running: set[str] = set()

    def _take(self, client: str) -> None:
        now = self.clock()
        with self._lock:
            if len(self._buckets) > 10_000:  # forget clients whose bucket has refilled
                full = self.burst * self.interval
                self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < full}
            tokens, at = self._buckets.get(client, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) / self.interval)
            if client in self._running:
                raise TooManyAttempts(1)
            if tokens < 1:
                raise TooManyAttempts((1 - tokens) * self.interval)
            self._buckets[client] = (tokens - 1, now)
            self._running.add(client)

    @contextmanager
    def attempt(self, client: str | None) -> Iterator[None]:
        """One sign-in attempt: TooManyAttempts when `client` is over its rate; then holds a
        scrypt slot (AuthError "busy" when none frees up within `slot_wait`)."""
        if client:
            self._take(client)
        try:
            if not self._hashing.acquire(timeout=self.slot_wait):
                raise AuthError("The server is busy signing people in; try again in a moment.")
            try:
                yield
            finally:
                self._hashing.release()
        finally:
            if client:
                with self._lock:
                    self._running.discard(client)


GATE = SignInGate()  # the app process's gate


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(timezone.utc)


def _aware(value: datetime | None) -> datetime | None:
    """Stored times come back naive from some drivers; they are UTC."""
    return value.replace(tzinfo=timezone.utc) if value and value.tzinfo is None else value


def throttle_key(username: str, client: str | None) -> str:
    """The lockout row of a (name, client): the name alone when no client is known. Clients
    are stored as a digest (no addresses in the database)."""
    name = username_key(username or "")
    if not client:
        return name
    return f"{name}#{hashlib.sha256(client.encode('utf-8')).hexdigest()[:16]}"


def authenticate(session: Session, username: str, password: str, *, client: str | None = None,
                 now: datetime | None = None, gate: SignInGate | None = None) -> AnnotatorInfo:
    """The active account for these credentials, else AuthError(SIGN_IN_FAILED).

    `client` names where the attempt comes from (the app passes the remote address): it is
    rate-limited by `gate` (TooManyAttempts, nothing checked), and MAX_FAILURES failures in a
    row lock this name *from this client* for LOCKOUT, the right password included. A failure
    is committed before AuthError is raised, so that the caller's rollback cannot erase it; a
    success clears the count, and re-hashes a password stored at a lower cost than today's
    (the caller commits). Every path does one scrypt check (same time)."""
    with (gate or GATE).attempt(client):
        return _check(session, username, password, client, _now(now))


def _check(session: Session, username: str, password: str, client: str | None,
           now: datetime) -> AnnotatorInfo:
    name = (username or "").strip() if isinstance(username, str) else ""
    key = throttle_key(name, client) if name else ""
    throttle = session.get(m.SignInThrottle, key) if key else None
    locked = throttle is not None and (_aware(throttle.locked_until) or now) > now
    row = account_named(session, name)
    stored = row.password_hash if row is not None else None
    password = password if isinstance(password, str) else ""
    matches = verify_password(password, stored or dummy_hash()) and stored is not None
    if matches and not locked and row.active:
        if throttle is not None:
            session.delete(throttle)
        if needs_rehash(stored):
            row.password_hash = hash_password(password)  # raised to today's cost
            session.add(row)
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
    row = account_named(session, email)
    if row is None or not row.active:
        raise AuthError(f"No active account for {email!r}. Ask your lead to create one with "
                        f"that e-mail address as its username.")
    return _info(row)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def start_session(session: Session, annotator_id: int, *, now: datetime | None = None) -> str:
    """A new signed-in session for the cookie: a random token, of which only the SHA-256 is
    stored (a copy of the table signs nobody in). Sessions expired for a day are dropped."""
    account_id(annotator_id)
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
