"""Run `python -m MODULE ARGS...` and stop it mid-write, for a test to kill -9 at a known point.

    python tests/cli/pause_child.py READY TARGET COUNT MODULE [ARGS...]

TARGET (`package.module:name` or `package.module:Class.name`) is wrapped: after its COUNT-th
call returns (for a generator function: after its COUNT-th item), the file READY is created and
the process sleeps until it is killed. Everything else runs as in `python -m MODULE`: the files
written up to that point are real, and so is the kill.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import runpy
import sys
import time
from pathlib import Path


def _pause(ready: Path) -> None:
    ready.write_text("paused\n", encoding="utf-8")
    while True:
        time.sleep(60)


def _wrapped(function, count: int, ready: Path):
    calls = 0

    if inspect.isgeneratorfunction(function):
        @functools.wraps(function)
        def generator(*args, **kwargs):
            nonlocal calls
            for item in function(*args, **kwargs):
                yield item
                calls += 1
                if calls == count:
                    _pause(ready)
        return generator

    @functools.wraps(function)
    def plain(*args, **kwargs):
        nonlocal calls
        result = function(*args, **kwargs)
        calls += 1
        if calls == count:
            _pause(ready)
        return result
    return plain


def main() -> None:
    ready, target, count, module, *args = sys.argv[1:]
    module_name, _, attribute = target.partition(":")
    *owners, name = attribute.split(".")
    holder = importlib.import_module(module_name)
    for owner in owners:
        holder = getattr(holder, owner)
    setattr(holder, name, _wrapped(getattr(holder, name), int(count), Path(ready)))
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
