"""agreement.plans over a real SQLite database: a plan's estimate equals agreement.active's on the
arrays read back, a drawn generation not yet labelled makes it interim (and says so), a label
outside the draw is not counted, and the stop rule decides on the width or on the comparison."""
from __future__ import annotations

import numpy as np
import pytest

from agreement.active import active_mean, calibrated
from agreement.plans import load_plans, plan_rows, plan_status
from db import get_engine
from testing.plans import LABELS, fill_plan_db


@pytest.fixture
def planned(tmp_path):
    yield fill_plan_db(f"sqlite:///{tmp_path / 'plan.db'}")
    get_engine.cache_clear()


def _labels(planned, generation_ids) -> dict:
    labels = {g: LABELS[planned["truth"][g]] for g in planned["pilot"]}
    labels.update({int(g): LABELS[planned["truth"][int(g)]] for g in generation_ids})
    return labels


def test_a_complete_plan_estimates_as_agreement_active_does(planned):
    pool, drawn, pi = planned["pool"], planned["drawn"], planned["pi"]
    labels = _labels(planned, pool[drawn])
    (plan,) = load_plans(planned["url"], labels)
    rows = {(r["slice"], r["slice_value"], r["estimand"]): r for r in plan_rows(plan)}
    score = {g: t / 2 for g, t in planned["truth"].items()}
    pilot = sorted(planned["pilot"])
    fitted = calibrated([planned["said"][g] / 2 for g in pilot], [score[g] for g in pilot],
                        [planned["said"][g] / 2 for g in pool])
    expected = active_mean([score[g] for g in pilot], fitted,
                           np.where(drawn, [score[g] for g in pool], np.nan), drawn, pi)
    row = rows[("all", "all", "mean_score")]
    assert row["estimate"] == pytest.approx(expected.estimate[0])
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((expected.ci_low[0],
                                                             expected.ci_high[0]))
    assert row["n_labelled"] == 40 + drawn.sum()
    assert "active plan 'p1'" in row["method"] and "INCOMPLETE" not in row["method"]
    assert {k[:2] for k in rows} >= {("language", "el"), ("model", "model-b"),
                                     ("language x model", "el x model-a")}


def test_a_drawn_generation_still_unlabelled_makes_the_estimate_interim(planned):
    pool, drawn = planned["pool"], planned["drawn"]
    waiting = pool[drawn][:5]
    labels = _labels(planned, [g for g in pool[drawn] if g not in waiting])
    outside = [g for g in pool[~drawn]][:3]
    labels.update({int(g): "correct" for g in outside})  # labelled without being drawn
    (plan,) = load_plans(planned["url"], labels)
    row = next(r for r in plan_rows(plan) if r["slice"] == "all"
               and r["estimand"] == "mean_score")
    assert "INCOMPLETE: 5 drawn generation(s) of the plan not labelled yet (5 here)" in \
        row["method"]
    assert "3 labelled without being drawn, not counted" in row["method"]
    assert row["n_labelled"] == 40 + drawn.sum() - 5


def test_the_stop_rule_decides_on_the_width_or_the_comparison(planned):
    labels = _labels(planned, planned["pool"][planned["drawn"]])
    (plan,) = load_plans(planned["url"], labels)
    status = plan_status(plan)
    overall = status[(status.slice == "all") & (status.estimand == "mean_score")].iloc[0]
    assert overall.width <= 0.5 and overall.decided and "no wider than the target" in overall.why
    narrow = plan_status(plan, target_width=0.001)
    greek = narrow[(narrow.slice == "language") & (narrow.slice_value == "el")
                   & (narrow.estimand == "mean_score")].iloc[0]
    # model-b is much better than model-a by construction: the comparison decides it
    assert greek.decided and greek.why.startswith("model-b vs model-a in el")
    assert not narrow[narrow.estimand == "share_partial"].decided.any()
    # the comparison decides the Greek slice it is about, not every slice of the estimand
    others = narrow[(narrow.estimand == "mean_score") & (narrow.slice_value != "el")]
    assert not others.decided.any()
    assert (narrow.still_drawn == 0).all()


def test_a_plans_estimands_are_the_quality_estimands():
    from agreement.quality import ESTIMANDS
    from db.models import PLAN_ESTIMANDS

    assert set(PLAN_ESTIMANDS) == set(ESTIMANDS)


def test_nothing_is_estimated_or_decided_before_a_drawn_generation_is_labelled(planned):
    """With only the pilot labelled, the planned generations would count by the judge's values
    alone (biased, and a narrow interval): no estimate, and the stop rule decides nothing even
    against the widest target."""
    (plan,) = load_plans(planned["url"], _labels(planned, []))
    rows = plan_rows(plan)
    assert all("estimate" not in r for r in rows)
    assert all("no estimate yet: none of the drawn generations of plan 'p1' is labelled"
               in r["method"] for r in rows)
    status = plan_status(plan, target_width=1.0)
    assert not status.decided.any()
    assert (status.still_drawn[status.slice == "all"] == planned["drawn"].sum()).all()


def test_a_cell_whose_values_are_all_the_same_has_no_interval_and_decides_nothing(planned):
    labels = _labels(planned, planned["pool"][planned["drawn"]])
    (plan,) = load_plans(planned["url"], labels)
    frame = plan.frame.copy()
    one = (frame.language == "el") & (frame.model == "model-b")
    frame.loc[one, ["human", "judge"]] = 2  # every label and verdict "correct" in that cell
    plan.frame = frame
    rows = [r for r in plan_rows(plan) if r["slice_value"] == "el x model-b"]
    assert rows and all("estimate" not in r and "no spread" in r["method"] for r in rows)
    status = plan_status(plan, target_width=0.5)
    assert not status[status.slice_value == "el x model-b"].decided.any()
