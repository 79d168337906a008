"""Conventions shared by every command line: how a run ends (exit codes, one-line errors instead
of tracebacks) and how logging is set up. No project imports here: every package may use it."""
from __future__ import annotations

import logging
import os
import sys
from typing import Callable, Sequence

EXIT_OK, EXIT_NOTHING_DONE, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
DEBUG_ENV = "NLCE_DEBUG"  # set to 1 to see the full traceback of an unexpected error


def configure_logging(verbose: int = 0) -> None:
    """Warnings by default, -v info, -vv debug; one line per record on stderr."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", force=True)


def run_main(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None = None,
             *, prog: str = "") -> int:
    """Run a command's `main` and turn what escapes it into an exit code and one line on stderr.

    Commands report their own expected failures (bad input, a database that is down) with their
    documented message; this is the net under them, so that a person never sees a traceback.
    """
    try:
        code = main(argv)
    except KeyboardInterrupt:
        print(f"{prog or 'nlce'}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as stop:  # argparse and explicit exits keep their code
        return stop.code if isinstance(stop.code, int) else (EXIT_ERROR if stop.code else EXIT_OK)
    except Exception as error:  # noqa: BLE001 - the last net: one line, exit 2
        if os.environ.get(DEBUG_ENV):
            raise
        database = database_error_line(error)
        if database:
            print(f"{prog or 'nlce'}: error: {database}", file=sys.stderr)
            return EXIT_ERROR
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        print(f"{prog or 'nlce'}: error: {type(error).__name__}: {message}"
              f" (set {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK if code is None else int(code)


# db.engine tags every database error with the URL it came from (password hidden) under this
# attribute, so that the one line can name the database without this module importing db.
DATABASE_URL_ATTRIBUTE = "nlce_database_url"


def is_database_unavailable(error: BaseException) -> bool:
    """A database that cannot be reached or written (server down, disk full, read-only file,
    SQLite locked past its timeout): SQLAlchemy's OperationalError or the driver's own."""
    import sqlite3

    from sqlalchemy.exc import OperationalError

    if isinstance(error, (OperationalError, sqlite3.OperationalError)):
        return True
    try:
        import psycopg
    except ImportError:  # SQLite-only installs
        return False
    return isinstance(error, psycopg.OperationalError)


def database_error_line(error: BaseException) -> str | None:
    """"database unavailable or not writable: URL: first line of the driver's message" for a
    database error (None for anything else)."""
    if not is_database_unavailable(error):
        return None
    cause = getattr(error, "orig", None) or error
    lines = str(cause).strip().splitlines()
    url = getattr(error, DATABASE_URL_ATTRIBUTE, None) or "(database)"
    return f"database unavailable or not writable: {url}: {lines[0] if lines else type(cause).__name__}"
