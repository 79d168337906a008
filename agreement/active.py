"""Active labelling with valid estimates (Zrnic & Candes, ICML 2024, "Active Statistical
Inference"): spend a label budget where the judge is least reliable, and still estimate a mean
without bias, with an interval.

- `calibrated` and `error_scale`: from a labelled pilot, the judge's values recalibrated (the
  pilot's mean human value per judge value) and the standard deviation of the human value given
  the judge's: where the judge is least reliable.
- `sampling_probabilities`: each unlabelled generation i is drawn for labelling with a known
  probability pi_i proportional to that standard deviation (the paper's optimal rule for a
  mean), floored at a minimum, capped at 1 and summing to the budget; uniform without a pilot.
- `draw`: the seeded draw (the same seed, the same draws).
- `active_mean`: the estimate [sum over the pilot of Y_i + sum over the planned generations of
  (lam Yhat_i + (Y_i - lam Yhat_i) drawn_i / pi_i)] / (n_pilot + N), unbiased whatever the judge
  for any fixed lam, and its normal interval from the summands' variance (the paper's CLT
  interval). lam = 1 is the plain formula (with uniform pi: PPI on a random subset); by default
  lam is tuned to make the variance smallest, clipped to [0, 1], as the paper and PPI++ tune it
  (0: the drawn labels alone, weighted by 1/pi). `active_difference`: two groups compared.

Pure numpy; values per estimand as `agreement.ppi` takes them (one column per estimand).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agreement.statistics import as_columns, normal_quantile, normal_two_sided_p
from nlce.cli import InputError

MIN_PER_VALUE = 5  # pilot items a judge value needs before its own calibration and spread count


def calibrated(pilot_predicted, pilot_human, predicted) -> np.ndarray:
    """The judge's values recalibrated on the pilot: each judge value v becomes the pilot's mean
    human value where the judge said v (a value seen fewer than MIN_PER_VALUE times in the pilot
    is shifted by the pilot's mean human - judge difference instead). A function of the pilot
    alone, fixed before the draw, so the estimate built on it stays unbiased; it centres the
    errors the draw is weighted by."""
    pilot_predicted = np.asarray(pilot_predicted, dtype=float)
    pilot_human = np.asarray(pilot_human, dtype=float)
    predicted = np.asarray(predicted, dtype=float)
    shift = float((pilot_human - pilot_predicted).mean()) if pilot_human.size else 0.0
    out = predicted + shift
    for value in np.unique(pilot_predicted):
        seen = pilot_predicted == value
        if seen.sum() >= MIN_PER_VALUE:
            out[predicted == value] = pilot_human[seen].mean()
    return out


def error_scale(pilot_predicted: np.ndarray, pilot_human: np.ndarray,
                predicted: np.ndarray) -> tuple[np.ndarray, str]:
    """The standard deviation of the human value given the judge's value (around its pilot
    mean, `calibrated`), for each of `predicted`, learned from the pilot; a judge value seen
    fewer than MIN_PER_VALUE times takes the pilot's overall one, and none goes below a tenth of
    it (a judge value never wrong in the pilot is still drawn sometimes). Raises InputError where
    the pilot cannot say anything (one class, or the judge right on every item)."""
    pilot_predicted = np.asarray(pilot_predicted, dtype=float)
    pilot_human = np.asarray(pilot_human, dtype=float)
    if len(np.unique(pilot_human)) < 2:
        raise InputError(f"the pilot's {len(pilot_human)} human label(s) are all the same: it "
                         f"cannot tell where the judge errs; label a few more at random first")
    if np.array_equal(pilot_human, pilot_predicted):
        raise InputError("the judge agrees with every label of the pilot: there is no error to "
                         "steer the draw by; draw uniformly instead (annotate.plan --uniform)")
    residual = pilot_human - calibrated(pilot_predicted, pilot_human, pilot_predicted)
    overall = float(np.sqrt((residual ** 2).mean()))
    scale = {}
    for value in np.unique(pilot_predicted):
        seen = residual[pilot_predicted == value]
        scale[float(value)] = (float(np.sqrt((seen ** 2).mean())) if seen.size >= MIN_PER_VALUE
                               else overall)
    floor = overall / 10
    scale = {v: max(s, floor) for v, s in scale.items()}
    out = np.array([max(scale.get(float(v), overall), floor) for v in np.asarray(predicted)])
    how = (f"learned from a pilot of {len(pilot_human)} labelled generation(s): the human "
           f"value's standard deviation given the judge's "
           + ", ".join(f"{v:g}: {s:.3f}" for v, s in sorted(scale.items()))
           + f" (overall {overall:.3f}; at least a tenth of it)")
    return out, how


def sampling_probabilities(scale: np.ndarray | None, n: int, budget: float,
                           min_probability: float = 0.05) -> np.ndarray:
    """pi proportional to `scale` (uniform where None), each at least `min_probability` and at
    most 1, summing to `budget` (the expected number of labels). Raises InputError naming the
    limits where no such pi exists."""
    if n == 0:
        raise InputError("no generation to plan: every one of them has a human label or no "
                         "usable verdict from the predictor")
    if not 0 < budget <= n:
        raise InputError(f"budget {budget:g} is more than the {n} generation(s) without a human "
                         f"label there are (or not above 0)")
    if not 0 <= min_probability <= 1:
        raise InputError(f"the minimum probability must be between 0 and 1, not "
                         f"{min_probability:g}")
    if min_probability * n > budget:
        raise InputError(f"budget {budget:g} is below the minimum probability {min_probability:g}"
                         f" x {n} generations = {min_probability * n:g}: raise the budget or "
                         f"lower --min-probability")
    weights = np.ones(n) if scale is None else np.asarray(scale, dtype=float)
    # water-filling: scale the free ones to what the budget leaves, fix those pushed past a bound
    low = np.zeros(n, dtype=bool)
    high = np.zeros(n, dtype=bool)
    for _ in range(2 * n + 1):
        free = ~(low | high)
        left = budget - low.sum() * min_probability - high.sum()
        pi = np.where(low, min_probability, np.where(high, 1.0, 0.0))
        if free.any():
            pi[free] = weights[free] * left / weights[free].sum()
        new_low = free & (pi < min_probability)
        new_high = free & (pi > 1)
        if not new_low.any() and not new_high.any():
            return pi
        low |= new_low
        high |= new_high
    return pi  # pragma: no cover - the loop fixes at least one generation per turn


def draw(probabilities: np.ndarray, seed: int) -> np.ndarray:
    """Which generations are drawn for labelling: each with its probability, independently,
    from a generator seeded with `seed` (the same seed and probabilities, the same draws)."""
    return np.random.default_rng(seed).random(len(probabilities)) < probabilities


@dataclass(frozen=True)
class ActiveEstimate:
    estimate: np.ndarray  # per estimand
    ci_low: np.ndarray
    ci_high: np.ndarray
    se: np.ndarray
    lam: np.ndarray  # the power tuning used: 1 = the plain formula, 0 = the labels alone
    n: int  # pilot + planned generations the mean is over


def active_parts(pilot_human, predicted, human, drawn, probabilities
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(A, B): the estimator's summands are A + lam B, one per pilot and planned generation: for
    the pilot A = Y, B = 0; for a planned one A = Y drawn / pi (0 where not drawn) and
    B = Yhat (1 - drawn / pi), so that lam = 1 gives Yhat + (Y - Yhat) drawn / pi. A drawn
    generation must have its human label."""
    predicted, human = as_columns(predicted), as_columns(human)
    drawn = np.asarray(drawn, dtype=bool)
    if np.isnan(human[drawn]).any():
        raise ValueError("a drawn generation without its human label: estimate once it is "
                         "labelled, or count it out explicitly")
    weight = (drawn / np.asarray(probabilities, dtype=float))[:, None]
    labelled = np.where(drawn[:, None], human, 0.0) * weight
    pilot = as_columns(pilot_human) if np.size(pilot_human) else np.empty((0, predicted.shape[1]))
    return (np.concatenate([pilot, labelled]),
            np.concatenate([np.zeros_like(pilot), predicted * (1 - weight)]))


