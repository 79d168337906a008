"""A PostgreSQL password need never be on a command line: `python -m db` takes the URL from
$NLCE_DATABASE_URL, or the password from a pgpass file (libpq via psycopg, for a URL without
one); every message that shows a URL masks its password, and a refused connection is a
one-line error. Against a real server that asks for a password (scram-sha-256)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from testing.pgtemp import temporary_postgres

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-Secr3t-9x"


@pytest.fixture(scope="module")
def guarded_server(tmp_path_factory):
    """The server, with the schema in its `postgres` database (`db info` only reads)."""
    with temporary_postgres(password=PASSWORD) as server:
        created = _db(["upgrade"], tmp_path_factory.mktemp("home"),
                      NLCE_DATABASE_URL=server.url().replace("nlce@", f"nlce:{PASSWORD}@"))
        assert created.returncode == 0, created.stderr
        yield server


def _db(args, tmp_path, **env):
    """`python -m db ...` as a person runs it: a fresh process, no ~/.pgpass of this machine."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("NLCE_DATABASE_URL", "PGPASSFILE", "PGPASSWORD")}
    environment.update(HOME=str(tmp_path), PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-m", "db", *args], capture_output=True, text=True,
                          env=environment, cwd=tmp_path, timeout=120)


def test_password_from_a_pgpass_file(guarded_server, tmp_path):
    url = guarded_server.url()  # no password in it
    assert make_url(url).password is None
    refused = _db(["info", "--db", url], tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert ("error: database unavailable or not writable: postgresql+psycopg://nlce@127.0.0.1"
            in refused.stderr)
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{guarded_server.port}:*:nlce:{PASSWORD}\n", encoding="utf-8")
    pgpass.chmod(0o600)  # libpq ignores a pgpass file others can read
    done = _db(["info", "--db", url], tmp_path, PGPASSFILE=str(pgpass))
    assert done.returncode == 0, done.stderr
    assert "annotation_event" in done.stdout and PASSWORD not in done.stdout + done.stderr


def test_password_in_the_environment_is_never_printed(guarded_server, tmp_path):
    with_password = guarded_server.url().replace("nlce@", f"nlce:{PASSWORD}@")
    done = _db(["info"], tmp_path, NLCE_DATABASE_URL=with_password)
    assert done.returncode == 0, done.stderr
    assert "nlce:***@127.0.0.1" in done.stdout and PASSWORD not in done.stdout + done.stderr
    missing = with_password.rsplit("/", 1)[0] + "/no_such_db"
    failed = _db(["info"], tmp_path, NLCE_DATABASE_URL=missing)
    assert failed.returncode == 2 and "no_such_db" in failed.stderr
    assert PASSWORD not in failed.stdout + failed.stderr


def test_a_password_on_the_command_line_is_warned_about(guarded_server, tmp_path):
    with_password = guarded_server.url().replace("nlce@", f"nlce:{PASSWORD}@")
    done = _db(["info", "--db", with_password], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "visible to every user of this machine (ps)" in done.stderr
    assert PASSWORD not in done.stdout + done.stderr
