"""Reading what the other stages stored into tidy pandas frames (the thin shell around the core).

Three frames, one row per observation:

- `load_scores`: one row per metric score (a generation's or a noise sample's), with its
  configuration (metric, scorer model, layer, context), the noise kind ("none" for a real
  prediction), the generation's model and the file's natural language.
- `load_human_labels`: one human label per generation, chosen by a label policy
  (`agreement.labels`), with the error codes that came with it.
- `load_judge_verdicts`: one row per judge verdict, with its configuration (one judge run;
  `agreement.judges`).

Only portable SQLAlchemy selects: the same code reads SQLite and PostgreSQL.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import pandas as pd
from sqlalchemy import select
from sqlmodel import Session

from agreement.judges import load_verdicts
from agreement.labels import DEFAULT_POLICY, Gold, Vote, resolve
from db.engine import get_engine
from db.metric_keys import HIGHER_IS_BETTER, KEY_OPTIONS, metric_key
from db.models import (
    Annotation,
    AnnotationCode,
    Annotator,
    Generation,
    GoldLabel,
    GoldLabelCode,
    MetricRun,
    MetricScore,
    NoiseSample,
    SourceFile,
    Target,
)
from db.targets import TARGET_DATASET_ID, TARGET_LANGUAGE, target_name, with_source

SCORE_COLUMNS = ["run_id", "signature", "metric", "scorer", "layer", "context", "run_noise",
                 "noise", "generation_id", "noise_sample_id", "target_id", "score", "precision",
                 "recall", "model", "language", "programming_language"]


# signature parts that vary between the runs of one configuration (its noise runs, library
# upgrades) rather than naming another configuration
_RUN_PARTS = ("noise:", "noisetok:", "seed:", "runner:", "versions:", "version:")


def _qualify_colliding_keys(key_of_run: dict, signature_of_run: dict) -> dict:
    """For runs stored without their key options (before keys were stable): runs that share a
    readable key but differ in another scoring option (idf, rescaling, dtype, BLEU tokenizer...)
    are different configurations: append the differing signature parts to their keys, e.g.
    'bertscore[e5,L9,none,dtype:bfloat16]', so they are never merged.

    >>> _qualify_colliding_keys({1: "b", 2: "b"}, {1: "metric:b|idf:no|noise:none",
    ...                                           2: "metric:b|idf:yes|noise:uniform"})
    {1: 'b[idf:no]', 2: 'b[idf:yes]'}
    """
    def identity(signature: str) -> tuple:
        return tuple(p for p in str(signature).split("|") if not p.startswith(_RUN_PARTS))

    groups: dict = {}
    for run, key in key_of_run.items():
        groups.setdefault(key, {}).setdefault(identity(signature_of_run[run]), []).append(run)
    out = dict(key_of_run)
    for key, by_identity in groups.items():
        if len(by_identity) < 2:
            continue
        shared = set.intersection(*(set(i) for i in by_identity))
        for ident, run_ids in by_identity.items():
            qualifier = ",".join(p for p in ident if p not in shared)
            if not qualifier:  # the run that has only the shared parts keeps the plain key
                continue
            qualified = f"{key[:-1]},{qualifier}]" if key.endswith("]") else f"{key}[{qualifier}]"
            for run in run_ids:
                out[run] = qualified
    return out


def _frame(session: Session, statement, columns: Sequence[str]) -> pd.DataFrame:
    rows = session.execute(statement).all()
    return pd.DataFrame.from_records([tuple(r) for r in rows], columns=list(columns))


def _plain_frame(session: Session, statement, columns: Sequence[str]) -> pd.DataFrame:
    """For selects of plain numbers and strings only (no JSON or dates): the driver's tuples go
    straight into the frame, about 10x faster than SQLAlchemy rows at 600,000 scores."""
    result = session.connection().execute(statement)
    cursor = getattr(result, "cursor", None)
    rows = cursor.fetchall() if cursor is not None else [tuple(r) for r in result.all()]
    return pd.DataFrame.from_records(rows, columns=list(columns))


def load_scores(url: str | None = None, metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """Every stored score with its configuration; scores with an error (no value) are left out.

    Real predictions have noise "none" and a generation; noise controls have noise "uniform" or
    "targeted" (the noise sample's kind) and no generation model. `key` names the configuration
    (`db.metric_keys`) so that real and noise scores of the same configuration share it;
    `key_none` names the same configuration without context (what Figure 11 compares with).
    """
    metrics = list(metrics) if metrics else None
    run_cols = [MetricRun.id, MetricRun.signature, MetricRun.metric, MetricRun.model,
                MetricRun.layer, MetricRun.context, MetricRun.noise]
    score_cols = [MetricScore.f, MetricScore.precision, MetricScore.recall]
    real = (select(*run_cols, MetricScore.generation_id, Target.id, *score_cols, Generation.model,
                   TARGET_LANGUAGE, SourceFile.programming_language)
            .join(MetricScore, MetricScore.run_id == MetricRun.id)
            .join(Generation, Generation.id == MetricScore.generation_id)
            .join(Target, Target.id == Generation.target_id)
            .outerjoin(SourceFile, SourceFile.id == Target.source_file_id)
            .where(MetricScore.f.is_not(None)))
    noise = (select(*run_cols, MetricScore.noise_sample_id, Target.id, *score_cols,
                    NoiseSample.kind, TARGET_LANGUAGE,
                    SourceFile.programming_language)
             .join(MetricScore, MetricScore.run_id == MetricRun.id)
             .join(NoiseSample, NoiseSample.id == MetricScore.noise_sample_id)
             .join(Target, Target.id == NoiseSample.target_id)
             .outerjoin(SourceFile, SourceFile.id == Target.source_file_id)
             .where(MetricScore.f.is_not(None)))
    if metrics:
        real = real.where(MetricRun.metric.in_(metrics))
        noise = noise.where(MetricRun.metric.in_(metrics))
    base = ["run_id", "signature", "metric", "scorer", "layer", "context", "run_noise"]
    tail = ["score", "precision", "recall"]
    with Session(get_engine(url)) as session:
        real_df = _plain_frame(session, real, base + ["generation_id", "target_id"] + tail
                         + ["model", "language", "programming_language"])
        noise_df = _plain_frame(session, noise, base + ["noise_sample_id", "target_id"] + tail
                          + ["noise", "language", "programming_language"])
    real_df["noise"] = "none"
    real_df["noise_sample_id"] = pd.NA
    noise_df["generation_id"] = pd.NA
    noise_df["model"] = None
    frame = pd.concat([real_df, noise_df], ignore_index=True)[SCORE_COLUMNS] if len(
        noise_df) else real_df[SCORE_COLUMNS]
    frame = frame.astype({"score": float})
    frame["scorer"] = frame["scorer"].fillna("")
    # one key per run, mapped onto its rows (not one Python call per score)
    runs = frame.drop_duplicates("run_id")
    with Session(get_engine(url)) as session:
        params = dict(session.execute(select(MetricRun.id, MetricRun.params)
                                      .where(MetricRun.id.in_(runs.run_id.tolist()))).all())
    key_of_run, none_of_run, legacy, direction = {}, {}, {}, {}
    for r, m, scorer, layer, context in zip(runs.run_id, runs.metric, runs.scorer, runs.layer,
                                            runs.context):
        options = (params.get(r) or {}).get(KEY_OPTIONS)
        direction[r] = (params.get(r) or {}).get(HIGHER_IS_BETTER)
        if options is None:
            legacy[r] = metric_key(m, scorer, layer, context)
        key_of_run[r] = metric_key(m, scorer, layer, context, options)
        none_of_run[r] = metric_key(m, scorer, layer, "none", options)
    key_of_run.update(_qualify_colliding_keys(legacy, dict(zip(runs.run_id, runs.signature))))
    frame["key"] = frame.run_id.map(key_of_run)
    frame["key_none"] = frame.run_id.map(none_of_run)  # the same configuration without context
    frame["key_stable"] = ~frame.run_id.isin(list(legacy))
    frame["higher_is_better"] = frame.run_id.map(direction)  # None where the run did not say
    # a generation (or noise sample) scored twice under one configuration (inside a noise run,
    # or by two runs that differ only in how they compute, e.g. the backend): keep the score of
    # the run without noise, then the earliest run
    ordered = frame.assign(_noise_run=frame.run_noise != "none").sort_values(
        ["_noise_run", "run_id"])
    real_rows = ordered.noise == "none"
    deduped = ordered[real_rows].drop_duplicates(["key", "generation_id"])
    noise_rows = ordered[~real_rows].drop_duplicates(["key", "noise_sample_id"])
    return pd.concat([deduped, noise_rows], ignore_index=True).drop(columns="_noise_run")


def load_annotations(url: str | None = None) -> pd.DataFrame:
    """Every finished human label: annotation_id, generation_id, annotator, role, accuracy,
    codes (frozenset), created_at; ordered by annotation id (the order they were made)."""
    with Session(get_engine(url)) as session:
        frame = _frame(session, select(Annotation.id, Annotation.generation_id, Annotator.username,
                                       Annotator.role, Annotation.accuracy, Annotation.created_at)
                       .join(Annotator, Annotator.id == Annotation.annotator_id)
                       .where(Annotation.status == "done", Annotation.accuracy.is_not(None))
                       .order_by(Annotation.id),
                       ["annotation_id", "generation_id", "annotator", "role", "accuracy",
                        "created_at"])
        codes = _frame(session, select(AnnotationCode.annotation_id, AnnotationCode.code),
                       ["annotation_id", "code"])
    by_annotation = codes.groupby("annotation_id")["code"].agg(frozenset).to_dict()
    frame["codes"] = [by_annotation.get(i, frozenset()) for i in frame.annotation_id]
    return frame


def load_gold_labels(url: str | None = None) -> pd.DataFrame:
    with Session(get_engine(url)) as session:
        gold = _frame(session, select(GoldLabel.id, GoldLabel.generation_id, GoldLabel.accuracy),
                      ["gold_id", "generation_id", "accuracy"])
        codes = _frame(session, select(GoldLabelCode.gold_label_id, GoldLabelCode.code),
                       ["gold_id", "code"])
    by_gold = codes.groupby("gold_id")["code"].agg(frozenset).to_dict()
    gold["codes"] = [by_gold.get(i, frozenset()) for i in gold.gold_id]
    return gold


def choose_human_labels(annotations: pd.DataFrame, gold: pd.DataFrame,
                        source: str = DEFAULT_POLICY) -> pd.DataFrame:
    """One label per generation by the label policy `source` (`agreement.labels`); pure.

    Returns generation_id, label, codes (frozenset), source (the rule that gave the label:
    "gold", "expert", "majority", "agreed" or "annotator:NAME"), n_annotators.
    """
    ordered = annotations.sort_values("annotation_id") if len(annotations) else annotations
    votes = [Vote(int(g), str(a), str(r), acc, frozenset(c)) for g, a, r, acc, c in
             zip(ordered.generation_id, ordered.annotator, ordered.role, ordered.accuracy,
                 ordered.codes)]
    golds = {int(g.generation_id): Gold(g.accuracy, frozenset(g.codes)) for g in gold.itertuples()}
    resolved = resolve(votes, golds, source)
    return pd.DataFrame([(r.generation_id, r.accuracy, r.codes, r.source, r.n_annotators)
                         for r in resolved.values()],
                        columns=["generation_id", "label", "codes", "source", "n_annotators"])


def load_human_labels(url: str | None = None, source: str = DEFAULT_POLICY) -> pd.DataFrame:
    """`choose_human_labels` over what the database holds."""
    return choose_human_labels(load_annotations(url), load_gold_labels(url), source)


def load_judge_verdicts(url: str | None = None) -> pd.DataFrame:
    """Every judge verdict with its configuration (one run each, `agreement.judges`)."""
    return load_verdicts(url)


def load_generations(url: str | None = None) -> pd.DataFrame:
    """generation_id, target_id, dataset (name), item, model and language of every generation,
    both kinds of target. `item` names the target where an export does: a pairs item by its id,
    a file's comment as repo/path:start-end (its character span)."""
    from db.models import Dataset

    with Session(get_engine(url)) as session:
        frame = _frame(session, with_source(
            select(Generation.id, Generation.target_id, Dataset.name, Target.external_id,
                   SourceFile.repo, SourceFile.path, Target.span_start, Target.span_end,
                   Generation.model, TARGET_LANGUAGE)
            .join(Target, Target.id == Generation.target_id))
            .join(Dataset, Dataset.id == TARGET_DATASET_ID),
            ["generation_id", "target_id", "dataset", "external_id", "repo", "path", "start",
             "end", "model", "language"])
    # a pairs target has no file: its repo, path and span come back missing (NaN in pandas'
    # string columns, not None), and its item is its own id (`target_name`)
    frame["item"] = [target_name(*names) for names in zip(frame.external_id, frame.repo,
                                                          frame.path, frame.start, frame.end)]
    return frame[["generation_id", "target_id", "dataset", "item", "model", "language"]]


def stored_metrics(url: str | None = None) -> list[str]:
    """The metric names the database has runs of (what `--metric` can choose), sorted."""
    with Session(get_engine(url)) as session:
        return sorted(session.execute(select(MetricRun.metric).distinct()).scalars())


def count_metric_scores(url: str | None = None) -> tuple[int, int, int]:
    """(metric runs, stored scores, of which errors): what `align` found when it has no
    usable score, so its message can say so."""
    from sqlalchemy import func

    with Session(get_engine(url)) as session:
        runs = session.execute(select(func.count(MetricRun.id))).scalar_one()
        total, errors = session.execute(select(func.count(MetricScore.id),
                                               func.count(MetricScore.error))).one()
    return runs, total, errors
