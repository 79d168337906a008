"""Small files a command takes as options (a metric grid, a price table, a prompt template, a
secrets file): read only up to a size such files never reach, as UTF-8, and as YAML where they
are YAML. Any problem is one line naming the file and what is wrong with it (`InputError`, or
the caller's own kind of it), never a traceback. No project imports: every package may use it.
"""
from __future__ import annotations

import os
from typing import Any

from nlce.cli import InputError, yaml_problem

# Option files are kilobytes (the study's 30-configuration grid: 2 KB). PyYAML needs minutes for
# a line of hundreds of megabytes, so a file past this is refused before it is read.
MAX_OPTION_FILE_BYTES = 1 << 20


def read_option_text(path: str | os.PathLike, what: str, *, error: type = InputError,
                     limit: int = MAX_OPTION_FILE_BYTES) -> str:
    """The text of the option file `path` (`what` names it in messages: "grid file"); `error`
    (an InputError subclass) for a file that is missing, too big or not UTF-8."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)  # never more, however large the file
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        size = os.path.getsize(path)
        raise error(f"{what} {path} is {size / 2**20:.1f} MiB; a {what} is a few kilobytes (at "
                    f"most {limit >> 20} MiB is read)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} {path} is not UTF-8 text (byte {exc.start})") from None


def load_option_yaml(path: str | os.PathLike, what: str, *, error: type = InputError,
                     limit: int = MAX_OPTION_FILE_BYTES) -> Any:
    """The YAML value of the option file `path` (None for an empty file), read as
    `read_option_text` reads it; invalid YAML is one line with its line and column."""
    import yaml

    text = read_option_text(path, what, error=error, limit=limit)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{what} {path} is {yaml_problem(exc)}") from None
    except RecursionError:
        raise error(f"{what} {path} is nested too deeply to read") from None
