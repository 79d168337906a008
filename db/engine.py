"""One way to open the database: a SQLAlchemy URL (or a plain path: a SQLite file) from a flag,
else the environment, else a SQLite file in the working directory. SQLite gets WAL and foreign
keys; PostgreSQL works through the same URL. Commands check the database they are given first
(`project_database`): only the ones that make databases create one."""
from __future__ import annotations

import argparse
import os
import re
import sqlite3
import threading
from collections import deque
from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator

from sqlalchemy import event, func, inspect, select
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, SQLModel, create_engine

from db import models
from nlce.cli import InputError
from taxonomy import default_taxonomy

DATABASE_URL_ENV = "NLCE_DATABASE_URL"
DEFAULT_DATABASE_URL = "sqlite:///comments.db"
# Connections held open to a server database (bench/annotate_load.py: past ~32 busy annotators
# saves queue for the 5 + 10 default connections).
POOL_SIZE_ENV, POOL_OVERFLOW_ENV = "NLCE_DB_POOL_SIZE", "NLCE_DB_MAX_OVERFLOW"
# How long a SQLite writer waits for another one (an import) before "database is locked". The
# labelling app waits less (`python -m annotate` sets 5) and keeps the label to retry instead.
SQLITE_BUSY_TIMEOUT_ENV = "NLCE_SQLITE_BUSY_TIMEOUT_S"


def _sqlite_busy_timeout_s() -> float:
    return float(os.environ.get(SQLITE_BUSY_TIMEOUT_ENV, 30))


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def resolve_url(url: str | None = None) -> str:
    """The flag wins, then $NLCE_DATABASE_URL, then ./comments.db. A value that is not a URL
    (no `scheme://`) is the path of a SQLite file (`--db /tmp/x/oop.db`). A server password
    belongs in $NLCE_DATABASE_URL or a pgpass file (libpq reads ~/.pgpass or $PGPASSFILE for a
    URL without one), not in a `--db` flag, which every user of the machine sees in `ps`."""
    url = url or os.environ.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL
    if not _SCHEME.match(url):
        return f"sqlite:///{os.path.abspath(os.path.expanduser(url))}"
    return url


def shown_url(url: str) -> str:
    """The URL as printed: its password, if any, masked."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy can parse: show none of it
        return "(unparsable database URL)"


def without_password(text: str, url: str | None) -> str:
    """`text` (an error message, say) with the URL's password, if any, masked."""
    try:
        password = make_url(url).password if url else None
    except Exception:
        return text
    return text.replace(str(password), "***") if password else text


def password_in_flag(url: str | None) -> bool:
    """Whether a `--db` value holds a password (visible to every local user in `ps`)."""
    try:
        return bool(url) and make_url(url).password is not None
    except Exception:
        return False


# ------------------------------------------------------------------------------ read-only
# Commands that only read (db info, db export, align, judges.report) open the database read-only:
# they work on a read-only file system or with a read-only server role, and cannot change it.

class DatabaseNotReadable(InputError):
    """A database a read-only command cannot use as it is: missing, or its schema needs an
    upgrade (which writes); the message names it and what to do."""


class NoProjectDatabase(InputError):
    """`--db` names no database of this project (a missing file, another kind of file, an empty
    server database) where the command does not create one; the message names it."""


CREATE_HINT = ("create one with `python -m db demo`, `python -m db import` or `python -m db "
               "upgrade`, or give --db")
SQLITE_HEADER = b"SQLite format 3\x00"


def _sqlite_path(parsed) -> str | None:
    """The file of a SQLite URL; None for an in-memory database."""
    database = parsed.database or ""
    if not database or database == ":memory:" or parsed.query.get("mode") == "memory":
        return None
    return database.removeprefix("file:") if parsed.query.get("uri") else database


def _where(path: str) -> str:
    """`path` as a message shows it: a relative one with its absolute form, and where it looks
    like `sqlite:///tmp/x.db` written for /tmp/x.db (three slashes: relative to the working
    folder), the URL that was meant."""
    if os.path.isabs(path):
        return path
    absolute, rooted = os.path.abspath(path), "/" + path
    meant = ("/" in path.strip("/") and os.path.isdir(os.path.dirname(rooted))
             and not os.path.isdir(os.path.dirname(absolute)))
    if not meant:
        return f"{path} ({absolute})"
    return (f"{path} ({absolute}; `sqlite:///{path}` is a path relative to the working folder: "
            f"for {rooted} write `sqlite:////{path}`, four slashes, or the path alone, "
            f"`--db {rooted}`)")


def no_database_message(path: str) -> str:
    """What every command says of a SQLite file that is not there (one wording everywhere)."""
    return f"no database at {_where(path)}: {CREATE_HINT}"


