"""What the label plan tests share (imported as `plan_kit`): a judge run with verdicts of known
accuracy on a database's generations, and human labels on some of them (the pilot)."""
from __future__ import annotations

import numpy as np
from sqlalchemy import select
from sqlmodel import Session

from db import get_engine
from db import models as m
from taxonomy import ACCURACY_LABELS


def add_judge(url: str, *, model: str = "judge-x", accuracy: float = 0.75, seed: int = 0,
              failed: int = 0) -> dict:
    """A judge run (`model[standard,en,v1]`) with a verdict on every generation: the truth
    (drawn per generation: better for the models named *-b) with probability `accuracy`, else
    a label at random; the first `failed` generations get a parse_error verdict instead.
    Returns {"key", "run_id", "truth": {gid: code}, "said": {gid: code}}."""
    rng = np.random.default_rng(seed)
    with Session(get_engine(url)) as session:
        run = m.JudgeRun(signature=f"test|{model}", model=model, strategy="standard",
                         prompt_language="en", prompt_version="v1")
        session.add(run)
        session.flush()
        generations = session.execute(select(m.Generation).order_by(m.Generation.id)
                                      ).scalars().all()
        truth, said = {}, {}
        for k, g in enumerate(generations):
            better = g.model.endswith("-b")
            truth[g.id] = int(rng.choice(3, p=[.1, .2, .7] if better else [.6, .25, .15]))
            said[g.id] = truth[g.id] if rng.random() < accuracy else int(rng.integers(3))
            bad = k < failed
            session.add(m.JudgeVerdict(run_id=run.id, generation_id=g.id,
                                       status="parse_error" if bad else "ok",
                                       accuracy=None if bad else ACCURACY_LABELS[said[g.id]]))
        session.commit()
        return {"key": f"{model}[standard,en,v1]", "run_id": run.id, "truth": truth,
                "said": said}


def add_labels(url: str, username: str, labels: dict[int, int]) -> None:
    """Finished labels (generation id -> accuracy code) by the account `username`."""
    with Session(get_engine(url)) as session:
        aid = session.execute(select(m.Annotator.id).where(m.Annotator.username == username)
                              ).scalar_one()
        for gid, code in labels.items():
            session.add(m.Annotation(generation_id=gid, annotator_id=aid,
                                     accuracy=ACCURACY_LABELS[code]))
        session.commit()


def plan_tables(url: str) -> tuple[list, list]:
    """Every stored plan and plan item, as plain tuples (what a refused plan must not change)."""
    with Session(get_engine(url)) as session:
        plans = [tuple(r) for r in session.execute(select(
            m.LabelPlan.name, m.LabelPlan.estimand, m.LabelPlan.budget, m.LabelPlan.seed))]
        items = [tuple(r) for r in session.execute(select(
            m.LabelPlanItem.plan_id, m.LabelPlanItem.generation_id, m.LabelPlanItem.pilot,
            m.LabelPlanItem.probability, m.LabelPlanItem.drawn))]
    return plans, items
