"""Password hashing for annotator accounts: scrypt from the standard library, a fresh salt per
password, parameters stored with the hash so they can be raised later, constant-time checks."""
from __future__ import annotations

import base64
import hashlib
import hmac
import os

SCRYPT_N = 2 ** 14
SCRYPT_R = 8
SCRYPT_P = 1
SCRYPT_DKLEN = 32
_PREFIX = "scrypt"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_password(password: str, *, salt: bytes | None = None, n: int = SCRYPT_N,
                  r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """`scrypt$n$r$p$salt$hash` (base64 parts). The password itself is never stored."""
    if not isinstance(password, str) or not password:
        raise ValueError("a password must be a non-empty string")
    salt = os.urandom(16) if salt is None else salt
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                            dklen=SCRYPT_DKLEN, maxmem=128 * r * n * 2 + 1024 * 1024)
    return f"{_PREFIX}${n}${r}${p}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str | None) -> bool:
    """True when `password` matches the stored hash. A missing or malformed hash never matches,
    and the work done is the same as for a real check (no early answer to time)."""
    parts = (stored or "").split("$")
    valid = len(parts) == 6 and parts[0] == _PREFIX
    try:
        n, r, p = (int(x) for x in parts[1:4]) if valid else (SCRYPT_N, SCRYPT_R, SCRYPT_P)
        salt = base64.b64decode(parts[4]) if valid else b"\0" * 16
        expected = base64.b64decode(parts[5]) if valid else b"\0" * SCRYPT_DKLEN
    except (ValueError, TypeError):
        valid, n, r, p = False, SCRYPT_N, SCRYPT_R, SCRYPT_P
        salt, expected = b"\0" * 16, b"\0" * SCRYPT_DKLEN
    if not (1 < n <= 2 ** 20 and n & (n - 1) == 0 and 0 < r <= 64 and 0 < p <= 16):
        valid, n, r, p = False, SCRYPT_N, SCRYPT_R, SCRYPT_P  # refuse absurd work factors
    digest = hashlib.scrypt((password or "").encode("utf-8"), salt=salt, n=n, r=r, p=p,
                            dklen=len(expected) or SCRYPT_DKLEN,
                            maxmem=128 * r * n * 2 + 1024 * 1024)
    return hmac.compare_digest(digest, expected) and valid


DUMMY_HASH = hash_password("not-a-real-password", salt=b"\x00" * 16)
"""Checked against when a username does not exist, so that answer takes as long as a real one."""