def project_database(url: str | None = None, *, create: bool = False) -> str:
    """The URL a command works on (`resolve_url`), checked before the command loads anything:
    without `create`, it must hold this project's tables, else `NoProjectDatabase` naming the
    path (nothing is created: a mistyped path is not a new empty database); with `create` (the
    commands that make databases: db demo, db import, db upgrade, corpus.extract,
    judges.importer, --demo), a SQLite file must be one, or its folder must exist. A server
    that cannot be reached raises the driver's error, which `nlce.cli` prints as its one line."""
    url = resolve_url(url)
    try:
        parsed = make_url(url)
        parsed.get_dialect()  # a kind of database SQLAlchemy knows (not `postgres+psycopg`)
    except Exception as error:  # noqa: BLE001 - ArgumentError, NoSuchModuleError, ValueError
        raise NoProjectDatabase(f"{shown_url(url)} is not a database URL this installation "
                                f"knows ({error}): give a path, or a URL such as "
                                f"sqlite:///comments.db or postgresql+psycopg://user@host/db"
                                ) from None
    if parsed.get_backend_name() == "sqlite":
        path = _sqlite_path(parsed)
        if path is None:
            return url
        if os.path.isdir(path):
            raise NoProjectDatabase(f"{_where(path)} is a folder, not a database file")
        if not os.path.exists(path):
            folder = os.path.dirname(os.path.abspath(path))
            if not create:
                raise NoProjectDatabase(no_database_message(path))
            if not os.path.isdir(folder):
                raise NoProjectDatabase(f"cannot create a database at {_where(path)}: the folder "
                                        f"{folder} does not exist")
            return url
        tables = _sqlite_tables(path, names=not create)
    elif create:
        return url
    else:
        engine = create_engine(url)
        event.listen(engine, "handle_error", _tagging_errors_with(url))
        try:
            tables = inspect(engine).get_table_names()
        finally:
            engine.dispose()
    if not create and models.Dataset.__tablename__ not in tables:
        what = f"tables {', '.join(sorted(tables)[:3])}{', ...' if len(tables) > 3 else ''}" \
            if tables else "no tables"
        shown = _where(path) if parsed.get_backend_name() == "sqlite" else shown_url(url)
        raise NoProjectDatabase(f"{shown} holds no project database ({what}): {CREATE_HINT}")
    return url


