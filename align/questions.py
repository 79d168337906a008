"""The study's questions the human labels answer, each with its uncertainty: which model writes
the best comments in each language (`align.quality`), what judges and metrics add to the labels
(`align.estimates`), and whether a judge could replace the annotators (`align.replace`).

`answer_questions` runs the three on the frames `align` already holds; `StudyAnswers.tables()`
is what the report writes (quality.csv, quality_tests.csv, code_shares.csv, estimates.csv,
estimate_tests.csv, replace.csv, replace_annotators.csv).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from agreement.replace import replace_tables
from agreement.statistics import encode_labels
from align.estimates import (
    ESTIMATE_COLUMNS,
    ESTIMATE_TEST_COLUMNS,
    difference_rows,
    estimate_rows,
    judge_predictions,
    metric_predictions,
    slice_totals,
)
from align.quality import (
    code_shares,
    quality_frame,
    quality_table,
    quality_tests,
    ranked_models,
    slices_for,
)
from taxonomy import ACCURACY_LABELS


@dataclass
class StudyAnswers:
    quality: pd.DataFrame
    quality_tests: pd.DataFrame
    code_shares: pd.DataFrame
    estimates: pd.DataFrame
    estimate_tests: pd.DataFrame
    replace: pd.DataFrame
    replace_annotators: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    # the models ranked per group with compact letters (`align.quality.ranked_models`): what
    # the terminal, the report's table and its figure show; not a file of its own
    ranking: pd.DataFrame = field(default_factory=pd.DataFrame)

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"quality": self.quality, "quality_tests": self.quality_tests,
                "code_shares": self.code_shares, "estimates": self.estimates,
                "estimate_tests": self.estimate_tests, "replace": self.replace,
                "replace_annotators": self.replace_annotators}


def generations_from(scores: pd.DataFrame, verdicts: pd.DataFrame | None) -> pd.DataFrame:
    """generation_id, target_id, model, language of the generations the frames name (for
    callers without `data.load_generations`: a judged generation no metric scored has no
    target, so it is paired with nothing)."""
    parts = [scores[scores.noise == "none"][["generation_id", "target_id", "model", "language"]]]
    if verdicts is not None and len(verdicts):
        parts.append(verdicts[["generation_id", "model", "language"]].assign(target_id=pd.NA))
    frame = pd.concat(parts, ignore_index=True).dropna(subset=["generation_id"])
    return frame.drop_duplicates("generation_id").astype({"generation_id": np.int64})


def answer_questions(labels: pd.DataFrame, annotations: pd.DataFrame | None,
                     generations: pd.DataFrame, verdicts: pd.DataFrame | None,
                     scores: pd.DataFrame, fit, *, policy: str, resamples: int, seed: int,
                     alt_scoring: str, alt_epsilon: float, alpha: float = 0.05
                     ) -> StudyAnswers:
    """Every table of `StudyAnswers` (see the module). `generations`: one row per generation
    of the aligned datasets (generation_id, target_id, model, language); `fit(key, x, codes)`: the
    thresholds align fits (`align.estimates.metric_predictions`)."""
    notes: list[str] = []
    generations = generations.dropna(subset=["model", "language"])
    slices = slices_for(generations.language.nunique())
    labelled = quality_frame(labels, generations)
    code_of = dict(zip(labelled.generation_id, encode_labels(labelled.label.to_numpy(),
                                                             ACCURACY_LABELS)))
    everything = generations[["generation_id", "target_id", "model", "language"]].assign(
        human=[code_of.get(g, -1) for g in generations.generation_id])
    predictions = []
    if verdicts is not None and len(verdicts):
        kept = verdicts[verdicts.generation_id.isin(everything.generation_id)]
        predictions += judge_predictions(kept, everything)
    if len(scores):
        predictions += metric_predictions(scores, everything, fit, seed)
    totals = slice_totals(everything, slices)
    estimates, tests = [], []
    for prediction in predictions:
        rows = estimate_rows(prediction, totals, slices)
        if not rows and prediction.kind == "judge" and len(prediction.frame):
            notes.append(f"estimates: {prediction.predictor} judged no generation without a "
                         f"human label, so it adds nothing to them (judge-assisted estimates "
                         f"need unlabelled generations)")
        estimates += rows
        tests += difference_rows(prediction, slices)
    if not estimates:
        unlabelled = int((everything.human < 0).sum())
        notes.append("estimates: no judge or metric reaches a generation without a human label "
                     f"({unlabelled} of {len(everything)} generations have none), so nothing "
                     f"is added to the labels (see quality.csv)" if predictions else
                     "estimates: no judge verdicts or metric scores to assist the labels")
    replace, per_annotator = replace_tables(
        annotations if annotations is not None else pd.DataFrame(),
        verdicts, dict(zip(generations.generation_id, generations.language)), alt_scoring,
        alt_epsilon)
    if verdicts is None or verdicts.empty:
        notes.append("replace: no judge run to test against the annotators")
    elif annotations is None or annotations.annotator.nunique() < 2:
        notes.append("replace: the alternative annotator test needs 2 or more annotators")
    quality, tests_of_quality = (quality_table(labelled, policy, slices),
                                 quality_tests(labelled, resamples, seed, slices))
    return StudyAnswers(
        quality=quality, quality_tests=tests_of_quality,
        ranking=ranked_models(quality, tests_of_quality, alpha),
        code_shares=code_shares(labelled, policy, slices),
        estimates=pd.DataFrame(estimates, columns=ESTIMATE_COLUMNS),
        estimate_tests=pd.DataFrame(tests, columns=ESTIMATE_TEST_COLUMNS),
        replace=replace, replace_annotators=per_annotator, notes=notes)


def add_plans(answers: StudyAnswers, plans) -> None:
    """estimates.csv's rows of the stored label plans (`agreement.plans`, issue 39's active
    labelling), after the judges' and metrics'; a plan still waiting for drawn labels is named
    in the notes. In place."""
    from agreement.plans import plan_rows, waiting

    rows = []
    for plan in plans:
        rows += plan_rows(plan)
        frame = plan.frame
        planned = frame[~frame.pilot]
        if planned.probability.nunique() > 1 and (planned.drawn & (planned.human >= 0)).any():
            answers.notes.append(
                f"estimates: plan {plan.name!r} drew generations with unequal probabilities; "
                f"the PPI++ rows of {plan.predictor} count its labels as a random sample, which "
                f"they are not: read the plan's rows (method 'active plan') for its slice")
        left = waiting(plan)
        if left:
            answers.notes.append(f"estimates: plan {plan.name!r} waits for {left} drawn "
                                 f"generation(s) to be labelled: its rows are interim "
                                 f"(`python -m annotate.plan --status`)")
    if rows:
        answers.estimates = pd.concat([answers.estimates,
                                       pd.DataFrame(rows, columns=ESTIMATE_COLUMNS)],
                                      ignore_index=True)
        answers.notes[:] = [n for n in answers.notes if not n.startswith("estimates: no ")]


__all__ = ["StudyAnswers", "add_plans", "answer_questions", "generations_from"]
