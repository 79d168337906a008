"""The study's KDE threshold classifier (section 7.1 "Comparison", Figure 5).

For one metric configuration: fit a Gaussian kernel density to the scores of each human class,
find where the class densities cross, and turn the crossings into score intervals, each owned by
the class whose density wins there. Every item is then reclassified by the interval its score
falls in and compared with its human label.

Choices, all explicit:

- Weighting. ``"equal"`` (default): each class density integrates to 1 on its own, so a minority
  class still owns the region where it is denser than the others (how the study handles the class
  imbalance). ``"prior"``: densities times class shares, a Bayes classifier; on imbalanced,
  overlapping classes it hands nearly every item to the majority class and kappa falls to ~0
  (`Evaluation.warning` says so).
- Bandwidth. ``"scott"`` (default), ``"silverman"`` or a number, all as in
  ``scipy.stats.gaussian_kde(bw_method=...)``: kernel sd = factor x the class's sample sd
  (ddof 1), factor n**(-1/5) (Scott), (3n/4)**(-1/5) (Silverman), or the number itself.
- Degenerate classes. A class with one item, or whose scores are all one value (all BLEU = 0 is
  common), has no spread to scale a bandwidth by: it becomes a near point mass with the bandwidth
  floor, the larger of 1e-3 x the range of all scores in the fit (1e-3 x max(1, |score|) if
  every score is the same) and one grid spacing. The floor also bounds every other class's
  bandwidth from below. A class with no items gets no density and no region.
- Speed. Densities come from linear binning onto the grid and one FFT convolution per fit
  (`binned_log_densities`), so a fit costs about the same for 100 or 100,000 scores;
  ``method="exact"`` evaluates every kernel at every grid node instead.
- Regions. Crossings are found on a grid (`grid_size` points spanning every score +- 4
  bandwidths; only crossings within the range of the fitted scores count, beyond it the edge
  region continues) as changes of the winning class and placed by interpolating the log-density
  difference, so they need not be ordered or contiguous: a class may own several intervals. No
  crossing means one interval (-inf, inf) for the winner. Densities are compared in log space where
  they underflow, so two far-apart point masses still split at the right place.
- Direction. Nothing assumes higher is better: a metric where higher is worse simply gets its
  regions in the other order (`Thresholds.orientation`).

The classifier itself (`Thresholds`, saving and loading) is in `align.thresholds`; applying
it and comparing with the humans or with noise in `align.evaluation`.

>>> rng = np.random.default_rng(0)
>>> scores = np.concatenate([rng.normal(0, 1, 300), rng.normal(10, 1, 300)])
>>> human = ["incorrect"] * 300 + ["correct"] * 300
>>> fit = fit_kde_thresholds(scores, human)
>>> [(label, round(lo) if lo > -np.inf else lo) for lo, hi, label in fit.thresholds.intervals]
[('incorrect', -inf), ('correct', 5)]
>>> from align.evaluation import evaluate
>>> evaluate(fit.thresholds, scores, human).kappa
1.0
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from agreement.statistics import encode_labels
from align.thresholds import Thresholds
from nlce.cli import InputError
from taxonomy import ACCURACY_LABELS

WEIGHTINGS = ("equal", "prior")
BANDWIDTH_RULES = ("scott", "silverman")
DEFAULT_GRID_SIZE = 1024
BANDWIDTH_FLOOR = 1e-3  # of the pooled score range: the "point mass" width of degenerate classes
GRID_PAD_BANDWIDTHS = 4.0
_CHUNK = 4096  # points per block when evaluating kernels: bounds memory at _CHUNK x grid_size
_TINY = 1e-250  # below this a linear-space density is recomputed in log space


# ---------------------------------------------------------------- bandwidth

def parse_bandwidth(spec: str | float) -> str | float:
    """ "scott" | "silverman" | a positive number (also given as a string, e.g. "0.1").

    >>> parse_bandwidth("Scott"), parse_bandwidth("0.25")
    ('scott', 0.25)
    """
    if isinstance(spec, str):
        name = spec.strip().lower()
        if name in BANDWIDTH_RULES:
            return name
        try:
            spec = float(name)
        except ValueError:
            raise InputError(f"bandwidth must be 'scott', 'silverman' or a positive number, "
                             f"got {spec!r}") from None
    value = float(spec)
    if not value > 0 or math.isinf(value):
        raise InputError(f"bandwidth must be a positive number, got {spec!r}")
    return value


def bandwidth_factor(spec: str | float, n: np.ndarray | int) -> np.ndarray:
    """The factor scipy's gaussian_kde multiplies the sample sd by, for n points."""
    n = np.asarray(n, dtype=float)
    if spec == "scott":
        return n ** (-1 / 5)
    if spec == "silverman":
        return (n * 3 / 4) ** (-1 / 5)
    return np.full(n.shape, float(spec))


