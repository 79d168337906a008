"""A throwaway PostgreSQL server on loopback, for tests and benchmarks.

Uses the PostgreSQL binaries of the machine (Debian's `postgresql` package): `initdb` into a
temporary folder, `pg_ctl start` on a free port bound to 127.0.0.1 with trust auth, and a clean
stop. PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from nlce.cli import UserError

SUPERUSER = "nlce"


class PostgresUnavailable(UserError, RuntimeError):
    """No PostgreSQL server can be started here: one line, naming what to install."""


def find_pg_bindir() -> Path:
    """The folder holding initdb and pg_ctl: $PG_BINDIR, Debian's layout, or the PATH."""
    candidates = [os.environ.get("PG_BINDIR", "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    initdb = shutil.which("initdb")
    candidates.append(str(Path(initdb).parent) if initdb else "")
    for folder in filter(None, candidates):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    raise PostgresUnavailable(
        "PostgreSQL server binaries not found: install Debian's `postgresql` package "
        "(bash scripts/setup.sh --test does) or set PG_BINDIR")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class TemporaryPostgres:
    """A running server; `url(database)` gives a SQLAlchemy URL, `create_database()` a fresh one."""

    def __init__(self, datadir: Path, port: int, bindir: Path, run_as: str | None,
                 password: str | None = None, durable: bool = False):
        self.datadir, self.port, self.bindir, self.run_as = datadir, port, bindir, run_as
        self.password = password  # None: trust auth; else scram-sha-256 with this password
        self.durable = durable  # fsync on (benchmarks of commit latency); off for tests

    def url(self, database: str = "postgres") -> str:
        """The URL without a password (pass it by a pgpass file or `self.password`)."""
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        import psycopg

        name = name or f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(host="127.0.0.1", port=self.port, user=SUPERUSER, dbname="postgres",
                             password=self.password, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def _run(self, *args: str) -> None:
        result = subprocess.run(args, user=self.run_as, capture_output=True, text=True)
        if result.returncode != 0:
            raise PostgresUnavailable(f"{' '.join(args[:2])} failed: {result.stderr.strip()}")

    def _options(self) -> str:
        durability = ("-c fsync=on -c synchronous_commit=on -c full_page_writes=on"
                      if self.durable else
                      "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        return (f"-p {self.port} -k {self.datadir} -c listen_addresses=127.0.0.1 {durability} "
                "-c max_connections=200")

    def start(self) -> None:
        options = self._options()
        auth = ["--auth=trust"]
        if self.password is not None:  # initdb reads the superuser's password from a file
            pwfile = self.datadir.parent / "pwfile"
            pwfile.write_text(self.password + "\n", encoding="utf-8")
            if self.run_as:
                user = pwd.getpwnam(self.run_as)
                os.chown(pwfile, user.pw_uid, user.pw_gid)
            auth = ["--auth=scram-sha-256", f"--pwfile={pwfile}"]
        self._run(str(self.bindir / "initdb"), "-D", str(self.datadir), "-U", SUPERUSER,
                  *auth, "-E", "UTF8", "--no-locale")
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-o", options,
                  "-l", str(self.datadir / "server.log"), "-w", "-t", "60", "start")

    def restart(self) -> None:
        """Start the server again after `stop()` (same data, same port)."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-o", self._options(),
                  "-l", str(self.datadir / "server.log"), "-w", "-t", "60", "start")

    def stop(self) -> None:
        subprocess.run([str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", "fast",
                        "-w", "stop"], user=self.run_as, capture_output=True)


@contextmanager
def temporary_postgres(password: str | None = None, *,
                       durable: bool = False) -> Iterator[TemporaryPostgres]:
    """A server for the duration of the block; with `password`, it asks for it (scram)."""
    bindir = find_pg_bindir()
    parent = Path(tempfile.mkdtemp(prefix="nlce-pg-"))
    datadir = parent / "data"
    run_as = None
    if os.geteuid() == 0:  # initdb/postgres refuse root; hand the folder to `postgres`
        run_as = "postgres"
        user = pwd.getpwnam(run_as)
        os.chown(parent, user.pw_uid, user.pw_gid)
    server = TemporaryPostgres(datadir, _free_port(), bindir, run_as, password, durable)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(parent, ignore_errors=True)
