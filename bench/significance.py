"""Benchmark of align's paired comparisons at a researcher's size: N items x C configurations
x R resamples (default 1,500 x 10 x 1,000), one slice.

Synthetic: human labels drawn 30/25/45 % incorrect/partial/correct, C metric-like score vectors
of graded quality (some rounded, so with ties). Timed in the same run:

1. `align.comparisons.compare` for kappa (paired bootstrap, KDE thresholds refitted in every
   resample), Pearson, Spearman and Kendall tau-b (PERM-BOTH for every pair, plus the paired
   bootstrap intervals): the vectorised path align runs.
2. The per-resample loop it replaces, as mt-metrics-eval's PermutationSigDiff runs it: one
   scipy correlation per permutation and configuration, one `fit_kde_thresholds` per bootstrap
   resample and configuration; on `--baseline-pairs` pairs (default 2) and extrapolated to all
   C(C-1)/2 pairs.
3. acc23 (tie threshold re-optimised in every permutation), as align runs it (pairs sampled
   beyond 20,000, early stop), on `--acc23-pairs` pairs.
4. With `--mt-metrics-eval PATH` (a checkout of that repository), the first pair through its own
   PermutationSigDiff beside align's: deltas, p-values and seconds.

`--report DIR` takes real per-item scores from an align report (predictions.csv) instead.

    .venv/bin/python bench/significance.py [--items 1500] [--configs 10] [--resamples 1000]
                                           [--mt-metrics-eval ../mt-metrics-eval]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agreement.correlation import acc23, item_pairs  # noqa: E402
from agreement.significance import perm_both  # noqa: E402
from align.comparisons import (  # noqa: E402
    ACC23_CHECK_EVERY,
    ACC23_EARLY_STOP,
    ACC23_PERMUTATION_PAIRS,
    Configuration,
    SignificanceOptions,
    compare,
)
from align.kde import fit_kde_thresholds  # noqa: E402


def synthetic(items: int, configs: int, seed: int = 0) -> list[Configuration]:
    rng = np.random.default_rng(seed)
    human = rng.choice(3, size=items, p=[0.30, 0.25, 0.45])
    out = []
    for c in range(configs):
        quality = 0.2 + 0.6 * c / max(configs - 1, 1)
        scores = quality * human + rng.normal(0, 1, items)
        if c % 3 == 2:
            scores = np.round(scores, 1)  # ties, as rounded metric scores have
        out.append(Configuration(f"metric{c:02d}", "metric", np.arange(items), scores, human))
    return out


def from_report(folder: str) -> list[Configuration]:
    """The configurations of an align report's predictions.csv (slice all), on the items every
    one of them scored: real per-item scores instead of synthetic ones."""
    import pandas as pd

    predictions = pd.read_csv(Path(folder) / "predictions.csv")
    predictions = predictions[(predictions.slice == "all") & predictions.human.notna()]
    wide = predictions.pivot(index="generation_id", columns="key", values="score").dropna()
    level = {"incorrect": 0, "partial": 1, "correct": 2}
    human = (predictions.drop_duplicates("generation_id").set_index("generation_id").human
             .map(level).reindex(wide.index).to_numpy(np.int64))
    return [Configuration(str(key), "metric", wide.index.to_numpy(), wide[key].to_numpy(float),
                          human) for key in wide.columns]


def loop_baseline(configs: list[Configuration], pairs: int, resamples: int, seed: int
                  ) -> tuple[float, float]:
    """Seconds the per-resample way takes (per pair: PERM-BOTH with one scipy call per
    permutation and side for Pearson, Spearman and Kendall; per configuration: the bootstrap
    with one KDE fit per resample for kappa and one scipy call per resample for the three
    intervals), measured on `pairs` pairs and their configurations."""
    import scipy.stats

    from agreement.statistics import kappa_from_counts

    rng = np.random.default_rng(seed)
    human = configs[0].human
    functions = (scipy.stats.pearsonr, scipy.stats.spearmanr, scipy.stats.kendalltau)
    started = time.perf_counter()
    for a, b in list(zip(configs, configs[1:]))[:pairs]:
        za, zb = scipy.stats.zscore(a.x), scipy.stats.zscore(b.x)
        for function in functions:
            for _ in range(resamples):
                swap = rng.random(len(za)) < 0.5
                function(np.where(swap, za, zb), human)
                function(np.where(swap, zb, za), human)
    per_pair = (time.perf_counter() - started) / pairs
    started = time.perf_counter()
    for config in configs[:2]:
        for _ in range(resamples):
            rows = rng.integers(0, len(human), len(human))
            x, h = config.x[rows], human[rows]
            predicted = fit_kde_thresholds(x, h, (0, 1, 2)).thresholds.classify_codes(x)
            kappa_from_counts(np.bincount(h * 3 + predicted, minlength=9).reshape(3, 3))
            for function in functions:
                function(x, h)
    per_config = (time.perf_counter() - started) / 2
    return per_pair, per_config


def mt_metrics_eval_side_by_side(path: str, a: Configuration, b: Configuration,
                                 permutations: int, seed: int) -> None:
    """The first pair through mt-metrics-eval's own PermutationSigDiff (a checkout at `path`,
    github.com/google-research/mt-metrics-eval; not a dependency of this project), beside
    align's PERM-BOTH: correlations, deltas and p-values, and the seconds each takes."""
    sys.path.insert(0, path)
    import scipy.stats
    from mt_metrics_eval import stats as mtme  # noqa: PLC0415

    from agreement.correlation import correlation

    gold = [float(v) for v in a.human]
    first, second = mtme.Correlation(1, gold, list(a.x)), mtme.Correlation(1, gold, list(b.x))
    params = mtme.PermutationSigDiffParams(block_size=10 ** 9)  # no early stop: same count
    cases = [("pearson", scipy.stats.pearsonr, {}), ("kendall", mtme.KendallVariants, {}),
             ("acc23", mtme.KendallWithTiesOpt, {"sample_rate": 1.0})]
    for name, function, options in cases:
        count = permutations if name == "acc23" else max(permutations, 1000)
        np.random.seed(seed)
        started = time.perf_counter()
        p_theirs, delta_theirs, _, _ = mtme.PermutationSigDiff(first, second, function, k=count,
                                                               params=params, **options)
        theirs = time.perf_counter() - started
        started = time.perf_counter()
        if name == "acc23":
            every = item_pairs(len(gold), 10 ** 12)
            ours = perm_both(a.x, b.x, lambda x, e=every: acc23(x, a.human, pairs=e).value, count,
                             seed)
        else:
            ours = perm_both(a.x, b.x, lambda x, s=name: correlation(s, x, a.human), count, seed)
        mine = time.perf_counter() - started
        print(f"  {name:8s} delta mt-metrics-eval {delta_theirs:+.6f} align {ours.delta:+.6f}; "
              f"p {p_theirs:.3f} vs {ours.p_value:.3f} ({count} permutations each); "
              f"{theirs:.1f} s vs {mine:.2f} s ({theirs / mine:.0f}x)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1500)
    parser.add_argument("--configs", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--baseline-pairs", type=int, default=2)
    parser.add_argument("--acc23-pairs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report", metavar="DIR",
                        help="take the configurations' per-item scores from an align report "
                             "(its predictions.csv, slice all) instead of synthetic ones")
    parser.add_argument("--mt-metrics-eval", metavar="PATH",
                        help="a checkout of github.com/google-research/mt-metrics-eval: run the "
                             "first pair through its PermutationSigDiff too, side by side")
    parser.add_argument("--mtme-permutations", type=int, default=20,
                        help="permutations for its acc23 (pure Python, seconds each; default 20)")
    args = parser.parse_args(argv)
    if args.configs < 2 or args.items < 10:
        parser.error("need at least 2 configurations and 10 items")
    configs = (from_report(args.report) if args.report
               else synthetic(args.items, args.configs, args.seed))
    args.items, args.configs = len(configs[0].items), len(configs)
    n_pairs = args.configs * (args.configs - 1) // 2
    source = f"scores of {args.report}" if args.report else "synthetic scores"
    print(f"{args.items:,} items x {args.configs} configurations ({n_pairs} pairs) x "
          f"{args.resamples:,} resamples, one slice ({source})")

    started = time.perf_counter()
    result = compare({("all", "all"): configs}, SignificanceOptions(
        resamples=args.resamples, seed=args.seed,
        statistics=("kappa", "pearson", "spearman", "kendall")))
    vectorised = time.perf_counter() - started
    assert len(result.significance) == 4 * n_pairs
    print(f"align (vectorised), kappa + Pearson + Spearman + Kendall: {vectorised:8.1f} s")

    pairs = min(args.baseline_pairs, n_pairs)
    per_pair, per_config = loop_baseline(configs, pairs, args.resamples, args.seed)
    extrapolated = per_pair * n_pairs + per_config * args.configs
    print(f"per-resample loop: {per_pair:.1f} s per pair (permutations) + {per_config:.1f} s "
          f"per configuration (bootstrap), measured on {pairs} pair(s) and 2 configurations; "
          f"{extrapolated:.1f} s for all")
    print(f"ratio (loop / vectorised): {extrapolated / vectorised:.1f}x")

    human = configs[0].human
    acc_pairs = list(zip(configs, configs[1:]))[:args.acc23_pairs]
    sample = item_pairs(args.items, ACC23_PERMUTATION_PAIRS, args.seed)
    started = time.perf_counter()
    used = []
    for a, b in acc_pairs:
        outcome = perm_both(a.x, b.x, lambda x: acc23(x, human, pairs=sample).value,
                            args.resamples, args.seed, ACC23_EARLY_STOP, ACC23_CHECK_EVERY)
        used.append(outcome.resamples)
    acc_seconds = (time.perf_counter() - started) / len(acc_pairs)
    how = "all" if sample[2] else f"{len(sample[0]):,} random"
    print(f"acc23 as align runs it ({how} item pairs, early stop): {acc_seconds:.1f} s per "
          f"pair, permutations used {used}; about {acc_seconds * n_pairs:.0f} s for {n_pairs} "
          f"pairs")
    if args.mt_metrics_eval:
        print(f"the first pair through mt-metrics-eval's own code ({args.mt_metrics_eval}):")
        mt_metrics_eval_side_by_side(args.mt_metrics_eval, *acc_pairs[0],
                                     args.mtme_permutations, args.seed)
    return 0


if __name__ == "__main__":
    from testing.bench import run

    sys.exit(run(main, "bench/significance.py", needs=("scipy",)))
