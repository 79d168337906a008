"""Benchmark of the KDE threshold classifier at the study's size.

Synthetic scores for N generations (default 12,500: 5 languages x 5 models x 500 targets) under
C metric configurations (default 48), with human labels drawn 30/25/45 % incorrect/partial/correct
and class-dependent score distributions of varying overlap. Three timings in the same run:

1. `align` end to end over the frames: `align_metrics` for every configuration and slice
   (all + per language + per model = 11 fits each), with confusion matrices and predictions.
2. The same fits with the vectorised classifier only (`fit_and_evaluate`, slice "all").
3. Baseline A for (2): scipy `gaussian_kde` per class evaluated on the whole grid (one call per
   class), winner per grid point, crossings, reclassification, kappa; all configurations.
4. Baseline B, the naive one: the same but each class density evaluated point by point on the
   grid in a Python loop; on `--naive-configs` configurations (default 2), per configuration.

    .venv/bin/python bench/align.py [--generations 12500] [--configs 48] [--naive-configs 2]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agreement.statistics import weighted_kappa  # noqa: E402
from align.analysis import align_metrics  # noqa: E402
from align.evaluation import fit_and_evaluate  # noqa: E402
from align.kde import DEFAULT_GRID_SIZE  # noqa: E402
from taxonomy import ACCURACY_LABELS  # noqa: E402

LANGUAGES = ("en", "zh", "nl", "el", "pl")
MODELS = ("m1", "m2", "m3", "m4", "m5")


def synthetic(n: int, configs: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    labels = rng.choice(ACCURACY_LABELS, size=n, p=[0.30, 0.25, 0.45])
    rank = np.array([ACCURACY_LABELS.index(x) for x in labels])
    generation_id = np.arange(1, n + 1)
    language = np.array(LANGUAGES)[generation_id % len(LANGUAGES)]
    model = np.array(MODELS)[(generation_id // len(LANGUAGES)) % len(MODELS)]
    frames = []
    for c in range(configs):
        separation = 0.05 + 0.25 * (c % 8) / 7  # from hopeless to well separated
        if c % 6 == 5:  # some lexical-like metrics: most scores exactly 0
            score = np.where(rng.random(n) < 0.6, 0.0, rng.beta(1 + rank, 4, n))
        else:
            score = rng.normal(0.5 + separation * (rank - 1), 0.12, n)
        frames.append(pd.DataFrame({
            "key": f"metric{c:02d}", "metric": f"metric{c:02d}", "scorer": "", "layer": None,
            "context": "none", "noise": "none", "generation_id": generation_id,
            "target_id": generation_id, "score": score, "model": model, "language": language}))
    scores = pd.concat(frames, ignore_index=True)
    return scores, pd.DataFrame({"generation_id": generation_id, "label": labels})


def naive_fit_and_kappa(scores: np.ndarray, human: np.ndarray, grid_size: int,
                        pointwise: bool = True) -> float:
    """The straightforward version: one scipy KDE per class, evaluated one grid point at a time
    (`pointwise`) or on the whole grid in one call per class."""
    from scipy.stats import gaussian_kde

    labels = list(ACCURACY_LABELS)
    pad = 4 * scores.std() * len(scores) ** (-1 / 5)
    grid = np.linspace(scores.min() - pad, scores.max() + pad, grid_size)
    densities = []
    for label in labels:
        members = scores[human == label]
        if len(members) < 2 or members.std() == 0:  # scipy cannot fit these: a narrow spike
            members = members + np.random.default_rng(0).normal(0, 1e-3, len(members))
            members = np.concatenate([members, members + 1e-3])
        kde = gaussian_kde(members)
        densities.append([kde(g)[0] for g in grid] if pointwise else kde(grid))
    winner = np.argmax(np.array(densities), axis=0)
    cuts = [(grid[i] + grid[i + 1]) / 2 for i in range(grid_size - 1) if winner[i] != winner[i + 1]]
    owners = [winner[0]] + [winner[i + 1] for i in range(grid_size - 1) if winner[i] != winner[i + 1]]
    predicted = [labels[owners[np.searchsorted(cuts, s, side="right")]] for s in scores]
    return weighted_kappa(list(human), predicted)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generations", type=int, default=12_500)
    parser.add_argument("--configs", type=int, default=48)
    parser.add_argument("--naive-configs", type=int, default=2,
                        help="configurations the pointwise baseline B runs on (default 2: it "
                             "takes tens of seconds each)")
    parser.add_argument("--grid-size", type=int, default=DEFAULT_GRID_SIZE)
    args = parser.parse_args(argv)
    scores, labels = synthetic(args.generations, args.configs)
    print(f"{args.generations} generations x {args.configs} configurations "
          f"({len(scores):,} scores), grid {args.grid_size}")

    t = time.perf_counter()
    result = align_metrics(scores, labels, ["all", "language", "model"], keep_fits=False,
                           grid_size=args.grid_size)
    full = time.perf_counter() - t
    print(f"align_metrics, slices all+language+model ({len(result.kappa)} fits, confusion, "
          f"predictions): {full:.2f} s")

    label_of = labels.set_index("generation_id").label
    per_config = [(rows.score.to_numpy(), rows.generation_id.map(label_of).to_numpy())
                  for _, rows in scores.groupby("key", sort=True)]
    t = time.perf_counter()
    fast = [fit_and_evaluate(x, y, grid_size=args.grid_size)[1].kappa for x, y in per_config]
    fast_s = time.perf_counter() - t
    print(f"vectorised fit+classify+kappa, slice all: {fast_s:.3f} s "
          f"({fast_s / len(per_config) * 1000:.1f} ms per configuration)")

    per_fast = fast_s / len(per_config)
    t = time.perf_counter()
    grid_kappas = [naive_fit_and_kappa(x, y, args.grid_size, pointwise=False)
                   for x, y in per_config]
    grid_s = time.perf_counter() - t
    print(f"baseline A, scipy gaussian_kde per class on the whole grid, {len(per_config)} "
          f"configurations: {grid_s:.2f} s ({grid_s / len(per_config) * 1000:.0f} ms per "
          f"configuration; vectorised is {grid_s / fast_s:.0f}x faster)")
    naive_n = min(args.naive_configs, len(per_config))
    t = time.perf_counter()
    for x, y in per_config[:naive_n]:
        naive_fit_and_kappa(x, y, args.grid_size)
    naive_s = time.perf_counter() - t
    per_naive = naive_s / naive_n
    print(f"baseline B, scipy gaussian_kde per class evaluated pointwise, {naive_n} "
          f"configurations: {naive_s:.2f} s ({per_naive * 1000:.0f} ms per configuration; "
          f"vectorised is {per_naive / per_fast:.0f}x faster per configuration)")
    gap = np.nanmax(np.abs(np.array(fast) - np.array(grid_kappas)))
    print(f"largest kappa difference vectorised vs baseline A over all configurations: {gap:.4f}")
    return 0


if __name__ == "__main__":
    from testing.bench import run

    sys.exit(run(main, "bench/align.py", needs=('scipy',)))
