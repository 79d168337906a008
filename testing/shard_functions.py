"""Scoring functions for the executor tests (tests/metrics/test_parallel.py, tests/scale/): what
a worker runs, importable by name in a spawned process or a Ray worker. Some fail on purpose, the
way a worker can (an exception, an out-of-memory kill, a lost node): they count their calls in
marker files, so a failure happens on the first N attempts of a shard whichever process or Ray
worker runs it."""
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


def double_or_die(config: dict, items: list[dict]) -> list[dict]:
    """Doubles each item's x; the first attempt of the shard with item id `config['die_at']`
    ends its worker process at once (as an out-of-memory kill does)."""
    if items[0]["id"] == config["die_at"] and _attempt(config["fail_dir"], "died") == 0:
        os._exit(9)
    return [dict(id=item["id"], value=item["x"] * 2, pid=os.getpid()) for item in items]


_prepared: list = []  # payloads `prepare` saw in this process


def prepare_then_report(payload, items: list) -> list[dict]:
    """What the worker knows: its pid, its torch thread setting, how often `prepare` ran here."""
    return [dict(item=item, pid=os.getpid(), omp=os.environ.get("OMP_NUM_THREADS"),
                 prepared=list(_prepared)) for item in items]


prepare_then_report.prepare = _prepared.append


def wrong_count(payload, items: list) -> list:
    return items[:-1]


def runner_fail_first(payload, items) -> list:
    """The metrics runner's worker function, except that each shard's first attempt fails."""
    from metrics.core import score_chunk

    config = payload[0]
    name = f"{config.metric}-{config.context}-seed{config.seed}-{items[0].subject_id}"
    if _attempt(os.environ[FAIL_DIR_ENV], name) == 0:
        raise RuntimeError("flaky worker: first attempt fails on purpose")
    return score_chunk(payload, items)
