"""A command run in this process the way a person runs it: through `nlce.cli.run_main`, so a
user error comes back as its exit code and one line on stderr, not as an exception.

`run_in_process` is `python -m ...` without the process: what a test that checks a command's
message, exit code or files needs, at no interpreter start. A test whose point is the process
itself (a kill, a signal, a resource limit, a mount) runs it as a subprocess instead."""
from __future__ import annotations

import io
import os
import runpy
import subprocess
import sys
import warnings
from contextlib import redirect_stderr, redirect_stdout
from typing import Callable, Sequence

from nlce.cli import DEBUG_ENV, run_main


def as_command(main: Callable[[Sequence[str] | None], int | None], prog: str
               ) -> Callable[[Sequence[str]], int]:
    """`main(argv)` of a `python -m` module, wrapped as `python -m` wraps it."""
    return lambda argv: run_main(main, argv, prog=prog)


def run_in_process(module: str, *args: str, columns: int = 200) -> subprocess.CompletedProcess:
    """`python -m module args...` run in this process (`runpy`, as `-m` runs it: the module as
    `__main__`, `sys.argv` its arguments), with stdout and stderr captured and NLCE_DEBUG unset;
    returns what `subprocess.run(..., capture_output=True, text=True)` would. Every engine the
    command connected through is disposed and `db.get_engine`'s cache cleared, as the end of a
    process closes its connections (SQLite then folds its WAL into the database file)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from db import get_engine

    engines: set = set()

    def connected(connection) -> None:
        engines.add(connection.engine)

    saved = {name: os.environ.get(name) for name in (DEBUG_ENV, "COLUMNS")}
    saved_argv = sys.argv
    os.environ.pop(DEBUG_ENV, None)
    os.environ["COLUMNS"] = str(columns)
    sys.argv = [module, *args]
    out, err = io.StringIO(), io.StringIO()
    code = 0
    event.listen(Engine, "engine_connect", connected)
    try:
        with redirect_stdout(out), redirect_stderr(err), warnings.catch_warnings():
            # a test imported `db.__main__` already: run it again as `__main__`, knowingly
            warnings.filterwarnings("ignore", r".* found in sys\.modules after import of "
                                    r"package", RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:  # how every entry point ends
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if isinstance(stop.code, str):
            err.write(stop.code + "\n")
    finally:
        event.remove(Engine, "engine_connect", connected)
        sys.argv = saved_argv
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for engine in engines:
            engine.dispose()
        get_engine.cache_clear()
    return subprocess.CompletedProcess(["python", "-m", module, *args], code, out.getvalue(),
                                       err.getvalue())
