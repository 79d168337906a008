"""The one error of the data formats (pure; the importer adds the file and line/row)."""
from __future__ import annotations

from nlce.cli import InputError


class FormatError(InputError):
    """A record or row that does not fit its format; `field` names the field when known."""

    def __init__(self, message: str, field: str | None = None):
        self.field, self.message = field, message
        super().__init__(f"field {field!r}: {message}" if field else message)
