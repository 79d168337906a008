"""The items each configuration is compared on, per slice: a metric configuration's labelled
generations with its scores, or a judge run's usable verdicts, with the humans' levels
(incorrect 0, partial 1, correct 2). What `align.comparisons` tests pairwise."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from agreement.judges import usable_pairs
from agreement.statistics import encode_labels
from align.analysis import slice_frames, thresholds_key
from align.thresholds import Thresholds
from taxonomy import ACCURACY_LABELS


@dataclass
class Configuration:
    """One configuration's items in one slice: generation ids (sorted), scores, human levels and,
    for a metric, the thresholds that classify it (refitted in resamples unless `fixed`)."""
    key: str
    kind: str  # "metric" | "judge"
    items: np.ndarray
    x: np.ndarray
    human: np.ndarray
    thresholds: Thresholds | None = None
    higher_is_better: bool | None = None

    def subset(self, items: np.ndarray) -> "Configuration":
        keep = np.isin(self.items, items)
        return Configuration(self.key, self.kind, self.items[keep], self.x[keep],
                             self.human[keep], self.thresholds, self.higher_is_better)



def metric_configurations(predictions: pd.DataFrame, thresholds: dict[str, Thresholds],
                          directions: dict[str, bool | None] | None = None,
                          order: Sequence[str] = ACCURACY_LABELS
                          ) -> dict[tuple[str, str], list[Configuration]]:
    """(slice, value) -> the metric configurations aligned there, over their labelled items (the
    rows kappa.csv was computed from: `AlignResult.predictions`); `directions`: key -> whether
    a higher score is better (for ordered refits)."""
    directions = directions or {}
    out: dict[tuple[str, str], list[Configuration]] = {}
    if predictions is None or predictions.empty:
        return out
    labelled = predictions[predictions.human.notna()]
    for (key, slice_name, value), rows in labelled.groupby(["key", "slice", "slice_value"],
                                                            sort=True, observed=True):
        rows = rows.sort_values("generation_id")
        out.setdefault((str(slice_name), str(value)), []).append(Configuration(
            str(key), "metric", rows.generation_id.to_numpy(np.int64),
            rows.score.to_numpy(float), encode_labels(rows.human.astype(str).to_numpy(), order),
            thresholds.get(thresholds_key(key, slice_name, value))
            or thresholds.get(thresholds_key(key, "all", "all")), directions.get(str(key))))
    return out


def judge_configurations(verdicts: pd.DataFrame | None, labels: pd.DataFrame,
                         slices: Sequence[str], order: Sequence[str] = ACCURACY_LABELS
                         ) -> dict[tuple[str, str], list[Configuration]]:
    """(slice, value) -> the judge runs there, over their usable verdicts (ok, with a label)."""
    out: dict[tuple[str, str], list[Configuration]] = {}
    if verdicts is None or verdicts.empty:
        return out
    label_of = {g: label for g, label in zip(labels.generation_id, labels.label)
                if isinstance(label, str)}
    for key, judge_rows in verdicts.groupby("key", sort=True):
        for slice_name, value, rows in slice_frames(judge_rows, slices):
            pairs = usable_pairs(rows.drop_duplicates("generation_id"), label_of)
            if pairs.empty:
                continue
            items = pairs.generation_id.to_numpy(np.int64)
            out.setdefault((slice_name, value), []).append(Configuration(
                str(key), "judge", items,
                encode_labels(pairs.accuracy.to_numpy(), order).astype(float),
                encode_labels([label_of[g] for g in items], order)))
    return out
