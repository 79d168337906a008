"""A database shaped like the study's questions (imported by the tests as `study_testkit`):
three languages x three generating models x 40 targets, every generation scored by a metric and
judged by one judge run (right 80% of the time, a few parse errors); an expert labels 40% of the
generations at random, three annotators label overlapping shares of them (so the alternative
annotator test has 2+ annotators per item and 30+ items per annotator), and one model is better
than the others in one language by construction."""
from __future__ import annotations

import hashlib

import numpy as np
from sqlmodel import Session

from db import get_engine
from db.models import (
    Annotation,
    Annotator,
    Dataset,
    Generation,
    JudgeRun,
    JudgeVerdict,
    MetricRun,
    MetricScore,
    SourceFile,
    Target,
)
from taxonomy import ACCURACY_LABELS

LANGUAGES = ("el", "nl", "zh")
MODELS = ("model-a", "model-b", "model-c")
TARGETS = 40
SCORE_MEAN = (0.2, 0.5, 0.8)  # the metric's mean per label code


def _quality(language: str, model: str) -> np.ndarray:
    """Label probabilities (incorrect, partial, correct): model-c is much better in Greek."""
    if language == "el" and model == "model-c":
        return np.array([0.1, 0.2, 0.7])
    return np.array([0.4, 0.3, 0.3])


def fill_study_db(url: str, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    engine = get_engine(url)
    truth: dict[int, str] = {}
    judged: dict[int, str | None] = {}
    with Session(engine) as s:
        dataset = Dataset(name="study-test")
        people = {name: Annotator(username=name, role=role, languages=list(LANGUAGES))
                  for name, role in (("expert", "expert"), ("ann", "annotator"),
                                     ("bob", "annotator"), ("cyd", "annotator"))}
        metric = MetricRun(signature="metric:good|ctx:none|noise:none", metric="goodmetric",
                           context="none")
        judge = JudgeRun(signature="judge-study", model="judge-x", strategy="standard",
                         prompt_language="en", prompt_version="v1")
        s.add_all([dataset, metric, judge, *people.values()])
        s.flush()
        for language in LANGUAGES:
            for t in range(TARGETS):
                content = f"// {language} {t}\nint f{t}() {{ return {t}; }}\n"
                source = SourceFile(dataset_id=dataset.id, natural_language=language,
                                    programming_language="java", repo="r",
                                    path=f"{language}/{t}.java", content=content,
                                    content_sha256=hashlib.sha256(content.encode()).hexdigest())
                s.add(source)
                s.flush()
                target = Target(source_file_id=source.id, span_start=0, span_end=8,
                                original_comment=f"c {t}")
                s.add(target)
                s.flush()
                for model in MODELS:
                    generation = Generation(target_id=target.id, model=model,
                                            predicted_comment=f"p {t}")
                    s.add(generation)
                    s.flush()
                    code = int(rng.choice(3, p=_quality(language, model)))
                    label = ACCURACY_LABELS[code]
                    truth[generation.id] = label
                    s.add(MetricScore(run_id=metric.id, generation_id=generation.id,
                                      f=float(rng.normal(SCORE_MEAN[code], 0.12))))
                    if rng.random() < 0.04:
                        judged[generation.id] = None
                        s.add(JudgeVerdict(run_id=judge.id, generation_id=generation.id,
                                           status="parse_error"))
                    else:
                        verdict = label if rng.random() < 0.8 else ACCURACY_LABELS[(code + 1) % 3]
                        judged[generation.id] = verdict
                        s.add(JudgeVerdict(run_id=judge.id, generation_id=generation.id,
                                           status="ok", accuracy=verdict))
                    if rng.random() < 0.4:  # the labelled share, at random
                        raters = [n for n in ("ann", "bob", "cyd") if rng.random() < 0.6]
                        for name in ["expert", *raters]:
                            said = label if rng.random() < 0.85 else ACCURACY_LABELS[
                                int(rng.integers(3))]
                            s.add(Annotation(generation_id=generation.id,
                                             annotator_id=people[name].id,
                                             accuracy=label if name == "expert" else said))
        s.commit()
    engine.dispose()
    return {"truth": truth, "judged": judged}
