"""Fixtures of the annotation app's tests: a small database with a synthetic corpus (nl and zh,
two models), three accounts (anna: nl+zh, bas: nl, lead) and queues for anna and bas."""
from __future__ import annotations

import pytest

PASSWORD = "s3cret-pass"


def _seed(url: str) -> None:
    from sqlmodel import Session

    from annotate import service
    from annotate.synthetic import add_synthetic_corpus
    from db import get_engine

    with Session(get_engine(url)) as session:
        add_synthetic_corpus(session, targets_per_language=3, languages=("nl", "zh"),
                             models=("model-a", "model-b"))
        anna = service.create_annotator(session, username="anna", password=PASSWORD,
                                        languages=["nl", "zh"], acting=service.OPERATOR)
        bas = service.create_annotator(session, username="bas", password=PASSWORD,
                                       languages=["nl"], acting=service.OPERATOR)
        service.create_annotator(session, username="lead", password=PASSWORD,
                                 languages=["nl", "zh"], role="lead", acting=service.OPERATOR)
        service.assign(session, annotator_ids=[anna.id], per_item=1, strategy="stratified",
                       acting=service.OPERATOR)
        service.assign(session, annotator_ids=[bas.id], languages=["nl"], per_item=2,
                       acting=service.OPERATOR)
        session.commit()


def _seeded(url: str, monkeypatch):
    from db import get_engine

    _seed(url)
    monkeypatch.setenv("NLCE_DATABASE_URL", url)
    yield url
    get_engine(url).dispose()
    get_engine.cache_clear()


@pytest.fixture
def app_db(db_url, monkeypatch):
    """The URL of a seeded SQLite database, also in $NLCE_DATABASE_URL for the app."""
    yield from _seeded(db_url, monkeypatch)


@pytest.fixture
def app_any_db(any_db_url, monkeypatch):
    """The same seeded database, once on SQLite and once on PostgreSQL."""
    yield from _seeded(any_db_url, monkeypatch)


@pytest.fixture
def ids(app_db):
    from sqlmodel import Session

    from annotate import service
    from db import get_engine

    with Session(get_engine(app_db)) as session:
        return {a.username: a.id for a in service.list_annotators(session, acting=service.OPERATOR)}
