"""Shards of a metric run claimed by concurrent scorers, so that they split the work.

Two `metrics.score` processes (or machines on one PostgreSQL server) on the same configuration
select the same items and cut them into the same shards (`metrics.runner`). Before scoring a
shard a scorer claims it: one `metric_claim` row per (run, shard), taken with a single atomic
statement, so of two scorers exactly one gets it, on SQLite (one writer at a time) and on
PostgreSQL alike (`INSERT ... ON CONFLICT DO NOTHING`, or a conditional `UPDATE` of an expired
claim, which PostgreSQL re-checks after the row lock). The holder renews its claims from a
background thread every third of the lease and deletes each claim once its scores are stored;
a scorer that was killed stops renewing, so its claims expire after the lease and another
scorer takes the shards over. Scores stay unique per (run, subject) in any case
(`metrics.store.insert_scores`): a claim only saves the work, it never decides correctness.

The lease is `$NLCE_SCORE_CLAIM_S` seconds (default 120); hosts that share a server database need
clocks within a fraction of it (NTP). A scorer that finds shards held by another says so, with
the holder and how long it may wait (`wait_message`): a killed holder's claim is waited out in
full, which would otherwise look like a hang.
"""
from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from typing import Iterable

from sqlalchemy import delete, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from db import session_scope
from db.engine import get_engine, resolve_url
from db.models import MetricClaim

LEASE_ENV = "NLCE_SCORE_CLAIM_S"
DEFAULT_LEASE_S = 120.0


def lease_seconds() -> float:
    value = os.environ.get(LEASE_ENV)
    try:
        lease = float(value) if value else DEFAULT_LEASE_S
    except ValueError:
        raise ValueError(f"${LEASE_ENV} must be a number of seconds, not {value!r}") from None
    if lease <= 0:
        raise ValueError(f"${LEASE_ENV} must be positive, not {value!r}")
    return lease


@dataclass(frozen=True)
class Holder:
    """Another scorer's claim on a shard: who (host:pid:random) and until when (epoch s)."""
    shard: str
    owner: str
    expires_at: float


def wait_message(run_id: int, holders: list[Holder], items: int, now: float | None = None
                 ) -> str:
    """What a scorer says while it waits for shards other scorers hold: how many, whose, and
    how long at most should their holder have stopped (killed, or its machine gone)."""
    now = time.time() if now is None else now
    owners = sorted({h.owner for h in holders})
    left = max(0.0, max((h.expires_at for h in holders), default=now) - now)
    return (f"waiting for {len(holders)} shard(s) ({items} items) of run {run_id} that another "
            f"scorer holds ({', '.join(owners[:3])}{', ...' if len(owners) > 3 else ''}): a "
            f"working scorer renews its claim and stores the scores; if it stopped (killed, or "
            f"its machine went down), its claim runs out in {left:.0f} s at most and this scorer "
            f"takes the work over (a claim lasts ${LEASE_ENV} seconds, default "
            f"{DEFAULT_LEASE_S:g}, from its holder's last renewal)")


def _insert_if_absent(dialect: str):
    """INSERT that does nothing when the row exists (rowcount 0), where the dialect has it."""
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    elif dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        return None
    return dialect_insert(MetricClaim).on_conflict_do_nothing()


class Claims:
    """This scorer's claims on the shards of one run; `close()` (or `with`) gives them all
    back and stops the renewal."""

    def __init__(self, url: str | None, run_id: int, lease: float | None = None):
        self.url, self.run_id = resolve_url(url), run_id
        self.lease = lease or lease_seconds()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.held: set[str] = set()
        self._dialect = get_engine(self.url).dialect.name
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew_until_stopped, daemon=True,
                                         name=f"claims-run{run_id}")
        self._renewer.start()

    def __enter__(self) -> "Claims":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def claim(self, shard: str) -> bool:
        """Take `shard` if nobody holds it or its holder's lease ran out; True when this scorer
        now holds it."""
        now = time.time()
        with session_scope(self.url) as session:  # take over an expired claim (or renew ours)
            taken = session.execute(
                update(MetricClaim)
                .where(MetricClaim.run_id == self.run_id, MetricClaim.shard == shard,
                       or_(MetricClaim.expires_at < now, MetricClaim.owner == self.owner))
                .values(owner=self.owner, expires_at=now + self.lease)
                .returning(MetricClaim.shard)).first() is not None
        if not taken:  # (RETURNING, not rowcount: psycopg gives -1 for an INSERT's rowcount)
            row = {"run_id": self.run_id, "shard": shard, "owner": self.owner,
                   "expires_at": now + self.lease}
            statement = _insert_if_absent(self._dialect)
            try:
                with session_scope(self.url) as session:
                    if statement is None:
                        session.execute(insert(MetricClaim).values(**row))
                        taken = True
                    else:
                        taken = session.execute(statement.values(**row).returning(
                            MetricClaim.shard)).first() is not None
            except IntegrityError:  # another scorer inserted it first
                taken = False
        if taken:
            self.held.add(shard)
        return taken

    def holders(self, shards: Iterable[str]) -> list[Holder]:
        """Other scorers' claims on these shards of this run, as stored now."""
        shards = list(shards)
        if not shards:
            return []
        with session_scope(self.url) as session:
            rows = session.execute(select(MetricClaim.shard, MetricClaim.owner,
                                          MetricClaim.expires_at).where(
                MetricClaim.run_id == self.run_id, MetricClaim.shard.in_(shards),
                MetricClaim.owner != self.owner).order_by(MetricClaim.shard)).all()
        return [Holder(*row) for row in rows]

    def release(self, shard: str) -> None:
        """Give `shard` back (its scores are stored, or it failed and another may retry it)."""
        self.held.discard(shard)
        with session_scope(self.url) as session:
            session.execute(delete(MetricClaim).where(
                MetricClaim.run_id == self.run_id, MetricClaim.shard == shard,
                MetricClaim.owner == self.owner))

    def renew(self) -> None:
        """Push the expiry of every claim this scorer holds one lease ahead."""
        if not self.held:
            return
        with session_scope(self.url) as session:
            session.execute(update(MetricClaim)
                            .where(MetricClaim.run_id == self.run_id,
                                   MetricClaim.owner == self.owner)
                            .values(expires_at=time.time() + self.lease))

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.lease / 3):
            try:
                self.renew()
            except Exception:  # noqa: BLE001 - a database hiccup: the next round retries
                pass

    def close(self) -> None:
        """Stop renewing and give back every claim (should the database be gone by now, they
        expire after the lease instead). Expired claims of this run go too: a scorer killed
        between storing a shard and releasing it leaves a claim that nobody takes over, since
        its shard needs no more work."""
        self._stop.set()
        self._renewer.join(timeout=self.lease)
        self.held.clear()
        try:
            with session_scope(self.url) as session:
                session.execute(delete(MetricClaim).where(
                    MetricClaim.run_id == self.run_id,
                    or_(MetricClaim.owner == self.owner, MetricClaim.expires_at < time.time())))
        except Exception:  # noqa: BLE001 - never hide the error that ended the run
            pass
