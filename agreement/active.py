"""Active labelling with valid estimates (Zrnic & Candes, ICML 2024, "Active Statistical
Inference"): spend a label budget where the judge is least reliable, and still estimate a mean
without bias, with an interval.

- `sampling_probabilities`: each unlabelled generation i is drawn for labelling with a known
  probability pi_i proportional to how far the judge's value is expected to be from the human's
  given what the judge said (the root mean squared human - judge difference per judge value,
  learned from a labelled pilot; the paper's optimal rule for a mean), floored at a minimum,
  capped at 1 and summing to the budget; uniform without a pilot.
- `draw`: the seeded draw (the same seed, the same draws).
- `active_mean`: the estimate [sum over the pilot of Y_i + sum over the planned generations of
  (Yhat_i + (Y_i - Yhat_i) drawn_i / pi_i)] / (n_pilot + N), unbiased whatever the judge, and
  its normal interval from the summands' variance (the paper's CLT interval); with uniform pi it
  is PPI on a random subset. `active_difference`: two groups' estimates compared.

Pure numpy; values per estimand as `agreement.ppi` takes them (one column per estimand).
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from nlce.cli import InputError


def error_scale(pilot_predicted: np.ndarray, pilot_human: np.ndarray,
                predicted: np.ndarray) -> tuple[np.ndarray, str]:
    """The root mean squared human - judge difference given the judge's value, for each of
    `predicted`, learned from the pilot (labelled generations with the judge's value); a judge
    value the pilot has fewer than 5 examples of takes the pilot's overall one. Raises
    InputError where the pilot cannot say anything (one class, or no spread at all)."""
    pilot_predicted = np.asarray(pilot_predicted, dtype=float)
    pilot_human = np.asarray(pilot_human, dtype=float)
    if len(np.unique(pilot_human)) < 2:
        raise InputError(f"the pilot's {len(pilot_human)} human label(s) are all the same: it "
                         f"cannot tell where the judge errs; label a few more at random first")
    squared = (pilot_human - pilot_predicted) ** 2
    overall = float(np.sqrt(squared.mean()))
    if overall == 0:
        raise InputError("the judge agrees with every label of the pilot: there is no error to "
                         "steer the draw by; draw uniformly instead (annotate.plan --uniform)")
    scale = {}
    for value in np.unique(pilot_predicted):
        errors = squared[pilot_predicted == value]
        scale[float(value)] = float(np.sqrt(errors.mean())) if errors.size >= 5 else overall
    floor = overall / 10  # a judge value never wrong in the pilot is still drawn sometimes
    out = np.array([max(scale.get(float(v), overall), floor) for v in np.asarray(predicted)])
    how = (f"learned from a pilot of {len(pilot_human)} labelled generation(s): root mean "
           f"squared human - judge difference "
           + ", ".join(f"{v:g}: {s:.3f}" for v, s in sorted(scale.items()))
           + f" (overall {overall:.3f})")
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
    n: int  # pilot + planned generations the mean is over


def _columns(values) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    return array[:, None] if array.ndim == 1 else array


def active_terms(pilot_human, predicted, human, drawn, probabilities) -> np.ndarray:
    """The estimator's summands: the pilot's human values, then for each planned generation
    Yhat + (Y - Yhat) drawn / pi (Y unused where not drawn; a drawn one must have its label)."""
    predicted, human = _columns(predicted), _columns(human)
    drawn = np.asarray(drawn, dtype=bool)
    if np.isnan(human[drawn]).any():
        raise ValueError("a drawn generation without its human label: estimate once it is "
                         "labelled, or count it out explicitly")
    weight = (drawn / np.asarray(probabilities, dtype=float))[:, None]
    planned = predicted + np.where(drawn[:, None], human - predicted, 0.0) * weight
    pilot = _columns(pilot_human) if np.size(pilot_human) else np.empty((0, planned.shape[1]))
    return np.concatenate([pilot, planned])


def active_mean(pilot_human, predicted, human, drawn, probabilities,
                confidence: float = 0.95) -> ActiveEstimate:
    """The active estimate of the mean (see the module), per column, with its normal interval:
    the mean of `active_terms` and their standard deviation over the square root of their
    number."""
    terms = active_terms(pilot_human, predicted, human, drawn, probabilities)
    n = len(terms)
    estimate = terms.mean(axis=0)
    se = terms.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full(terms.shape[1], np.nan)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return ActiveEstimate(estimate, estimate - z * se, estimate + z * se, se, n)


def active_difference(a: ActiveEstimate, b: ActiveEstimate) -> tuple[np.ndarray, np.ndarray]:
    """(b - a, two-sided normal p-value) of two groups' estimates over disjoint generations."""
    delta = b.estimate - a.estimate
    se = np.sqrt(a.se ** 2 + b.se ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(delta) / se
    p = np.array([2 * (1 - NormalDist().cdf(float(v))) if np.isfinite(v) else np.nan
                  for v in np.ravel(z)])
    return delta, p


__all__ = ["ActiveEstimate", "active_difference", "active_mean",
           "active_terms", "draw", "error_scale", "sampling_probabilities"]
