"""`nlce`: the one console script. `nlce GROUP [COMMAND] ARGS...` runs the same entry point as
`python -m GROUP[.COMMAND] ARGS...` (both keep working), so a command reads the same either way.

This package imports no other project package at import time (stage modules load only when a
command runs), so every CLI may use `nlce.cli` without creating an import cycle.
"""
