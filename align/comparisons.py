"""Which configuration agrees better with the humans, and how sure: correlations, paired
significance, ranks and the labels a difference needs, per slice, for metrics and judges alike.

The statistics are `agreement.correlation` and `agreement.significance`; this module chooses the
items and the pairs. Per slice, each configuration (a metric configuration or a judge run) has
its items (labelled generations it scored, or gave an ok verdict for), its scores (a judge's
verdict as a level: incorrect 0, partial 1, correct 2) and the humans' levels. Every pair of
configurations is compared on the items both have:

- correlations (Pearson, Spearman, Kendall tau-b, acc23): PERM-BOTH p-values; an interval for
  the difference from the paired bootstrap (none for acc23, whose threshold search per resample
  is what PERM-BOTH already pays for);
- kappa: the paired bootstrap, the KDE thresholds refitted inside every resample (the honest
  choice: fixed thresholds would not show their own uncertainty), or held fixed where they were
  fitted on other items (`--fit-on`, `--thresholds`).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from agreement.correlation import (
    ACC23_MAX_PAIRS,
    STATISTICS,
    Acc23,
    acc23,
    correlation,
    correlations,
    item_pairs,
)
from agreement.significance import (
    BootstrapDifference,
    assign_ranks,
    bootstrap_values,
    holm,
    labels_needed_from,
    paired_bootstrap,
    perm_both,
    resample_indices,
)
from agreement.statistics import kappa_from_counts
from align.analysis import MIN_SLICE_ITEMS
from align.configurations import Configuration
from align.kde import DEFAULT_GRID_SIZE, ordered_classify, refit_classify
from taxonomy import ACCURACY_LABELS

ALL_STATISTICS = ("kappa",) + STATISTICS
BOOTSTRAPPED = ("kappa", "pearson", "spearman", "kendall")  # acc23: PERM-BOTH only
SIGNIFICANCE_COLUMNS = ["slice", "slice_value", "statistic", "a", "b", "value_a", "value_b",
                        "delta", "ci_low", "ci_high", "p_value", "p_holm", "method", "resamples",
                        "near_all_ties"]
RANK_COLUMNS = ["slice", "slice_value", "statistic", "key", "value", "rank", "near_all_ties"]
CORRELATION_COLUMNS = ["slice", "slice_value", "key", "statistic", "value", "n", "kind",
                       "tie_threshold", "method", "near_all_ties"]
NEEDED_COLUMNS = ["slice", "slice_value", "statistic", "best", "runner_up", "n", "value_best",
                  "value_runner_up", "delta", "resampled_lead", "se", "p_value", "labels_needed",
                  "more_labels", "labels_if_known", "shown_ever", "why_none"]
# pairs of items acc23 is compared over: its threshold re-optimised per permutation, and the values
# the tests and ranks show (all pairs up to 200 items; correlations.csv's value: up to 2 million)
ACC23_PERMUTATION_PAIRS = 20_000
# an acc23 at most this far above what tying every pair scores orders almost nothing the humans
# order: flagged `near_all_ties` (its differences with another such configuration mean nothing)
ACC23_NEAR_ALL_TIES = 0.005
ACC23_EARLY_STOP = (0.02, 0.5)  # mt-metrics-eval's PermutationSigDiffParams bounds
ACC23_CHECK_EVERY = 100
MIN_ITEMS = 3
REFIT_BLOCK = 16  # resamples refitted per batched call (small blocks stay in the CPU's cache)


@dataclass(frozen=True)
class SignificanceOptions:
    resamples: int = 1000
    seed: int = 0
    alpha: float = 0.05
    power: float = 0.8
    statistics: Sequence[str] = ALL_STATISTICS
    refit: bool = True  # refit KDE thresholds in each resample (False: thresholds fitted elsewhere)
    # how thresholds are refitted: as align fitted them (`align.kde`)
    weighting: str = "equal"
    bandwidth: str | float = "scott"
    grid_size: int = DEFAULT_GRID_SIZE
    monotone: bool = False
    min_items: int = MIN_SLICE_ITEMS  # fewer items (a slice's, or a pair's shared): not compared

    @property
    def tested(self) -> bool:
        """Whether pairs are tested: resamples to test with, and statistics to test."""
        return self.resamples > 0 and bool(self.statistics)

    @property
    def untested(self) -> str:
        """Why nothing was tested or ranked ("" when pairs were): what the terminal and the page
        say in place of the ranks' explanation."""
        if self.resamples == 0:
            return ("nothing was tested (0 resamples): no intervals, p-values or ranks; "
                    "--resamples 1000 (the default) gives them")
        if not self.statistics:
            return ("nothing was tested (--significance none): no p-values or ranks; the "
                    "correlations are in correlations.csv")
        return ""


