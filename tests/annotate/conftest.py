"""Fixtures of the annotation app's tests: a small database with a synthetic corpus (nl and zh,
two models), three accounts (anna: nl+zh, bas: nl, lead) and queues for anna and bas."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PASSWORD = "s3cret-pass"


def _seed(url: str) -> None:
    from sqlmodel import Session

    from annotate import service
    from db import get_engine
    from testing.synthetic import add_synthetic_corpus

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
def seed_database():
    """The seeding function itself, for a test that brings its own database server."""
    return _seed


@pytest.fixture(scope="session")
def app_db_file(tmp_path_factory):
    """`_seed`'s SQLite database made once per session (per xdist worker): a hundred tests start
    from it, each from its own copy (`app_db`), instead of creating and seeding their own."""
    from db import get_engine

    path = tmp_path_factory.mktemp("app-db") / "seeded.db"
    url = f"sqlite:///{path}"
    _seed(url)
    get_engine(url).dispose()  # closed: the file holds all of it (no WAL left)
    get_engine.cache_clear()
    return path


@pytest.fixture
def app_db(app_db_file, tmp_path, monkeypatch):
    """The URL of a seeded SQLite database (a fresh copy of `app_db_file`), also in
    $NLCE_DATABASE_URL for the app."""
    from db import get_engine

    path = tmp_path / "app.db"
    shutil.copy(app_db_file, path)
    url = f"sqlite:///{path}"
    monkeypatch.setenv("NLCE_DATABASE_URL", url)
    yield url
    get_engine(url).dispose()
    get_engine.cache_clear()


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


@dataclass
class RunningApp:
    proc: subprocess.Popen
    port: int
    log: Path  # what the command printed (stdout and stderr)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill_group(proc: subprocess.Popen) -> None:
    """Clean-up only: TERM, then KILL, the app's whole process group."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture
def launch_app(tmp_path):
    """Start `python -m annotate` on a loopback port (a free one unless given) and return once
    it answers its health check. Each runs in its own process group, so that clean-up after
    the test finds whatever a failed test left behind."""
    started: list[subprocess.Popen] = []
    log_path = tmp_path / "server.log"

    def launch(db_url: str, port: int | None = None, extra_args: tuple[str, ...] = ()
               ) -> RunningApp:
        port = port or free_port()
        env = {**os.environ, "NLCE_DATABASE_URL": db_url, "HOME": str(tmp_path)}
        with open(log_path, "a") as log:
            proc = subprocess.Popen([sys.executable, "-m", "annotate", "--db", db_url, "--port",
                                     str(port), *extra_args], cwd=ROOT, env=env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        started.append(proc)
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=2) as r:
                    if r.status == 200:
                        return RunningApp(proc, port, log_path)
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail(f"app did not start: {log_path.read_text()[-2000:]}")
            time.sleep(0.3)

    yield launch
    for proc in started:
        _kill_group(proc)


@pytest.fixture
def chromium():
    """One headless Chromium (Debian's, through Playwright) for a whole test: open a context
    per colour scheme or account instead of a browser per check."""
    from testing.browser import chromium_browser

    with chromium_browser() as browser:
        yield browser
