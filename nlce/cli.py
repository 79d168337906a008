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
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        print(f"{prog or 'nlce'}: error: {type(error).__name__}: {message}"
              f" (set {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK if code is None else int(code)
