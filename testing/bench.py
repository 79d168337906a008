"""How a benchmark starts and ends: ``sys.exit(run(main, "bench/lmscore.py", needs=("scipy",)))``.

It runs as the project's commands run (`nlce.cli.run_main`: a problem is one line on stderr,
never a traceback), and it checks first, before minutes of measuring, that the packages it
compares against are installed: the default install (README command 1) leaves them out, and
``pip install -e '.[bench]'`` (bench/README.md) brings them.
"""
from __future__ import annotations

import importlib.util
from typing import Callable, Sequence

from nlce.cli import UserError, run_main

BENCH_EXTRA = "pip install -e '.[bench]'"
# import name -> (the distribution that carries it, the install that brings it), where not
# (the name itself, BENCH_EXTRA)
PACKAGES = {"bert_score": ("bert-score", BENCH_EXTRA),
            "llama_cpp": ("llama-cpp-python", "pip install -e '.[judge-server]'")}


class MissingPackage(UserError):
    """A package a benchmark needs that this install lacks."""


def require(*modules: str) -> None:
    """MissingPackage naming every one of ``modules`` that cannot be imported, and the install
    that brings them."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        names = ", ".join(PACKAGES.get(m, (m,))[0] for m in missing)
        installs = " and ".join(dict.fromkeys(PACKAGES.get(m, (m, BENCH_EXTRA))[1]
                                              for m in missing))
        raise MissingPackage(f"this benchmark needs {names}, which the default install leaves "
                             f"out: {installs} (bench/README.md)")


def run(main: Callable[[Sequence[str] | None], int | None], prog: str,
        needs: Sequence[str] = (), argv: Sequence[str] | None = None) -> int:
    """``main(argv)`` after `require(*needs)`, under `nlce.cli.run_main`; an import of a
    package the default install lacks, deeper down, is named the same way."""
    def checked(args):
        require(*needs)
        try:
            return main(args)
        except ModuleNotFoundError as exc:
            if exc.name and importlib.util.find_spec(exc.name.split(".")[0]) is None:
                require(exc.name.split(".")[0])
            raise

    return run_main(checked, argv, prog=prog)
