"""A command run in this process the way a person runs it: through `nlce.cli.run_main`, so a
user error comes back as its exit code and one line on stderr, not as an exception."""
from __future__ import annotations

from typing import Callable, Sequence

from nlce.cli import run_main


def as_command(main: Callable[[Sequence[str] | None], int | None], prog: str
               ) -> Callable[[Sequence[str]], int]:
    """`main(argv)` of a `python -m` module, wrapped as `python -m` wraps it."""
    return lambda argv: run_main(main, argv, prog=prog)
