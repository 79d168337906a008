"""Fixtures shared by every package's tests. Package-specific ones live in tests/<package>/.

`db_url` is a fresh SQLite database. `any_db_url` runs a test once on SQLite and once on a real
PostgreSQL server that this test session starts on loopback (Debian's `postgresql` binaries).
"""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach a model hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def postgres_server():
    from db.pgtemp import temporary_postgres

    with temporary_postgres() as server:
        yield server


@pytest.fixture
def db_url(tmp_path) -> str:
    """A fresh, empty SQLite database file for one test."""
    return f"sqlite:///{tmp_path / 'test.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db_url(request, tmp_path) -> str:
    """A fresh, empty database for one test, on each backend in turn."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'test.db'}"
    return request.getfixturevalue("postgres_server").create_database()


def _engine_for(url):
    from db import get_engine

    engine = get_engine(url)
    yield engine
    engine.dispose()
    get_engine.cache_clear()


@pytest.fixture
def engine(db_url):
    yield from _engine_for(db_url)


@pytest.fixture
def any_engine(any_db_url):
    yield from _engine_for(any_db_url)


@pytest.fixture
def session(engine):
    from sqlmodel import Session

    with Session(engine) as session:
        yield session
