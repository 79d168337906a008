"""Position-bias control: in which order a target's predictions are shown to the judge.

`fixed` keeps the given order; `shuffle` permutes it with a generator seeded by (seed, target);
`rotate` starts at offset (seed + target) mod n. All three depend only on their arguments, so a
resumed or repeated run presents every target exactly as before, and the order is recorded
(JudgeResponse.order, JudgeVerdict.position) to measure the order effect afterwards.
"""
from __future__ import annotations

import hashlib
import random
from typing import Sequence, TypeVar

ORDER_POLICIES = ("fixed", "shuffle", "rotate")
T = TypeVar("T")


def presentation_order(items: Sequence[T], policy: str, seed: int, target_key: int) -> list[T]:
    if policy not in ORDER_POLICIES:
        raise ValueError(f"unknown order policy {policy!r}; expected one of {', '.join(ORDER_POLICIES)}")
    items = list(items)
    if policy == "fixed" or len(items) < 2:
        return items
    if policy == "rotate":
        k = (seed + target_key) % len(items)
        return items[k:] + items[:k]
    # str seeds hash deterministically across processes (unlike hash() of a tuple of str)
    seed_bytes = hashlib.sha256(f"{seed}:{target_key}".encode()).digest()
    rng = random.Random(int.from_bytes(seed_bytes[:8], "big"))
    rng.shuffle(items)
    return items