def _sqlite_tables(path: str, names: bool = True) -> list[str]:
    """The tables of an existing SQLite file (with `names`), read without writing;
    NoProjectDatabase where the file is not SQLite."""
    with open(path, "rb") as handle:
        header = handle.read(len(SQLITE_HEADER))
    if header and header != SQLITE_HEADER:
        raise NoProjectDatabase(f"{_where(path)} is not a SQLite database (give the file a "
                                f"project command made, or a new path)")
    if not names:
        return []
    # immutable where a WAL file cannot be opened read-only (a read-only disk): the names of
    # the tables are all that is read
    for query in ("mode=ro", "mode=ro&immutable=1"):
        connection = sqlite3.connect(f"file:{os.path.abspath(path)}?{query}", uri=True,
                                     timeout=_sqlite_busy_timeout_s())
        try:
            return [name for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")]
        except sqlite3.Error as error:  # damaged, or a WAL file this user cannot open
            failure = error
        finally:
            connection.close()
    raise NoProjectDatabase(f"cannot read {_where(path)}: {failure}")


_PG_READ_ONLY = "-c default_transaction_read_only=on"


def _read_only_file_system(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def read_only_url(url: str | None = None) -> str:
    """The URL (flag, environment or default, as `resolve_url`) opened for reading only.

    SQLite: `file:PATH?mode=ro` (SQLite refuses every write), and `immutable=1` where the file
    system itself is mounted read-only (nobody can write there), or where this user can create
    no shared-memory file beside the database and none exists (no writer has it open): a
    WAL-mode database cannot be opened otherwise. A missing file is
    `DatabaseNotReadable` instead of a new empty database. PostgreSQL and others: every
    transaction read-only (`default_transaction_read_only`), so a read-only role suffices."""
    url = resolve_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = _sqlite_path(parsed)
        if path is None:
            return url
        if not os.path.isfile(path):
            raise DatabaseNotReadable(no_database_message(path))
        query = {**parsed.query, "mode": "ro", "uri": "true"}
        folder = os.path.dirname(os.path.abspath(path))
        if _read_only_file_system(path) or (not os.access(folder, os.W_OK | os.X_OK)
                                            and not os.path.exists(path + "-shm")):
            query["immutable"] = "1"
        return parsed.set(database=f"file:{os.path.abspath(path)}", query=query) \
            .render_as_string(hide_password=False)
    if parsed.get_backend_name() == "postgresql":
        options = parsed.query.get("options", "")
        if _PG_READ_ONLY not in options:
            options = f"{options} {_PG_READ_ONLY}".strip()
        return parsed.update_query_dict({"options": options}) \
            .render_as_string(hide_password=False)
    return url


def is_read_only(url: str) -> bool:
    """Whether `url` is one `read_only_url` made (or one written that way by hand)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return parsed.query.get("mode") == "ro" or parsed.query.get("immutable") == "1"
    return _PG_READ_ONLY in parsed.query.get("options", "")


def source_url(url: str) -> str:
    """`url` without what `read_only_url` added: the database as the person named it."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.query.get("mode") == "ro":
        database = parsed.database or ""
        query = {k: v for k, v in parsed.query.items() if k not in ("mode", "uri", "immutable")}
        return parsed.set(database=database.removeprefix("file:"), query=query) \
            .render_as_string(hide_password=False)
    options = parsed.query.get("options", "")
    if _PG_READ_ONLY in options:
        options = options.replace(_PG_READ_ONLY, "").strip()
        query = {k: v for k, v in parsed.query.items() if k != "options"}
        parsed = parsed.set(query={**query, **({"options": options} if options else {})})
        return parsed.render_as_string(hide_password=False)
    return url


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    # concurrent writers wait instead of failing
    cursor.execute(f"PRAGMA busy_timeout={int(_sqlite_busy_timeout_s() * 1000)}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _sqlite_read_only_pragmas(dbapi_connection, _record) -> None:
    """A reader sets nothing that writes (the journal mode is the file's own)."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(_sqlite_busy_timeout_s() * 1000)}")
    cursor.close()


def _sqlite_begin_before_savepoint(connection, _name) -> None:
    """pysqlite opens a transaction only before INSERT/UPDATE/DELETE, so a SAVEPOINT issued first
    (SELECT, then `session.begin_nested()`) would itself start the transaction, and releasing it
    would COMMIT everything so far. Open the real transaction first. IMMEDIATE takes the write
    lock now (waiting up to busy_timeout): a savepoint is there to write, and a deferred read
    snapshot could not be upgraded to a write once another writer has committed."""
    dbapi_connection = connection.connection.dbapi_connection
    if not dbapi_connection.in_transaction:
        dbapi_connection.execute("BEGIN IMMEDIATE")


def _tagging_errors_with(url: str):
    """A handle_error listener naming the database (password hidden) on its errors: `nlce.cli`
    and the app's outage line print it. (The event's context has no engine for pool pings.)"""
    from nlce.cli import DATABASE_URL_ATTRIBUTE

    shown = make_url(source_url(url)).render_as_string(hide_password=True)

    def tag(context) -> None:
        for error in (context.sqlalchemy_exception, context.original_exception):
            try:
                setattr(error, DATABASE_URL_ATTRIBUTE, shown)
            except (AttributeError, TypeError):  # some driver exceptions take no attributes
                pass

    return tag


def holds_tables(url: str | None = None) -> bool:
    """Whether the database at ``url`` holds any table, found without creating or changing
    anything: a SQLite file that is not there is not created (`get_engine` would create it)."""
    url = resolve_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = parsed.database or ""
        if path in ("", ":memory:") or not os.path.exists(path):
            return False
    engine = create_engine(url)
    try:
        return bool(inspect(engine).get_table_names())
    finally:
        engine.dispose()


@lru_cache(maxsize=16)
def get_engine(url: str | None = None) -> Engine:
    """An engine for the URL (cached per URL), with the schema created if it is missing; a
    `read_only_url` is only checked (current schema), never written."""
    url = resolve_url(url)
    is_sqlite = make_url(url).get_backend_name() == "sqlite"
    read_only = is_read_only(url)
    if is_sqlite:
        kwargs = {"connect_args": {"check_same_thread": False,
                                   "timeout": _sqlite_busy_timeout_s()}}
    else:  # a team server: one Streamlit process serves every annotator from this pool
        kwargs = {"pool_pre_ping": True,
                  "pool_size": int(os.environ.get(POOL_SIZE_ENV, 5)),
                  "max_overflow": int(os.environ.get(POOL_OVERFLOW_ENV, 10))}
    engine = create_engine(url, **kwargs)
    event.listen(engine, "handle_error", _tagging_errors_with(url))
    if is_sqlite:
        event.listen(engine, "connect",
                     _sqlite_read_only_pragmas if read_only else _sqlite_pragmas)
        event.listen(engine, "savepoint", _sqlite_begin_before_savepoint)
    try:
        init_schema(engine, read_only=read_only)
    except DatabaseNotReadable:
        engine.dispose()
        raise
    return engine


def init_schema(engine: Engine, read_only: bool = False) -> None:
    """Bring the schema to the newest migration and make sure every taxonomy code exists as an
    `error_code` row. An empty database is created from the tables directly and stamped (the
    migrations and the tables are kept equal by a test); an older one is migrated, keeping its
    rows; one that predates migrations is taken as the first release and migrated from there.
    `read_only`: nothing is written; a schema other than the newest is `DatabaseNotReadable`."""
    from db import migrate

    current, head = migrate.current_revision(engine), migrate.head_revision()
    if read_only:
        if current != head:
            shown = shown_url(source_url(engine.url.render_as_string(hide_password=False)))
            found = (f"schema {current}" if current else "no schema of this project" if
                     inspect(engine).get_table_names() else "an empty database")
            raise DatabaseNotReadable(
                f"{shown} holds {found}, this version reads schema {head}: run `python -m db "
                f"upgrade` on it where it is writable (a read-only command never upgrades)")
        return
    if current is None:
        if inspect(engine).has_table(models.Dataset.__tablename__):
            migrate.stamp(engine, migrate.FIRST_REVISION)
            migrate.upgrade(engine)
        else:
            SQLModel.metadata.create_all(engine)
            migrate.stamp(engine, head)
    elif current != head:
        migrate.upgrade(engine)
    taxonomy = default_taxonomy()
    with Session(engine) as session:
        known = set(session.exec(select(models.ErrorCode.code)).scalars())
        for code in taxonomy.codes.values():
            if code.id not in known:
                session.add(models.ErrorCode(code=code.id, level=code.level, parent=code.parent,
                                             taxonomy_version=taxonomy.version))
        session.commit()


class FairGate:
    """At most `slots` holders at once, admitted strictly in arrival order.

    SQLAlchemy's pool hands a returned connection to whichever thread asks first, so a thread
    that gives one back and asks again at once (the label page: save, then load the next item)
    keeps winning, and others wait again and again (bench/annotate_load.py: p99 2-9 s at N=32-64
    while p50 stays under 100 ms). Here a released slot goes to the longest waiter. A thread
    that already holds a slot (a session inside a session) passes without a second one; one
    that waited `timeout` seconds goes on to the pool, whose own timeout then applies."""

    def __init__(self, slots: int, timeout: float = 30.0):
        self._free = slots
        self._timeout = timeout
        self._mutex = threading.Lock()
        self._waiters: deque[threading.Lock] = deque()
        self._held = threading.local()

    def enter(self) -> bool:
        """Wait for a slot; True when this call took one (then call `leave()`)."""
        if getattr(self._held, "depth", 0):
            return False
        with self._mutex:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                self._held.depth = 1
                return True
            turn = threading.Lock()
            turn.acquire()
            self._waiters.append(turn)
        if not turn.acquire(timeout=self._timeout):
            with self._mutex:
                if turn in self._waiters:  # not handed a slot: give up the place in line
                    self._waiters.remove(turn)
                    return False
        self._held.depth = 1  # handed over by leave(): the slot was never freed in between
        return True

    def leave(self) -> None:
        self._held.depth = 0
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().release()
            else:
                self._free += 1


@lru_cache(maxsize=16)
def _gate(url: str) -> FairGate | None:
    """One gate per server database, as wide as its pool (SQLite needs none: one file, and
    its own lock orders the writers)."""
    pool = get_engine(url).pool
    size = getattr(pool, "size", None)
    if make_url(url).get_backend_name() == "sqlite" or size is None:
        return None
    return FairGate(size() + max(0, getattr(pool, "_max_overflow", 0)))


@contextmanager
def session_scope(url: str | None = None) -> Iterator[Session]:
    """A session that commits on success and rolls everything back on any error. On a server
    database, sessions wait for a connection in arrival order (FairGate)."""
    url = resolve_url(url)
    gate = _gate(url)
    held = gate.enter() if gate else False
    try:
        with Session(get_engine(url)) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise
    finally:
        if held:
            gate.leave()


def table_counts(url: str | None) -> dict[str, int]:
    """Rows per table, in schema order (`python -m db info`, and after a demo load)."""
    with session_scope(url) as session:
        return {name: session.execute(select(func.count()).select_from(table)).scalar_one()
                for name, table in SQLModel.metadata.tables.items()}


def add_database_argument(parser: argparse.ArgumentParser) -> None:
    """The `--db URL` flag every CLI of the project shares."""
    parser.add_argument(
        "--db", metavar="URL", default=None,
        help=f"SQLAlchemy database URL (default: ${DATABASE_URL_ENV} or {DEFAULT_DATABASE_URL})",
    )
