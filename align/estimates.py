"""Judge-assisted estimates of model quality: estimates.csv and estimate_tests.csv.

Prediction-powered inference (`agreement.ppi`) turns the verdicts a judge gave on generations
nobody labelled into narrower intervals for the quality estimands, valid however wrong the judge
is. Per predictor and slice (all, language, model, language x model), where the predictor
reaches generations without a human label:

- a judge run or jury: Y = the human values of the generations with a human label and an `ok`
  verdict, Yhat = the judge's values on them, Yhat_unlabeled = its values on the generations
  with an ok verdict and no human label: PPI++ (`ppi_mean`). Generations without an ok verdict
  are left out and counted in `method`.
- a metric configuration: cross-PPI (`crossppi_mean`). Its KDE thresholds are refitted per
  language on `FOLDS` folds of whole targets, so that no labelled generation is classified by
  thresholds fitted on its own label; every unlabelled one is classified by each fold's
  thresholds.

Estimands: share_correct, share_partial, share_incorrect and mean_score (correct 1, partial
0.5, incorrect 0). estimate_tests.csv: within all items and each language, the difference in
mean score between two generating models (b - a, the better estimate second) assisted by a judge:
PPI++ on the per-target differences, over the targets both models' generations have ok verdicts
for (labelled where both have a human label).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from agreement.ppi import MeanEstimate, crossppi_mean, ppi_mean, two_sided_p
from agreement.quality import ESTIMANDS, estimand_values
from agreement.significance import holm
from align.quality import QUALITY_SLICES, pairing_slices, quality_slices
from taxonomy import ACCURACY_LABELS

ESTIMATE_COLUMNS = ["slice", "slice_value", "predictor", "estimand", "n_labelled",
                    "n_unlabelled", "estimate", "ci_low", "ci_high", "classical_estimate",
                    "classical_low", "classical_high", "lambda", "effective_labels", "method"]
ESTIMATE_TEST_COLUMNS = ["slice", "slice_value", "comparison", "a", "b", "predictor", "estimand",
                         "n_labelled", "n_unlabelled", "estimate", "ci_low", "ci_high",
                         "p_value", "p_holm", "classical_estimate", "classical_low",
                         "classical_high", "lambda", "effective_labels", "method"]
FOLDS = 10
MIN_CROSS_FIT = 10  # labelled generations a language needs before a metric is cross-fitted there
CONFIDENCE = 0.95


@dataclass
class Predictions:
    """What one predictor says of the generations it reaches: `frame` (generation_id,
    target_id, model, language, code: its label code, human: the human code or -1), positions
    0..n-1; for a cross-fitted metric `by_fold` (n, K): each fold's thresholds' code for the
    unlabelled rows (the labelled rows' `code` comes from the fold that left them out)."""
    predictor: str
    kind: str  # "judge" | "metric"
    frame: pd.DataFrame
    by_fold: np.ndarray | None = None
    note: str = ""  # how the predictions were made, for `method`


def judge_predictions(verdicts: pd.DataFrame, generations: pd.DataFrame) -> list[Predictions]:
    """One `Predictions` per judge run or jury (its key): its ok verdicts' labels, one per
    generation (`generations`: generation_id, target_id, model, language, human)."""
    from agreement.judges import usable_verdicts
    from agreement.statistics import encode_labels

    usable = usable_verdicts(verdicts)
    out = []
    for key, rows in usable.groupby("key", sort=True):
        rows = rows.drop_duplicates("generation_id")
        frame = generations.merge(rows[["generation_id", "accuracy"]], on="generation_id")
        frame["code"] = encode_labels(frame.accuracy.to_numpy(), ACCURACY_LABELS)
        out.append(Predictions(str(key), "judge", frame.drop(columns="accuracy")))
    return out


def metric_predictions(scores: pd.DataFrame, generations: pd.DataFrame, fit, seed: int = 0
                       ) -> list[Predictions]:
    """One `Predictions` per metric configuration, cross-fitted (see the module): `scores` the
    real rows (key, generation_id, score); `fit(key, x, codes)` returns the configuration's
    thresholds fitted on those scores and label codes as align fits them (weighting, bandwidth,
    --monotone)."""
    out = []
    real = scores[scores.noise == "none"][["key", "generation_id", "score"]]
    for key, rows in real.groupby("key", sort=True):
        frame = generations.merge(rows.drop_duplicates("generation_id")[["generation_id",
                                                                         "score"]],
                                  on="generation_id").reset_index(drop=True)
        scores_of = frame.score.to_numpy(float)
        code = np.full(len(frame), -1)
        by_fold = np.full((len(frame), FOLDS), -1)
        for _, part in frame.groupby("language", sort=True):
            labelled = part[part.human >= 0]
            targets = labelled.target_id.unique()
            if len(labelled) < MIN_CROSS_FIT or len(targets) < 2:
                continue
            folds = min(FOLDS, len(targets))
            fold_of = dict(zip(np.random.default_rng(seed).permutation(targets),
                               np.arange(len(targets)) % folds))
            fold = labelled.target_id.map(fold_of).to_numpy()
            unlabelled = part.index[part.human < 0]
            for k in range(folds):
                train = labelled[fold != k]
                try:
                    thresholds = fit(key, train.score.to_numpy(float), train.human.to_numpy())
                except ValueError:
                    continue
                held_out = labelled.index[fold == k]
                code[held_out] = thresholds.classify_codes(scores_of[held_out])
                # fewer folds than FOLDS: the columns repeat, which leaves their mean unchanged
                by_fold[unlabelled, k::folds] = thresholds.classify_codes(
                    scores_of[unlabelled])[:, None]
        keep = (code >= 0) | ((frame.human.to_numpy() < 0) & (by_fold >= 0).all(axis=1))
        frame = frame.assign(code=code)[keep].drop(columns="score").reset_index(drop=True)
        out.append(Predictions(str(key), "metric", frame, by_fold[keep],
                               note=f"thresholds refitted per language on {FOLDS} folds of whole "
                                    f"targets, each labelled generation classified by its "
                                    f"fold's, the unlabelled by every fold's"))
    return out


def _why_none(human: np.ndarray) -> str:
    if human.size == 0:
        return "no generation here has both a human label and a prediction"
    if human.size < 2:
        return "fewer than 2 generations with both a human label and a prediction"
    if np.all(human == human[0]):
        return "every human label here is the same (one class): no interval"
    return ""


def _numbers(result: MeanEstimate, i: int, bounds: tuple[float, float] = (0.0, 1.0)) -> dict:
    """One estimand's numbers, estimates and intervals clipped to its range (`bounds`: a share
    or mean score lies in [0, 1], a difference of two in [-1, 1]; normal intervals can leave
    it, the estimand cannot)."""
    def clip(values) -> float:
        return float(np.clip(values[i], *bounds))
    return {"estimate": clip(result.estimate), "ci_low": clip(result.ci_low),
            "ci_high": clip(result.ci_high), "classical_estimate": clip(result.classical_estimate),
            "classical_low": clip(result.classical_low),
            "classical_high": clip(result.classical_high), "lambda": float(result.lam[i]),
            "effective_labels": float(result.effective_labels[i])}


def slice_totals(generations: pd.DataFrame, slices=QUALITY_SLICES
                 ) -> dict[tuple[str, str], tuple[int, int]]:
    """(slice, value) -> (labelled, unlabelled) generations of the aligned datasets
    (`generations` with a `human` code column), to count what a predictor leaves out."""
    return {(name, value): (int((part.human >= 0).sum()), int((part.human < 0).sum()))
            for name, value, part in quality_slices(generations, slices)}


def estimate_rows(prediction: Predictions, totals: dict, slices=QUALITY_SLICES) -> list[dict]:
    """estimates.csv's rows of one predictor: every slice where it reaches an unlabelled
    generation."""
    rows = []
    what = "ok verdict" if prediction.kind == "judge" else "score"
    name = ("PPI++ (power-tuned, lambda in [0, 1])" if prediction.kind == "judge"
            else f"cross-PPI ({prediction.note})")
    for slice_name, value, part in quality_slices(prediction.frame, slices):
        labelled = part.human.to_numpy() >= 0
        n_labelled, n_unlabelled = int(labelled.sum()), int((~labelled).sum())
        if n_unlabelled == 0:
            continue
        total = totals.get((slice_name, value), (n_labelled, n_unlabelled))
        method = (f"{name}; normal 95% interval; classical: the human labels alone, normal 95%; "
                  f"clipped to [0, 1]")
        if total != (n_labelled, n_unlabelled):
            method += (f"; left out (no {what}): {total[0] - n_labelled} labelled, "
                       f"{total[1] - n_unlabelled} unlabelled generation(s)")
        base = {"slice": slice_name, "slice_value": value, "predictor": prediction.predictor,
                "n_labelled": n_labelled, "n_unlabelled": n_unlabelled}
        human = part.human.to_numpy()[labelled]
        why = _why_none(human)
        if why:
            rows.extend({**base, "estimand": e, "method": f"no estimate: {why}"}
                        for e in ESTIMANDS)
            continue
        codes = part.code.to_numpy()
        if prediction.by_fold is None:
            result = ppi_mean(estimand_values(human), estimand_values(codes[labelled]),
                              estimand_values(codes[~labelled]), CONFIDENCE)
        else:
            folds = prediction.by_fold[part.index.to_numpy()[~labelled]]
            result = crossppi_mean(estimand_values(human), estimand_values(codes[labelled]),
                                   np.stack([estimand_values(folds[:, k])
                                             for k in range(folds.shape[1])], axis=1),
                                   CONFIDENCE)
        for i, estimand in enumerate(ESTIMANDS):
            rows.append({**base, "estimand": estimand, **_numbers(result, i), "method": method})
    return rows


def difference_rows(prediction: Predictions, slices=QUALITY_SLICES) -> list[dict]:
    """estimate_tests.csv's rows of one judge (see the module); Holm within a slice and judge."""
    if prediction.by_fold is not None or prediction.frame.empty:
        return []
    frame = prediction.frame.assign(
        predicted=estimand_values(prediction.frame.code, ["mean_score"])[:, 0],
        truth=estimand_values(prediction.frame.human, ["mean_score"])[:, 0])
    out = []
    for slice_name, value, part in quality_slices(frame, pairing_slices(slices)):
        # one row per target, a column per model (a target has one generation per model)
        table = part.drop_duplicates(["target_id", "model"]).set_index(
            ["target_id", "model"])[["predicted", "truth"]].unstack("model")
        models = [str(m) for m in table["predicted"].columns]
        predicted = table["predicted"].to_numpy(float)
        truth = table["truth"].to_numpy(float)
        pairs = [row for i, a in enumerate(models) for j in range(i + 1, len(models))
                 if (row := _difference(prediction.predictor, a, models[j], predicted[:, i],
                                        predicted[:, j], truth[:, i], truth[:, j]))]
        adjusted = holm([p["p_value"] for p in pairs]) if pairs else []
        out.extend({"slice": slice_name, "slice_value": value, **p, "p_holm": float(h)}
                   for p, h in zip(pairs, adjusted))
    return out


def _difference(predictor: str, a: str, b: str, predicted_a: np.ndarray,
                predicted_b: np.ndarray, truth_a: np.ndarray, truth_b: np.ndarray
                ) -> dict | None:
    """One pair's row: per target (arrays over the slice's targets, nan where missing)."""
    both = ~np.isnan(predicted_a) & ~np.isnan(predicted_b)
    labelled = both & ~np.isnan(truth_a) & ~np.isnan(truth_b)
    unlabelled = both & ~labelled
    if not unlabelled.any():
        return None
    d_hat, d = predicted_b - predicted_a, truth_b - truth_a
    base = {"comparison": "model", "predictor": predictor, "estimand": "mean_score",
            "n_labelled": int(labelled.sum()), "n_unlabelled": int(unlabelled.sum())}
    why = _why_none(d[labelled])
    if why:
        return {**base, "a": a, "b": b, "p_value": math.nan,
                "method": f"no estimate: {why} (targets with both models labelled)"}
    result = ppi_mean(d[labelled], d_hat[labelled], d_hat[unlabelled], CONFIDENCE)
    numbers = _numbers(result, 0, (-1.0, 1.0))
    if numbers["estimate"] < 0:  # the better model second, as in quality_tests.csv
        a, b = b, a
        for centre, low, high in (("estimate", "ci_low", "ci_high"),
                                  ("classical_estimate", "classical_low", "classical_high")):
            numbers[centre], numbers[low], numbers[high] = (
                -numbers[centre], -numbers[high], -numbers[low])
    return {**base, "a": a, "b": b, **numbers, "p_value": float(two_sided_p(result)[0]),
            "method": "PPI++ on the per-target differences in mean score (targets both "
                      "models' generations have ok verdicts for; labelled where both have a "
                      "human label), normal 95% interval (clipped to [-1, 1]), two-sided "
                      "normal p"}


__all__ = ["CONFIDENCE", "ESTIMATE_COLUMNS", "ESTIMATE_TEST_COLUMNS", "FOLDS", "MIN_CROSS_FIT",
           "Predictions", "difference_rows", "estimate_rows", "judge_predictions",
           "metric_predictions", "slice_totals"]
