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
  difference in means, as `scipy.stats.permutation_test` defines them (twice the smaller tail).
  For label scores the permutation distribution is computed exactly (binomial and
  hypergeometric counts: no sampling floor, so Holm over a hundred pairs still finds what is
  there); other values are enumerated where every permutation fits in `resamples`, else sampled
  with the (count + 1) / (resamples + 1) rule. With a percentile bootstrap interval;
- `compact_letters`: the compact letter display of which means differ significantly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from agreement.significance import BLOCK_ELEMENTS, swap_patterns
from agreement.statistics import encode_labels, normal_quantile, percentile_interval
from taxonomy import ACCURACY_LABELS


def label_scores(labels, order=ACCURACY_LABELS) -> np.ndarray:
    """Each label's score: its position in `order` over the last position (0, 0.5, 1).

    >>> label_scores(["correct", "partial", "incorrect"]).tolist()
    [1.0, 0.5, 0.0]
    """
    return encode_labels(labels, order) / (len(order) - 1)


ESTIMANDS = ("share_correct", "share_partial", "share_incorrect", "mean_score")


def estimand_values(codes, estimands=ESTIMANDS) -> np.ndarray:
    """(n, len(estimands)) values of the quality estimands for label codes 0..2 (incorrect,
    partial, correct): a share is 1 where the label is its class, the mean score the code over
    2; nan where the code is -1 (no label).

    >>> estimand_values([2, 1, -1], ["share_correct", "mean_score"]).tolist()
    [[1.0, 1.0], [0.0, 0.5], [nan, nan]]
    """
    codes = np.asarray(codes, dtype=float)
    top = len(ACCURACY_LABELS) - 1
    value = {"share_correct": codes == top, "share_partial": codes == 1,
             "share_incorrect": codes == 0, "mean_score": codes / top}
    return np.where((codes < 0)[:, None], np.nan,
                    np.stack([np.asarray(value[e], dtype=float) for e in estimands], axis=1))


