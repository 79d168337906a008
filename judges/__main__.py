"""`python -m judges COMMAND ARGS...`: the judges commands (run, report, serve), the same as
`nlce judges COMMAND` and `python -m judges.COMMAND`; without a command it lists them."""
from __future__ import annotations

import sys

from nlce.__main__ import group_main

if __name__ == "__main__":
    sys.exit(group_main("judges"))
