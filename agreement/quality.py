"""What the human labels say of the generating models: shares and a mean score with their
intervals, and permutation tests between models and between languages (the study's Table 2,
RQ1.2, answered with its uncertainty).

Pure numpy, vectorised over rows (every cell of a table at once) or over resamples:

- `label_scores`: the ordinal labels as a score, incorrect 0, partial 0.5, correct 1 (the
  positions in `taxonomy.ACCURACY_LABELS` over the top one);
- `wilson_interval`: the Wilson score interval of a share (never empty at 0 or n successes);
- `mean_score_interval`: Student's t interval of a mean score, clipped to [0, 1], and where
  every label is the same (no spread to go by) the bounds the Wilson interval of its share allows;
- `sign_flip_test` (paired) and `permutation_test` (unpaired): two-sided permutation p-values of a
  difference in means, as `scipy.stats.permutation_test` computes them (exact when every
  permutation fits in `resamples`, else random ones with the (count + 1) / (resamples + 1) rule),
  with a percentile bootstrap interval of the difference;
- `compact_letters`: the compact letter display of which means differ significantly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from statistics import NormalDist

import numpy as np

from agreement.statistics import encode_labels, percentile_interval
from taxonomy import ACCURACY_LABELS

_BLOCK_ELEMENTS = 2_000_000  # resamples x items per batched step


def label_scores(labels, order=ACCURACY_LABELS) -> np.ndarray:
    """Each label's score: its position in `order` over the last position (0, 0.5, 1).

    >>> label_scores(["correct", "partial", "incorrect"]).tolist()
    [1.0, 0.5, 0.0]
    """
    return encode_labels(labels, order) / (len(order) - 1)


def wilson_interval(successes, n, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of `successes` out of `n`, element-wise; nan where n is 0.

    >>> low, high = wilson_interval(0, 10)
    >>> round(float(low), 4), round(float(high), 4)
    (0.0, 0.2775)
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denominator = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / denominator
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low, high = np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)
    empty = n <= 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def mean_score_interval(mean, variance, n, confidence: float = 0.95
                        ) -> tuple[np.ndarray, np.ndarray]:
    """An interval for a mean score in [0, 1] from its sample variance (ddof 1) and count,
    element-wise: Student's t interval, clipped to [0, 1] (the mean cannot leave it); where
    every score is the same (one item, or no spread), the t interval says nothing, and the bounds
    are those the Wilson interval of that label's share allows with the other labels at the far
    end (score s, share at least L: [s L, s L + 1 - L]); nan for no items.

    >>> low, high = mean_score_interval([1.0, 0.0], [0.0, 0.0], [5, 5])
    >>> [round(float(v), 3) for v in (*low, *high)]
    [0.566, 0.0, 1.0, 0.434]
    """
    from scipy.stats import t

    mean, variance, n = (np.asarray(v, dtype=float) for v in (mean, variance, n))
    spread = (n >= 2) & (variance > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        half = t.ppf(0.5 + confidence / 2, np.where(spread, n - 1, 1)) * np.sqrt(variance / n)
        share_low, _ = wilson_interval(n, n, confidence)
    low = np.where(spread, np.clip(mean - half, 0, 1), mean * share_low)
    high = np.where(spread, np.clip(mean + half, 0, 1), 1 - (1 - mean) * share_low)
    empty = ~(n >= 1)
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


@dataclass(frozen=True)
class Difference:
    """A difference in means (b - a), its interval and its two-sided permutation p-value."""
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    resamples: int  # permutations made (every one when `exact`)
    exact: bool


def _two_sided(null: np.ndarray, observed: float, made: int, exact: bool) -> float:
    """scipy.stats.permutation_test's two-sided p-value: twice the smaller one-sided share."""
    adjustment = 0 if exact else 1
    tolerance = abs(observed) * np.finfo(float).eps * 100
    less = (np.count_nonzero(null <= observed + tolerance) + adjustment) / (made + adjustment)
    greater = (np.count_nonzero(null >= observed - tolerance) + adjustment) / (made + adjustment)
    return float(min(1.0, 2 * min(less, greater)))


def _bootstrap_interval(statistic, sizes: tuple[int, ...], resamples: int, seed: int,
                        confidence: float) -> tuple[float, float]:
    """The percentile interval of `statistic(*index arrays)` over resamples of each group."""
    if resamples < 1 or min(sizes) < 1:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_ELEMENTS // max(sum(sizes), 1))
    values = []
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        values.append(statistic(*(rng.integers(0, size, (rows, size)) for size in sizes)))
    return percentile_interval(np.concatenate(values), confidence)


