"""The fitted KDE classifier as data: score intervals with a label each (`Thresholds`), saved
and loaded as JSON so thresholds fitted on labelled data classify new, unlabelled generations.

Intervals are half open, [lower, upper): a score exactly on a threshold goes to the upper one.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from agreement.statistics import encode_labels
from nlce.cli import InputError

THRESHOLDS_FORMAT = "nlce-kde-thresholds/1"


@dataclass(frozen=True)
class Thresholds:
    """A fitted classifier: ordered, non-overlapping [lower, upper) intervals, each with a label.

    Saved and loaded as JSON (`to_dict`/`from_dict`, `save_thresholds`/`load_thresholds`), so
    thresholds fitted on labelled data can classify new, unlabelled generations.
    """
    labels: tuple
    intervals: tuple  # ((lower, upper, label), ...) covering (-inf, inf) in order
    weighting: str = "equal"
    bandwidth: str | float = "scott"
    class_counts: Mapping[str, int] = field(default_factory=dict)
    bandwidths: Mapping[str, float] = field(default_factory=dict)
    point_mass: tuple = ()  # classes that fell back to the bandwidth floor

    @property
    def boundaries(self) -> np.ndarray:
        return np.array([lo for lo, _, _ in self.intervals[1:]], dtype=float)

    @property
    def interval_codes(self) -> np.ndarray:
        return encode_labels([label for _, _, label in self.intervals], self.labels)

    def classify_codes(self, scores: Sequence[float]) -> np.ndarray:
        """The label index (position in `labels`) of each score; -1 for a missing score."""
        x = np.asarray(scores, dtype=float)
        codes = self.interval_codes[np.searchsorted(self.boundaries, x, side="right")]
        return np.where(np.isnan(x), -1, codes)

    def classify(self, scores: Sequence[float]) -> list:
        """The label of each score (None for a missing score)."""
        labels = list(self.labels)
        return [labels[c] if c >= 0 else None for c in self.classify_codes(scores)]

    def intervals_per_class(self) -> dict[str, int]:
        counts = {str(label): 0 for label in self.labels}
        for _, _, label in self.intervals:
            counts[str(label)] += 1
        return counts

    @property
    def orientation(self) -> str:
        """'ascending' when regions follow the label order upwards (higher score = better label),
        'descending' for a metric where higher is worse, 'mixed' otherwise, 'single' for one."""
        ranks = self.interval_codes
        if len(ranks) == 1:
            return "single"
        steps = np.diff(ranks)
        if (steps > 0).all():
            return "ascending"
        if (steps < 0).all():
            return "descending"
        return "mixed"

    def in_order(self, ascending: bool) -> bool:
        """Whether the regions run from worst to best upwards (`ascending`) or downwards."""
        return self.orientation in ("single", "ascending" if ascending else "descending")

    def describe(self, digits: int = 3, short: bool = False) -> str:
        """One line, e.g. 'incorrect < 0.412 ≤ partial < 0.55 ≤ correct' (short: first letters,
        'i<0.412≤p<0.55≤c')."""
        def name(label) -> str:
            return str(label)[:1] if short else str(label)
        parts = [name(self.intervals[0][2])]
        for lower, _, label in self.intervals[1:]:
            parts.append(f"{lower:.{digits}g}{'≤' if short else ' ≤ '}{name(label)}")
        if len(parts) == 1:
            return f"{parts[0]} everywhere"
        return ("<" if short else " < ").join(parts)

    def to_dict(self) -> dict:
        def num(x):
            return None if math.isinf(x) else float(x)
        return {"format": THRESHOLDS_FORMAT, "labels": [str(x) for x in self.labels],
                "intervals": [[num(lo), num(hi), str(label)] for lo, hi, label in self.intervals],
                "weighting": self.weighting, "bandwidth": self.bandwidth,
                "class_counts": dict(self.class_counts), "bandwidths": dict(self.bandwidths),
                "point_mass": list(self.point_mass)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Thresholds":
        if data.get("format") != THRESHOLDS_FORMAT:
            raise ValueError(f"not a thresholds record (format {data.get('format')!r}, expected "
                             f"{THRESHOLDS_FORMAT!r})")
        labels = tuple(data["labels"])
        intervals = tuple((-math.inf if lo is None else float(lo),
                           math.inf if hi is None else float(hi), label)
                          for lo, hi, label in data["intervals"])
        _check_intervals(intervals, labels)
        return cls(labels=labels, intervals=intervals, weighting=data.get("weighting", "equal"),
                   bandwidth=data.get("bandwidth", "scott"),
                   class_counts=dict(data.get("class_counts", {})),
                   bandwidths=dict(data.get("bandwidths", {})),
                   point_mass=tuple(data.get("point_mass", ())))


def _check_intervals(intervals, labels) -> None:
    if not intervals:
        raise ValueError("thresholds have no intervals")
    if intervals[0][0] != -math.inf or intervals[-1][1] != math.inf:
        raise ValueError("threshold intervals must start at -inf and end at +inf")
    for (lo, hi, label), nxt in zip(intervals, list(intervals[1:]) + [None]):
        if not lo < hi:
            raise ValueError(f"empty threshold interval [{lo}, {hi}) for {label!r}")
        if nxt is not None and nxt[0] != hi:
            raise ValueError(f"threshold intervals not contiguous at {hi}")
        if label not in labels:
            raise ValueError(f"threshold interval label {label!r} is not one of {labels!r}")


def save_thresholds(path: str | Path, thresholds: Mapping[str, Thresholds]) -> Path:
    """Write {configuration key: Thresholds} as one JSON file (written whole, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format": THRESHOLDS_FORMAT,
               "thresholds": {key: t.to_dict() for key, t in thresholds.items()}}
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return path


def load_thresholds(path: str | Path) -> dict[str, Thresholds]:
    """Read what `save_thresholds` wrote; a malformed file raises ValueError naming it."""
    path = Path(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        if payload.get("format") != THRESHOLDS_FORMAT:
            raise ValueError(f"format {payload.get('format')!r}, expected {THRESHOLDS_FORMAT!r}")
        return {key: Thresholds.from_dict(t) for key, t in payload["thresholds"].items()}
    except RecursionError:
        raise ValueError(f"{path}: cannot read thresholds: nested too deeply") from None
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise InputError(f"{path}: cannot read thresholds: {error}") from error
