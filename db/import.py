"""`python -m db.import PATH... [--format ...] [--db URL]`: alias of `python -m db import`."""
import sys

from db.__main__ import main

if __name__ == "__main__":
    sys.exit(main(["import", *sys.argv[1:]]))
