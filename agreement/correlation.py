"""Correlations of scores with ordinal human labels, batched over resamples.

Every function takes scores ``x`` of shape (..., n) (one row per resample in the permutation and
bootstrap tests, or a single vector) and the human labels ``g`` as ordinal levels, ints 0..k-1
(incorrect 0, partial 1, correct 2), of shape (n,) or (..., n), and returns one value per row.
A row where the statistic is undefined (constant scores or labels) gives ``nan``, as
mt-metrics-eval reports it.

- `pearson`, `spearman` (Pearson of mid-ranks) and `kendall` (tau-b, ties on both sides as
  scipy's ``kendalltau``) are equal to scipy's on one vector. Kendall is O(n log n) per row: with
  k label levels, con - dis = sum over levels a of 2 R_a - n_a (n_{<=a} + 1), R_a being the
  rank sum of level a's scores among the scores of levels <= a (the Mann-Whitney identity).
- `acc23` is the tie-aware pairwise accuracy of Deutsch et al. 2023 ("Ties Matter"):
  (concordant + pairs tied on both sides) / pairs, where two scores closer than a tie threshold
  count as tied, and the threshold is the one that maximises it (mt-metrics-eval's
  KendallWithTiesOpt). It looks at every pair of items (all of them while there are at most
  `ACC23_MAX_PAIRS`, else that many drawn at random; `Acc23` says which).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

STATISTICS = ("pearson", "spearman", "kendall", "acc23")
ACC23_MAX_PAIRS = 2_000_000  # all pairs up to n = 2,000 items; a random sample of pairs beyond
_CHUNK_ELEMENTS = 4_000_000  # rows x pairs per block in acc23 (bounds memory at ~100 MB)


def _runs(sorted_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each position of rows sorted along the last axis: the first and last position of its
    run of equal values."""
    n = sorted_x.shape[-1]
    position = np.arange(n)
    new = np.ones(sorted_x.shape, dtype=bool)
    new[..., 1:] = sorted_x[..., 1:] != sorted_x[..., :-1]
    first = np.maximum.accumulate(np.where(new, position, 0), axis=-1)
    ends = np.ones(sorted_x.shape, dtype=bool)
    ends[..., :-1] = new[..., 1:]
    last = np.minimum.accumulate(np.where(ends, position, n - 1)[..., ::-1], axis=-1)[..., ::-1]
    return first, last


