"""Fixtures of the annotation app's tests: a small database with a synthetic corpus (nl and zh,
two models), three accounts (anna: nl+zh, bas: nl, lead) and queues for anna and bas."""
from __future__ import annotations

import pytest

PASSWORD = "s3cret-pass"


@pytest.fixture
def app_db(db_url, monkeypatch):
    """The URL of a seeded database, also in $NLCE_DATABASE_URL for the app."""
    from sqlmodel import Session

    from annotate import service
    from annotate.synthetic import add_synthetic_corpus
    from db import get_engine

    engine = get_engine(db_url)
    with Session(engine) as session:
        add_synthetic_corpus(session, targets_per_language=3, languages=("nl", "zh"),
                             models=("model-a", "model-b"))
        anna = service.create_annotator(session, username="anna", password=PASSWORD,
                                        languages=["nl", "zh"])
        bas = service.create_annotator(session, username="bas", password=PASSWORD,
                                       languages=["nl"])
        service.create_annotator(session, username="lead", password=PASSWORD,
                                 languages=["nl", "zh"], role="lead")
        service.assign(session, annotator_ids=[anna.id], per_item=1, strategy="stratified")
        service.assign(session, annotator_ids=[bas.id], languages=["nl"], per_item=2)
        session.commit()
    monkeypatch.setenv("NLCE_DATABASE_URL", db_url)
    yield db_url
    engine.dispose()
    get_engine.cache_clear()


@pytest.fixture
def ids(app_db):
    from sqlmodel import Session

    from annotate import service
    from db import get_engine

    with Session(get_engine(app_db)) as session:
        return {a.username: a.id for a in service.list_annotators(session)}
