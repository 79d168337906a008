"""The ordinal accuracy label as a type.

It lives apart from `taxonomy.models` because parsing a translated spelling needs the shipped
taxonomy (`taxonomy.loader`), which is built from `taxonomy.models`: one direction of imports.
"""
from __future__ import annotations

import enum

from taxonomy.loader import default_taxonomy
from taxonomy.models import ACCURACY_LABELS, accuracy_value


class AccuracyLabel(str, enum.Enum):
    """The ordinal accuracy label: INCORRECT < PARTIAL < CORRECT (comparisons follow the scale)."""

    INCORRECT = "incorrect"
    PARTIAL = "partial"
    CORRECT = "correct"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def rank(self) -> int:
        """0 for incorrect, 1 for partial, 2 for correct."""
        return ACCURACY_LABELS.index(self.value)

    @classmethod
    def parse(cls, text: "str | AccuracyLabel") -> "AccuracyLabel":
        """The label a spelling means: 'Correct', 'Partially correct', 'partial', '✓', '~', ...

        Also accepts the label names and aliases of every language in the shipped taxonomy
        (e.g. '部分正确', 'Częściowo poprawny'). Anything else raises TaxonomyError.
        """
        if isinstance(text, cls):
            return text
        # translated names live in the data file, read only when a built-in spelling misses
        return cls(accuracy_value(text, lambda: default_taxonomy().accuracy_aliases()))

    def _other(self, other: object) -> "AccuracyLabel | None":
        if isinstance(other, AccuracyLabel):
            return other
        if isinstance(other, str):
            return AccuracyLabel.parse(other)
        return None

    def __lt__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self.rank < o.rank

    def __le__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self.rank <= o.rank

    def __gt__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self.rank > o.rank

    def __ge__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self.rank >= o.rank
