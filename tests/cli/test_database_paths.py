"""`--db` names a database the same way in every command (issue 41.9; `db.engine.project_database`):
a plain path is a SQLite file; a relative `sqlite:///tmp/...` (meant as /tmp/...) is named with
the URL that was meant, in one wording everywhere; the database is checked before anything is
loaded; and only the commands that make databases (db demo, db import, db upgrade, corpus.extract,
--demo) create one: the others name the path and say it holds no project database. Before,
a plain path was `internal error: ArgumentError`, metrics.score said "unable to open database
file" where align said "no database at", corpus.generate loaded the model's weights first, and
metrics.score and annotate made a new empty database at a mistyped path."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testing.cli import run_in_process

ROOT = Path(__file__).resolve().parents[2]

# every command that works on an existing database, with arguments that would otherwise run
USERS = {
    "metrics.score": ["metrics.score", "--metric", "bleu", "--no-progress"],
    "annotate": ["annotate"],
    "annotate --add-user": ["annotate", "--add-user", "carla", "--languages", "nl"],
    # the model is packaged: loading it in this unmarked test would fail it (testing.markers)
    "corpus.generate": ["corpus.generate", "--model", "HuggingFaceTB/SmolLM2-135M-Instruct",
                        "--backend", "hf"],
    "judges.run": ["judges.run", "--model", "m", "--lang", "nl", "--strategy", "standard",
                   "--base-url", "http://127.0.0.1:9/v1"],
    "judges.jury": ["judges.jury", "--runs", "1,2"],
    "align": ["align", "--out", "report"],
    "judges.report": ["judges.report"],
    "db info": ["db", "info"],
    "db export": ["db", "export", "--out", "export"],
}
MAKERS = {"db demo": ["db", "demo"], "db upgrade": ["db", "upgrade"],
          "db import": ["db", "import", "records.jsonl"],
          "judges.importer": ["judges.importer", "records.jsonl"],
          "corpus.extract": ["corpus.extract", "records.jsonl", "--lang", "nl", "--dataset", "d"]}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """An empty working folder: whatever a command creates shows here."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("NLCE_NEW_PASSWORD", "a-long-password")
    return work


def _run(*args: str) -> subprocess.CompletedProcess:
    """In this process, but `annotate` as a process: given a database it would become the
    Streamlit server (exec), which must never replace the test run."""
    if args[0] != "annotate":
        return run_in_process(*args)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NLCE_DEBUG", None)
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def _one_error_line(result) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.strip().splitlines()
             if not line.startswith("warning: the password in --db")]  # db's, on purpose
    assert len(lines) == 1 and "internal error" not in lines[0], result.stderr
    return lines[0]


@pytest.mark.parametrize("name", USERS)
def test_a_relative_sqlite_url_is_named_the_same_way_by_every_command(name, tmp_path, workdir):
    real = tmp_path / "x" / "oop.db"
    real.parent.mkdir()
    assert run_in_process("db", "upgrade", "--db", f"sqlite:///{real}").returncode == 0
    relative = str(real).lstrip("/")  # sqlite:///tmp/... : three slashes, a relative path
    line = _one_error_line(_run(*USERS[name], "--db", f"sqlite:///{relative}"))
    assert line.endswith(
        f"no database at {relative} ({workdir / relative}; `sqlite:///{relative}` is a path "
        f"relative to the working folder: for {real} write `sqlite:////{relative}`, four "
        f"slashes, or the path alone, `--db {real}`): create one with `python -m db demo`, "
        f"`python -m db import` or `python -m db upgrade`, or give --db"), line
    assert list(workdir.iterdir()) == []  # nothing made, no folder, no file


@pytest.mark.parametrize("name", ["metrics.score", "annotate", "annotate --add-user",
                                  "judges.run", "corpus.generate"])
def test_a_mistyped_path_is_not_made_into_a_new_database(name, workdir):
    line = _one_error_line(_run(*USERS[name], "--db", "sqlite:///comments.bd"))
    assert f"no database at comments.bd ({workdir / 'comments.bd'}): create one with" in line
    assert list(workdir.iterdir()) == []


def test_a_plain_path_is_a_sqlite_file(demo_db_file, tmp_path, workdir):
    copy = tmp_path / "x" / "oop.db"
    copy.parent.mkdir()
    shutil.copy(demo_db_file, copy)
    info = run_in_process("db", "info", "--db", str(copy))
    assert info.returncode == 0 and f"sqlite:///{copy}" in info.stdout, info.stderr
    scored = run_in_process("metrics.score", "--metric", "bleu", "--no-progress", "--db",
                            str(copy))
    assert scored.returncode == 0 and "125 selected" in scored.stdout, scored.stderr
    made = run_in_process("db", "upgrade", "--db", "new.db")  # relative: the working folder
    assert made.returncode == 0, made.stderr
    assert (workdir / "new.db").is_file()


def test_files_that_are_no_project_database_are_named(tmp_path, workdir):
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    line = _one_error_line(run_in_process(*USERS["metrics.score"], "--db", str(text)))
    assert line.endswith(f"{text} is not a SQLite database (give the file a project command "
                         f"made, or a new path)"), line
    import sqlite3

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE notes (id INTEGER)")
    line = _one_error_line(run_in_process(*USERS["judges.run"], "--db", str(other)))
    assert f"{other} holds no project database (tables notes): create one with" in line
    assert _run(*USERS["annotate"], "--db", str(tmp_path)).returncode == 2


@pytest.mark.parametrize("name", MAKERS)
def test_commands_that_make_databases_name_a_missing_folder(name, tmp_path, workdir):
    (workdir / "records.jsonl").write_text('{"type": "dataset", "name": "d"}\n')
    relative = str(tmp_path / "x" / "oop.db").lstrip("/")
    (tmp_path / "x").mkdir()
    line = _one_error_line(run_in_process(*MAKERS[name], "--db", f"sqlite:///{relative}"))
    assert line.endswith(f"cannot create a database at {relative} ({workdir / relative}; "
                         f"`sqlite:///{relative}` is a path relative to the working folder: "
                         f"for /{relative} write `sqlite:////{relative}`, four slashes, or the "
                         f"path alone, `--db /{relative}`): the folder "
                         f"{Path(workdir / relative).parent} does not exist"), line
    assert [p.name for p in workdir.iterdir()] == ["records.jsonl"]


@pytest.mark.postgres
def test_an_empty_server_database_is_made_by_db_upgrade_only(postgres_server):
    url = postgres_server.create_database()
    line = _one_error_line(run_in_process(*USERS["metrics.score"], "--db", url))
    assert "holds no project database (no tables): create one with" in line, line
    assert run_in_process("db", "upgrade", "--db", url).returncode == 0
    scored = run_in_process(*USERS["metrics.score"], "--db", url)
    assert scored.returncode == 1 and "nothing selected" in scored.stderr, scored.stderr


@pytest.mark.parametrize("name", ["metrics.score", "db upgrade"])
def test_a_url_of_an_unknown_kind_is_one_line_with_its_password_hidden(name, workdir):
    args = USERS.get(name) or MAKERS[name]
    line = _one_error_line(run_in_process(*args, "--db", "postgres+psycopg://u:pw-x@h/db"))
    assert "postgres+psycopg://u:***@h/db is not a database URL this installation knows" in line
    assert "pw-x" not in line and list(workdir.iterdir()) == []
