"""Password hashes."""
from __future__ import annotations

from annotate.auth import hash_password, verify_password


def test_scrypt_hash_round_trip_and_salt():
    stored = hash_password("demo")
    assert stored.startswith("scrypt$") and "demo" not in stored
    assert verify_password("demo", stored)
    assert not verify_password("Demo", stored)
    assert hash_password("demo") != stored  # a fresh salt every time


def test_malformed_or_missing_hash_never_matches():
    for stored in (None, "", "plain", "scrypt$1$2$3$@@@$@@@", "md5$x$y$z$a$b"):
        assert not verify_password("demo", stored)
