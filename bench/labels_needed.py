"""Does "labels needed" keep its word? Subsets of a large labelled set predict how many labels
would show each lead; the full set says whether the lead shows there.

On a database with many labelled and scored items (the WMT MQM pairs of bench/README.md "MQM"),
`align`'s kappa comparison runs on S random subsets of K items and once on every item. Each
labels-needed line of a subset (the best configuration against a runner-up in its cluster) that
promises a lead at N_full labels or fewer is checked on the full set: is the same lead
significant there (one-sided p < alpha, the same paired bootstrap)? Two rules side by side, in
the same run: the count from the difference seen (align before issue 40) and align's count
from the resamples with the lead's uncertainty (bench/README.md "Labels needed").

    .venv/bin/python bench/labels_needed.py --db sqlite:///mqm.db [--subsets 5] [--items 300]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agreement.significance import labels_needed  # noqa: E402
from align import data  # noqa: E402
from align.pipeline import AlignOptions, align_frames  # noqa: E402
from testing.bench import run  # noqa: E402


def needed_and_tests(scores: pd.DataFrame, labels: pd.DataFrame, options: AlignOptions):
    report = align_frames(scores, labels, options)
    result = report.significance
    kappa = result.significance[result.significance.statistic == "kappa"]
    return result.labels_needed[result.labels_needed.statistic == "kappa"], kappa


def p_full(tests: pd.DataFrame, best: str, runner_up: str) -> float:
    """One-sided p on the full set that `best` beats `runner_up` (either row order)."""
    row = tests[(tests.b == best) & (tests.a == runner_up)]
    if len(row):
        return float(row.p_value.iloc[0])
    row = tests[(tests.a == best) & (tests.b == runner_up)]
    return float(1 - row.p_value.iloc[0]) if len(row) else float("nan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench/labels_needed.py")
    parser.add_argument("--db", required=True)
    parser.add_argument("--subsets", type=int, default=5)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    scores = data.load_scores(args.db)
    scores = scores[scores.noise == "none"]
    labels = data.load_human_labels(args.db)
    options = AlignOptions(bootstrap=args.resamples, seed=args.seed, slices=("all",),
                           significance=("kappa",))
    started = time.perf_counter()
    _, full = needed_and_tests(scores, labels, options)
    items = np.sort(scores.generation_id.dropna().unique())
    n_full = len(items)
    print(f"full set: {n_full:,} items, {scores.key.nunique()} configurations, "
          f"{args.resamples} resamples ({time.perf_counter() - started:.1f} s)")
    rng = np.random.default_rng(args.seed)
    lines = []
    for subset in range(args.subsets):
        chosen = rng.choice(items, args.items, replace=False)
        needed, _ = needed_and_tests(scores[scores.generation_id.isin(chosen)],
                                     labels[labels.generation_id.isin(chosen)], options)
        for r in needed.itertuples():
            lines.append({"subset": subset, "best": r.best, "runner_up": r.runner_up,
                          "delta": r.delta, "resampled": r.resampled_lead, "p": r.p_value,
                          "seen": labels_needed(r.n, r.delta, r.se, options.alpha),
                          "needed": r.labels_needed, "ever": r.shown_ever,
                          "p_full": p_full(full, r.best, r.runner_up)})
    table = pd.DataFrame(lines)
    alpha = options.alpha
    pd.set_option("display.width", 250)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"{len(table)} labels-needed lines on {args.subsets} subsets of {args.items} items")
    for name, column in (("from the difference seen (the rule before)", "seen"),
                         ("from the resamples, with the lead's uncertainty (align)", "needed")):
        promised = table[table[column] <= n_full]
        held = int((promised.p_full < alpha).sum())
        print(f"{name}: {len(promised)} promise the lead at {n_full:,} labels or fewer; on the "
              f"full set {held} of them are significant (p < {alpha}), {len(promised) - held} "
              f"not")
    return 0


if __name__ == "__main__":
    sys.exit(run(main, "bench/labels_needed.py"))
