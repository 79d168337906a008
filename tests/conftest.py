"""Fixtures shared by every package's tests. Package-specific ones live in tests/<package>/."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach a model hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def db_url(tmp_path) -> str:
    """A fresh, empty database for one test (SQLite file under tmp_path)."""
    return f"sqlite:///{tmp_path / 'test.db'}"


@pytest.fixture
def engine(db_url):
    from db import get_engine

    engine = get_engine(db_url)
    yield engine
    engine.dispose()
    get_engine.cache_clear()


@pytest.fixture
def session(engine):
    from sqlmodel import Session

    with Session(engine) as session:
        yield session
