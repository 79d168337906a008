"""Plain data every metric returns: one score per (prediction, reference) pair."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


class MetricInputError(ValueError):
    """An item that cannot be scored (empty text, unsupported language...); the run goes on."""


@dataclass(frozen=True)
class PairScore:
    """P/R/F of one pair (F is the headline score), or the error that kept it from a score."""

    precision: Optional[float] = None
    recall: Optional[float] = None
    f: Optional[float] = None
    details: dict = field(default_factory=dict)
    error: Optional[str] = None

    @classmethod
    def failed(cls, error: str, **details) -> "PairScore":
        return cls(error=error, details=dict(details))


def require_text(text: str, what: str) -> str:
    """The text, or a MetricInputError naming what was empty or not text."""
    if not isinstance(text, str):
        raise MetricInputError(f"{what} is {type(text).__name__}, not text")
    if not text.strip():
        raise MetricInputError(f"empty {what}: nothing to score")
    return text