@dataclass
class SignificanceResult:
    correlations: pd.DataFrame
    significance: pd.DataFrame
    ranks: pd.DataFrame
    labels_needed: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    options: SignificanceOptions = field(default_factory=SignificanceOptions)  # alpha, power
    # (slice, value, key, statistic) -> (value, bootstrap samples, items) over the config's items
    samples: dict = field(default_factory=dict, repr=False)


# ---------------------------------------------------------------- statistics of one configuration


def _kappa_of_rows(human: np.ndarray, predicted: np.ndarray, k: int) -> np.ndarray:
    """Quadratic kappa of each row of (R, n) human and predicted codes, all rows at once."""
    cells = human * k + predicted + (np.arange(len(human)) * k * k)[:, None]
    counts = np.bincount(cells.ravel(), minlength=len(human) * k * k).reshape(len(human), k, k)
    return kappa_from_counts(counts)


def _ordered_kappa(x: np.ndarray, human: np.ndarray, k: int, options: SignificanceOptions,
                   higher_is_better: bool | None) -> float:
    """The study's procedure with --monotone on these items: fit, order, reclassify, kappa."""
    try:
        predicted = ordered_classify(x, human, k, higher_is_better, options.weighting,
                                     options.bandwidth, options.grid_size)
    except ValueError:
        return math.nan
    return float(_kappa_of_rows(human[None], predicted[None], k)[0])


