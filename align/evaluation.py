"""How a KDE classifier agrees with the humans (section 7.1) and separates real predictions from
noise (section 7.2): thresholds from `align.kde` applied to scores and compared."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from agreement.statistics import Confusion, bootstrap_counts, kappa_from_counts
from align.kde import DEFAULT_GRID_SIZE, KDEFit, clean_pairs, fit_kde_thresholds
from align.thresholds import Thresholds
from taxonomy import ACCURACY_LABELS

COLLAPSE_SHARE = 0.9  # a single predicted class this common, with kappa ~ 0, triggers the warning
COLLAPSE_KAPPA = 0.1


# ---------------------------------------------------------------- evaluation

@dataclass(frozen=True)
class Evaluation:
    """How the reclassified labels agree with the human ones."""
    n: int
    kappa: float
    confusion: Confusion
    predicted_share: Mapping[str, float]
    kappa_low: float = float("nan")
    kappa_high: float = float("nan")
    warning: str | None = None


def evaluate(thresholds: Thresholds, scores: Sequence[float], human: Sequence[Any],
             bootstrap: int = 0, seed: int = 0, weights: str | None = "quadratic") -> Evaluation:
    """Classify the scores with `thresholds` and compare with `human`: weighted kappa (labels in
    the thresholds' order), confusion matrix, and, with `bootstrap` resamples, a 95% percentile
    interval for kappa (items resampled; the thresholds stay fixed)."""
    labels = thresholds.labels
    x, truth = clean_pairs(scores, human, labels)
    pred = thresholds.classify_codes(x)
    k = len(labels)
    counts = np.bincount(truth * k + pred, minlength=k * k).reshape(k, k)
    kappa = float(kappa_from_counts(counts, weights))
    low = high = float("nan")
    if bootstrap and x.size:
        _, low, high = bootstrap_counts(counts, kappa_from_counts, n_resamples=bootstrap,
                                        seed=seed, weights=weights)
    predicted = counts.sum(axis=0)
    share = {str(label): float(predicted[i] / max(x.size, 1)) for i, label in enumerate(labels)}
    return Evaluation(n=int(x.size), kappa=kappa, confusion=Confusion(labels, counts),
                      predicted_share=share, kappa_low=low, kappa_high=high,
                      warning=collapse_warning(share, kappa, thresholds.weighting))


def collapse_warning(predicted_share: Mapping[str, float], kappa: float, weighting: str
                     ) -> str | None:
    """The warning for a classifier that hands (nearly) everything to one class.

    >>> warning = collapse_warning({"incorrect": 0.02, "partial": 0.0, "correct": 0.98}, 0.01,
    ...                            "prior")
    >>> warning.startswith("prior weighting gave 98% of items to 'correct', kappa ~ 0: no better")
    True
    >>> collapse_warning({"incorrect": 0.3, "partial": 0.3, "correct": 0.4}, 0.01, "equal") is None
    True
    """
    label, share = max(predicted_share.items(), key=lambda item: item[1])
    if share < COLLAPSE_SHARE or not (math.isnan(kappa) or abs(kappa) < COLLAPSE_KAPPA):
        return None
    if weighting == "prior":
        return (f"prior weighting gave {share:.0%} of items to '{label}', kappa ~ 0: no better "
                f"than always answering the majority (the majority class wins wherever the "
                f"classes overlap; try --weighting equal)")
    return (f"the classifier gave {share:.0%} of items to '{label}', kappa ~ 0: the scores do "
            f"not tell the classes apart")


def fit_and_evaluate(scores: Sequence[float], human: Sequence[Any],
                     labels: Sequence[Any] = ACCURACY_LABELS, weighting: str = "equal",
                     bandwidth: str | float = "scott", bootstrap: int = 0, seed: int = 0,
                     grid_size: int = DEFAULT_GRID_SIZE, method: str = "binned"
                     ) -> tuple[KDEFit, Evaluation]:
    """Fit thresholds on the items and reclassify the same items (the study's procedure)."""
    fit = fit_kde_thresholds(scores, human, labels, weighting, bandwidth, grid_size, method)
    return fit, evaluate(fit.thresholds, scores, human, bootstrap=bootstrap, seed=seed)


# ---------------------------------------------------------------- noise separation

NOISE_LABELS = ("noise", "real")


@dataclass(frozen=True)
class NoiseSeparation:
    """Binary KDE classification of real predictions against noise (section 7.2)."""
    n_real: int
    n_noise: int
    f1: float  # F1 of the "noise" class (noise is what a robust metric must catch)
    macro_f1: float
    kappa: float
    thresholds: Thresholds
    confusion: Confusion


def noise_separation(real_scores: Sequence[float], noise_scores: Sequence[float],
                     weighting: str = "equal", bandwidth: str | float = "scott",
                     grid_size: int = DEFAULT_GRID_SIZE) -> NoiseSeparation:
    """How well a KDE classifier tells real predictions from noise by their scores alone.

    >>> rng = np.random.default_rng(1)
    >>> result = noise_separation(rng.normal(0.8, 0.05, 200), rng.normal(0.2, 0.05, 200))
    >>> round(result.f1, 2), round(result.kappa, 2)
    (1.0, 1.0)
    """
    real = np.asarray(real_scores, dtype=float)
    noise = np.asarray(noise_scores, dtype=float)
    scores = np.concatenate([real, noise])
    truth = ["real"] * len(real) + ["noise"] * len(noise)
    fit, result = fit_and_evaluate(scores, truth, NOISE_LABELS, weighting, bandwidth,
                                   grid_size=grid_size)
    per = result.confusion.per_label()
    f1s = [per[label]["f1"] for label in NOISE_LABELS]
    return NoiseSeparation(
        n_real=int((~np.isnan(real)).sum()), n_noise=int((~np.isnan(noise)).sum()),
        f1=per["noise"]["f1"], macro_f1=float(np.nanmean(f1s)) if not all(map(math.isnan, f1s))
        else float("nan"), kappa=float(kappa_from_counts(result.confusion.counts, None)),
        thresholds=fit.thresholds, confusion=result.confusion)
