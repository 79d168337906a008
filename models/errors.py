"""The error every part of `models` raises for a model it cannot provide here."""
from __future__ import annotations

from nlce.cli import UserError


class ModelUnavailableError(UserError, LookupError):
    """A model id or path that cannot be turned into local weights here."""
