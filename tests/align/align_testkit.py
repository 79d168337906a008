"""A small database filled through db.models with fake scores whose relation to the human labels
is known: "goodmetric" separates the classes, "flatmetric" does not, and noise scores low
(imported by conftest.py and the tests as `align_testkit`)."""
from __future__ import annotations

import hashlib

import numpy as np
from sqlmodel import Session

from db import get_engine
from db.models import (
    Annotation,
    AnnotationCode,
    Annotator,
    Dataset,
    Generation,
    GoldLabel,
    JudgeRun,
    JudgeVerdict,
    MetricRun,
    MetricScore,
    NoiseSample,
    SourceFile,
    Target,
)

LANGUAGES = ("en", "nl")
MODELS = ("model-a", "model-b")
TARGETS_PER_LANGUAGE = 30
CLASS_MEAN = {"incorrect": 0.2, "partial": 0.5, "correct": 0.8}


def _label_for(i: int) -> str:
    return ("incorrect", "partial", "correct", "correct")[i % 4]


def fill_align_db(url: str, seed: int = 0) -> dict:
    """Fill `url`; returns what the tests need to know about the contents."""
    from taxonomy import default_taxonomy

    leaf_codes = [c.id for c in default_taxonomy().leaves()][:3]
    rng = np.random.default_rng(seed)
    engine = get_engine(url)
    truth: dict[int, str] = {}
    with Session(engine) as s:
        dataset = Dataset(name="align-test")
        s.add(dataset)
        s.flush()
        expert = Annotator(username="expert", role="expert")
        ann = Annotator(username="ann")
        bob = Annotator(username="bob")
        s.add_all([expert, ann, bob])
        s.flush()
        bleu = MetricRun(signature="metric:bleu|ctx:none|noise:none", metric="bleu", context="none")
        flat = MetricRun(signature="metric:flat|ctx:none|noise:none", metric="flatmetric", context="none")
        runs = {ctx: MetricRun(signature=f"metric:good|ctx:{ctx}|noise:none", metric="goodmetric",
                               model="intfloat/multilingual-e5-small", layer=8, context=ctx)
                for ctx in ("none", "full")}
        noise_run = MetricRun(signature="metric:good|ctx:none|noise:uniform|noisetok:x", metric="goodmetric",
                              model="intfloat/multilingual-e5-small", layer=8, context="none",
                              noise="uniform")
        judge = JudgeRun(signature="judge-1", model="fake-judge", strategy="standard",
                         prompt_language="en", prompt_version="v1")
        s.add_all([bleu, flat, noise_run, judge, *runs.values()])
        s.flush()
        n = 0
        for lang in LANGUAGES:
            for t in range(TARGETS_PER_LANGUAGE):
                content = f"// {lang} comment {t}\nint f{t}() {{ return {t}; }}\n"
                source = SourceFile(dataset_id=dataset.id, natural_language=lang,
                                    programming_language="java", repo="r", path=f"{lang}/{t}.java",
                                    content=content,
                                    content_sha256=hashlib.sha256(content.encode()).hexdigest())
                s.add(source)
                s.flush()
                target = Target(source_file_id=source.id, span_start=0, span_end=10,
                                original_comment=f"comment {t}")
                s.add(target)
                s.flush()
                sample = NoiseSample(target_id=target.id, kind="uniform", tokenizer="t", seed=0,
                                     text="zz qq")
                s.add(sample)
                s.flush()
                s.add(MetricScore(run_id=noise_run.id, noise_sample_id=sample.id,
                                  f=float(rng.normal(0.05, 0.02))))
                for model in MODELS:
                    gen = Generation(target_id=target.id, model=model,
                                     predicted_comment=f"pred {t}")
                    s.add(gen)
                    s.flush()
                    label = _label_for(n)
                    n += 1
                    truth[gen.id] = label
                    mean = CLASS_MEAN[label]
                    for ctx, run in runs.items():
                        spread = 0.04 if ctx == "none" else 0.15  # full context: worse
                        s.add(MetricScore(run_id=run.id, generation_id=gen.id,
                                          f=float(rng.normal(mean, spread))))
                    s.add(MetricScore(run_id=flat.id, generation_id=gen.id,
                                      f=float(rng.normal(0.5, 0.1))))
                    s.add(MetricScore(run_id=bleu.id, generation_id=gen.id, f=0.0))  # all zero
                    # humans: expert agrees with truth; ann too; bob says "partial" always
                    for who, acc in ((expert, label), (ann, label), (bob, "partial")):
                        a = Annotation(generation_id=gen.id, annotator_id=who.id, accuracy=acc)
                        s.add(a)
                        s.flush()
                        if acc != "correct" and who is expert:
                            s.add(AnnotationCode(annotation_id=a.id, code=leaf_codes[0]))
                    # judge: right on correct/incorrect, says incorrect for partial
                    judged = "incorrect" if label == "partial" else label
                    codes = [{"code": leaf_codes[0]}] if judged != "correct" else []
                    s.add(JudgeVerdict(run_id=judge.id, generation_id=gen.id, status="ok",
                                       accuracy=judged, codes=codes))
        # one gold label that overrides the expert
        first = min(truth)
        s.add(GoldLabel(generation_id=first, adjudicator_id=expert.id, accuracy="correct"))
        truth[first] = "correct"
        s.commit()
    engine.dispose()
    return {"truth": truth, "codes": leaf_codes}
