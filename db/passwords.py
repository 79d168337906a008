"""Password hashes of accounts: scrypt from the standard library, a fresh salt per password, the
parameters stored with the hash (`scrypt$N$r$p$salt$hash`, base64 parts) so that old hashes still
verify and are re-hashed at the current cost when their owner signs in, constant-time checks.

The cost is OWASP's minimum for scrypt (N=2^17, r=8, p=1: 128 MiB and about half a second per
hash on one core). `NLCE_INSECURE_FAST_PASSWORD_HASHES=1` lowers it to N=2^10 for test suites
that create many accounts: never set it on a server (`python -m annotate` warns when it is set);
the tests check the real parameters too. The app signs in here and `db import --trust-accounts`
refuses hashes weaker than `minimum_cost()`.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
from typing import NamedTuple

FAST_HASHES_ENV = "NLCE_INSECURE_FAST_PASSWORD_HASHES"
PREFIX = "scrypt"
DKLEN = 32


class ScryptCost(NamedTuple):
    n: int
    r: int
    p: int

    @property
    def memory_bytes(self) -> int:
        return 128 * self.r * self.n

    def weaker_than(self, other: ScryptCost) -> bool:
        """Less memory (N*r) or less work (N*r*p) than `other`."""
        return (self.n * self.r < other.n * other.r
                or self.n * self.r * self.p < other.n * other.r * other.p)

    def __str__(self) -> str:
        return f"N={self.n}, r={self.r}, p={self.p}"


OWASP_COST = ScryptCost(2 ** 17, 8, 1)  # OWASP Password Storage Cheat Sheet, scrypt minimum
TEST_COST = ScryptCost(2 ** 10, 8, 1)  # only with NLCE_INSECURE_FAST_PASSWORD_HASHES=1
_LIMITS = ScryptCost(2 ** 20, 64, 16)  # a stored hash asking for more work is refused


def fast_hashes() -> bool:
    return os.environ.get(FAST_HASHES_ENV, "").strip().lower() in ("1", "true", "yes")


def current_cost() -> ScryptCost:
    """The cost new hashes get (and that older ones are raised to at sign-in)."""
    return TEST_COST if fast_hashes() else OWASP_COST


def minimum_cost() -> ScryptCost:
    """The weakest cost an imported hash may have."""
    return current_cost()


class PasswordHashError(ValueError):
    """A stored or imported password hash that is not in the scrypt layout."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _scrypt(password: str, salt: bytes, cost: ScryptCost, dklen: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=cost.n, r=cost.r, p=cost.p,
                          dklen=dklen, maxmem=2 * cost.memory_bytes + (1 << 20))


def hash_password(password: str, *, salt: bytes | None = None,
                  cost: ScryptCost | None = None) -> str:
    """`scrypt$N$r$p$salt$hash` at `cost` (default: `current_cost()`). The password itself is
    never stored."""
    if not isinstance(password, str) or not password:
        raise ValueError("a password must be a non-empty string")
    cost = cost or current_cost()
    salt = os.urandom(16) if salt is None else salt
    return (f"{PREFIX}${cost.n}${cost.r}${cost.p}${_b64(salt)}$"
            f"{_b64(_scrypt(password, salt, cost, DKLEN))}")


def parse_hash(stored: str) -> tuple[ScryptCost, bytes, bytes]:
    """(cost, salt, digest) of a stored hash; PasswordHashError saying what is wrong."""
    parts = str(stored or "").split("$")
    if len(parts) != 6 or parts[0] != PREFIX:
        raise PasswordHashError("not a scrypt hash in the layout scrypt$N$r$p$salt$hash")
    try:
        cost = ScryptCost(*(int(x) for x in parts[1:4]))
        salt = base64.b64decode(parts[4], validate=True)
        digest = base64.b64decode(parts[5], validate=True)
    except (ValueError, TypeError):
        raise PasswordHashError("a scrypt hash with unreadable parameters, salt or hash"
                                ) from None
    if not (1 < cost.n <= _LIMITS.n and cost.n & (cost.n - 1) == 0
            and 0 < cost.r <= _LIMITS.r and 0 < cost.p <= _LIMITS.p) or not salt or not digest:
        raise PasswordHashError(f"a scrypt hash with impossible parameters ({cost})")
    return cost, salt, digest


def check_importable(stored: str) -> None:
    """PasswordHashError unless `stored` is a well-formed hash at least as strong as
    `minimum_cost()` (an import must not bring in hashes that are cheaper to crack)."""
    cost = parse_hash(stored)[0]
    if cost.weaker_than(minimum_cost()):
        raise PasswordHashError(f"the hash's scrypt parameters ({cost}) are weaker than the "
                                f"minimum ({minimum_cost()}); let its owner sign in once where "
                                f"it is stored now (that re-hashes it), or set a new password "
                                f"after the import")


def needs_rehash(stored: str | None) -> bool:
    """True when a hash that just verified should be replaced by one at `current_cost()`."""
    try:
        return parse_hash(stored)[0].weaker_than(current_cost())
    except PasswordHashError:
        return False


def verify_password(password: str, stored: str | None) -> bool:
    """True when `password` matches the stored hash. A missing or malformed hash never matches,
    and costs one scrypt at the current cost all the same (no early answer to time)."""
    try:
        cost, salt, expected = parse_hash(stored)
        valid = True
    except PasswordHashError:
        cost, salt, expected, valid = current_cost(), b"\0" * 16, b"\0" * DKLEN, False
    digest = _scrypt(password if isinstance(password, str) else "", salt, cost, len(expected))
    return hmac.compare_digest(digest, expected) and valid


def dummy_hash() -> str:
    """Checked against when a username has no password, so that answer takes as long as a real
    one. It matches no password (its digest is zeros), and costs nothing to make."""
    cost = current_cost()
    return f"{PREFIX}${cost.n}${cost.r}${cost.p}${_b64(bytes(16))}${_b64(bytes(DKLEN))}"