def kappa_statistic(config: Configuration, options: SignificanceOptions,
                    k: int = len(ACCURACY_LABELS)):
    """statistic(rows of item indices) -> kappa per row, for the paired bootstrap: thresholds
    refitted on each resample as align fitted them, or the configuration's own predictions
    (thresholds fitted elsewhere, a judge's verdicts)."""
    if config.kind == "metric" and options.refit and options.monotone:
        def refitted_in_order(rows: np.ndarray) -> np.ndarray:
            return np.array([_ordered_kappa(config.x[row], config.human[row], k, options,
                                            config.higher_is_better) for row in rows])
        return refitted_in_order
    if config.kind == "metric" and options.refit:
        def refitted(rows: np.ndarray) -> np.ndarray:
            return np.concatenate([
                _kappa_of_rows(config.human[block], refit_classify(
                    config.x[block], config.human[block], k, options.weighting, options.bandwidth,
                    options.grid_size), k)
                for block in np.array_split(rows, max(1, len(rows) // REFIT_BLOCK))])
        return refitted
    if config.kind == "metric":
        predicted = config.thresholds.classify_codes(config.x) if config.thresholds else None
        if predicted is None:
            return lambda rows: np.full(len(rows), np.nan)
    else:
        predicted = config.x.astype(np.int64)
    return lambda rows: _kappa_of_rows(config.human[rows], predicted[rows], k)


def statistic_value(config: Configuration, statistic: str, options: SignificanceOptions
                    ) -> float:
    """The statistic over all of the configuration's items (the identity resample)."""
    every = np.arange(len(config.items))[None, :]
    if statistic == "kappa":
        return float(kappa_statistic(config, options)(every)[0])
    if statistic == "acc23":  # the seed draws its pairs beyond ACC23_MAX_PAIRS
        return float(acc23(config.x, config.human, seed=options.seed).value)
    return float(correlation(statistic, config.x, config.human))


def near_all_ties(value: float, all_ties: float) -> bool:
    """Whether an acc23 is at most `ACC23_NEAR_ALL_TIES` above what tying every pair scores."""
    return bool(value - all_ties <= ACC23_NEAR_ALL_TIES)


def _same_items(a: Configuration, b: Configuration) -> bool:
    return len(a.items) == len(b.items) and bool(np.array_equal(a.items, b.items))


def _ranked(configs: list[Configuration], values: dict[str, float]) -> list[Configuration]:
    """Best first by value (undefined last), then by key: the order of ranks.csv, which also
    makes `b` the better-ranked configuration of each pair in significance.csv."""
    return sorted(configs, key=lambda c: (math.isnan(values[c.key]), -np.nan_to_num(
        values[c.key], nan=0.0), c.key))


class _SliceWork:
    """One slice: its configurations' values, bootstrap draws and samples, cached and shared by
    every pair on the same items."""

    def __init__(self, options: SignificanceOptions):
        self.options = options
        self._indices: dict[int, np.ndarray] = {}
        self._samples: dict[tuple[str, str, int], np.ndarray] = {}
        self._values: dict[tuple[str, str], float] = {}
        self._acc23: dict[tuple[str, int], Acc23] = {}

    def value(self, config: Configuration, statistic: str, whole: bool) -> float:
        """The statistic over the configuration's items (cached when over its own items)."""
        if not whole:
            return statistic_value(config, statistic, self.options)
        if statistic == "acc23":
            return float(self.acc23(config).value)
        if (config.key, statistic) not in self._values:
            self._values[(config.key, statistic)] = statistic_value(config, statistic,
                                                                    self.options)
        return self._values[(config.key, statistic)]

    def acc23(self, config: Configuration, max_pairs: int = ACC23_MAX_PAIRS) -> Acc23:
        """acc23 over the configuration's own items and at most `max_pairs` of their pairs,
        with its threshold and method: found once (the costliest of the values)."""
        if (config.key, max_pairs) not in self._acc23:
            self._acc23[(config.key, max_pairs)] = acc23(config.x, config.human, max_pairs,
                                                         self.options.seed)
        return self._acc23[(config.key, max_pairs)]

    def compared(self, config: Configuration, statistic: str) -> tuple[float, bool]:
        """The value a configuration is ranked by, and whether it is near all ties: acc23 over
        the pairs its tests use (`ACC23_PERMUTATION_PAIRS`), so that ranks and p-values speak of
        one value; any other statistic over its items."""
        if statistic != "acc23":
            return self.value(config, statistic, True), False
        result = self.acc23(config, ACC23_PERMUTATION_PAIRS)
        return float(result.value), near_all_ties(float(result.value), result.all_ties)

    def indices(self, n: int) -> np.ndarray:
        if n not in self._indices:
            self._indices[n] = resample_indices(n, self.options.resamples, self.options.seed)
        return self._indices[n]

    def samples(self, config: Configuration, statistics: Sequence[str], whole: bool
                ) -> dict[str, np.ndarray]:
        """Bootstrap values of one configuration per statistic (cached when over its own
        items); the correlations of a resample are computed together (one sort serves them),
        so a pair on a subset of the items asks for all of them in one call."""
        cached = {s: self._samples.get((config.key, s, len(config.items))) for s in statistics}
        if whole and all(v is not None for v in cached.values()):
            return cached
        indices = self.indices(len(config.items))
        if list(statistics) == ["kappa"]:
            found = {"kappa": bootstrap_values(kappa_statistic(config, self.options), indices)}
        else:
            names = [s for s in BOOTSTRAPPED if s != "kappa" and s in self.options.statistics]
            names = names if set(statistics) <= set(names) else list(statistics)
            values = bootstrap_values(lambda rows: correlations(
                names, config.x[rows], config.human[rows]), indices)
            found = dict(zip(names, values.T))
        if whole:
            self._samples.update({(config.key, name, len(config.items)): v
                                  for name, v in found.items()})
        return {s: found[s] for s in statistics}


@dataclass(frozen=True)
class _Test:
    """One statistic's comparison of a pair (first, second) on the items both have."""
    value_first: float
    value_second: float
    p_second: float  # one-sided: second is better
    p_first: float  # one-sided: first is better
    bootstrap: BootstrapDifference | None  # second - first resampled (None: not bootstrapped)
    method: str
    resamples: int
    near_all_ties: bool = False  # acc23: either side within ACC23_NEAR_ALL_TIES of all ties

    @property
    def ci_low(self) -> float:
        """Of second - first: the bootstrap's interval (nan where there is none)."""
        return self.bootstrap.ci_low if self.bootstrap is not None else math.nan

    @property
    def ci_high(self) -> float:
        return self.bootstrap.ci_high if self.bootstrap is not None else math.nan

    def row(self, b_is_second: bool) -> dict:
        """significance.csv's numbers with `b` the second configuration, or the first."""
        if b_is_second:
            return {"value_a": self.value_first, "value_b": self.value_second,
                    "delta": self.value_second - self.value_first, "ci_low": self.ci_low,
                    "ci_high": self.ci_high, "p_value": self.p_second, "method": self.method,
                    "resamples": self.resamples, "near_all_ties": self.near_all_ties}
        return {"value_a": self.value_second, "value_b": self.value_first,
                "delta": self.value_first - self.value_second, "ci_low": -self.ci_high,
                "ci_high": -self.ci_low, "p_value": self.p_first, "method": self.method,
                "resamples": self.resamples, "near_all_ties": self.near_all_ties}


def _pair_tests(first: Configuration, second: Configuration, work: _SliceWork,
                statistics: Sequence[str], acc23_order: dict[str, int]) -> dict[str, _Test]:
    """Every statistic's test of one pair on the items both have: the three correlations on
    one set of permutations (the sort of each mixed vector serves Spearman and Kendall), acc23
    on its own (the better-ranked configuration second, as its early stop expects), kappa by
    the paired bootstrap."""
    options = work.options
    shared = np.intersect1d(first.items, second.items)
    if len(shared) < max(MIN_ITEMS, options.min_items):
        return {}
    whole = _same_items(first, second)
    one, two = (first, second) if whole else (first.subset(shared), second.subset(shared))
    human = one.human
    tests: dict[str, _Test] = {}
    joint = [s for s in ("pearson", "spearman", "kendall") if s in statistics]
    if joint:
        result = perm_both(one.x, two.x, lambda x: correlations(joint, x, human),
                           options.resamples, options.seed)
        exact = " (exact: every swap)" if result.exact else ""
        samples_one, samples_two = work.samples(one, joint, whole), work.samples(two, joint, whole)
        for i, statistic in enumerate(joint):
            diff = paired_bootstrap(float(result.value_a[i]), float(result.value_b[i]),
                                    samples_one[statistic], samples_two[statistic])
            tests[statistic] = _Test(float(result.value_a[i]), float(result.value_b[i]),
                                     float(result.p_value[i]), float(result.p_reverse[i]), diff,
                                     f"perm-both{exact}; interval: paired bootstrap",
                                     result.resamples)
    if "acc23" in statistics:
        swapped = acc23_order.get(one.key, 0) < acc23_order.get(two.key, 0)  # one ranks higher
        low, high = (two, one) if swapped else (one, two)
        pairs = item_pairs(len(shared), ACC23_PERMUTATION_PAIRS, options.seed)
        result = perm_both(low.x, high.x, lambda x: acc23(x, human, pairs=pairs).value,
                           options.resamples, options.seed, ACC23_EARLY_STOP, ACC23_CHECK_EVERY)
        sampled = "all item pairs" if pairs[2] else f"{len(pairs[0]):,} random item pairs"
        method = (f"perm-both over {sampled}, the values too (tie threshold re-optimised per "
                  f"permutation; early stop outside p {ACC23_EARLY_STOP[0]}-"
                  f"{ACC23_EARLY_STOP[1]} every {ACC23_CHECK_EVERY})")
        # the values over the permutations' pairs (and the ranks' where whole), so delta and p
        # agree; from the scores themselves (z-scoring does not change acc23, except a constant
        # metric's, which ties every pair)
        found_low, found_high = (
            work.acc23(c, ACC23_PERMUTATION_PAIRS) if whole else acc23(c.x, human, pairs=pairs)
            for c in (low, high))
        value_low, value_high = float(found_low.value), float(found_high.value)
        # both over the same pairs and labels: one share of human ties
        near = near_all_ties(min(value_low, value_high), found_low.all_ties)
        tests["acc23"] = (
            _Test(value_low, value_high, result.p_value, result.p_reverse, None, method,
                  result.resamples, near) if not swapped else
            _Test(value_high, value_low, result.p_reverse, result.p_value, None, method,
                  result.resamples, near))
    if "kappa" in statistics:
        value_one, value_two = work.value(one, "kappa", whole), work.value(two, "kappa", whole)
        diff = paired_bootstrap(value_one, value_two, work.samples(one, ["kappa"], whole)["kappa"],
                                work.samples(two, ["kappa"], whole)["kappa"])
        fixed = "refitted" if options.refit else "fixed"
        tests["kappa"] = _Test(value_one, value_two, diff.p_value, diff.p_reverse, diff,
                               f"paired bootstrap (thresholds {fixed} per resample)",
                               diff.resamples)
    return tests


def _correlation_rows(slice_name: str, value: str, config: Configuration, work: _SliceWork
                      ) -> list[dict]:
    rows = []
    for statistic in STATISTICS:
        row = {"slice": slice_name, "slice_value": value, "key": config.key,
               "statistic": statistic, "n": len(config.items), "kind": config.kind,
               "value": work.value(config, statistic, True), "tie_threshold": math.nan,
               "method": "", "near_all_ties": False}
        if statistic == "acc23":
            result = work.acc23(config)
            row.update(tie_threshold=float(result.threshold), method=result.method,
                       near_all_ties=near_all_ties(float(result.value), result.all_ties))
        rows.append(row)
    return rows


def _find(tests: dict, a: str, b: str, statistic: str) -> tuple[_Test, bool] | None:
    """The test of a pair and whether `b` is its second configuration."""
    if (a, b) in tests:
        test = tests[(a, b)].get(statistic)
        return (test, True) if test else None
    test = tests.get((b, a), {}).get(statistic)
    return (test, False) if test else None


def _needed_rows(slice_name: str, value: str, statistic: str, ranked: list[Configuration],
                 ranks: list[int], tests: dict, alpha: float, power: float) -> list[dict]:
    """The best configuration against each runner-up in its cluster: labels for significance."""
    if statistic not in BOOTSTRAPPED or len(ranked) < 2:
        return []
    best = ranked[0]
    rows = []
    for config, rank in zip(ranked[1:], ranks[1:]):
        if rank != ranks[0]:
            break
        found = _find(tests, config.key, best.key, statistic)
        if found is None:
            continue
        test, best_is_second = found
        numbers, resampled = test.row(best_is_second), test.bootstrap
        if resampled is None:
            continue
        resampled = resampled if best_is_second else resampled.reversed()  # best - runner-up
        n = len(np.intersect1d(best.items, config.items))
        needed = labels_needed_from(n, resampled, alpha, power)
        rows.append({"slice": slice_name, "slice_value": value, "statistic": statistic,
                     "best": best.key, "runner_up": config.key, "n": n,
                     "value_best": numbers["value_b"], "value_runner_up": numbers["value_a"],
                     "delta": numbers["delta"], "resampled_lead": resampled.centre,
                     "se": resampled.se, "p_value": numbers["p_value"],
                     "labels_needed": needed.count, "more_labels": needed.count - n,
                     "labels_if_known": needed.if_known, "shown_ever": needed.ever,
                     "why_none": needed.why_none})
    return rows


def compare(configurations: dict[tuple[str, str], list[Configuration]],
            options: SignificanceOptions = SignificanceOptions(), progress: bool = False
            ) -> SignificanceResult:
    """Correlations, pairwise significance, ranks and labels needed for every slice;
    `progress`: a bar on stderr, one step per pair tested."""
    from tqdm import tqdm

    statistics = [s for s in ALL_STATISTICS if s in options.statistics]
    correlation_rows, significance, ranks, needed = [], [], [], []
    samples: dict = {}
    tested = options.tested
    pairs_to_test = sum(len(c) * (len(c) - 1) // 2 for c in configurations.values()) if tested \
        else 0
    bar = tqdm(total=pairs_to_test, desc="align: paired tests", unit="pair", file=sys.stderr,
               disable=not progress or not pairs_to_test, dynamic_ncols=True, leave=False)
    for (slice_name, value), configs in configurations.items():
        configs = [c for c in configs if len(c.items) >= max(MIN_ITEMS, options.min_items)]
        work = _SliceWork(options)
        for config in configs:
            correlation_rows.extend(_correlation_rows(slice_name, value, config, work))
        if not configs or not tested:  # untested: no ranks (the order would read as ranks)
            continue
        ranked = {s: _ranked(configs, {c.key: work.compared(c, s)[0] for c in configs})
                  for s in statistics}
        acc23_order = {c.key: i for i, c in enumerate(ranked.get("acc23", []))}
        tests = {}
        for i, one in enumerate(configs):
            for two in configs[i + 1:]:
                tests[(one.key, two.key)] = _pair_tests(one, two, work, statistics, acc23_order)
                bar.update()
        for statistic in statistics:
            order = ranked[statistic]
            rows = []
            for i, b in enumerate(order):
                for a in order[i + 1:]:
                    found = _find(tests, a.key, b.key, statistic)
                    if found:
                        rows.append({"slice": slice_name, "slice_value": value,
                                     "statistic": statistic, "a": a.key, "b": b.key,
                                     **found[0].row(found[1])})
            pairs = pd.DataFrame(rows, columns=SIGNIFICANCE_COLUMNS)
            if len(pairs):
                pairs["p_holm"] = holm(pairs.p_value.to_numpy(float))
                significance.append(pairs)
            p_better = np.full((len(order), len(order)), np.nan)
            position = {c.key: i for i, c in enumerate(order)}
            for row in pairs.itertuples():
                p_better[position[row.b], position[row.a]] = row.p_value
            cluster = assign_ranks(p_better, options.alpha)
            ranks.extend({"slice": slice_name, "slice_value": value, "statistic": statistic,
                          "key": c.key, "value": ranked_by, "rank": r, "near_all_ties": near}
                         for c, r in zip(order, cluster)
                         for ranked_by, near in [work.compared(c, statistic)])
            needed.extend(_needed_rows(slice_name, value, statistic, order, cluster, tests,
                                       options.alpha, options.power))
            if statistic in BOOTSTRAPPED:
                for c in configs:
                    samples[(slice_name, value, c.key, statistic)] = (
                        work.value(c, statistic, True),
                        work.samples(c, [statistic], True)[statistic], c.items)
    bar.close()
    return SignificanceResult(
        correlations=pd.DataFrame(correlation_rows, columns=CORRELATION_COLUMNS),
        significance=(pd.concat(significance, ignore_index=True) if significance
                      else pd.DataFrame(columns=SIGNIFICANCE_COLUMNS)),
        ranks=pd.DataFrame(ranks, columns=RANK_COLUMNS),
        labels_needed=pd.DataFrame(needed, columns=NEEDED_COLUMNS), samples=samples,
        options=options)


def context_intervals(context: pd.DataFrame, samples: dict, confidence: float = 0.95
                      ) -> pd.DataFrame:
    """context.csv with a paired-bootstrap interval and a two-sided p-value for each delta kappa
    (the context variant against no context, same items, thresholds as for kappa)."""
    out = context.copy()
    low, high, p = [], [], []
    for row in out.itertuples():
        a = samples.get((row.slice, row.slice_value, row.key_baseline, "kappa"))
        b = samples.get((row.slice, row.slice_value, row.key, "kappa"))
        if a is None or b is None or not np.array_equal(a[2], b[2]):
            low.append(math.nan), high.append(math.nan), p.append(math.nan)
            continue
        diff = paired_bootstrap(a[0], b[0], a[1], b[1], confidence)
        low.append(diff.ci_low), high.append(diff.ci_high), p.append(diff.p_two_sided)
    return out.assign(ci_low=low, ci_high=high, p_value=p)
