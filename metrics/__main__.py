"""`python -m metrics COMMAND ARGS...`: the metrics commands (score; align, the old name of
`python -m align`), the same as `nlce metrics COMMAND` and `python -m metrics.COMMAND`; without
a command it lists them."""
from __future__ import annotations

import sys

from nlce.__main__ import group_main

if __name__ == "__main__":
    sys.exit(group_main("metrics"))
