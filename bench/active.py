"""Benchmark of active labelling (issue 39) on public labels where the truth is known: WMT MQM
TED en-de (github.com/google/wmt-mqm-human-evaluation, 13 systems x 529 segments, every item
labelled; turned into pairs by `bench/mqm_pairs.py`), with simulated judges of a given accuracy.

For each judge accuracy (default 0.6, 0.8, 0.9) and each label budget on a grid, `--reps`
repetitions (default 200) of: a random pilot of `--pilot` labels (default 100), then `budget`
more labels chosen by

  (a) human labels only, uniform: a random sample, the classical mean and its normal interval;
  (b) PPI++, uniform: the same random sample, the judge on everything else (agreement.ppi);
  (c) the active plan: drawn with probability proportional to the human value's standard
      deviation given the judge's, learned from the pilot, the judge recalibrated on the pilot,
      lambda tuned (agreement.active); floored at a quarter of the uniform rate.

The estimand is the mean score (correct 1, partial 0.5, incorrect 0) of the population the items
are drawn from: each repetition draws its N items from the data with replacement, and the truth is
the data's mean. Printed per
judge and method: the coverage of the 95% intervals at every budget (the truth is the mean of
all labels), the mean width, and the labels needed (pilot included) to reach `--target-width`,
interpolated on the grid, with the saving against (a). A simulated judge of accuracy a says the
human label with probability a, else one of the two others at random (`--judge symmetric`), or
(`--judge uneven`) is right on 95% of the correct items and errs on the others as often as the
accuracy needs (errors that depend on what it says: where an active draw can gain).

    python bench/mqm_pairs.py mqm_ted_ende.tsv --lang de --out ende.jsonl
    .venv/bin/python bench/active.py ende.jsonl [--reps 200] [--target-width 0.03]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testing.bench import run  # noqa: E402

LEVELS = np.array([0.0, 0.5, 1.0])


def simulated_judge(human: np.ndarray, accuracy: float, kind: str, rng) -> np.ndarray:
    """A judge's scores for the items whose human scores are `human` (see the module)."""
    other = (human[:, None] != LEVELS[None, :])
    pick = np.array([rng.choice(LEVELS[row]) for row in other])
    if kind == "symmetric":
        return np.where(rng.random(len(human)) < accuracy, human, pick)
    correct = human == 1.0
    right_rate_rest = (accuracy - 0.95 * correct.mean()) / max(1 - correct.mean(), 1e-9)
    right = np.where(correct, rng.random(len(human)) < 0.95,
                     rng.random(len(human)) < np.clip(right_rate_rest, 0, 1))
    return np.where(right, human, pick)


def one_draw(human, judge, truth, budget, pilot_size, rng):
    """(covered, width) of the three methods for one pilot and budget. Each repetition draws its
    population of N items from the data with replacement, so that `truth`, the data's mean, is
    the mean the intervals are about (sampling half of a fixed population would make the
    intervals, which do not count on a finite population, cover more than they claim)."""
    from agreement.active import (
        active_mean,
        calibrated,
        draw,
        error_scale,
        sampling_probabilities,
    )
    from agreement.ppi import ppi_mean

    n = len(human)
    population = rng.integers(0, n, n)
    human, judge = human[population], judge[population]
    order = rng.permutation(n)
    pilot, pool = order[:pilot_size], order[pilot_size:]
    sample = rng.choice(pool, budget, replace=False)
    labelled = np.concatenate([pilot, sample])
    rest = np.setdiff1d(np.arange(n), labelled, assume_unique=True)
    y = human[labelled]
    out = {}
    se = y.std() / np.sqrt(len(y))
    out["a"] = (abs(y.mean() - truth) <= 1.96 * se, 2 * 1.96 * se)
    ppi = ppi_mean(y, judge[labelled], judge[rest])
    out["b"] = (ppi.ci_low[0] <= truth <= ppi.ci_high[0], float(ppi.ci_high[0] - ppi.ci_low[0]))
    scale, _ = error_scale(judge[pilot], human[pilot], judge[pool])
    pi = sampling_probabilities(scale, len(pool), budget, 0.25 * budget / len(pool))
    drawn = draw(pi, int(rng.integers(1 << 31)))
    fitted = calibrated(judge[pilot], human[pilot], judge[pool])
    active = active_mean(human[pilot], fitted, np.where(drawn, human[pool], np.nan), drawn, pi)
    out["c"] = (active.ci_low[0] <= truth <= active.ci_high[0],
                float(active.ci_high[0] - active.ci_low[0]))
    return out


