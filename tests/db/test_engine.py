"""db.engine: URLs, SQLite settings, and savepoints that stay inside their transaction."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from db import DATABASE_URL_ENV, get_engine, resolve_url
from db import models as m


def test_url_resolution(monkeypatch):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    assert resolve_url() == "sqlite:///comments.db"
    monkeypatch.setenv(DATABASE_URL_ENV, "sqlite:///x.db")
    assert resolve_url() == "sqlite:///x.db"
    assert resolve_url("postgresql+psycopg://u@h/d") == "postgresql+psycopg://u@h/d"


def test_sqlite_runs_wal_with_foreign_keys(engine):
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1


def test_schema_holds_every_taxonomy_code(engine):
    from taxonomy import default_taxonomy

    with Session(engine) as session:
        codes = set(session.execute(select(m.ErrorCode.code)).scalars())
    assert codes == set(default_taxonomy().codes)


def _count(engine, model) -> int:
    with Session(engine) as session:
        return session.execute(select(func.count()).select_from(model)).scalar_one()


def test_savepoint_first_then_rollback_leaves_nothing(any_engine):
    """SELECT, then a savepoint as the first write, then more, then rollback: nothing stays
    (pysqlite would otherwise commit on releasing the savepoint)."""
    with Session(any_engine) as session:
        session.execute(select(m.Dataset)).all()
        with session.begin_nested():
            session.add(m.Dataset(name="inside-savepoint"))
        session.add(m.Dataset(name="after"))
        session.flush()
        session.rollback()
    assert _count(any_engine, m.Dataset) == 0


def test_failed_savepoint_keeps_the_outer_transaction(any_engine):
    with Session(any_engine) as session:
        session.add(m.Dataset(name="kept"))
        session.flush()
        with pytest.raises(IntegrityError):
            with session.begin_nested():
                session.add(m.Dataset(name="kept"))  # duplicate name
        session.add(m.Dataset(name="also-kept"))
        session.commit()
    assert _count(any_engine, m.Dataset) == 2


def test_engine_is_cached_per_url(db_url):
    assert get_engine(db_url) is get_engine(db_url)
