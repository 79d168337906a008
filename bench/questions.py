"""Benchmark of align's answers to the study's questions at the study's size: 5 languages x 5
models x 500 targets = 12,500 generations, J judge runs (default 10) that judged every one, M
metric configurations (default 3) that scored every one, a labelled share (default 20%) with an
expert's label and up to three annotators' (the alternative annotator test's input).

Timed in the same run, on the same synthetic frames:

1. the three tables as align makes them (`align.questions.answer_questions`): quality.csv and
   quality_tests.csv (R permutations per pair), estimates.csv and estimate_tests.csv (PPI++ per
   judge, cross-PPI per metric with thresholds refitted on 10 folds per language), replace.csv;
2. the named baselines: ppi-python's `ppi_mean_pointestimate` + `ppi_mean_ci`, one call per
   judge, slice and estimand (what align computes for the judges' rows of estimates.csv), and
   the alternative annotator test item by item (`testing.alt_test_reference`, the paper's
   procedure with scipy) per judge and slice; their numbers are checked equal to align's.

    .venv/bin/python bench/questions.py [--judges 10] [--metrics 3] [--labelled 0.2]
                                        [--resamples 1000]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testing.bench import run  # noqa: E402

LANGUAGES = ("en", "zh", "nl", "el", "pl")
MODELS = ("codegemma", "codellama", "codeqwen", "granite", "starcoder2")
LABELS = ("incorrect", "partial", "correct")


def synthetic(judges: int, metrics: int, labelled: float, seed: int = 0):
    """(generations, labels, annotations, verdicts, scores) frames as align holds them."""
    rng = np.random.default_rng(seed)
    rows = [(lang, model, t) for lang in LANGUAGES for t in range(500) for model in MODELS]
    generations = pd.DataFrame(rows, columns=["language", "model", "target"])
    generations["generation_id"] = np.arange(len(generations))
    generations["target_id"] = generations.language.map(
        {lang: i for i, lang in enumerate(LANGUAGES)}) * 1000 + generations.target
    skill = generations.model.map({m: i for i, m in enumerate(MODELS)}).to_numpy()
    truth = np.clip(np.round(rng.normal(0.6 + 0.2 * skill, 0.9)), 0, 2).astype(int)
    chosen = rng.random(len(generations)) < labelled
    labels = pd.DataFrame({"generation_id": generations.generation_id[chosen],
                           "label": np.array(LABELS)[truth[chosen]],
                           "codes": [frozenset()] * int(chosen.sum())})
    annotation_rows = []
    for g in np.flatnonzero(chosen):
        for name in ("expert", "ann", "bob", "cyd"):
            if name == "expert" or rng.random() < 0.6:
                said = truth[g] if rng.random() < 0.85 else rng.integers(3)
                annotation_rows.append((g, name, LABELS[said]))
    annotations = pd.DataFrame(annotation_rows, columns=["generation_id", "annotator", "accuracy"])
    verdict_parts = []
    for j in range(judges):
        accuracy = 0.55 + 0.4 * j / max(judges - 1, 1)
        said = np.where(rng.random(len(truth)) < accuracy, truth, rng.integers(0, 3, len(truth)))
        status = np.where(rng.random(len(truth)) < 0.03, "parse_error", "ok")
        verdict_parts.append(pd.DataFrame({
            "key": f"judge{j:02d}[standard,en,v1]", "generation_id": generations.generation_id,
            "status": status, "accuracy": np.where(status == "ok", np.array(LABELS)[said], None),
            "model": generations.model, "language": generations.language}))
    verdicts = pd.concat(verdict_parts, ignore_index=True)
    scores = pd.concat([pd.DataFrame({
        "key": f"metric{m}", "generation_id": generations.generation_id,
        "score": truth * (0.2 + 0.2 * m) + rng.normal(0, 0.5, len(truth)), "noise": "none",
        "target_id": generations.target_id, "model": generations.model,
        "language": generations.language}) for m in range(metrics)], ignore_index=True)
    return generations, labels, annotations, verdicts, scores


def _fit(key, x, codes):
    from align.kde import fit_kde_thresholds

    return fit_kde_thresholds(x, codes, (0, 1, 2)).thresholds


def _ppi_baseline(answers, generations, labels, verdicts) -> tuple[float, float]:
    """ppi-python per judge x slice x estimand on the rows align wrote; (seconds, max |diff|)."""
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    from agreement.quality import ESTIMANDS, estimand_values
    from align.quality import quality_slices

    code = dict(zip(labels.generation_id, [LABELS.index(v) for v in labels.label]))
    frame = generations.assign(human=[code.get(g, -1) for g in generations.generation_id])
    ours = answers.estimates.set_index(["predictor", "slice", "slice_value", "estimand"])
    worst, started = 0.0, time.perf_counter()
    for key, rows in verdicts[verdicts.status == "ok"].groupby("key"):
        judged = frame.merge(rows[["generation_id", "accuracy"]], on="generation_id")
        judged["code"] = [LABELS.index(v) for v in judged.accuracy]
        for slice_name, value, part in quality_slices(judged):
            labelled = part.human.to_numpy() >= 0
            y = estimand_values(part.human.to_numpy()[labelled])
            yhat = estimand_values(part.code.to_numpy()[labelled])
            unlabeled = estimand_values(part.code.to_numpy()[~labelled])
            for i, estimand in enumerate(ESTIMANDS):
                estimate = ppi_mean_pointestimate(y[:, i], yhat[:, i], unlabeled[:, i])
                low, high = ppi_mean_ci(y[:, i], yhat[:, i], unlabeled[:, i], alpha=0.05)
                row = ours.loc[(key, slice_name, value, estimand)]
                worst = max(worst, abs(float(np.ravel(estimate)[0]) - row.estimate),
                            abs(float(low[0]) - row.ci_low), abs(float(high[0]) - row.ci_high))
    return time.perf_counter() - started, worst


def _alt_baseline(answers, generations, annotations, verdicts) -> tuple[float, float]:
    """The paper's procedure item by item per judge x slice; (seconds, max |diff|)."""
    from testing.alt_test_reference import reference_alt_test

    language_of = dict(zip(generations.generation_id, generations.language))
    ours = answers.replace.set_index(["judge", "slice", "slice_value"])
    worst, started = 0.0, time.perf_counter()
    for key, rows in verdicts[verdicts.status == "ok"].groupby("key"):
        judge_all = dict(zip(rows.generation_id, [LABELS.index(v) for v in rows.accuracy]))
        for slice_name, value in [("all", "all")] + [("language", v) for v in LANGUAGES]:
            keep = [g for g in annotations.generation_id.unique()
                    if value == "all" or language_of[g] == value]
            part = annotations[annotations.generation_id.isin(keep)]
            humans = {name: dict(zip(r.generation_id, [LABELS.index(v) for v in r.accuracy]))
                      for name, r in part.groupby("annotator")}
            result = reference_alt_test(humans, judge_all, "accuracy", 0.2)
            row = ours.loc[(key, slice_name, value)]
            if result is not None:
                worst = max(worst, abs(result[0] - row.winning_rate),
                            abs(result[1] - row.advantage_probability))
    return time.perf_counter() - started, worst


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench/questions.py", description=__doc__.split("\n")[0])
    parser.add_argument("--judges", type=int, default=10)
    parser.add_argument("--metrics", type=int, default=3)
    parser.add_argument("--labelled", type=float, default=0.2)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args(argv)
    from agreement.replace import replace_tables
    from align.estimates import (
        difference_rows,
        estimate_rows,
        judge_predictions,
        metric_predictions,
        slice_totals,
    )
    from align.quality import code_shares, quality_frame, quality_table, quality_tests
    from align.questions import answer_questions

    generations, labels, annotations, verdicts, scores = synthetic(args.judges, args.metrics,
                                                                   args.labelled)
    print(f"{len(generations):,} generations, {len(labels):,} labelled, {args.judges} judge "
          f"runs, {args.metrics} metric configurations, {len(annotations):,} annotations")
    started = time.perf_counter()
    answers = answer_questions(labels, annotations, generations, verdicts, scores, _fit,
                               policy="auto", resamples=args.resamples, seed=0,
                               alt_scoring="accuracy", alt_epsilon=0.2)
    total = time.perf_counter() - started
    # the parts again, one by one
    clock = time.perf_counter()
    labelled = quality_frame(labels, generations)
    quality_table(labelled, "auto"), quality_tests(labelled, args.resamples)
    code_shares(labelled, "auto")
    quality_seconds = time.perf_counter() - clock
    code = dict(zip(labels.generation_id, [LABELS.index(v) for v in labels.label]))
    frame = generations.assign(human=[code.get(g, -1) for g in generations.generation_id])
    clock = time.perf_counter()
    judges = judge_predictions(verdicts, frame[["generation_id", "target_id", "model",
                                                "language", "human"]])
    totals = slice_totals(frame)
    for prediction in judges:
        estimate_rows(prediction, totals), difference_rows(prediction)
    judge_seconds = time.perf_counter() - clock
    clock = time.perf_counter()
    for prediction in metric_predictions(scores, frame[["generation_id", "target_id", "model",
                                                        "language", "human"]], _fit):
        estimate_rows(prediction, totals)
    metric_seconds = time.perf_counter() - clock
    clock = time.perf_counter()
    replace_tables(annotations, verdicts, dict(zip(generations.generation_id,
                                                   generations.language)))
    replace_seconds = time.perf_counter() - clock
    ppi_seconds, ppi_diff = _ppi_baseline(answers, generations, labels, verdicts)
    alt_seconds, alt_diff = _alt_baseline(answers, generations, annotations, verdicts)
    print(f"all tables (answer_questions)            {total:7.2f} s")
    print(f"  quality, quality_tests, code_shares    {quality_seconds:7.2f} s "
          f"({len(answers.quality_tests)} pairs x {args.resamples} permutations)")
    print(f"  estimates (judges) + estimate_tests    {judge_seconds:7.2f} s  vs ppi-python per "
          f"call {ppi_seconds:7.2f} s (estimates.csv only): {ppi_seconds / judge_seconds:5.1f}x;"
          f" max |diff| {ppi_diff:.1e}")
    print(f"  estimates (metrics, cross-fitted)      {metric_seconds:7.2f} s")
    print(f"  replace.csv + replace_annotators.csv   {replace_seconds:7.2f} s  vs item by item "
          f"{alt_seconds:7.2f} s: {alt_seconds / replace_seconds:5.1f}x; max |diff| "
          f"{alt_diff:.1e}")
    print("(the parts timed again one by one, after the first call has loaded what it imports)")
    return 0


if __name__ == "__main__":
    sys.exit(run(main, "bench/questions.py", needs=("scipy", "ppi_py")))
