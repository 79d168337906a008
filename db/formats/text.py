"""What an imported text may hold: no NUL character or lone surrogate (PostgreSQL cannot store
them, so a SQLite database holding one could never move), and no more characters than the
limits (a 10 MB comment or note stalls the labelling page).

Two limits: one for the texts people read and write while labelling (comments, notes, names)
and one for whole documents (a file's content, a FIM input, a raw model output or response, a
pairs item's context). Both come from `--max-text-chars` / `--max-document-chars` of
`db import`, else the environment, else the defaults below.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from db.formats.errors import FormatError

MAX_TEXT_ENV, MAX_DOCUMENT_ENV = "NLCE_IMPORT_MAX_TEXT", "NLCE_IMPORT_MAX_DOCUMENT"
DEFAULT_MAX_TEXT, DEFAULT_MAX_DOCUMENT = 10_000, 1_000_000

# fields holding a whole document, under the larger limit (every other text: the smaller one)
DOCUMENT_FIELDS = frozenset({"content", "fim_input", "raw_output", "context", "raw_response"})

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _env_limit(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise FormatError(f"${name} must be a whole number of characters, got {raw!r}") from None
    if value < 1:
        raise FormatError(f"${name} must be at least 1, got {value}")
    return value


@dataclass(frozen=True)
class TextLimits:
    """The most characters a text field may hold on import."""
    text: int = DEFAULT_MAX_TEXT
    document: int = DEFAULT_MAX_DOCUMENT

    @classmethod
    def from_env(cls, text: int | None = None, document: int | None = None) -> "TextLimits":
        """Given values win, then $NLCE_IMPORT_MAX_TEXT / $NLCE_IMPORT_MAX_DOCUMENT, then the
        defaults."""
        limits = cls(text if text is not None else _env_limit(MAX_TEXT_ENV, DEFAULT_MAX_TEXT),
                     document if document is not None
                     else _env_limit(MAX_DOCUMENT_ENV, DEFAULT_MAX_DOCUMENT))
        if limits.text < 1 or limits.document < 1:
            raise FormatError("text limits must be at least 1 character")
        return limits

    @property
    def largest(self) -> int:
        """The longest text any field may hold (a CSV reader's cell limit)."""
        return max(self.text, self.document)

    def limit_of(self, field: str) -> int:
        return self.document if field.rsplit(".", 1)[-1] in DOCUMENT_FIELDS else self.text

    def check(self, value: str, field: str, limit: int | None = None) -> None:
        """Refuse a text PostgreSQL cannot store, or one over its field's limit."""
        bad = _UNSTORABLE.search(value)
        if bad:
            what = "a NUL character" if bad.group() == "\x00" else "a lone surrogate"
            raise FormatError(f"contains {what} (\\u{ord(bad.group()):04x}) at character "
                              f"{bad.start()}, which a database cannot store; remove it", field)
        limit = limit or self.limit_of(field)
        if len(value) > limit:
            which = ("--max-document-chars or $" + MAX_DOCUMENT_ENV if limit == self.document
                     and field.rsplit(".", 1)[-1] in DOCUMENT_FIELDS
                     else "--max-text-chars or $" + MAX_TEXT_ENV)
            raise FormatError(f"{len(value)} characters, over the limit of {limit} (set with "
                              f"{which})", field)

    def check_json(self, value: Any, field: str) -> None:
        """Every string (keys included) inside a JSON value, under the document limit."""
        if isinstance(value, str):
            self.check(value, field, self.document)
        elif isinstance(value, dict):
            for key, item in value.items():
                self.check(str(key), field)
                self.check_json(item, f"{field}.{key}")
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                self.check_json(item, f"{field}[{i}]")
