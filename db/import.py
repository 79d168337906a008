"""`python -m db.import PATH... [--format ...] [--db URL]`: alias of `python -m db import`."""
import sys

from db.__main__ import main

if __name__ == "__main__":
    from nlce.cli import run_main

    sys.exit(run_main(main, ["import", *sys.argv[1:]], prog="python -m db.import"))