def active_mean(pilot_human, predicted, human, drawn, probabilities,
                confidence: float = 0.95, lam=None) -> ActiveEstimate:
    """The active estimate of the mean (see the module), per column, with its normal interval
    (the summands' standard deviation over the square root of their number). `lam` None: the
    power tuning that makes the variance smallest, -cov(A, B) / var(B) clipped to [0, 1] (as
    PPI++ tunes it); 1: the plain formula of the module."""
    a, b = active_parts(pilot_human, predicted, human, drawn, probabilities)
    n = len(a)
    if lam is None:
        centred = b - b.mean(axis=0)
        variance = (centred ** 2).sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = -((a - a.mean(axis=0)) * centred).sum(axis=0) / variance
        lam = np.where(variance > 0, np.clip(lam, 0, 1), 0.0)
    lam = np.broadcast_to(np.asarray(lam, dtype=float), (a.shape[1],))
    terms = a + lam * b
    estimate = terms.mean(axis=0)
    se = terms.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full(terms.shape[1], np.nan)
    z = normal_quantile(confidence)
    return ActiveEstimate(estimate, estimate - z * se, estimate + z * se, se, lam, n)


def active_difference(a: ActiveEstimate, b: ActiveEstimate) -> tuple[np.ndarray, np.ndarray]:
    """(b - a, two-sided normal p-value) of two groups' estimates over disjoint generations."""
    delta = b.estimate - a.estimate
    se = np.sqrt(a.se ** 2 + b.se ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(delta) / se
    return delta, normal_two_sided_p(z)


__all__ = ["ActiveEstimate", "MIN_PER_VALUE", "active_difference", "active_mean", "active_parts",
           "calibrated", "draw", "error_scale", "sampling_probabilities"]
