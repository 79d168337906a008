"""Where a judge endpoint's API key comes from: $OPENAI_API_KEY, else a secrets file (never a
flag, never logged or stored)."""
from __future__ import annotations

import os

from nlce.cli import InputError
from nlce.option_files import read_option_text

API_KEY_ENV = "OPENAI_API_KEY"
SECRETS_FILE_ENV = "NLCE_SECRETS_FILE"


def read_api_key(secrets_file: str | None = None) -> str | None:
    """The API key from $OPENAI_API_KEY, else from a secrets file (`--secrets-file` or
    $NLCE_SECRETS_FILE) holding either the bare key or a line OPENAI_API_KEY=..."""
    if os.environ.get(API_KEY_ENV):
        return os.environ[API_KEY_ENV]
    path = secrets_file or os.environ.get(SECRETS_FILE_ENV)
    if not path:
        return None
    text = read_option_text(path, "secrets file")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    for line in lines:
        if line.startswith(f"{API_KEY_ENV}="):
            return line.split("=", 1)[1].strip().strip("'\"")
    if len(lines) == 1 and "=" not in lines[0]:
        return lines[0]
    raise InputError(f"secrets file {path} has no {API_KEY_ENV}=... line")
