"""Scorers of the same run at once split the work (`metrics.claims`): two real
`python -m metrics.score` processes on one database, SQLite and PostgreSQL, each score a part,
every generation gets exactly one score and the parts add up; a scorer killed with SIGKILL
leaves a claim that expires, and the next scorer takes its shard over. Real processes racing and
killed (`e2e`); the claims themselves, in-process: test_claims.py."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from db import get_engine, session_scope
from db.models import MetricClaim, MetricScore

ROOT = Path(__file__).resolve().parents[2]
TARGETS_PER_LANGUAGE = 400  # x 5 languages x 5 models = 10,000 generations (~6 s of BLEU)
N = TARGETS_PER_LANGUAGE * 25


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def corpus_url(request, tmp_path):
    from testing.synthetic import add_synthetic_corpus

    url = (f"sqlite:///{tmp_path / 'corpus.db'}" if request.param == "sqlite" else
           request.getfixturevalue("postgres_server").create_database())
    with session_scope(url) as session:
        assert add_synthetic_corpus(session, targets_per_language=TARGETS_PER_LANGUAGE) == N
    yield url
    get_engine(url).dispose()
    get_engine.cache_clear()


def _scorer(url: str, **env) -> subprocess.Popen:
    environment = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    environment.pop("NLCE_DEBUG", None)
    return subprocess.Popen([sys.executable, "-m", "metrics.score", "--metric", "bleu",
                             "--no-progress", "--db", url], cwd=ROOT, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen, said: list[str] | None = None) -> dict[str, int]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    if said is not None:
        said.extend(err.splitlines())
    line = out.splitlines()[0]
    numbers = {name: int(n) for n, name in re.findall(
        r"(\d+) (selected|already stored|scored by another scorer|scored|errors)", line)}
    assert numbers["errors"] == 0, line
    return {"skipped": numbers.get("already stored", 0), "scored": numbers["scored"],
            "elsewhere": numbers.get("scored by another scorer", 0),
            "selected": numbers["selected"]}


def _stored(url: str) -> tuple[int, int, int]:
    """(scores, distinct generations scored, claims left)."""
    with session_scope(url) as session:
        scores, distinct = session.execute(select(
            func.count(), func.count(MetricScore.generation_id.distinct()))).one()
        claims = session.execute(select(func.count()).select_from(MetricClaim)).scalar_one()
    return scores, distinct, claims


@pytest.mark.e2e
def test_two_scorers_at_once_split_the_work(corpus_url):
    first, second = _scorer(corpus_url), _scorer(corpus_url)
    a, b = _finish(first), _finish(second)
    assert _stored(corpus_url) == (N, N, 0)  # every generation once, no claim left behind
    assert a["selected"] == b["selected"] == N
    assert a["scored"] > 0 and b["scored"] > 0, (a, b)  # both did some of it
    assert a["scored"] + b["scored"] == N, (a, b)  # and none of it twice
    for mine in (a, b):  # each accounts for every item
        assert mine["skipped"] + mine["scored"] + mine["elsewhere"] == N, mine


def _wait_for(condition, what: str, process: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.e2e
def test_a_killed_scorers_claim_is_taken_over(corpus_url):
    """The next scorer waits the killed one's lease out, saying so (issue 41.7: it was silent
    for the whole lease, 120 s by default): whose claim, and how long at most."""
    lease = {"NLCE_SCORE_CLAIM_S": "12"}  # longer than the next scorer takes to start
    killed = _scorer(corpus_url, **lease)
    try:
        while True:  # killed while it holds a claim: stopped first, so it cannot release one
            _wait_for(lambda: _stored(corpus_url)[0] >= 256 and _stored(corpus_url)[2] > 0,
                      "a stored chunk and a held claim", killed)
            killed.send_signal(signal.SIGSTOP)
            if _stored(corpus_url)[2] > 0:
                break
            killed.send_signal(signal.SIGCONT)  # it was between two chunks: try again
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
    finally:
        if killed.poll() is None:
            killed.kill()
    with session_scope(corpus_url) as session:  # the dead scorer's claim is still there
        owners = list(session.execute(select(MetricClaim.owner)).scalars())
    assert owners and all(f":{killed.pid}:" in owner for owner in owners)
    stored_before, _, _ = _stored(corpus_url)
    assert 0 < stored_before < N
    said: list[str] = []
    survivor = _finish(_scorer(corpus_url, **lease), said)
    waits = [line for line in said if "waiting for" in line]
    assert len(waits) == 1 and f":{killed.pid}:" in waits[0], said
    assert re.search(r"its claim runs out in \d+ s at most and this scorer takes the work over",
                     waits[0]), waits[0]
    assert _stored(corpus_url) == (N, N, 0)
    assert survivor["skipped"] + survivor["elsewhere"] == stored_before
    assert survivor["scored"] == N - stored_before
