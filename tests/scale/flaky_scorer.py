"""Scoring functions for the executor tests that fail on purpose, the way a worker can (an
out-of-memory kill, a lost node): they count their calls in marker files, so a failure happens
on the first N attempts of a shard whichever process or Ray worker runs it."""
from __future__ import annotations

import os
from pathlib import Path

FAIL_DIR_ENV = "NLCE_TEST_FAIL_DIR"


def _attempt(folder: str, name: str) -> int:
    """How many times this shard was attempted before (and count this attempt)."""
    marker = Path(folder) / name
    before = int(marker.read_text()) if marker.exists() else 0
    marker.write_text(str(before + 1))
    return before


def double_or_fail(config: dict, items: list[dict]) -> list[dict]:
    """Doubles each item's x; fails the first `config['fail_times']` attempts of a shard."""
    before = _attempt(config["fail_dir"], f"{config['name']}-{items[0]['id']}")
    if before < config["fail_times"]:
        raise RuntimeError(f"flaky worker: failing attempt {before + 1} on purpose")
    return [dict(id=item["id"], value=item["x"] * 2, pid=os.getpid()) for item in items]


def runner_fail_first(payload, items) -> list:
    """The metrics runner's worker function, except that each shard's first attempt fails."""
    from metrics.core import score_chunk

    config = payload[0]
    name = f"{config.metric}-{config.context}-seed{config.seed}-{items[0].subject_id}"
    if _attempt(os.environ[FAIL_DIR_ENV], name) == 0:
        raise RuntimeError("flaky worker: first attempt fails on purpose")
    return score_chunk(payload, items)
