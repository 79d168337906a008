"""`python -m db.export --out DIR [--format ...] [--db URL]`: alias of `python -m db export`."""
import sys

from db.__main__ import main

if __name__ == "__main__":
    from nlce.cli import run_main

    sys.exit(run_main(main, ["export", *sys.argv[1:]], prog="python -m db.export"))
