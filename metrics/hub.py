"""Deprecated: model loading moved to the top-level `models` package.

`python -m metrics.hub list|prepare [ids...]` keeps working and runs `python -m models`;
import from `models` (e.g. `from models import resolve_model`) in code.
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from models.__main__ import main as models_main

    print("note: `python -m metrics.hub` is deprecated; use `python -m models`", file=sys.stderr)
    return models_main(argv)


if __name__ == "__main__":
    from nlce.cli import run_main

    sys.exit(run_main(main, prog="python -m metrics.hub"))