def _ranks_and_ties(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mid-ranks (1-based, ties share their mean rank) along the last axis, and the number of
    tied pairs per row. Rows without ties (most, for continuous scores) skip the tie runs."""
    shape, n = x.shape, x.shape[-1]
    if n == 0:
        return np.empty(shape), np.zeros(shape[:-1])
    rows = x.reshape(-1, n)
    order = np.argsort(rows, axis=1)
    ordered = np.take_along_axis(rows, order, axis=1)
    ranked = np.broadcast_to(np.arange(1.0, n + 1), rows.shape).copy()
    tied_pairs = np.zeros(len(rows))
    with_ties = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
    if with_ties.size:
        first, last = _runs(ordered[with_ties])
        ranked[with_ties] = (first + last) / 2 + 1
        tied_pairs[with_ties] = (np.arange(n) - first).sum(axis=1)
    ranks = np.empty(rows.shape)
    np.put_along_axis(ranks, order, ranked, axis=1)
    return ranks.reshape(shape), tied_pairs.reshape(shape[:-1])


def _level_ranks(levels: np.ndarray, k: int) -> np.ndarray:
    """Mid-ranks of ordinal levels 0..k-1 per row, from the level counts (no sort): every item
    of level a has rank n_(<a) + (n_a + 1) / 2."""
    counts = np.stack([(levels == a).sum(axis=-1) for a in range(k)], axis=-1)
    below = np.cumsum(counts, axis=-1) - counts
    return np.take_along_axis(below + (counts + 1) / 2, levels, axis=-1)


def midranks(x) -> np.ndarray:
    """Mid-ranks along the last axis, as ``scipy.stats.rankdata(x, axis=-1)``.

    >>> midranks([0.5, 0.1, 0.5, 0.9]).tolist()
    [2.5, 1.0, 2.5, 4.0]
    """
    return _ranks_and_ties(np.asarray(x, dtype=float))[0]


def _constant(x: np.ndarray) -> np.ndarray:
    return x.max(axis=-1) == x.min(axis=-1)


def pearson(x, g) -> np.ndarray:
    """Pearson's r per row; ``nan`` where either side is constant.

    >>> round(float(pearson([1, 2, 3, 5], [0, 1, 1, 2])), 6)
    0.956183
    """
    x, g = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(g, dtype=float))
    if x.shape[-1] < 2:
        return np.full(x.shape[:-1], np.nan)
    xm = x - x.mean(axis=-1, keepdims=True)
    gm = g - g.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xm * gm).sum(axis=-1) / np.sqrt((xm * xm).sum(axis=-1) * (gm * gm).sum(axis=-1))
    return np.where(_constant(x) | _constant(g), np.nan, np.clip(r, -1.0, 1.0))


def spearman(x, g, ranked: tuple | None = None) -> np.ndarray:
    """Spearman's rho per row (Pearson of the mid-ranks); ``nan`` where either side is constant.

    >>> float(spearman([0.2, 0.4, 0.3, 0.9], [0, 1, 1, 2]))
    0.9486832980505138

    `ranked`: ``x``'s mid-ranks and tie counts, where the caller has them already.
    """
    x = np.asarray(x, dtype=float)
    g = np.asarray(g)
    if g.dtype.kind in "iu" and g.size and 0 <= g.min() and g.max() < 64:  # label levels
        g_ranks = _level_ranks(g, int(g.max()) + 1)
    else:
        g_ranks = midranks(g)
    return pearson((ranked or _ranks_and_ties(x))[0], g_ranks)


def _levels(g) -> tuple[np.ndarray, int]:
    levels = np.asarray(g)
    if levels.dtype.kind not in "iu":
        if not np.array_equal(levels, np.round(levels)):
            raise ValueError("human labels must be ordinal levels 0..k-1 (ints)")
        levels = levels.astype(np.int64)
    if levels.size and levels.min() < 0:
        raise ValueError("human label levels must be >= 0 (missing labels are left out first)")
    return levels, int(levels.max()) + 1 if levels.size else 0


def kendall(x, g, ranked: tuple | None = None) -> np.ndarray:
    """Kendall's tau-b per row between scores ``x`` and ordinal levels ``g``, as
    ``scipy.stats.kendalltau(x, g)`` (variant b) on one vector; ``nan`` where either side is
    constant.

    >>> round(float(kendall([0.2, 0.4, 0.3, 0.9, 0.1], [0, 1, 1, 2, 0])), 6)
    0.894427
    """
    x = np.asarray(x, dtype=float)
    levels, k = _levels(g)
    shared = levels.ndim == 1  # one label vector for every row (the permutation test)
    n = x.shape[-1]
    if n < 2:
        return np.full(x.shape[:-1], np.nan)
    ranks, ties_x = ranked or _ranks_and_ties(x)
    counts = np.stack([(levels == a).sum(axis=-1) for a in range(k)], axis=-1)
    ties_g = (counts * (counts - 1) // 2).sum(axis=-1)
    s = np.zeros(x.shape[:-1])
    below = counts[..., 0].astype(float)
    for a in range(1, k):
        n_a = counts[..., a]
        below = below + n_a
        if a == k - 1:  # the subset "levels <= a" is every item: ranks among all
            rank_sum = np.where(levels == a, ranks, 0.0).sum(axis=-1)
        elif shared:  # rank the subset's columns alone
            inside = levels <= a
            rank_sum = midranks(x[..., inside])[..., levels[inside] == a].sum(axis=-1)
        else:  # items above level a rank after every member: members' ranks are the subset's
            subset_ranks = midranks(np.where(levels <= a, x, np.inf))
            rank_sum = np.where(levels == a, subset_ranks, 0.0).sum(axis=-1)
        s = s + 2 * rank_sum - n_a * (below + 1)
    total = n * (n - 1) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = s / np.sqrt((total - ties_x) * (total - ties_g))
    return np.where((ties_x == total) | (ties_g == total), np.nan, np.clip(tau, -1.0, 1.0))


# ---------------------------------------------------------------- acc23 with ties


@dataclass(frozen=True)
class Acc23:
    """acc23 per row, its optimal tie threshold (in the scores' units) and how it was found."""
    value: np.ndarray
    threshold: np.ndarray
    pairs: int  # pairs looked at per row
    all_pairs: bool  # every pair (exact) or a random sample of `pairs`
    # what tying every pair scores: the share of pairs the humans tie. With three label levels it
    # is large, and a metric whose best threshold ties (nearly) everything lands on it
    all_ties: float = float("nan")

    @property
    def method(self) -> str:
        how = ("tie threshold optimised over all pairs" if self.all_pairs else
               f"tie threshold optimised over {self.pairs:,} random pairs (of all)")
        return how if np.isnan(self.all_ties) else \
            f"{how}; tying every pair scores {self.all_ties:.4f}"


def item_pairs(n: int, max_pairs: int = ACC23_MAX_PAIRS, seed: int = 0
               ) -> tuple[np.ndarray, np.ndarray, bool]:
    """(first, second, all_pairs): every pair i < j of n items, or `max_pairs` pairs of two
    different items drawn at random (with replacement) when there are more."""
    total = n * (n - 1) // 2
    if total <= max_pairs:
        first, second = np.triu_indices(n, k=1)
        return first, second, True
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n, max_pairs)
    second = rng.integers(0, n - 1, max_pairs)
    second = second + (second >= first)
    return first, second, False


def acc23(x, g, max_pairs: int = ACC23_MAX_PAIRS, seed: int = 0,
          pairs: tuple[np.ndarray, np.ndarray, bool] | None = None) -> Acc23:
    """acc23 with its tie threshold optimised per row, over `pairs` (from `item_pairs`; made
    here when not given). The threshold search is exact over the pairs looked at: tying every pair
    whose scores differ by at most t adds one to the count for each pair the humans tie and takes
    one away for each pair the metric orders correctly; the best t is the smallest at the
    maximum, 0 when no tie helps (as mt-metrics-eval's tau_optimization).

    >>> result = acc23([0.10, 0.11, 0.5, 0.9], [1, 1, 2, 0])
    >>> round(float(result.value), 4), round(float(result.threshold), 4)
    (0.5, 0.01)
    """
    x = np.asarray(x, dtype=float)
    levels, _ = _levels(g)
    if levels.ndim != 1:
        raise ValueError("acc23 takes one label vector for every row of scores")
    n = x.shape[-1]
    first, second, complete = pairs if pairs is not None else item_pairs(n, max_pairs, seed)
    shape = x.shape[:-1]
    rows = x.reshape(-1, n)
    values = np.full(rows.shape[0], np.nan)
    thresholds = np.full(rows.shape[0], np.nan)
    if len(first) == 0:
        return Acc23(values.reshape(shape), thresholds.reshape(shape), 0, complete)
    human_order = np.sign(levels[first] - levels[second])
    human_tie = human_order == 0
    all_ties = float(human_tie.mean())
    step = max(1, _CHUNK_ELEMENTS // len(first))
    for start in range(0, rows.shape[0], step):
        block = rows[start:start + step]
        diff = block[:, first] - block[:, second]
        distance = np.abs(diff)
        metric_tie = distance == 0
        concordant = (np.sign(diff) == human_order) & ~human_tie & ~metric_tie
        base = concordant.sum(axis=1) + (human_tie & metric_tie).sum(axis=1)
        gain = np.where(human_tie & ~metric_tie, 1, np.where(concordant, -1, 0))
        best_gain, threshold = _best_ties(distance, gain)
        improves = best_gain > 0
        values[start:start + step] = (base + np.where(improves, best_gain, 0)) / len(first)
        thresholds[start:start + step] = np.where(improves, threshold, 0.0)
    return Acc23(values.reshape(shape), thresholds.reshape(shape), len(first), complete,
                 all_ties)


def _best_ties(distance: np.ndarray, gain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tying every pair whose scores differ by at most t adds each pair's gain (+1 for a pair the
    humans tie, -1 for one the metric orders correctly): per row, the largest total gain over t
    and the smallest t that reaches it. The total, #tied(<= t) - #concordant(<= t), peaks at the
    distance of a human-tied pair, so two plain sorts and a search per row find it (faster,
    measured, than one stable sort of all rows at once, even for a few hundred pairs)."""
    tied = np.sort(np.where(gain > 0, distance, np.inf), axis=1)
    lost = np.sort(np.where(gain < 0, distance, np.inf), axis=1)
    n_tied = np.isfinite(tied).sum(axis=1)
    best_gain = np.zeros(len(distance), dtype=np.int64)
    threshold = np.zeros(len(distance))
    for row in range(len(distance)):
        candidates = tied[row, :n_tied[row]]
        if candidates.size:
            gains = np.arange(1, candidates.size + 1) - np.searchsorted(lost[row], candidates,
                                                                        "right")
            best = int(np.argmax(gains))
            best_gain[row], threshold[row] = gains[best], candidates[best]
    return best_gain, threshold


def correlations(statistics: Sequence[str], x, g, **acc23_options) -> np.ndarray:
    """Several of `STATISTICS` per row of ``x`` against levels ``g``, shape (..., statistics):
    Spearman and Kendall share the one sort of ``x`` they both need."""
    x = np.asarray(x, dtype=float)
    ranked = _ranks_and_ties(x) if {"spearman", "kendall"} & set(statistics) else None
    out = []
    for statistic in statistics:
        if statistic == "pearson":
            out.append(pearson(x, g))
        elif statistic == "spearman":
            out.append(spearman(x, g, ranked))
        elif statistic == "kendall":
            out.append(kendall(x, g, ranked))
        elif statistic == "acc23":
            out.append(acc23(x, g, **acc23_options).value)
        else:
            raise ValueError(f"unknown statistic {statistic!r}; use one of "
                             f"{', '.join(STATISTICS)}")
    return np.stack(out, axis=-1)


def correlation(statistic: str, x, g, **acc23_options) -> np.ndarray:
    """One of `STATISTICS` per row of ``x`` against levels ``g``."""
    return correlations([statistic], x, g, **acc23_options)[..., 0]


__all__ = ["ACC23_MAX_PAIRS", "Acc23", "STATISTICS", "acc23", "correlation", "correlations",
           "item_pairs", "kendall", "midranks", "pearson", "spearman"]