def labels_for(width_of: dict[int, float], target: float, pilot: int) -> float:
    """The labels (pilot + budget) at which the mean width reaches `target`, interpolated
    linearly in 1/sqrt(labels) between grid points; nan beyond the grid."""
    budgets = sorted(width_of)
    for low, high in zip(budgets, budgets[1:]):
        w_low, w_high = width_of[low], width_of[high]
        if w_low >= target >= w_high:
            x_low, x_high = 1 / np.sqrt(low + pilot), 1 / np.sqrt(high + pilot)
            x = x_low + (target - w_low) * (x_high - x_low) / (w_high - w_low)
            return float(1 / x ** 2)
    return float(budgets[0] + pilot) if width_of[budgets[0]] <= target else float("nan")


NAMES = {"a": "(a) labels only, uniform", "b": "(b) PPI++, uniform", "c": "(c) active plan"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench/active.py", description=__doc__.split("\n")[0])
    parser.add_argument("pairs", type=Path, help="bench/mqm_pairs.py's JSONL (every item labelled)")
    parser.add_argument("--accuracies", default="0.6,0.8,0.9")
    parser.add_argument("--judge", choices=["symmetric", "uneven"], default="symmetric")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--pilot", type=int, default=100)
    parser.add_argument("--budgets", default="200,400,800,1200,1600,2400,3200")
    parser.add_argument("--target-width", type=float, default=0.03)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from agreement.quality import label_scores

    rows = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    human = label_scores([r["label"] for r in rows if r.get("label")])
    truth = human.mean()
    budgets = [int(b) for b in args.budgets.split(",")]
    print(f"{len(human):,} labelled items, true mean score {truth:.4f}; {args.reps} repetitions "
          f"per setting, pilot {args.pilot}, judge {args.judge}; target width "
          f"{args.target_width}")
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    for accuracy in (float(a) for a in args.accuracies.split(",")):
        judge = simulated_judge(human, accuracy, args.judge, rng)
        print(f"\njudge accuracy {accuracy} (measured {np.mean(judge == human):.3f})")
        print(f"  {'method':28} " + " ".join(f"{b:>12}" for b in budgets)
              + "   labels for the target width")
        coverage = {key: {} for key in NAMES}
        width = {key: {} for key in NAMES}
        for budget in budgets:
            draws = [one_draw(human, judge, truth, budget, args.pilot, rng)
                     for _ in range(args.reps)]
            for key in NAMES:
                coverage[key][budget] = np.mean([d[key][0] for d in draws])
                width[key][budget] = np.mean([d[key][1] for d in draws])
        found = {}
        for key, name in NAMES.items():
            found[key] = labels_for(width[key], args.target_width, args.pilot)
            change = found[key] / found["a"] - 1
            saving = ("" if key == "a" or np.isnan(change) else
                      f" ({abs(change):.0%} {'fewer' if change < 0 else 'more'} than (a))")
            print(f"  {name:28} " + " ".join(f"{coverage[key][b]:5.1%} {width[key][b]:.3f}"
                                             for b in budgets)
                  + f"   {found[key]:,.0f}{saving}")
    print(f"\n(cells: coverage of the 95% intervals, mean width; {time.perf_counter() - started:.0f}"
          f" s)")
    return 0


if __name__ == "__main__":
    sys.exit(run(main, "bench/active.py"))
