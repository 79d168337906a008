"""How align's terminal view, report page and answers write a key, a number and a rank for
people (one home for the three views)."""
from __future__ import annotations

import pandas as pd

from align.figures import short_key


def display_name(key: str) -> str:
    """A configuration's key on one line (`figures.short_key`: model ids without their
    organisation)."""
    return short_key(key).replace("\n", "")


def number_text(value, digits: int = 3) -> str:
    """A number to `digits` places, or – where there is none."""
    return "–" if value is None or pd.isna(value) else f"{value:.{digits}f}"


def rank_text(value) -> str:
    """A rank as people read it: the number, or – where there is none."""
    return "–" if value is None or pd.isna(value) else str(int(value))


__all__ = ["display_name", "number_text", "rank_text"]
