"""Is configuration b better than configuration a on the same items, and how sure: paired tests,
multiple-comparison adjustment, significance clusters and how many labels a difference needs.

Pure numpy over per-item arrays; every resampling step is one batched call over a block of
resamples, not a Python loop per resample (the statistics in `agreement.correlation` take a
resample per row).

- `perm_both`: the PERM-BOTH paired permutation test (Deutsch et al. 2021) as mt-metrics-eval's
  PermutationSigDiff runs it: both configurations' scores are z-scored, each item's pair of scores
  is swapped between them with probability 1/2, and the one-sided p-value is the share of
  permutations whose difference (b - a) is at least the observed one. With 2^n <= resamples
  every swap pattern is enumerated instead: the exact p-value.
- `paired_bootstrap`: item indices drawn with replacement, the same draws for every configuration
  (`resample_indices`), so differences are paired; the interval is the percentile interval of
  the resampled differences and the one-sided p-value the share of resamples where b is not
  better (delta <= 0), so the 95% interval excludes 0 exactly when p < 0.025 either way.
- `holm`: Holm's step-down adjustment; `assign_ranks`: significance clusters as
  mt-metrics-eval's AssignRanks; `labels_needed`: the labelled items a difference needs to be
  significant with a given power, from the resampled standard error; `labels_needed_from`: the
  same from the resampled differences alone, with the lead's own uncertainty.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Callable, Sequence

import numpy as np

from agreement.statistics import percentile_interval

Statistic = Callable[[np.ndarray], np.ndarray]  # (resamples, n) scores -> (resamples,) values
BLOCK_ELEMENTS = 2_000_000  # resamples x items per batched step
_ROUNDING = 1e-12  # the identity permutation recomputes the observed delta: equal within this


@dataclass(frozen=True)
class PermutationResult:
    """Values and p-values: floats for one statistic, arrays for several (one per column)."""
    value_a: float | np.ndarray
    value_b: float | np.ndarray
    p_value: float | np.ndarray  # one-sided: b correlates better than a
    p_reverse: float | np.ndarray  # one-sided: a better than b, from the same permutations
    resamples: int  # permutations made (fewer than asked after an early stop; 2^n when exact)
    exact: bool = False

    @property
    def delta(self) -> float | np.ndarray:
        return self.value_b - self.value_a


def zscore(x: np.ndarray) -> np.ndarray:
    """(x - mean) / sd with ddof 0 (scipy.stats.zscore); nan for a constant vector."""
    x = np.asarray(x, dtype=float)
    sd = x.std()
    return (x - x.mean()) / sd if sd > 0 else np.full(x.shape, np.nan)


def swap_patterns(n: int, resamples: int, rng: np.random.Generator, block: int):
    """Blocks of swap masks (True: the item's two scores change places): every one of the 2^n
    patterns when there are no more than `resamples`, else random ones, `block` at a time."""
    if n < 63 and 2 ** n <= resamples:
        every = np.arange(2 ** n)[:, None] >> np.arange(n)[None, :] & 1
        for start in range(0, len(every), block):
            yield every[start:start + block].astype(bool)
        return
    made = 0
    while made < resamples:
        size = min(block, resamples - made)
        made += size
        yield rng.random((size, n)) < 0.5


def perm_both(a: Sequence[float], b: Sequence[float], statistic: Statistic,
              resamples: int = 1000, seed: int = 0, early_stop: tuple[float, float] | None = None,
              check_every: int = 1000) -> PermutationResult:
    """PERM-BOTH: the one-sided p-value that ``statistic`` is higher for `b` than for `a` on the
    same items (``statistic`` binds the human labels and takes the scores, one resample per row;
    it may return several statistics per row, (rows, S), all tested on the same permutations).
    The swap distribution is symmetric, so the same permutations also give the p-value the other
    way (`p_reverse`: the share with a difference at most the observed one).

    `early_stop` (low, high): after every `check_every` permutations, stop once the p-value so far
    (of the first statistic) is below low or above high (mt-metrics-eval's
    PermutationSigDiffParams; its defaults are (0.02, 0.5) every 1,000). ``nan`` p-values where
    a statistic is undefined.
    """
    za, zb = zscore(a), zscore(b)
    n = za.size
    observed = np.asarray(statistic(np.stack([za, zb])), dtype=float)
    value_a, value_b = observed[0], observed[1]
    delta = value_b - value_a
    undefined = np.full(np.shape(delta), np.nan)
    if n == 0 or np.isnan(delta).all() or resamples < 1:
        return _permutation_result(value_a, value_b, undefined, undefined, 0, False)
    rng = np.random.default_rng(seed)
    exact = n < 63 and 2 ** n <= resamples
    block = max(1, min(check_every, BLOCK_ELEMENTS // max(n, 1)))
    tolerance = _ROUNDING * np.maximum(1.0, np.abs(delta))
    at_least = np.zeros(np.shape(delta))
    at_most = np.zeros(np.shape(delta))
    made, next_check = 0, check_every
    for swap in swap_patterns(n, resamples, rng, block):
        differences = (np.asarray(statistic(np.where(swap, za, zb)))
                       - np.asarray(statistic(np.where(swap, zb, za))))
        at_least += np.count_nonzero(differences >= delta - tolerance, axis=0)
        at_most += np.count_nonzero(differences <= delta + tolerance, axis=0)
        made += len(swap)
        if early_stop and not exact and made >= next_check:
            next_check += check_every
            p_so_far = float(np.ravel(at_least)[0]) / made
            if not early_stop[0] <= p_so_far <= early_stop[1]:
                break
    p_value = np.where(np.isnan(delta), np.nan, at_least / made)
    p_reverse = np.where(np.isnan(delta), np.nan, at_most / made)
    return _permutation_result(value_a, value_b, p_value, p_reverse, made, exact)


def _permutation_result(value_a, value_b, p_value, p_reverse, made, exact) -> PermutationResult:
    def plain(v):
        return float(v) if np.ndim(v) == 0 else np.asarray(v, dtype=float)
    return PermutationResult(plain(value_a), plain(value_b), plain(p_value), plain(p_reverse),
                             made, exact)


# ---------------------------------------------------------------- the paired bootstrap


def resample_indices(n: int, resamples: int, seed: int = 0) -> np.ndarray:
    """(resamples, n) item indices drawn with replacement: one set of draws that every
    configuration scored on these n items is resampled with, so their differences are paired."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def bootstrap_values(statistic: Callable[[np.ndarray], np.ndarray], indices: np.ndarray
                     ) -> np.ndarray:
    """``statistic(index block)`` over blocks of the resampled index rows, concatenated: one
    value per resample, or a row of several, (resamples, S), when ``statistic`` gives S per
    resample. ``statistic`` gets a (block, n) array of item indices."""
    n = indices.shape[1] if indices.ndim == 2 else 0
    block = max(1, BLOCK_ELEMENTS // max(n, 1))
    if len(indices) == 0:
        return np.empty(0)
    return np.concatenate([np.asarray(statistic(indices[start:start + block]), dtype=float)
                           for start in range(0, len(indices), block)])


@dataclass(frozen=True)
class BootstrapDifference:
    delta: float
    ci_low: float
    ci_high: float
    p_value: float  # one-sided, b better than a: the share of resamples with delta <= 0
    p_reverse: float  # one-sided, a better than b: the share with delta >= 0
    p_two_sided: float
    se: float  # standard deviation of the resampled differences
    resamples: int  # resamples where both statistics are defined
    # the resampled differences' median: where they centre (with thresholds refitted in each
    # resample, often well below `delta`)
    centre: float = math.nan

    def reversed(self) -> "BootstrapDifference":
        """The same comparison as a - b."""
        return BootstrapDifference(-self.delta, -self.ci_high, -self.ci_low, self.p_reverse,
                                   self.p_value, self.p_two_sided, self.se, self.resamples,
                                   -self.centre)


def paired_bootstrap(value_a: float, value_b: float, samples_a: np.ndarray,
                     samples_b: np.ndarray, confidence: float = 0.95) -> BootstrapDifference:
    """The difference b - a, its percentile interval and p-values from paired resamples (the same
    item draws for both; resamples where either is undefined are left out).

    >>> rng = np.random.default_rng(0)
    >>> result = paired_bootstrap(0.5, 0.6, rng.normal(0.5, .02, 1000), rng.normal(0.6, .02, 1000))
    >>> round(result.delta, 2), result.ci_low > 0, result.p_value
    (0.1, True, 0.0)
    """
    differences = np.asarray(samples_b, dtype=float) - np.asarray(samples_a, dtype=float)
    differences = differences[~np.isnan(differences)]
    delta = value_b - value_a
    if differences.size == 0 or math.isnan(delta):
        return BootstrapDifference(delta, math.nan, math.nan, math.nan, math.nan, math.nan,
                                   math.nan, 0)
    low, high = percentile_interval(differences, confidence)
    not_better = float(np.mean(differences <= 0))
    not_worse = float(np.mean(differences >= 0))
    return BootstrapDifference(delta, low, high, not_better, not_worse,
                               min(1.0, 2 * min(not_better, not_worse)),
                               float(differences.std(ddof=1)) if differences.size > 1 else math.nan,
                               int(differences.size), float(np.median(differences)))


# ---------------------------------------------------------------- many comparisons


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values (step-down, monotone, at most 1); ``nan`` stays ``nan`` and is not
    counted among the comparisons.

    >>> holm([0.01, 0.04, 0.03, float("nan")]).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    defined = np.flatnonzero(~np.isnan(p))
    m = defined.size
    if m == 0:
        return out
    order = defined[np.argsort(p[defined], kind="stable")]
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out[order] = adjusted
    return out


def assign_ranks(p_better: np.ndarray, alpha: float = 0.05) -> list[int]:
    """Significance clusters of configurations sorted best first: ``p_better[i, j]`` (i < j) is
    the p-value that configuration i is better than j. A new cluster starts at j when some member
    of the current cluster is significantly better than j (p <= alpha), as mt-metrics-eval's
    AssignRanks; a missing p-value (nan) never starts one.

    >>> assign_ranks(np.array([[0, .3, .01], [0, 0, .2], [0, 0, 0]]))
    [1, 1, 2]
    """
    n = len(p_better)
    ranks, rank, start = [], 1, 0
    for j in range(n):
        column = p_better[start:j, j]
        if np.any(column[~np.isnan(column)] <= alpha):
            rank += 1
            start = j
        ranks.append(rank)
    return ranks


def labels_needed(n: int, delta: float, se: float, alpha: float = 0.05, power: float = 0.8,
                  p_value: float = 0.0) -> float:
    """Labelled items at which a one-sided test at `alpha` finds a true difference `delta` with
    probability `power`, when `se` is its standard error with `n` items (se shrinks as 1/sqrt(n)):
    n * ((z_{1-alpha} + z_power) * se / delta)^2. ``nan`` where `why_no_labels_needed` gives a
    reason (delta <= 0, se unknown, or the test's one-sided `p_value` at 0.5 or more).

    >>> labels_needed(100, 0.05, 0.04)
    396
    """
    if n <= 0 or why_no_labels_needed(delta, se, p_value):
        return math.nan
    z = NormalDist().inv_cdf(1 - alpha) + NormalDist().inv_cdf(power)
    return int(math.ceil(n * (z * se / delta) ** 2))


@dataclass(frozen=True)
class LabelsNeeded:
    """How many labelled items would show a lead, from its resampled differences (their median
    as the lead, their standard deviation as its standard error at n items):

    - `count`: labelled items at which a one-sided test at alpha shows the lead with probability
      `power` given what the resamples know of it (the power averaged over the lead's own
      uncertainty, not the power were the lead known);
    - `if_known`: `labels_needed` were the lead exactly the resamples' median (fewer: the
      difference is the price of not knowing the lead);
    - `ever`: the probability that labels without limit show it (Phi(median / se)): where it is
      below `power` no count reaches it, and `count` is nan with the reason in `why_none`.
    """
    count: float
    if_known: float
    ever: float
    why_none: str = ""


def labels_needed_from(n: int, resampled: BootstrapDifference, alpha: float = 0.05,
                       power: float = 0.8) -> LabelsNeeded:
    """`LabelsNeeded` for a lead as its paired bootstrap sees it. The difference seen is not
    used: with thresholds refitted in every resample the resamples can centre well below it,
    and a count from it promised leads that more labels did not show (on WMT MQM: 7 of 16).

    With the lead d ~ N(m, se^2) (m the median of the resampled differences, se their standard
    deviation) and the estimate at N items ~ N(d, se_N^2), se_N = se sqrt(n / N), a one-sided test
    at N shows the lead with probability Phi((m - z_(1-alpha) se_N) / sqrt(se^2 + se_N^2)); the
    count is the N at which that is `power`.

    >>> labels_needed_from(100, BootstrapDifference(0.12, 0.0, 0.2, 0.011, 0.99, 0.02, 0.05,
    ...                                             1000, 0.12))
    LabelsNeeded(count=156, if_known=108, ever=0.9918, why_none='')
    >>> labels_needed_from(100, BootstrapDifference(0.09, -0.02, 0.15, 0.15, 0.85, 0.3, 0.05,
    ...                                             1000, 0.04)).why_none[32:]
    'labels without limit would show it with probability 0.79 (power asked: 0.8)'
    """
    centre, se = resampled.centre, resampled.se
    why = (why_no_labels_needed(resampled.delta, se, resampled.p_value)
           or why_no_labels_needed(centre, se, resampled.p_value))
    if why or n <= 0:
        return LabelsNeeded(math.nan, math.nan, math.nan, why)
    normal = NormalDist()
    t, z_alpha, z_power = centre / se, normal.inv_cdf(1 - alpha), normal.inv_cdf(power)
    ever = round(normal.cdf(t), 4)
    if_known = labels_needed(n, centre, se, alpha, power)
    if t <= z_power:
        return LabelsNeeded(math.nan, if_known, ever,
                            f"no number is likely to show it: labels without limit would show it "
                            f"with probability {ever:.2f} (power asked: {power})")

    def short(u: float) -> float:  # u = se_N / se; > 0 while N items show it too rarely
        return z_power * math.sqrt(1 + u * u) + z_alpha * u - t

    low, high = 0.0, 1.0
    while short(high) <= 0:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if short(middle) <= 0 else (low, middle)
    return LabelsNeeded(int(math.ceil(n / low ** 2)), if_known, ever)


def why_no_labels_needed(delta: float, se: float, p_value: float) -> str:
    """Why `labels_needed` has no answer for a lead, or "" when it has one. A one-sided bootstrap
    p of 0.5 or more puts the resamples' centre at or below zero (with refitted thresholds the
    resamples can favour the runner-up though the full data favours the lead): the formula would
    give a count, but no count is expected to show a lead the resamples do not support."""
    if not delta > 0:
        return "no lead to show"
    if not se > 0:
        return "the resampled differences do not vary"
    if p_value >= 0.5:
        return "no number is expected to show it: half or more of the resamples reverse the lead"
    return ""


__all__ = ["BLOCK_ELEMENTS", "BootstrapDifference", "LabelsNeeded", "PermutationResult", "assign_ranks",
           "bootstrap_values", "holm", "labels_needed", "labels_needed_from", "paired_bootstrap",
           "perm_both", "resample_indices", "swap_patterns", "why_no_labels_needed", "zscore"]