# ---------------------------------------------------------------- fitting

@dataclass(frozen=True)
class KDEFit:
    """The classifier plus what Figure 5 draws: the grid and each class's (weighted) log density."""
    thresholds: Thresholds
    grid: np.ndarray
    log_density: np.ndarray  # (classes, grid); -inf for a class without items
    score_range: tuple = (-math.inf, math.inf)  # the lowest and highest fitted score

    @property
    def density(self) -> np.ndarray:
        return np.exp(self.log_density)


def clean_pairs(scores, human, labels) -> tuple[np.ndarray, np.ndarray]:
    """Scores as floats and labels as indices into `labels` (an int array is taken as indices
    already, -1 = missing), without the items that miss either."""
    x = np.asarray(scores, dtype=float)
    if isinstance(human, np.ndarray) and human.dtype.kind in "iu":  # already label indices
        codes = human.astype(np.int64)
        if codes.size and codes.max() >= len(labels):
            raise ValueError(f"label index {int(codes.max())} out of range for {len(labels)} labels")
    else:
        codes = encode_labels(human, labels, allow_missing=True)
    if x.shape != codes.shape:
        raise ValueError(f"scores and labels differ in length: {x.shape[0]} vs {codes.shape[0]}")
    keep = ~np.isnan(x) & (codes >= 0)
    return x[keep], codes[keep]


def class_log_densities(x: np.ndarray, codes: np.ndarray, k: int, grid: np.ndarray,
                        bandwidths: np.ndarray) -> np.ndarray:
    """log f_c(grid) for every class at once: (k, len(grid)); -inf for a class without points.

    One pass of kernels for all (deduplicated) points, summed per class by a matrix product;
    grid points where a class's density underflows are recomputed in log space.
    """
    pairs, weight = np.unique(np.stack([codes, x]), axis=1, return_counts=True)
    pcode, px = pairs[0].astype(np.int64), pairs[1]
    n_c = np.bincount(codes, minlength=k).astype(float)
    h = bandwidths[pcode]
    # each point's kernel weight within its class: count / (n_c h sqrt(2 pi))
    coef = weight / (n_c[pcode] * h * math.sqrt(2 * math.pi))
    onehot = np.zeros((k, len(px)))
    onehot[pcode, np.arange(len(px))] = coef
    density = np.zeros((k, len(grid)))
    for start in range(0, len(px), _CHUNK):
        sl = slice(start, start + _CHUNK)
        z = (grid[None, :] - px[sl, None]) / h[sl, None]
        density += onehot[:, sl] @ np.exp(-0.5 * z * z)
    with np.errstate(divide="ignore"):
        log_density = np.log(density)
    for c in range(k):
        if n_c[c] == 0:
            log_density[c] = -np.inf
            continue
        low = density[c] < _TINY
        if low.any():  # exact log-sum-exp where the linear sum underflowed
            members = pcode == c
            z = (grid[None, low] - px[members, None]) / h[members, None]
            terms = -0.5 * z * z + np.log(coef[members])[:, None]
            top = terms.max(axis=0)
            log_density[c, low] = top + np.log(np.exp(terms - top).sum(axis=0))
    return log_density


