"""`python -m corpus COMMAND ARGS...`: the corpus commands (extract, generate), the same as
`nlce corpus COMMAND` and `python -m corpus.COMMAND`; without a command it lists them."""
from __future__ import annotations

import sys

from nlce.__main__ import group_main

if __name__ == "__main__":
    sys.exit(group_main("corpus"))
