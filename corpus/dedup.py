"""Exact and near-exact duplicate files.

Exact: SHA-256 of the text, and of the text with all whitespace removed (so re-indented or
CRLF/LF copies count as exact too). Near: MinHash over 5-token shingles of the lexed tokens
(words and punctuation), 128 hash functions, LSH with 32 bands of 4 rows to find candidates,
then a duplicate when the estimated Jaccard similarity is >= `threshold` (default 0.85).
"""
from __future__ import annotations

import hashlib
import re
import struct
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

_TOKEN = re.compile(r"\w+|[^\w\s]")
_PRIME = (1 << 31) - 1  # a * h + b stays below 2^63: exact in uint64
_MAX32 = (1 << 32) - 1


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def whitespace_insensitive_hash(text: str) -> str:
    return sha256_text(re.sub(r"\s+", "", text))


def shingles(text: str, size: int = 5) -> set[bytes]:
    tokens = _TOKEN.findall(text)
    if len(tokens) < size:
        return {" ".join(tokens).encode("utf-8")} if tokens else set()
    return {" ".join(tokens[i:i + size]).encode("utf-8") for i in range(len(tokens) - size + 1)}


@lru_cache(maxsize=8)
def _coefficients(num_perm: int, seed: int) -> list[tuple[int, int]]:
    out = []
    for i in range(num_perm):
        digest = hashlib.sha256(f"{seed}:{i}".encode()).digest()
        a, b = struct.unpack("<QQ", digest[:16])
        out.append((a % (_PRIME - 1) + 1, b % _PRIME))
    return out


def minhash(text: str, num_perm: int = 128, seed: int = 1) -> tuple[int, ...]:
    """The MinHash signature of the text's shingle set (universal hashing mod 2^31-1)."""
    hashes = np.fromiter(
        (int.from_bytes(hashlib.blake2b(s, digest_size=4).digest(), "little")
         for s in shingles(text)), dtype=np.uint64)
    if hashes.size == 0:
        return tuple([_MAX32] * num_perm)
    coefficients = np.array(_coefficients(num_perm, seed), dtype=np.uint64)
    a, b = coefficients[:, :1], coefficients[:, 1:]
    return tuple(int(x) for x in ((a * hashes[None, :] + b) % _PRIME).min(axis=1))


def estimated_jaccard(sig_a: tuple[int, ...], sig_b: tuple[int, ...]) -> float:
    return sum(x == y for x, y in zip(sig_a, sig_b)) / len(sig_a)


@dataclass
class DuplicateIndex:
    """Files seen so far; `check(key, text)` answers why a new text is a duplicate, or None."""

    threshold: float = 0.85
    num_perm: int = 128
    bands: int = 32
    near: bool = True
    _exact: dict[str, str] = field(default_factory=dict)
    _signatures: dict[str, tuple[int, ...]] = field(default_factory=dict)
    _buckets: dict[tuple[int, tuple[int, ...]], list[str]] = field(default_factory=dict)

    def check(self, key: str, text: str) -> tuple[str, str] | None:
        """(kind 'exact' | 'near', key of the earlier file) or None; remembers a new text."""
        for digest in (sha256_text(text), whitespace_insensitive_hash(text)):
            if digest in self._exact:
                return "exact", self._exact[digest]
        signature = minhash(text, self.num_perm) if self.near else None
        if signature is not None:
            rows = self.num_perm // self.bands
            seen: set[str] = set()
            for band in range(self.bands):
                bucket = (band, signature[band * rows:(band + 1) * rows])
                for other in self._buckets.get(bucket, ()):
                    if other in seen:
                        continue
                    seen.add(other)
                    if estimated_jaccard(signature, self._signatures[other]) >= self.threshold:
                        return "near", other
        self.add(key, text, signature)
        return None

    def add(self, key: str, text: str, signature: tuple[int, ...] | None = None) -> None:
        for digest in (sha256_text(text), whitespace_insensitive_hash(text)):
            self._exact.setdefault(digest, key)
        if self.near:
            signature = signature or minhash(text, self.num_perm)
            self._signatures[key] = signature
            rows = self.num_perm // self.bands
            for band in range(self.bands):
                self._buckets.setdefault((band, signature[band * rows:(band + 1) * rows]),
                                         []).append(key)