def binned_log_densities(x: np.ndarray, codes: np.ndarray, k: int, grid: np.ndarray,
                         bandwidths: np.ndarray, class_weights: np.ndarray | None = None,
                         noise: float = 1e-10) -> np.ndarray:
    """Weighted log f_c(grid) for every class at once, by linear binning and one FFT convolution.

    The points are split linearly between their two neighbouring grid nodes, and each class's
    bin counts are convolved with its Gaussian kernel sampled on the grid: O(N + G log G) however
    many points there are. FFT round-off (about `noise` x a class's peak) makes tiny values
    meaningless, so wherever the winning class is not clear beyond that margin (gaps and tails far
    from any data) the log densities of that grid node are recomputed exactly in log space from the
    same bin counts. Needs a uniform grid and bandwidths of at least one grid spacing.

    Batched: with x, codes (R, n), grid (R, G), bandwidths and class_weights (R, k), every row is
    its own fit (the bootstrap refits thresholds this way), and the result is (R, k, G).
    """
    if np.ndim(grid) == 1:
        return binned_log_densities(
            x[None], codes[None], k, grid[None], bandwidths[None],
            None if class_weights is None else np.asarray(class_weights)[None], noise)[0]
    rows, g = grid.shape
    lo, step = grid[:, :1], grid[:, 1:2] - grid[:, :1]
    weights = (np.ones((rows, k)) if class_weights is None
               else np.asarray(class_weights, dtype=float))
    row_class = np.arange(rows)[:, None] * k + codes
    n_c = np.bincount(row_class.ravel(), minlength=rows * k).reshape(rows, k).astype(float)
    pos = (x - lo) / step
    left = np.clip(np.floor(pos).astype(np.int64), 0, g - 2)
    frac = np.clip(pos - left, 0.0, 1.0)
    flat = (row_class * g + left).ravel()
    counts = (np.bincount(flat, weights=(1.0 - frac).ravel(), minlength=rows * k * g)
              + np.bincount(flat + 1, weights=frac.ravel(), minlength=rows * k * g)
              ).reshape(rows, k, g)
    counts = counts / np.maximum(n_c, 1.0)[:, :, None]
    offsets = np.arange(-(g - 1), g) * step  # kernel at every grid offset, (rows, 2g - 1)
    kernels = np.exp(-0.5 * (offsets[:, None, :] / bandwidths[:, :, None]) ** 2) / (
        bandwidths[:, :, None] * math.sqrt(2 * math.pi))
    # circular convolution of this size equals the linear one on the nodes kept (g-1 .. 2g-2)
    size = 1 << int(math.ceil(math.log2(2 * g - 1)))
    conv = np.fft.irfft(np.fft.rfft(counts, size) * np.fft.rfft(kernels, size), size)
    density = np.maximum(conv[:, :, g - 1:2 * g - 1], 0.0) * weights[:, :, None]
    margin = noise * density.max(axis=2)  # what round-off can hide, per class
    present = n_c > 0
    with np.errstate(divide="ignore"):
        log_density = np.log(density)
    log_density[~present] = -np.inf
    ranked = np.argsort(np.where(present[:, :, None], density, -1.0), axis=1)
    top, second = ranked[:, -1], ranked[:, -2] if k > 1 else ranked[:, -1]
    clear = ((np.take_along_axis(density, top[:, None], axis=1)[:, 0]
              - np.take_along_axis(margin, top, axis=1))
             > (np.take_along_axis(density, second[:, None], axis=1)[:, 0]
                + np.take_along_axis(margin, second, axis=1)))
    clear |= (present.sum(axis=1) <= 1)[:, None]
    clear &= density.max(axis=1) > 0
    for r in np.flatnonzero(~clear.all(axis=1)):  # the rare rows with unclear nodes: exactly
        unclear = np.flatnonzero(~clear[r])
        for c in np.flatnonzero(present[r]):
            nodes = np.flatnonzero(counts[r, c] > 0)
            z = (grid[r][unclear][:, None] - grid[r][nodes][None, :]) / bandwidths[r, c]
            terms = -0.5 * z * z + np.log(counts[r, c, nodes])[None, :]
            peak = terms.max(axis=1)
            log_density[r, c, unclear] = (
                peak + np.log(np.exp(terms - peak[:, None]).sum(axis=1))
                - math.log(bandwidths[r, c] * math.sqrt(2 * math.pi)) + math.log(weights[r, c]))
    return log_density