def sign_flip_test(differences, resamples: int = 1000, seed: int = 0,
                   confidence: float = 0.95) -> Difference:
    """Is the mean of paired `differences` (b - a per target) other than 0? The two-sided
    sign-flip permutation test (each difference's sign flipped with probability 1/2; every one
    of the 2^n patterns when they fit in `resamples`) and a percentile bootstrap interval of the
    mean difference (targets resampled). nan p-value and interval below 2 differences."""
    d = np.asarray(differences, dtype=float)
    n = d.size
    delta = float(d.mean()) if n else math.nan
    if n < 2 or resamples < 1:
        return Difference(delta, math.nan, math.nan, math.nan, 0, False)
    observed = float(d.sum())  # sums of half-points are exact; the mean is the sum over n
    exact = n < 63 and 2 ** n <= resamples
    null = []
    if exact:
        every = (np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1
        null.append(np.where(every.astype(bool), -d, d).sum(axis=1))
        made = 2 ** n
    else:
        rng = np.random.default_rng(seed)
        block = max(1, _BLOCK_ELEMENTS // n)
        for start in range(0, resamples, block):
            signs = rng.random((min(block, resamples - start), n)) < 0.5
            null.append(np.where(signs, -d, d).sum(axis=1))
        made = resamples
    p = _two_sided(np.concatenate(null), observed, made, exact)
    low, high = _bootstrap_interval(lambda rows: d[rows].mean(axis=1), (n,), resamples, seed,
                                    confidence)
    return Difference(delta, low, high, p, made, exact)


def permutation_test(a, b, resamples: int = 1000, seed: int = 0,
                     confidence: float = 0.95) -> Difference:
    """Is mean(b) - mean(a) other than 0 for two independent groups? The two-sided permutation
    test (the pooled values dealt to the groups at random; every split when they fit in
    `resamples`) and a percentile bootstrap interval (each group resampled on its own). nan
    p-value and interval when a group is empty."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        return Difference(math.nan, math.nan, math.nan, math.nan, 0, False)
    delta = float(b.mean() - a.mean())
    if resamples < 1 or a.size + b.size < 3:
        return Difference(delta, math.nan, math.nan, math.nan, 0, False)
    pooled = np.concatenate([a, b])
    n, n_b = pooled.size, b.size
    # with the total fixed, b's sum orders the splits as the difference in means does, and sums
    # of half-points are exact
    observed = float(b.sum())
    exact = math.comb(n, n_b) <= resamples
    if exact:
        chosen = np.array(list(combinations(range(n), n_b)), dtype=np.int64)
        null, made = pooled[chosen].sum(axis=1), len(chosen)
    else:
        rng = np.random.default_rng(seed)
        block = max(1, _BLOCK_ELEMENTS // n)
        parts = []
        for start in range(0, resamples, block):
            rows = min(block, resamples - start)
            dealt = rng.permuted(np.broadcast_to(pooled, (rows, n)), axis=1)
            parts.append(dealt[:, :n_b].sum(axis=1))
        null, made = np.concatenate(parts), resamples
    p = _two_sided(null, observed, made, exact)
    low, high = _bootstrap_interval(lambda ia, ib: b[ib].mean(axis=1) - a[ia].mean(axis=1),
                                    (a.size, b.size), resamples, seed, confidence)
    return Difference(delta, low, high, p, made, exact)


def compact_letters(significant: np.ndarray) -> list[str]:
    """The compact letter display of items sorted best first: two items share a letter exactly
    when they are not significantly different (`significant[i, j]` True, symmetric), the
    insert-and-absorb construction of Piepho (2004); letters run a, b, ... from the best.

    >>> compact_letters(np.array([[0, 0, 1], [0, 0, 0], [1, 0, 0]], dtype=bool))
    ['a', 'ab', 'b']
    """
    n = len(significant)
    groups = [set(range(n))]
    for i, j in zip(*np.nonzero(np.triu(significant, 1))):
        split = []
        for group in groups:
            if i in group and j in group:
                split += [group - {i}, group - {j}]
            else:
                split.append(group)
        # absorb: a group inside another says nothing more
        groups = [g for k, g in enumerate(split)
                  if not any(g < h or (g == h and m < k) for m, h in enumerate(split))]
    groups.sort(key=lambda g: (min(g), sorted(g)))
    letters = ["" for _ in range(n)]
    for position, group in enumerate(groups):
        letter = _letter(position)
        for member in sorted(group):
            letters[member] += letter
    return letters


def _letter(position: int) -> str:
    """a..z, then aa, ab, ... (more than 26 groups is rare but possible)."""
    word = ""
    position += 1
    while position:
        position, rest = divmod(position - 1, 26)
        word = chr(ord("a") + rest) + word
    return word


__all__ = ["Difference", "compact_letters", "label_scores", "mean_score_interval",
           "permutation_test", "sign_flip_test", "wilson_interval"]
