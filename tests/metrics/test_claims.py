"""metrics/claims.py in this process: of two scorers exactly one gets a shard, a holder renews
and releases its own claims only, and a claim its holder stopped renewing (a killed scorer) is
taken over once its lease runs out. Two real scorer processes: test_concurrent_scorers.py."""
from __future__ import annotations

import re
import time

import pytest
from sqlalchemy import select

from db import session_scope
from db.models import MetricClaim, MetricRun
from metrics.claims import LEASE_ENV, Claims, lease_seconds


@pytest.fixture
def run_id(any_engine, any_db_url):
    with session_scope(any_db_url) as session:
        run = MetricRun(signature="metric:bleu|ctx:none|noise:none", metric="bleu")
        session.add(run)
        session.flush()
        return run.id


def _owners(url: str) -> dict[str, str]:
    with session_scope(url) as session:
        return dict(session.execute(select(MetricClaim.shard, MetricClaim.owner)).all())


def test_of_two_scorers_exactly_one_gets_each_shard(any_db_url, run_id):
    with Claims(any_db_url, run_id) as first, Claims(any_db_url, run_id) as second:
        assert first.owner != second.owner
        assert first.claim("1-256") and not second.claim("1-256")
        assert second.claim("257-512") and not first.claim("257-512")
        assert first.claim("1-256")  # a holder may claim its own shard again
        assert _owners(any_db_url) == {"1-256": first.owner, "257-512": second.owner}
        second.release("1-256")  # not its claim: nothing happens
        first.release("1-256")
        assert _owners(any_db_url) == {"257-512": second.owner}
        assert second.claim("1-256") and first.held == set()
    assert _owners(any_db_url) == {}  # closing gives every claim back


def test_a_claim_nobody_renews_is_taken_over_after_its_lease(any_db_url, run_id):
    dead = Claims(any_db_url, run_id, lease=0.5)
    dead._stop.set()  # as a killed scorer: it holds its claim and never renews it
    assert dead.claim("1-256")
    with Claims(any_db_url, run_id, lease=60) as alive:
        assert not alive.claim("1-256")
        deadline = time.monotonic() + 30
        while not alive.claim("1-256"):
            assert time.monotonic() < deadline, "the expired claim was never taken over"
            time.sleep(0.1)
        assert _owners(any_db_url) == {"1-256": alive.owner}
        dead.renew()  # too late: the shard is no longer the dead scorer's
        assert _owners(any_db_url) == {"1-256": alive.owner}


def test_closing_clears_expired_claims_of_finished_shards(any_db_url, run_id):
    """A scorer killed after storing a shard's scores but before releasing it: no one claims
    that shard again (it needs no work), so the next scorer to finish removes the claim."""
    dead = Claims(any_db_url, run_id, lease=0.2)
    dead._stop.set()
    assert dead.claim("1-256")
    with Claims(any_db_url, run_id, lease=60) as live:
        assert live.claim("257-512")
        time.sleep(0.3)  # the dead claim is expired now; the live one is not
    assert _owners(any_db_url) == {}
    with Claims(any_db_url, run_id, lease=60) as holder:  # an unexpired claim of another stays
        assert holder.claim("1-256")
        Claims(any_db_url, run_id, lease=60).close()
        assert _owners(any_db_url) == {"1-256": holder.owner}


def _expiry(url: str, shard: str) -> float:
    with session_scope(url) as session:
        return session.execute(select(MetricClaim.expires_at)
                               .where(MetricClaim.shard == shard)).scalar_one()


def test_a_held_claim_is_renewed_so_it_does_not_expire(any_db_url, run_id):
    with Claims(any_db_url, run_id, lease=1.5) as holder, \
            Claims(any_db_url, run_id, lease=60) as other:
        assert holder.claim("1-256")
        first = _expiry(any_db_url, "1-256")
        deadline = time.monotonic() + 30
        while _expiry(any_db_url, "1-256") <= first:  # the renewal thread, every 0.5 s
            assert time.monotonic() < deadline, "the held claim was never renewed"
            time.sleep(0.1)
        assert not other.claim("1-256")  # renewed a moment ago: still the holder's


def test_the_lease_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(LEASE_ENV, "2.5")
    assert lease_seconds() == 2.5
    for bad in ("soon", "0", "-1"):
        monkeypatch.setenv(LEASE_ENV, bad)
        with pytest.raises(ValueError, match=f"\\${LEASE_ENV} must be"):
            lease_seconds()


def test_a_scorer_waiting_for_a_killed_scorers_shard_says_whose_and_how_long(any_db_url,
                                                                             caplog):
    """Issue 41.7: after a kill -9 while a claim was held, the next `metrics.score` waited the
    lease out (120 s by default) without a word. It says what it waits for, whose claim, and
    how long at most; once, not every second. (With real processes: test_concurrent_scorers.)"""
    from metrics import store
    from metrics.config import ScoringConfig
    from metrics.runner import score_configuration
    from testing.synthetic import add_synthetic_corpus

    with session_scope(any_db_url) as session:
        add_synthetic_corpus(session, targets_per_language=3, languages=("nl", "pl"))
    config = ScoringConfig("bleu")
    rows = store.select_rows(any_db_url, config.validated())
    run_id, _ = store.get_or_create_run(any_db_url, config.validated(), lambda: {})
    dead = Claims(any_db_url, run_id, lease=3)
    dead._stop.set()  # as a killed scorer: it holds its claim and never renews it
    assert dead.claim(f"{rows[0].generation_id}-{rows[-1].generation_id}")
    caplog.set_level("WARNING", logger="metrics.runner")
    started = time.monotonic()
    summary = score_configuration(config, any_db_url, progress=False, chunk_size=1000)
    assert summary.scored == len(rows) and time.monotonic() - started >= 2
    said = [r.getMessage() for r in caplog.records if r.name == "metrics.runner"]
    assert len(said) == 1, said
    assert re.search(rf"waiting for 1 shard\(s\) \({len(rows)} items\) of run {run_id} that "
                     rf"another scorer holds \({re.escape(dead.owner)}\): .* its claim runs out "
                     rf"in [23] s at most and this scorer takes the work over \(a claim lasts "
                     rf"\$NLCE_SCORE_CLAIM_S seconds", said[0]), said[0]