KDE_METHODS = ("binned", "exact")


def _setup(x: np.ndarray, codes: np.ndarray, k: int, spec: str | float, grid_size: int,
           weighting: str):
    """Per row of (R, n) scores and label codes, one fit each: class counts, bandwidths, the
    grid, the class weights and which classes are point masses."""
    rows = len(x)
    row_class = (np.arange(rows)[:, None] * k + codes).ravel()
    n_c = np.bincount(row_class, minlength=rows * k).reshape(rows, k)
    mean = (np.bincount(row_class, weights=x.ravel(), minlength=rows * k).reshape(rows, k)
            / np.maximum(n_c, 1))
    deviation = (x - np.take_along_axis(mean, codes, axis=1)) ** 2
    sq = np.bincount(row_class, weights=deviation.ravel(), minlength=rows * k).reshape(rows, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt(sq / (n_c - 1))
    point_mass = (n_c > 0) & ((n_c < 2) | ~(sd > 0))
    raw = np.where(point_mass, 0.0, bandwidth_factor(spec, np.maximum(n_c, 1)) * np.nan_to_num(sd))
    low, high = x.min(axis=1), x.max(axis=1)
    spread = high - low
    floor = np.where(spread > 0, BANDWIDTH_FLOOR * spread,
                     BANDWIDTH_FLOOR * np.maximum(1.0, np.abs(x).max(axis=1)))
    bws = np.maximum(raw, floor[:, None])
    pad = GRID_PAD_BANDWIDTHS * np.where(n_c > 0, bws, -np.inf).max(axis=1)
    grid = np.linspace(low - pad, high + pad, grid_size, axis=-1)
    # a kernel narrower than the grid spacing cannot be resolved: the floor is at least one step.
    # Exact ties (identical point masses) go to the first label in `labels` order.
    bws = np.maximum(bws, (grid[:, 1] - grid[:, 0])[:, None])
    prior = n_c / n_c.sum(axis=1, keepdims=True) if weighting == "prior" else np.ones((rows, k))
    return n_c, bws, grid, prior, point_mass


def refit_classify(x: np.ndarray, codes: np.ndarray, k: int, weighting: str = "equal",
                   bandwidth: str | float = "scott", grid_size: int = DEFAULT_GRID_SIZE
                   ) -> np.ndarray:
    """For each row of (R, n) scores and label codes 0..k-1: fit the KDE thresholds on that row
    and classify the row's own scores with them, for every row at once; equal to
    `fit_kde_thresholds` then `Thresholds.classify_codes` per row (the paired bootstrap refits
    the thresholds inside each resample this way). Returns (R, n) predicted codes."""
    x = np.asarray(x, dtype=float)
    codes = np.asarray(codes, dtype=np.int64)
    _, bws, grid, prior, _ = _setup(x, codes, k, parse_bandwidth(bandwidth), grid_size, weighting)
    log_density = binned_log_densities(x, codes, k, grid, bws, prior)
    rows = np.arange(len(x))[:, None]
    winner = np.argmax(log_density, axis=1)
    lo, step = grid[:, :1], grid[:, 1:2] - grid[:, :1]
    # each score's grid cell; where the two nodes' winners differ, the crossing is placed in the
    # cell as `_intervals` places it, and a score on it goes to the upper class
    cell = np.clip(np.floor((x - lo) / step).astype(np.int64), 0, grid_size - 2)
    cell = np.where(grid[rows, cell + 1] <= x, np.minimum(cell + 1, grid_size - 2), cell)
    cell = np.where(grid[rows, cell] > x, np.maximum(cell - 1, 0), cell)
    a, b = winner[rows, cell], winner[rows, cell + 1]
    left = log_density[rows, a, cell] - log_density[rows, b, cell]
    right = log_density[rows, a, cell + 1] - log_density[rows, b, cell + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = left / (left - right)
    share = np.where(np.isfinite(share), np.clip(share, 0.0, 1.0), 0.5)
    cut = grid[rows, cell] + share * (grid[rows, cell + 1] - grid[rows, cell])
    return np.where((a == b) | (x < cut), a, b)


def fit_kde_thresholds(scores: Sequence[float], human: Sequence[Any],
                       labels: Sequence[Any] = ACCURACY_LABELS, weighting: str = "equal",
                       bandwidth: str | float = "scott", grid_size: int = DEFAULT_GRID_SIZE,
                       method: str = "binned") -> KDEFit:
    """Fit the per-class KDEs on (score, human label) pairs and derive the label intervals.

    `method` "binned" (default; linear binning + FFT, what makes thousands of fits take seconds)
    or "exact" (every kernel evaluated at every grid node; for checking). Items with a missing
    score (NaN) or label (None) are left out. Raises ValueError when nothing is left.
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    if method not in KDE_METHODS:
        raise ValueError(f"method must be one of {KDE_METHODS}, got {method!r}")
    if grid_size < 16:
        raise ValueError(f"grid_size must be at least 16, got {grid_size}")
    spec = parse_bandwidth(bandwidth)
    labels = tuple(getattr(label, "value", label) for label in labels)
    k = len(labels)
    x, codes = clean_pairs(scores, human, labels)
    if x.size == 0:
        raise ValueError("no item has both a score and a human label; nothing to fit")
    n_c, bws, grid, prior, point_mass = (
        part[0] for part in _setup(x[None], codes[None], k, spec, grid_size, weighting))
    if method == "binned":
        log_density = binned_log_densities(x, codes, k, grid, bws, prior)
    else:
        log_density = class_log_densities(x, codes, k, grid, bws)
        with np.errstate(divide="ignore"):
            log_density = log_density + np.log(prior)[:, None]
    intervals = _intervals(grid, log_density, labels, x.min(), x.max())
    thresholds = Thresholds(
        labels=labels, intervals=intervals, weighting=weighting, bandwidth=spec,
        class_counts={str(label): int(n_c[i]) for i, label in enumerate(labels)},
        bandwidths={str(label): float(bws[i]) for i, label in enumerate(labels) if n_c[i] > 0},
        point_mass=tuple(str(labels[i]) for i in np.flatnonzero(point_mass)))
    return KDEFit(thresholds=thresholds, grid=grid, log_density=log_density,
                  score_range=(float(x.min()), float(x.max())))


def fit_classifier(x: np.ndarray, codes: np.ndarray, labels: Sequence[Any],
                   weighting: str = "equal", bandwidth: str | float = "scott",
                   grid_size: int = DEFAULT_GRID_SIZE, monotone: bool = False,
                   higher_is_better: bool | None = None) -> tuple[KDEFit, bool]:
    """The KDE classifier as align fits it: `fit_kde_thresholds`, and with `monotone` its regions
    put in order (`ordered_thresholds`, the direction by `ordered_direction`). Returns the fit
    (carrying the thresholds used) and whether ordering changed them."""
    fit = fit_kde_thresholds(x, codes, labels, weighting, bandwidth, grid_size)
    if not monotone:
        return fit, False
    t = ordered_thresholds(fit, ordered_direction(x, codes, higher_is_better))
    if t is fit.thresholds:
        return fit, False
    return KDEFit(t, fit.grid, fit.log_density, fit.score_range), True


def ordered_direction(x: np.ndarray, codes: np.ndarray, higher_is_better: bool | None) -> bool:
    """Which way ordered regions run (True: better labels upwards): the metric's own direction
    where known, else the data's (Spearman with the human codes; upwards when it is undefined)."""
    if higher_is_better is not None:
        return higher_is_better
    from agreement.correlation import spearman

    return not float(spearman(x, codes)) < 0


def ordered_classify(x: np.ndarray, codes: np.ndarray, k: int, higher_is_better: bool | None,
                     weighting: str = "equal", bandwidth: str | float = "scott",
                     grid_size: int = DEFAULT_GRID_SIZE) -> np.ndarray:
    """`refit_classify`'s counterpart for --monotone, one row: fit the thresholds on these
    scores and codes 0..k-1, put the regions in order (`ordered_direction`) and classify the
    same scores. ValueError where no thresholds can be fitted."""
    fit = fit_kde_thresholds(x, codes, tuple(range(k)), weighting, bandwidth, grid_size)
    return ordered_thresholds(fit, ordered_direction(x, codes, higher_is_better)).classify_codes(x)


def ordered_thresholds(fit: KDEFit, ascending: bool = True) -> Thresholds:
    """`fit`'s classifier with its regions in label order (worst to best upwards, or downwards
    for a metric where lower is better): of every ordered split of the score axis, the one that
    keeps the most of each class's density in its own region, which is what the unordered
    classifier maximises point by point. `fit.thresholds` itself where its regions are ordered
    already. Cuts fall on grid nodes within the range of the fitted scores (a score on a cut goes
    to the upper region, as everywhere)."""
    t = fit.thresholds
    if t.in_order(ascending):
        return t
    k = len(t.labels)
    classes = list(range(k)) if ascending else list(range(k - 1, -1, -1))  # bottom to top
    step = fit.grid[1] - fit.grid[0]
    density = np.exp(fit.log_density[classes])
    below = np.concatenate([np.zeros((k, 1)), np.cumsum(density, axis=1)], axis=1) * step
    low, high = fit.score_range
    candidates = np.flatnonzero((fit.grid >= low) & (fit.grid <= high))
    mass = below[:, candidates]  # each class's mass below a cut at each candidate node
    positions = np.arange(len(candidates))
    best, choices = mass[0], []  # best: the most mass of the classes so far, ending at a cut
    for c in range(1, k - 1):
        shifted = best - mass[c]
        running = np.maximum.accumulate(shifted)
        new_max = np.concatenate([[True], shifted[1:] > running[:-1]])
        choices.append(np.maximum.accumulate(np.where(new_max, positions, 0)))
        best = mass[c] + running
    ends = [int(np.argmax(best + below[k - 1, -1] - mass[k - 1]))]
    for choice in reversed(choices):
        ends.insert(0, int(choice[ends[0]]))
    bounds = [-math.inf, *(float(fit.grid[candidates[i]]) for i in ends), math.inf]
    intervals = tuple((lo, hi, t.labels[c]) for lo, hi, c in zip(bounds[:-1], bounds[1:], classes)
                      if lo < hi)
    return Thresholds(labels=t.labels, intervals=intervals, weighting=t.weighting,
                      bandwidth=t.bandwidth, class_counts=t.class_counts,
                      bandwidths=t.bandwidths, point_mass=t.point_mass)


def _intervals(grid: np.ndarray, log_density: np.ndarray, labels: tuple,
               low: float = -math.inf, high: float = math.inf) -> tuple:
    """Intervals from the winning class at each grid node within [low, high] (the range of the
    fitted scores); beyond it the edge region simply continues, so that crossings in the far
    tails, where only kernel shapes decide (BLEU below 0, say), do not become regions."""
    inside = (grid >= low) & (grid <= high)
    if inside.sum() >= 2:
        keep = np.flatnonzero(inside)
        # one node either side, so a crossing right at the edge is still found
        keep = np.arange(max(keep[0] - 1, 0), min(keep[-1] + 2, len(grid)))
        grid, log_density = grid[keep], log_density[:, keep]
    winner = np.argmax(log_density, axis=0)
    change = np.flatnonzero(winner[1:] != winner[:-1])
    if change.size == 0:
        return ((-math.inf, math.inf, labels[int(winner[0])]),)
    a, b = winner[change], winner[change + 1]
    left = log_density[a, change] - log_density[b, change]  # > 0: a wins at the left point
    right = log_density[a, change + 1] - log_density[b, change + 1]  # <= 0: b wins
    with np.errstate(invalid="ignore", divide="ignore"):
        share = left / (left - right)
    share = np.where(np.isfinite(share), np.clip(share, 0.0, 1.0), 0.5)
    cuts = grid[change] + share * (grid[change + 1] - grid[change])
    lowers = np.concatenate([[-math.inf], cuts])
    uppers = np.concatenate([cuts, [math.inf]])
    owners = np.concatenate([[winner[0]], b])
    return tuple((float(lo), float(hi), labels[int(c)])
                 for lo, hi, c in zip(lowers, uppers, owners) if lo < hi)