def wilson_interval(successes, n, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of `successes` out of `n`, element-wise; nan where n is 0.

    >>> low, high = wilson_interval(0, 10)
    >>> round(float(low), 4), round(float(high), 4)
    (0.0, 0.2775)
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    z = normal_quantile(confidence)
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
    resamples: int  # resamples of the interval, and permutations made where not exact
    exact: bool  # the p-value is the permutation distribution's own, not a sample of it


def _two_sided(null: np.ndarray, observed: float, made: int, exact: bool) -> float:
    """scipy.stats.permutation_test's two-sided p-value: twice the smaller one-sided share."""
    adjustment = 0 if exact else 1
    tolerance = abs(observed) * np.finfo(float).eps * 100
    less = (np.count_nonzero(null <= observed + tolerance) + adjustment) / (made + adjustment)
    greater = (np.count_nonzero(null >= observed - tolerance) + adjustment) / (made + adjustment)
    return _exact_two_sided(less, greater)


def _bootstrap_interval(statistic, sizes: tuple[int, ...], resamples: int, seed: int,
                        confidence: float) -> tuple[float, float]:
    """The percentile interval of `statistic(*index arrays)` over resamples of each group."""
    if resamples < 1 or min(sizes) < 1:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    block = max(1, BLOCK_ELEMENTS // max(sum(sizes), 1))
    values = []
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        values.append(statistic(*(rng.integers(0, size, (rows, size)) for size in sizes)))
    return percentile_interval(np.concatenate(values), confidence)


def _half_points(values: np.ndarray) -> np.ndarray | None:
    """`values` in half-points (0, 0.5, 1, ... -> 0, 1, 2, ...) as integers, or None where they
    are not all on that grid (label scores always are)."""
    halves = np.round(2 * values)
    return halves.astype(np.int64) if np.allclose(2 * values, halves, rtol=0, atol=1e-9) \
        else None


def _sign_flip_tails(halves: np.ndarray) -> tuple[float, float]:
    """P(S <= observed), P(S >= observed) under random signs, exactly, for differences of label
    scores in half-points (magnitudes 0, 1 and 2): S = (2 K1 - c1) + 2 (2 K2 - c2) with K1, K2
    binomial(c, 1/2) over the differences of magnitude 1 and 2."""
    from scipy.stats import binom

    magnitude = np.abs(halves)
    if magnitude.max(initial=0) > 2:
        raise ValueError("only differences of label scores (at most 1) are computed exactly")
    c1, c2 = int((magnitude == 1).sum()), int((magnitude == 2).sum())
    observed = int(halves.sum())
    k2 = np.arange(c2 + 1)
    weight = binom.pmf(k2, c2, 0.5)
    rest = observed - 2 * (2 * k2 - c2)  # what 2 K1 - c1 must reach, per k2
    at_least = binom.sf(np.ceil((rest + c1) / 2) - 1, c1, 0.5)  # P(2 K1 - c1 >= rest)
    at_most = binom.cdf(np.floor((rest + c1) / 2), c1, 0.5)  # P(2 K1 - c1 <= rest)
    return float(weight @ at_most), float(weight @ at_least)


def _split_tails(pooled: np.ndarray, n_b: int, observed: int) -> tuple[float, float]:
    """P(T <= observed), P(T >= observed) for T the sum of `n_b` values dealt at random from
    `pooled` (label scores in half-points 0, 1, 2), exactly: multivariate hypergeometric counts,
    T = K1 + 2 K2."""
    from scipy.stats import hypergeom

    total = pooled.size
    c1, c2 = int((pooled == 1).sum()), int((pooled == 2).sum())
    if pooled.min(initial=0) < 0 or pooled.max(initial=0) > 2:
        raise ValueError("only label scores (0 to 1) are computed exactly")
    k2 = np.arange(min(c2, n_b) + 1)
    weight = hypergeom.pmf(k2, total, c2, n_b)
    need = observed - 2 * k2  # what K1 must reach given K2 = k2
    rest, draws = total - c2, n_b - k2
    possible = weight > 0  # elsewhere the conditional law is undefined (more draws than left)
    with np.errstate(invalid="ignore"):
        at_least = np.where(possible, hypergeom.sf(need - 1, rest, c1, draws), 0.0)
        at_most = np.where(possible, hypergeom.cdf(need, rest, c1, draws), 0.0)
    return float(weight @ at_most), float(weight @ at_least)


def _exact_two_sided(less: float, greater: float) -> float:
    """scipy.stats.permutation_test's two-sided p from its two one-sided ones: twice the
    smaller, at most 1 (exact or sampled)."""
    return float(min(1.0, 2 * min(less, greater)))


def sign_flip_test(differences, resamples: int = 1000, seed: int = 0,
                   confidence: float = 0.95) -> Difference:
    """Is the mean of paired `differences` (b - a per target) other than 0? The two-sided
    sign-flip permutation test: each difference's sign flipped with probability 1/2. For label
    scores (half-points) the permutation distribution is computed exactly, with no sampling
    floor (two binomials); for other values every one of the 2^n patterns where they fit in
    `resamples`, else `resamples` random ones. A percentile bootstrap interval of the mean
    difference (targets resampled). nan p-value and interval below 2 differences."""
    d = np.asarray(differences, dtype=float)
    n = d.size
    delta = float(d.mean()) if n else math.nan
    if n < 2 or resamples < 1:
        return Difference(delta, math.nan, math.nan, math.nan, 0, False)
    low, high = _bootstrap_interval(lambda rows: d[rows].mean(axis=1), (n,), resamples, seed,
                                    confidence)
    halves = _half_points(d)
    if halves is not None and np.abs(halves).max() <= 2:
        return Difference(delta, low, high, _exact_two_sided(*_sign_flip_tails(halves)),
                          resamples, True)
    exact = n < 63 and 2 ** n <= resamples
    # a sign flip is a swap of d with -d: PERM-BOTH's swap patterns, every one or random ones
    null = np.concatenate([np.where(flip, -d, d).sum(axis=1) for flip in swap_patterns(
        n, resamples, np.random.default_rng(seed), max(1, BLOCK_ELEMENTS // n))])
    made = 2 ** n if exact else resamples
    return Difference(delta, low, high, _two_sided(null, float(d.sum()), made, exact), made,
                      exact)


def permutation_test(a, b, resamples: int = 1000, seed: int = 0,
                     confidence: float = 0.95) -> Difference:
    """Is mean(b) - mean(a) other than 0 for two independent groups? The two-sided permutation
    test: the pooled values dealt to the groups at random. For label scores the permutation
    distribution is computed exactly (hypergeometric counts); for other values every split
    where they fit in `resamples`, else `resamples` random ones. A percentile bootstrap interval
    (each group resampled on its own). nan p-value and interval when a group is empty."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        return Difference(math.nan, math.nan, math.nan, math.nan, 0, False)
    delta = float(b.mean() - a.mean())
    if resamples < 1 or a.size + b.size < 3:
        return Difference(delta, math.nan, math.nan, math.nan, 0, False)
    low, high = _bootstrap_interval(lambda ia, ib: b[ib].mean(axis=1) - a[ia].mean(axis=1),
                                    (a.size, b.size), resamples, seed, confidence)
    pooled = np.concatenate([a, b])
    n, n_b = pooled.size, b.size
    halves = _half_points(pooled)
    # with the total fixed, b's sum orders the splits as the difference in means does
    if halves is not None and halves.min() >= 0 and halves.max() <= 2:
        tails = _split_tails(halves, n_b, int(halves[a.size:].sum()))
        return Difference(delta, low, high, _exact_two_sided(*tails), resamples, True)
    observed = float(b.sum())
    exact = math.comb(n, n_b) <= resamples
    if exact:
        chosen = np.array(list(combinations(range(n), n_b)), dtype=np.int64)
        null, made = pooled[chosen].sum(axis=1), len(chosen)
    else:
        rng = np.random.default_rng(seed)
        block = max(1, BLOCK_ELEMENTS // n)
        parts = []
        for start in range(0, resamples, block):
            rows = min(block, resamples - start)
            dealt = rng.permuted(np.broadcast_to(pooled, (rows, n)), axis=1)
            parts.append(dealt[:, :n_b].sum(axis=1))
        null, made = np.concatenate(parts), resamples
    return Difference(delta, low, high, _two_sided(null, observed, made, exact), made, exact)


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


__all__ = ["ESTIMANDS", "Difference", "compact_letters", "estimand_values", "label_scores",
           "mean_score_interval", "permutation_test", "sign_flip_test", "wilson_interval"]
