"""Password hashes and session tokens."""
from __future__ import annotations

from annotate.auth import hash_password, verify_password
from annotate.session_token import make_token, read_token


def test_scrypt_hash_round_trip_and_salt():
    stored = hash_password("demo")
    assert stored.startswith("scrypt$") and "demo" not in stored
    assert verify_password("demo", stored)
    assert not verify_password("Demo", stored)
    assert hash_password("demo") != stored  # a fresh salt every time


def test_malformed_or_missing_hash_never_matches():
    for stored in (None, "", "plain", "scrypt$1$2$3$@@@$@@@", "md5$x$y$z$a$b"):
        assert not verify_password("demo", stored)


def test_session_token_is_signed_and_expires():
    token = make_token(7, now=1000.0, lifetime_s=60)
    assert read_token(token, now=1030.0) == 7
    assert read_token(token, now=1061.0) is None
    forged = "8" + token[1:]
    assert read_token(forged, now=1030.0) is None
    assert read_token("garbage", now=1030.0) is None
