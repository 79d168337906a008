"""`python -m metrics.align`: the old name of `python -m align`, kept as an alias (agreement with
the humans is its own stage now, the top-level `align` package)."""
from __future__ import annotations

import sys

if __name__ == "__main__":
    from align.__main__ import main
    from nlce.cli import run_main

    sys.exit(run_main(main, prog="python -m align"))
