"""Model quality per slice from labelled generations: the table behind quality.csv and the
app's Table 2 with intervals (one home for both; `agreement.quality` holds the statistics).

`quality_table(frame, policy, slices)`: per slice (all, each language, each model, each
language x model: the study's Table 2 cells) the counts of each label, each share with its
Wilson 95% interval, and the mean score (correct 1, partial 0.5, incorrect 0) with Student's t
95% interval, clipped to [0, 1] (the Wilson-based bounds where every label is the same).
`frame`: one row per labelled generation with model, language, label and score
(`agreement.quality.label_scores`).
"""
from __future__ import annotations

import math
from typing import Iterable

import pandas as pd

from agreement.quality import mean_score_interval, wilson_interval
from taxonomy import ACCURACY_LABELS

QUALITY_SLICES = ("all", "language", "model", "language x model")
QUALITY_COLUMNS = ["slice", "slice_value", "n", "n_correct", "n_partial", "n_incorrect",
                   "share_correct", "share_correct_low", "share_correct_high", "share_partial",
                   "share_partial_low", "share_partial_high", "share_incorrect",
                   "share_incorrect_low", "share_incorrect_high", "mean_score", "mean_score_low",
                   "mean_score_high", "label_policy", "method"]
SCORE_METHOD = "mean score: correct 1, partial 0.5, incorrect 0"
CONFIDENCE = 0.95


def cell_name(language: str, model: str) -> str:
    """The slice value of one language x model cell ('el x codegemma-7b'): the language code
    never holds ' x ', so the first one splits it."""
    return f"{language} x {model}"


def slices_for(languages: int) -> tuple[str, ...]:
    """The slices worth computing: with one language, the language slice would repeat "all"
    and the language x model cells the models."""
    return QUALITY_SLICES if languages > 1 else ("all", "model")


def quality_slices(frame: pd.DataFrame, slices: Iterable[str] = QUALITY_SLICES
                   ) -> Iterable[tuple[str, str, pd.DataFrame]]:
    """(slice, value, rows) for all, each language, each model and each language x model (those
    of them in `slices`)."""
    for name in slices:
        if name == "all":
            yield "all", "all", frame
        elif name == "language x model":
            for (language, model), rows in frame.groupby(["language", "model"], sort=True):
                yield name, cell_name(str(language), str(model)), rows
        else:
            for value, rows in frame.groupby(name, sort=True):
                yield name, str(value), rows


def quality_table(frame: pd.DataFrame, policy: str, slices: Iterable[str] = QUALITY_SLICES
                  ) -> pd.DataFrame:
    """quality.csv's rows (QUALITY_COLUMNS): see the module; none without labels."""
    rows = []
    for slice_name, value, part in quality_slices(frame, slices) if len(frame) else ():
        counts = part.label.value_counts()
        rows.append({"slice": slice_name, "slice_value": value, "n": len(part),
                     **{f"n_{label}": int(counts.get(label, 0)) for label in ACCURACY_LABELS},
                     "mean_score": part.score.mean(),
                     "variance": part.score.var(ddof=1) if len(part) > 1 else math.nan})
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=QUALITY_COLUMNS)
    for label in ACCURACY_LABELS:
        table[f"share_{label}"] = table[f"n_{label}"] / table.n
        table[f"share_{label}_low"], table[f"share_{label}_high"] = wilson_interval(
            table[f"n_{label}"], table.n, CONFIDENCE)
    table["mean_score_low"], table["mean_score_high"] = mean_score_interval(
        table.mean_score, table.variance, table.n, CONFIDENCE)
    table["label_policy"] = policy
    table["method"] = [_quality_method(n, variance) for n, variance in
                       zip(table.n, table.variance)]
    return table[QUALITY_COLUMNS]


def _quality_method(n: int, variance: float) -> str:
    method = (f"shares: Wilson 95% interval; {SCORE_METHOD}, Student t 95% interval clipped to "
              f"[0, 1]")
    if n >= 2 and variance > 0:
        return method
    return (method + "; every label here is the same: the mean score's interval is the one the "
                     "Wilson interval of that label's share allows, the other labels at the far "
                     "end")


__all__ = ["CONFIDENCE", "QUALITY_COLUMNS", "QUALITY_SLICES", "SCORE_METHOD", "cell_name",
           "quality_slices", "quality_table", "slices_for"]
