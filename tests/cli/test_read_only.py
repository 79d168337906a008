"""Commands that only read (`db info`, `db export`, `align`, `judges.report`) open the database
read-only (`db.engine.read_only_url`): they work where nothing can be written, never create or
upgrade a database, and leave the file as it was.

A read-only file system here is a read-only bind mount (as root, whom file modes do not stop),
else a folder and file without write permission (as another user); PostgreSQL is read through a
role that may only SELECT. The runs on a read-only file system are processes (`e2e`: the mount is
the point); the rest run the commands in this process (`testing.cli.run_in_process`)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

import pytest
from outputs_kit import hostile_records, run_module, write_jsonl

from db.engine import DatabaseNotReadable, is_read_only, read_only_url
from testing.cli import run_in_process

READERS = {
    "db info": ["db", "info"],
    "db export": ["db", "export", "--out", "{out}"],
    "align": ["align", "--no-figures", "--bootstrap", "0", "--out", "{out}"],
    "judges.report": ["judges.report", "--bootstrap", "0", "--out", "{out}"],
}


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return write_jsonl(tmp_path_factory.mktemp("records") / "records.jsonl", hostile_records())


@pytest.fixture(scope="module")
def filled_db_file(tmp_path_factory, records):
    path = tmp_path_factory.mktemp("filled") / "labels.db"
    result = run_in_process("db", "import", "--accounts", str(records),
                            "--db", f"sqlite:///{path}")
    assert result.returncode == 0, result.stderr
    return path


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def read_only_db(tmp_path, filled_db_file):
    """A copy of the filled database where nothing can be written: (its path, how)."""
    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(filled_db_file, source / "labels.db")
    if os.geteuid() == 0:
        mounted = tmp_path / "mounted"
        mounted.mkdir()
        done = subprocess.run(["mount", "--bind", "-o", "ro", str(source), str(mounted)],
                              capture_output=True, text=True)
        if done.returncode:
            pytest.skip(f"cannot bind-mount read-only here: {done.stderr.strip()}")
        try:
            yield mounted / "labels.db", "read-only bind mount"
        finally:
            subprocess.run(["umount", str(mounted)], check=True)
        return
    (source / "labels.db").chmod(0o444)
    source.chmod(0o555)
    try:
        yield source / "labels.db", "no write permission"
    finally:
        source.chmod(0o755)


def _reader(name: str, url: str, out) -> list[str]:
    return [a.replace("{out}", str(out)) for a in READERS[name]] + ["--db", url]


@pytest.mark.e2e
@pytest.mark.parametrize("name", list(READERS))
def test_read_only_commands_work_on_a_read_only_file_system(name, read_only_db, tmp_path):
    path, how = read_only_db
    before = _digest(path)
    result = run_module(*_reader(name, f"sqlite:///{path}", tmp_path / "out"))
    assert result.returncode == 0, f"{how}: {result.stderr}"
    assert "not writable" not in result.stderr
    assert _digest(path) == before
    if name != "db info":
        assert any((tmp_path / "out").iterdir())


@pytest.mark.e2e
def test_a_write_on_a_read_only_file_system_is_still_refused(read_only_db, records):
    path, _ = read_only_db
    result = run_module("db", "import", str(records), "--db", f"sqlite:///{path}")
    assert result.returncode == 2
    assert "database unavailable or not writable" in result.stderr


@pytest.mark.parametrize("name", list(READERS))
def test_read_only_commands_leave_a_writable_database_as_it_was(name, filled_db_file,
                                                                tmp_path):
    path = tmp_path / "labels.db"
    shutil.copy(filled_db_file, path)
    before = _digest(path)
    result = run_in_process(*_reader(name, f"sqlite:///{path}", tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert _digest(path) == before


@pytest.mark.parametrize("name", list(READERS))
def test_a_missing_database_is_named_not_created(name, tmp_path):
    path = tmp_path / "typo.db"
    result = run_in_process(*_reader(name, f"sqlite:///{path}", tmp_path / "out"))
    assert result.returncode == 2
    assert f"no database at {path}" in result.stderr and "Traceback" not in result.stderr
    assert not path.exists() and not (tmp_path / "out").exists()


def test_an_outdated_schema_on_a_read_only_database_asks_for_an_upgrade(tmp_path,
                                                                        filled_db_file):
    from db import get_engine, migrate

    path = tmp_path / "old.db"
    shutil.copy(filled_db_file, path)
    engine = get_engine(f"sqlite:///{path}")
    migrate.downgrade(engine, "0004_ui_gold_history")
    engine.dispose()
    get_engine.cache_clear()
    os.chmod(path, 0o444)
    before = _digest(path)
    result = run_in_process("db", "info", "--db", f"sqlite:///{path}")
    assert result.returncode == 2
    line = result.stderr.strip()
    assert "holds schema 0004_ui_gold_history" in line and "python -m db upgrade" in line, line
    assert len(line.splitlines()) == 1 and _digest(path) == before


def test_read_only_urls():
    assert read_only_url("sqlite://") == "sqlite://"  # in memory: nothing to protect
    assert is_read_only("sqlite:///file:/x.db?mode=ro&uri=true")
    assert not is_read_only("sqlite:///x.db")
    url = read_only_url("postgresql+psycopg://u@h/db?options=-c%20search_path%3Dx")
    assert is_read_only(url) and "search_path" in url
    with pytest.raises(DatabaseNotReadable, match="no database at"):
        read_only_url("sqlite:///no/such/dir/x.db")


@pytest.mark.postgres
def test_read_only_commands_need_only_a_select_role(postgres_server, records, tmp_path):
    """The commands run as a role that may SELECT and nothing else, and every transaction they
    open is read-only (a write through the same URL is refused by the server)."""
    import psycopg

    url = postgres_server.create_database()
    result = run_module("db", "import", "--accounts", str(records), "--db", url)
    assert result.returncode == 0, result.stderr
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(host="127.0.0.1", port=postgres_server.port, user="nlce", dbname=name,
                         autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS reader")
        conn.execute("CREATE ROLE reader LOGIN")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
    reader = url.replace("//nlce@", "//reader@")
    for command in READERS:
        done = run_module(*_reader(command, reader, tmp_path / command.replace(" ", "_")))
        assert done.returncode == 0, f"{command}: {done.stderr}"
    from sqlalchemy import create_engine, text

    engine = create_engine(read_only_url(url))  # the owner, through a read-only URL
    with pytest.raises(Exception, match="read-only transaction"), engine.begin() as conn:
        conn.execute(text("DELETE FROM judge_verdict"))
    engine.dispose()
