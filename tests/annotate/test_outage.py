"""The database going away while annotators label, in a real Chromium against the real app:
a stopped PostgreSQL server and a SQLite database locked by a writer (as `db import` locks it).
The annotator sees one line (never a traceback), the label is kept, and it is stored once the
database is back, without a reload. And `db import` warns when annotators are active."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from browser_kit import first_label, signed_in_page, wait_for
from sqlalchemy import select
from sqlmodel import Session

from annotate import service
from annotate.outage import KEPT_MESSAGE
from db import get_engine
from db import models as m
from testing.browser import chromium_browser

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]


def _stored(db_url: str, username: str):
    """bas's label of the first item in his queue (None while the database is out)."""
    try:
        return first_label(db_url, username)
    except Exception:  # noqa: BLE001 - polled while the server is down
        return None


def _assert_one_line_no_traceback(page) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_text(KEPT_MESSAGE)).to_be_visible(timeout=30000)
    body = page.locator("body").inner_text()
    assert "Traceback" not in body and "OperationalError" not in body, body[-2000:]


@pytest.fixture
def own_postgres():
    """A PostgreSQL server of this test's own, which the test stops and starts again."""
    from testing.pgtemp import temporary_postgres

    with temporary_postgres() as server:
        yield server


def test_postgres_stopped_while_saving_keeps_the_label_and_stores_it_later(
        own_postgres, launch_app, seed_database, monkeypatch):
    from playwright.sync_api import expect

    url = own_postgres.create_database()
    seed_database(url)
    monkeypatch.setenv("NLCE_DATABASE_URL", url)
    app = launch_app(url)
    with chromium_browser() as browser:
        page = signed_in_page(browser, app.url)
        own_postgres.stop()
        page.keyboard.press("3")  # incorrect, while the server is down
        _assert_one_line_no_traceback(page)
        own_postgres.restart()
        label = wait_for(lambda: (lambda l: l if l and l.accuracy == "incorrect" else None)(
            _stored(url, "bas")), timeout=60, what="kept label stored after the restart")
        assert label.history == 1
        expect(page.get_by_text(KEPT_MESSAGE)).to_be_hidden(timeout=30000)
        expect(page.get_by_text("Item 1 of 6")).to_be_visible(timeout=30000)
    get_engine(url).dispose()
    get_engine.cache_clear()


def test_sqlite_locked_by_an_import_keeps_the_label_and_stores_it_after(app_db, launch_app):
    from playwright.sync_api import expect

    app = launch_app(app_db)
    path = app_db.removeprefix("sqlite:///")
    with chromium_browser() as browser:
        page = signed_in_page(browser, app.url)
        writer = sqlite3.connect(path, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")  # the write lock a running import holds
        try:
            page.keyboard.press("1")  # correct
            _assert_one_line_no_traceback(page)
            assert _stored(app_db, "bas").accuracy is None  # nothing half-written
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        label = wait_for(lambda: (lambda l: l if l and l.accuracy == "correct" else None)(
            _stored(app_db, "bas")), timeout=60, what="kept label stored after the lock")
        assert label.history == 1
        expect(page.get_by_text(KEPT_MESSAGE)).to_be_hidden(timeout=30000)


def test_import_warns_when_annotators_are_active(app_db, tmp_path):
    with Session(get_engine(app_db)) as session:
        bas = session.exec(select(m.Annotator.id).where(m.Annotator.username == "bas")
                           ).scalar_one()
        gid = service.queue_for(session, bas)[0].generation_id
        service.start_session(session, bas)  # signed in to the app, as someone labelling is
        service.save_label(session, generation_id=gid, annotator_id=bas, accuracy="correct",
                           codes=[], note="", seconds_spent=3, status="done",
                           expected_revision=None)
        session.commit()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-m", "db", "import", str(empty), "--db", app_db],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert "warning: 1 annotator(s) saved labels or signed in during the last 15 minutes" \
        in result.stderr, result.stderr
    assert "On SQLite their saves wait" in result.stderr
