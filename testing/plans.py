"""A database with a stored label plan (agreement.plans, issue 39) whose truth is known: what the
plan tests of agreement and align start from."""
from __future__ import annotations

import numpy as np
from sqlmodel import Session, select

from agreement.active import draw, sampling_probabilities
from db import get_engine
from db.models import (
    Annotation,
    Annotator,
    Dataset,
    Generation,
    JudgeRun,
    JudgeVerdict,
    LabelPlan,
    LabelPlanItem,
)
from testing.synthetic import add_synthetic_corpus

LABELS = ("incorrect", "partial", "correct")


def fill_plan_db(url: str) -> dict:
    """Two languages x two models x 60 targets (model-b much better than model-a); a judge right
    80% of the time; 40 generations labelled at random (the pilot); plan "p1" of budget 60 over
    the other 200, uniform, drawn with seed 1, target width 0.5, comparing the models in Greek.
    Returns the truth (generation -> code), the judge's codes, the pilot, the pool, the
    probabilities and the draw; only the pilot is labelled."""
    rng = np.random.default_rng(0)
    with Session(get_engine(url)) as session:
        add_synthetic_corpus(session, targets_per_language=60, languages=("el", "pl"),
                             models=("model-a", "model-b"))
        expert = Annotator(username="expert", role="expert")
        judge = JudgeRun(signature="j", model="judge", strategy="standard",
                         prompt_language="en", prompt_version="v1")
        session.add_all([expert, judge])
        session.flush()
        generations = session.exec(select(Generation).order_by(Generation.id)).all()
        truth, said = {}, {}
        for g in generations:
            better = g.model == "model-b"
            truth[g.id] = int(rng.choice(3, p=[.05, .15, .8] if better else [.8, .15, .05]))
            said[g.id] = truth[g.id] if rng.random() < 0.8 else int(rng.integers(3))
            session.add(JudgeVerdict(run_id=judge.id, generation_id=g.id, status="ok",
                                     accuracy=LABELS[said[g.id]]))
        ids = np.array([g.id for g in generations])
        pilot = set(rng.choice(ids, 40, replace=False).tolist())
        for g in pilot:
            session.add(Annotation(generation_id=int(g), annotator_id=expert.id,
                                   accuracy=LABELS[truth[g]]))
        pool = np.array([g for g in ids if g not in pilot])
        pi = sampling_probabilities(None, len(pool), 60, 0.05)
        drawn = draw(pi, 1)
        plan = LabelPlan(name="p1", dataset_id=session.exec(select(Dataset)).first().id,
                         judge_run_id=judge.id, predictor="judge[standard,en,v1]", budget=60,
                         method="uniform: no pilot used", target_width=0.5,
                         compare={"language": "el", "a": "model-a", "b": "model-b"})
        session.add(plan)
        session.flush()
        for g in pilot:
            session.add(LabelPlanItem(plan_id=plan.id, generation_id=int(g), pilot=True,
                                      predictor_value=said[g] / 2, probability=1.0, drawn=True))
        for g, p, d in zip(pool, pi, drawn):
            session.add(LabelPlanItem(plan_id=plan.id, generation_id=int(g), pilot=False,
                                      predictor_value=said[g] / 2, probability=float(p),
                                      drawn=bool(d)))
        session.commit()
        expert_id = expert.id
    get_engine(url).dispose()
    get_engine.cache_clear()
    return {"url": url, "truth": truth, "said": said, "pilot": pilot, "pool": pool, "pi": pi,
            "drawn": drawn, "expert_id": expert_id}


def label(url: str, expert_id: int, labels: dict[int, str]) -> None:
    """Store `labels` (generation id -> accuracy) as the expert's."""
    with Session(get_engine(url)) as session:
        for g, accuracy in labels.items():
            session.add(Annotation(generation_id=int(g), annotator_id=expert_id,
                                   accuracy=accuracy))
        session.commit()
    get_engine(url).dispose()
    get_engine.cache_clear()
