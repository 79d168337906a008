"""`python -m db.export --out DIR [--format ...] [--db URL]`: alias of `python -m db export`."""
import sys

from db.__main__ import main

if __name__ == "__main__":
    sys.exit(main(["export", *sys.argv[1:]]))
