"""A database that cannot be reached or written ends every command with one line naming it
(password hidden) and exit 2, through `python -m X` and `nlce X` alike: a stopped PostgreSQL
server and a read-only SQLite database, both real."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testing.cli import run_in_process

ROOT = Path(__file__).resolve().parents[2]
SECRET = "pw-never-shown"


@pytest.fixture(scope="module")
def stopped_postgres_url():
    """The URL of a database on a PostgreSQL server that was running and has been stopped."""
    from testing.pgtemp import temporary_postgres

    with temporary_postgres() as server:
        url = server.create_database("gone")
        server.stop()
        yield url.replace("nlce@", f"nlce:{SECRET}@")


@pytest.fixture(scope="module")
def read_only_sqlite_url(tmp_path_factory):
    """A SQLite database with the schema, opened read-only (root ignores file modes)."""
    path = tmp_path_factory.mktemp("ro") / "labels.db"
    upgraded = run_in_process("db", "upgrade", "--db", f"sqlite:///{path}")  # creates it
    assert upgraded.returncode == 0, upgraded.stderr
    return f"sqlite:///file:{path}?mode=ro&uri=true"


@pytest.fixture(scope="module")
def project_jsonl(tmp_path_factory, demo_db_file):
    """A small project export to import (the demo dataset, exported)."""
    folder = tmp_path_factory.mktemp("demo")
    url = f"sqlite:///{demo_db_file}"  # only read: export opens it read-only
    done = run_in_process("db", "export", "--db", url, "--out", str(folder / "out"))
    assert done.returncode == 0, done.stderr  # only the commands under test run as processes
    return str(folder / "out" / "export.jsonl")


def run(args: list[str], *, via_nlce: bool = False):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NLCE_DEBUG", None)
    command = [sys.executable, "-m", "nlce", *args[0].split("."), *args[1:]] if via_nlce else \
        [sys.executable, "-m", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)


def assert_one_database_line(result, url_start: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.strip().splitlines()
             if not line.startswith("warning: the password in --db")]  # said once, on purpose
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "error: database unavailable or not writable: " + url_start in lines[0], lines[0]
    assert SECRET not in result.stderr + result.stdout


COMMANDS_WITH_DB = [["db", "info"], ["db", "import", "{jsonl}"], ["annotate", "--demo"],
                    ["align"], ["judges.report"], ["metrics.score", "--metric", "bleu"]]


@pytest.mark.parametrize("args", COMMANDS_WITH_DB, ids=lambda a: " ".join(a[:2]))
def test_stopped_postgres_is_one_line_and_exit_2(args, stopped_postgres_url, project_jsonl):
    args = [a.replace("{jsonl}", project_jsonl) for a in args] + ["--db", stopped_postgres_url]
    assert_one_database_line(run(args), "postgresql+psycopg://nlce:***@127.0.0.1:")


@pytest.mark.parametrize("args", [["db", "info"], ["align"]], ids=" ".join)
def test_nlce_says_the_same_as_python_dash_m(args, stopped_postgres_url):
    args = [*args, "--db", stopped_postgres_url]
    direct, via_nlce = run(args), run(args, via_nlce=True)
    assert_one_database_line(via_nlce, "postgresql+psycopg://nlce:***@")
    assert direct.stderr.split(": error: ")[-1] == via_nlce.stderr.split(": error: ")[-1]


def test_import_into_a_read_only_sqlite_database(read_only_sqlite_url, project_jsonl):
    result = run(["db", "import", project_jsonl, "--db", read_only_sqlite_url])
    assert_one_database_line(result, "sqlite:///")
    assert "readonly database" in result.stderr
    via_alias = run(["db.import", project_jsonl, "--db", read_only_sqlite_url])
    assert_one_database_line(via_alias, "sqlite:///")
