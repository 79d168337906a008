"""A command run in this process the way a person runs it: through `nlce.cli.run_main`, so a
user error comes back as its exit code and one line on stderr, not as an exception.

`run_in_process` is `python -m ...` without the process: what a test that checks a command's
message, exit code or files needs, at no interpreter start. A test whose point is the process
itself (a kill, a signal, a resource limit, a mount) runs it as a subprocess instead."""
from __future__ import annotations

import io
import os
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from typing import Callable, Sequence

from nlce.cli import DEBUG_ENV, run_main


def as_command(main: Callable[[Sequence[str] | None], int | None], prog: str
               ) -> Callable[[Sequence[str]], int]:
    """`main(argv)` of a `python -m` module, wrapped as `python -m` wraps it."""
    return lambda argv: run_main(main, argv, prog=prog)


def run_in_process(*args: str, columns: int = 200) -> subprocess.CompletedProcess:
    """`python -m args...` (a module of `nlce --help`: `db`, `align`, `judges.report`, ...) run
    in this process, with stdout and stderr captured and NLCE_DEBUG unset, as
    `subprocess.run(..., capture_output=True, text=True)` returns it. Every engine the command
    connected through is disposed and `db.get_engine`'s cache cleared, as the end of a process
    closes its connections (SQLite then folds its WAL into the database file)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from db import get_engine
    from nlce.__main__ import main

    engines: set = set()

    def connected(connection) -> None:
        engines.add(connection.engine)

    words = [*args[0].split("."), *args[1:]]
    saved = {name: os.environ.get(name) for name in (DEBUG_ENV, "COLUMNS")}
    os.environ.pop(DEBUG_ENV, None)
    os.environ["COLUMNS"] = str(columns)
    out, err = io.StringIO(), io.StringIO()
    event.listen(Engine, "engine_connect", connected)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(words, prog="python -m")
    finally:
        event.remove(Engine, "engine_connect", connected)
        for engine in engines:
            engine.dispose()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        get_engine.cache_clear()
    return subprocess.CompletedProcess(["python", "-m", *args], code, out.getvalue(),
                                       err.getvalue())
