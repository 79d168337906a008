"""A label plan's estimates and its stop rule (`agreement.active` over what the database holds):
what `align`'s estimates.csv adds per plan, what `annotate.plan --status` and the lead's Team
page show.

A plan (`db.models.LabelPlan`) covers the generations of one dataset (one language, or all) that
had an ok verdict from its judge when it was made: the pilot (those already labelled) and the
planned ones (not yet labelled), each planned one drawn for labelling with a known probability.
Its estimate of each estimand, per slice (all, language, model, language x model), is
`agreement.active.active_mean` over the pilot's human values and the planned generations' judge
values corrected by the drawn ones' labels. A drawn generation not labelled yet makes the
estimate *interim*: the labelled drawn ones stand for all drawn ones (their probabilities times
the share done), which is right when labels come in an order unrelated to the items, and is
said so; a planned generation labelled without being drawn is not counted (its probability of
being labelled is unknown) and is counted in `method`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlmodel import Session

from agreement.active import ActiveEstimate, active_difference, active_mean, calibrated
from agreement.quality import estimand_values
from agreement.quality_tables import quality_slices, slices_for
from agreement.statistics import encode_labels
from db import models as m
from db.engine import get_engine
from db.targets import TARGET_LANGUAGE, with_source
from taxonomy import ACCURACY_LABELS

ESTIMANDS = m.PLAN_ESTIMANDS  # the same as agreement.quality.ESTIMANDS (a test checks)
STATUS_COLUMNS = ["plan", "estimand", "slice", "slice_value", "estimate", "ci_low", "ci_high",
                  "width", "target_width", "labels_done", "still_drawn", "decided", "why"]


def estimand_value(estimand: str, code) -> np.ndarray:
    """The value of `estimand` for label codes 0..2 (nan where the code is -1: no label)."""
    return estimand_values(code, [estimand])[:, 0]


@dataclass
class Plan:
    """A stored plan and its generations (`frame`: generation_id, target_id, model, language,
    pilot, predictor_value, probability, drawn, judge: the judge's code, human: the human code
    under the label policy or -1)."""
    name: str
    dataset: str
    predictor: str
    estimand: str
    language: str | None
    budget: float
    target_width: float | None
    compare: dict
    method: str
    frame: pd.DataFrame = field(repr=False)


def load_plans(url: str | None, labels: dict[int, str], names: Iterable[str] | None = None
               ) -> list[Plan]:
    """The plans stored at `url` (those named, or all), with `labels` (generation id -> human
    accuracy label, the caller's label policy) attached to their generations."""
    with Session(get_engine(url)) as session:
        return read_plans(session, labels, names)


def read_plans(session: Session, labels: dict[int, str], names: Iterable[str] | None = None
               ) -> list[Plan]:
    """`load_plans` in the caller's session (the Team page's, `annotate.plan --status`'s)."""
    from agreement.judges import config_names

    wanted = list(names) if names else None
    query = select(m.LabelPlan).order_by(m.LabelPlan.id)
    if wanted:
        query = query.where(m.LabelPlan.name.in_(wanted))
    plans = list(session.execute(query).scalars())
    names_of = config_names(list(session.execute(select(m.JudgeRun)).scalars()))
    datasets = dict(session.execute(select(m.Dataset.id, m.Dataset.name)).all())
    out = []
    for plan in plans:
        rows = session.execute(with_source(
            select(m.LabelPlanItem.generation_id, m.Generation.target_id, m.Generation.model,
                   TARGET_LANGUAGE, m.LabelPlanItem.pilot, m.LabelPlanItem.predictor_value,
                   m.LabelPlanItem.probability, m.LabelPlanItem.drawn, m.JudgeVerdict.accuracy)
            .join(m.Generation, m.Generation.id == m.LabelPlanItem.generation_id)
            .join(m.Target, m.Target.id == m.Generation.target_id))
            .outerjoin(m.JudgeVerdict, (m.JudgeVerdict.generation_id
                                        == m.LabelPlanItem.generation_id)
                       & (m.JudgeVerdict.run_id == plan.judge_run_id))
            .where(m.LabelPlanItem.plan_id == plan.id)
            .order_by(m.LabelPlanItem.generation_id)).all()
        frame = pd.DataFrame([tuple(r) for r in rows], columns=[
            "generation_id", "target_id", "model", "language", "pilot", "predictor_value",
            "probability", "drawn", "accuracy"])
        frame["judge"] = encode_labels(frame.accuracy.to_numpy(), ACCURACY_LABELS,
                                       allow_missing=True)
        frame["human"] = encode_labels([labels.get(g) for g in frame.generation_id],
                                       ACCURACY_LABELS, allow_missing=True)
        out.append(Plan(plan.name, datasets[plan.dataset_id],
                        names_of.get(plan.judge_run_id, plan.predictor),
                        plan.estimand, plan.language, plan.budget, plan.target_width,
                        dict(plan.compare or {}), plan.method,
                        frame.drop(columns="accuracy")))
    return out


@dataclass(frozen=True)
class PlanEstimate:
    active: ActiveEstimate
    labels_alone: ActiveEstimate  # the same weights without the judge: Horvitz-Thompson
    n_labelled: int  # pilot + drawn and labelled
    still_drawn: int  # drawn, not labelled yet
    outside: int  # planned, labelled without being drawn: not counted
    done_share: float  # labelled share of the drawn ones (1: complete)


def labelled_share(frame: pd.DataFrame) -> float:
    """The labelled share of the drawn generations of `frame` (1 where none was drawn)."""
    planned = frame[~frame.pilot]
    drawn = planned.drawn.to_numpy(bool)
    return float((drawn & (planned.human.to_numpy() >= 0)).sum() / drawn.sum()) \
        if drawn.any() else 1.0


def estimate(frame: pd.DataFrame, estimand: str, done_share: float | None = None
             ) -> PlanEstimate:
    """The plan's estimate of `estimand` over `frame`'s generations (a slice of a plan);
    `done_share` the whole plan's `labelled_share` (default: this frame's)."""
    pilot = frame[frame.pilot]
    planned = frame[~frame.pilot]
    drawn = planned.drawn.to_numpy(bool)
    labelled = planned.human.to_numpy() >= 0
    done = drawn & labelled
    if done_share is None:
        done_share = labelled_share(frame)
    probability = planned.probability.to_numpy(float) * (done_share if done_share > 0 else 1)
    human = estimand_value(estimand, planned.human)
    pilot = pilot[pilot.human >= 0]
    pilot_human = estimand_value(estimand, pilot.human)
    # the judge recalibrated on the pilot, as the plan's probabilities were learned
    judge = calibrated(estimand_value(estimand, pilot.judge), pilot_human,
                       estimand_value(estimand, planned.judge))
    active = active_mean(pilot_human, judge, human, done, probability)
    alone = active_mean(pilot_human, np.zeros(len(planned)), human, done, probability)
    return PlanEstimate(active, alone, int(len(pilot_human) + done.sum()),
                        int((drawn & ~labelled).sum()), int((~drawn & labelled).sum()),
                        float(done_share))


def _slices(frame: pd.DataFrame):
    """(slice, value, rows): all, each language (where several), each model, each cell."""
    return quality_slices(frame, slices_for(frame.language.nunique()))


def waiting(plan: Plan) -> int:
    """Drawn generations of the plan not labelled yet."""
    frame = plan.frame
    return int((~frame.pilot & frame.drawn & (frame.human < 0)).sum())


def _method(plan: Plan, result: PlanEstimate, left: int) -> str:
    """`left`: the plan's drawn generations still unlabelled (`waiting`)."""
    text = (f"active plan {plan.name!r} (Zrnic & Candes 2024: the judge's values, recalibrated "
            f"on the pilot, times lambda, corrected by the drawn labels weighted by "
            f"1/probability, lambda tuned for the narrowest interval; normal 95% interval; "
            f"classical: the same weights without the judge); probabilities {plan.method}")
    if result.done_share < 1:
        text += (f"; INCOMPLETE: {left} drawn generation(s) of the plan not labelled "
                 f"yet ({result.still_drawn} here), interim estimate (the "
                 f"{result.done_share:.0%} done stand for all drawn)")
    if result.outside:
        text += f"; {result.outside} labelled without being drawn, not counted"
    return text


def _results(plan: Plan):
    """(slice, value, rows, estimand, PlanEstimate, drawn still unlabelled in the plan) for
    every slice and estimand of a plan."""
    overall, left = labelled_share(plan.frame), waiting(plan)
    for slice_name, value, part in _slices(plan.frame):
        for estimand in ESTIMANDS:
            yield slice_name, value, part, estimand, estimate(part, estimand, overall), left


def _row(plan: Plan, slice_name: str, value: str, part: pd.DataFrame, estimand: str,
         result: PlanEstimate, left: int) -> dict:
    base = {"slice": slice_name, "slice_value": value, "predictor": plan.predictor,
            "estimand": estimand, "n_labelled": result.n_labelled,
            "n_unlabelled": int(len(part) - result.n_labelled)}
    if result.n_labelled < 2:
        return {**base, "method": f"no estimate: fewer than 2 labels in plan {plan.name!r} here"}
    if result.done_share == 0 and not part.pilot.all():
        # nothing drawn is labelled yet: the judge's values would stand uncorrected (biased)
        return {**base, "method": f"no estimate yet: none of the drawn generations of plan "
                                  f"{plan.name!r} is labelled"}
    a, c = result.active, result.labels_alone
    if not a.se[0] > 0:  # every label and judge value the same here: no spread, no interval
        return {**base, "method": "no estimate: every value here is the same (no spread to give "
                                  "an interval)"}
    with np.errstate(divide="ignore", invalid="ignore"):
        effective = result.n_labelled * (c.se[0] / a.se[0]) ** 2
    return {**base, "estimate": _clip(a.estimate), "ci_low": _clip(a.ci_low),
            "ci_high": _clip(a.ci_high), "classical_estimate": _clip(c.estimate),
            "classical_low": _clip(c.ci_low), "classical_high": _clip(c.ci_high),
            "lambda": float(a.lam[0]),
            "effective_labels": float(effective) if np.isfinite(effective) else math.nan,
            "method": _method(plan, result, left)}


def plan_rows(plan: Plan) -> list[dict]:
    """estimates.csv's rows of a plan (the columns of `align.estimates.ESTIMATE_COLUMNS`): every
    estimand per slice of the plan's generations."""
    return [_row(plan, *found) for found in _results(plan)]


def _clip(values) -> float:
    return float(np.clip(values[0], 0.0, 1.0))


def plan_status(plan: Plan, target_width: float | None = None, alpha: float = 0.05
                ) -> pd.DataFrame:
    """The stop rule per estimand and slice (STATUS_COLUMNS): the interval's width against the
    target (`target_width`, else the plan's), the labels done and still drawn, and whether it is
    decided: the target met, or (for the plan's estimand in the comparison's language slice) the
    plan's comparison, model a vs b, significant at `alpha`."""
    target = target_width if target_width is not None else plan.target_width
    compared = _comparison(plan, alpha)
    # the comparison decides the slice it is about: its language, or all items
    language = (plan.compare or {}).get("language")
    where = ("language", language) if language and plan.frame.language.nunique() > 1 else \
        ("all", "all")
    rows = []
    for slice_name, value, part, estimand, result, left in _results(plan):
        row = _row(plan, slice_name, value, part, estimand, result, left)
        width = (row["ci_high"] - row["ci_low"]) if "ci_high" in row else math.nan
        met = target is not None and width <= target
        why = ("interval no wider than the target" if met else compared
               if compared and estimand == plan.estimand and (slice_name, value) == where
               else "")
        rows.append({"plan": plan.name, "estimand": estimand, "slice": slice_name,
                     "slice_value": value, "estimate": row.get("estimate"),
                     "ci_low": row.get("ci_low"), "ci_high": row.get("ci_high"),
                     "width": width, "target_width": target, "labels_done": result.n_labelled,
                     "still_drawn": result.still_drawn, "decided": bool(why), "why": why})
    return pd.DataFrame(rows, columns=STATUS_COLUMNS)


def _comparison(plan: Plan, alpha: float) -> str:
    """'' or why the plan's comparison decides it: model b vs a in a language, significant."""
    compare = plan.compare or {}
    if not compare.get("a") or not compare.get("b"):
        return ""
    frame = plan.frame
    if compare.get("language"):
        frame = frame[frame.language == compare["language"]]
    overall = labelled_share(plan.frame)
    if overall == 0:  # nothing drawn labelled yet: no valid estimate to compare
        return ""
    groups = [frame[frame.model == compare[k]] for k in ("a", "b")]
    if any(len(g[g.pilot | g.drawn & (g.human >= 0)]) < 2 for g in groups):
        return ""
    a, b = (estimate(g, plan.estimand, overall).active for g in groups)
    delta, p = active_difference(a, b)
    if p[0] < alpha:
        return (f"{compare['b']} vs {compare['a']}"
                + (f" in {compare['language']}" if compare.get("language") else "")
                + f": {delta[0]:+.3f} {plan.estimand}, p = {p[0]:.3g} < {alpha}")
    return ""


__all__ = ["ESTIMANDS", "STATUS_COLUMNS", "Plan", "PlanEstimate", "estimand_value", "estimate",
           "load_plans", "plan_rows", "plan_status", "read_plans", "waiting"]
