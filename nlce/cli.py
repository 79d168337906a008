"""Conventions shared by every command line: how a run ends (exit codes, one-line errors instead
of tracebacks) and how logging is set up. No project imports here: every package may use it.

One user-error path: a problem the person running the command can fix (bad input, an option that
does not apply, a model or endpoint that is not there) is a `UserError`, raised where it is found
and caught once, in `run_main`, which prints its message on one line and exits with its code.
Anything else that escapes a command is a bug: one line, and `NLCE_DEBUG=1` shows the traceback.
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Callable, Sequence

EXIT_OK, EXIT_NOTHING_DONE, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
DEBUG_ENV = "NLCE_DEBUG"  # set to 1 to see the full traceback of an unexpected error


class UserError(Exception):
    """An error the user can fix; its message says what and where, in one line. `run_main` prints
    it as `prog: error: message` and exits with `exit_code` (EXIT_ERROR unless said otherwise,
    EXIT_NOTHING_DONE for a run that worked but produced nothing)."""

    exit_code: int = EXIT_ERROR

    def __init__(self, message: str = "", exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(UserError, ValueError):
    """Bad input or options: a UserError that is also a ValueError, for callers that check a
    value with `except ValueError`."""


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record comes (tests and rich swap it)."""

    def __init__(self) -> None:
        super().__init__()
        self.set_name("nlce")
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def configure_logging(verbose: int = 0) -> logging.Handler:
    """Warnings by default, -v info, -vv debug; one line per record on stderr. `run_main` calls
    it for every command; calling it again (with a command's -v) only changes the level."""
    root = logging.getLogger()
    root.setLevel(logging.WARNING - 10 * min(verbose, 2))
    for handler in root.handlers:
        if handler.get_name() == "nlce":
            return handler
    handler = _StderrHandler()
    root.addHandler(handler)
    return handler


def run_main(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None = None,
             *, prog: str = "") -> int:
    """Run a command's `main` and turn what escapes it into an exit code and one line on stderr.

    A `UserError` is the command's own message and exit code; a database that is down or not
    writable gets its documented line; anything else is a bug, named as one (with
    `NLCE_DEBUG=1` every error is raised with its traceback instead).
    """
    prog = prog or "nlce"
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    configure_logging()
    try:
        code = main(argv)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as stop:  # argparse and explicit exits keep their code
        return stop.code if isinstance(stop.code, int) else (EXIT_ERROR if stop.code else EXIT_OK)
    except Exception as error:  # noqa: BLE001 - the one net: one line, never a traceback
        if os.environ.get(DEBUG_ENV):
            raise
        print(f"{prog}: {error_line(error)}", file=sys.stderr)
        return error.exit_code if isinstance(error, UserError) else EXIT_ERROR
    finally:  # leave logging as it was (a command run in-process: nlce, tests)
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
    return EXIT_OK if code is None else int(code)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""


def error_line(error: Exception) -> str:
    """The one line (after `prog: `) for an error that ended a command."""
    if isinstance(error, UserError):  # its message is written for the user: all of it
        return f"error: {str(error).strip() or type(error).__name__}"
    database = database_error_line(error)
    if database:
        return f"error: {database}"
    if isinstance(error, OSError) and error.strerror:  # a file or folder the user can fix
        where = f"{error.filename}: " if error.filename else ""
        return f"error: {where}{error.strerror}"
    return (f"internal error: {type(error).__name__}: {_first_line(error)} "
            f"(a bug; set {DEBUG_ENV}=1 for the traceback)")


def yaml_problem(error: Exception) -> str:
    """One line for a YAML parser's error (PyYAML's own message takes four lines): "not valid
    YAML at line L, column C: what (while parsing ... at line L, column C)"."""
    def at(mark) -> str:
        return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""

    problem = getattr(error, "problem", None)
    if not problem:
        return "not valid YAML: " + " ".join(str(error).split())
    context = getattr(error, "context", None)
    where = f" ({context}{at(getattr(error, 'context_mark', None))})" if context else ""
    return " ".join(f"not valid YAML{at(getattr(error, 'problem_mark', None))}: {problem}"
                    f"{where}".split())


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
