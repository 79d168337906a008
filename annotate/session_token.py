"""Signed sign-in tokens kept in a browser cookie, so a reload or a reopened tab stays signed
in. A token names the annotator and an expiry and carries an HMAC over both; the secret comes
from $NLCE_SESSION_SECRET (`python -m annotate` sets a fresh one per server start)."""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import time

COOKIE_NAME = "nlce_session"
SECRET_ENV = "NLCE_SESSION_SECRET"
LIFETIME_S = 12 * 3600
_PROCESS_SECRET = os.urandom(32)  # used when no secret is configured: valid until restart


def _secret() -> bytes:
    configured = os.environ.get(SECRET_ENV)
    return configured.encode("utf-8") if configured else _PROCESS_SECRET


def _mac(payload: str) -> str:
    digest = hmac.new(_secret(), payload.encode("ascii"), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def make_token(annotator_id: int, *, now: float | None = None, lifetime_s: int = LIFETIME_S
               ) -> str:
    payload = f"{int(annotator_id)}.{int((now or time.time()) + lifetime_s)}"
    return f"{payload}.{_mac(payload)}"


def read_token(token: str | None, *, now: float | None = None) -> int | None:
    """The annotator id of a valid, unexpired token; None for anything else."""
    parts = (token or "").split(".")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    payload = f"{parts[0]}.{parts[1]}"
    if not hmac.compare_digest(_mac(payload), parts[2]):
        return None
    if int(parts[1]) < (now or time.time()):
        return None
    return int(parts[0])
