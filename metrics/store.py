"""Database reads and writes of a scoring run: what to score, the MetricRun, noise samples and
scores. Every function opens its own short transaction (`db.session_scope`), so an interrupted
run keeps what it wrote and concurrent runners (other processes, other machines on PostgreSQL)
meet on unique keys instead of locks: a duplicate insert re-reads what the other one stored.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from db import session_scope
from db.metric_keys import HIGHER_IS_BETTER, KEY_OPTIONS
from db.models import Dataset, Generation, MetricRun, MetricScore, NoiseSample, SourceFile, Target
from db.targets import IS_PAIRS_TARGET, TARGET_DATASET_ID, TARGET_LANGUAGE, with_source

_IN_BATCH = 500  # ids per IN (...) clause


@dataclass(frozen=True)
class Row:
    """One generation to score, with its target and file (none for a pairs target)."""

    generation_id: int
    target_id: int
    source_file_id: Optional[int]
    dataset_id: int
    lang: str
    prediction: str
    reference: str
    span: Optional[tuple[int, int]]
    context: Optional[str] = None  # a pairs target's own context text, if its file gave one

    @property
    def is_pairs(self) -> bool:
        return self.source_file_id is None


def select_rows(url, config) -> list[Row]:
    """The generations ``config`` selects (languages, dataset), in id order."""
    stmt = with_source(select(Generation.id, Target.id, Target.source_file_id, TARGET_DATASET_ID,
                              TARGET_LANGUAGE, Generation.predicted_comment,
                              Target.original_comment, Target.span_start, Target.span_end,
                              Target.context)
                       .join(Target, Generation.target_id == Target.id))
    if config.langs:
        stmt = stmt.where(TARGET_LANGUAGE.in_(config.langs))
    if config.dataset:
        stmt = stmt.join(Dataset, TARGET_DATASET_ID == Dataset.id).where(
            Dataset.name == config.dataset)
    with session_scope(url) as session:
        return [Row(g, t, f, d, lang, pred or "", ref or "",
                    None if f is None else (s, e), context or None)
                for g, t, f, d, lang, pred, ref, s, e, context
                in session.execute(stmt.order_by(Generation.id)).all()]


def file_contents(url, file_ids: Iterable[int]) -> dict[int, str]:
    ids = sorted(set(file_ids))
    out: dict[int, str] = {}
    with session_scope(url) as session:
        for i in range(0, len(ids), _IN_BATCH):
            stmt = select(SourceFile.id, SourceFile.content).where(
                SourceFile.id.in_(ids[i:i + _IN_BATCH]))
            out.update(dict(session.execute(stmt).all()))
    return out


def dataset_texts(url, dataset_id: int, lang: str) -> list[str]:
    """Every file of a dataset in one language (the lexical noise vocabulary); a pairs dataset,
    which has no files, gives its references in that language instead (not their context
    texts, which may be in another language: a translation's source)."""
    with session_scope(url) as session:
        files = list(session.execute(select(SourceFile.content).where(
            SourceFile.dataset_id == dataset_id,
            SourceFile.natural_language == lang)).scalars())
        pairs = session.execute(select(Target.original_comment).where(
            IS_PAIRS_TARGET, Target.dataset_id == dataset_id,
            Target.natural_language == lang).order_by(Target.id)).scalars()
        return files + [text for text in pairs if text]


def pairs_references(url, dataset_id: int, lang: str) -> dict[int, str]:
    """target id -> reference of every pairs target of a dataset in one language: the pool that
    targeted noise of a pairs target draws from (the other references)."""
    with session_scope(url) as session:
        return dict(session.execute(select(Target.id, Target.original_comment).where(
            IS_PAIRS_TARGET, Target.dataset_id == dataset_id,
            Target.natural_language == lang)).all())


def references(url, config, rows: list[Row]) -> dict[int, tuple[str, str]]:
    """target id -> (reference, language) of every target of the datasets (and languages) in
    play: idf documents and baseline pairs come from the whole corpus, not from whatever slice
    (--limit) this invocation scores."""
    stmt = with_source(select(Target.id, Target.original_comment, TARGET_LANGUAGE)).where(
        TARGET_DATASET_ID.in_(sorted({r.dataset_id for r in rows})))
    if config.langs:
        stmt = stmt.where(TARGET_LANGUAGE.in_(config.langs))
    with session_scope(url) as session:
        return {t: (text or "", lang) for t, text, lang in session.execute(stmt).all()}


def _find_run(session, signature: str) -> Optional[tuple[int, dict]]:
    found = session.execute(select(MetricRun.id, MetricRun.params)
                            .where(MetricRun.signature == signature)).first()
    return (found[0], dict(found[1] or {})) if found else None


def run_identity(config) -> dict:
    """What every run records of how reports name and read it (`db.metric_keys`): the options
    in its key and whether a higher score is better."""
    metric = config.implementation
    return {KEY_OPTIONS: metric.key_options(config), HIGHER_IS_BETTER: metric.higher_is_better}


def get_or_create_run(url, config, new_params: Callable[[], dict]) -> tuple[int, dict]:
    """(run id, stored params) of the run with ``config``'s signature, created with
    ``new_params()`` when there is none yet."""
    signature, identity = config.signature(), run_identity(config)
    with session_scope(url) as session:
        found = _find_run(session, signature)
        if found and not set(identity) <= set(found[1]):  # stored before runs recorded it
            found[1].update(identity)
            session.get(MetricRun, found[0]).params = dict(found[1])
        if found:
            return found
    metric, params = config.implementation, new_params()
    try:
        with session_scope(url) as session:
            run = MetricRun(signature=signature, metric=metric.run_name(config),
                            model=config.model or "",
                            layer=config.layer, tokenizer=metric.tokenizer_name(config),
                            context=config.context, noise=config.noise, seed=config.seed,
                            params=params, library_versions=config.library_versions())
            session.add(run)
            session.flush()
            return run.id, params
    except IntegrityError:  # another process created it first
        with session_scope(url) as session:
            return _find_run(session, signature)


def store_params(url, run_id: int, params: dict) -> None:
    with session_scope(url) as session:
        session.get(MetricRun, run_id).params = dict(params)


def noise_samples(url, config, target_ids: Iterable[int]) -> dict[int, tuple[int, str]]:
    """target id -> (noise sample id, text) of the stored samples of ``config``'s noise."""
    ids = sorted(set(target_ids))
    found: dict[int, tuple[int, str]] = {}
    with session_scope(url) as session:
        for i in range(0, len(ids), _IN_BATCH):
            stmt = select(NoiseSample.target_id, NoiseSample.id, NoiseSample.text).where(
                NoiseSample.target_id.in_(ids[i:i + _IN_BATCH]),
                NoiseSample.kind == config.noise,
                NoiseSample.tokenizer == config.noise_tokenizer_name(),
                NoiseSample.seed == config.seed)
            for t, n, text in session.execute(stmt).all():
                found[t] = (n, text)
    return found


def add_noise_samples(url, config, texts: dict[int, str]) -> dict[int, tuple[int, str]]:
    """Store target id -> noise text in one transaction; returns target id -> (id, text) of
    what was stored (nothing when a concurrent runner stored some first: re-read those)."""
    if not texts:
        return {}
    try:
        with session_scope(url) as session:
            samples = [NoiseSample(target_id=t, kind=config.noise, seed=config.seed,
                                   tokenizer=config.noise_tokenizer_name(), text=text)
                       for t, text in texts.items()]
            session.add_all(samples)
            session.flush()
            return {s.target_id: (s.id, s.text) for s in samples}
    except IntegrityError:  # created concurrently: take theirs
        return {}


def scored_subjects(url, run_id: int, noise: bool, retry_errors: bool = False) -> set[int]:
    """Generation (or noise sample) ids the run has a score for; with ``retry_errors`` the
    stored errors are deleted first, so those items are scored again."""
    column = MetricScore.noise_sample_id if noise else MetricScore.generation_id
    with session_scope(url) as session:
        if retry_errors:
            session.execute(delete(MetricScore).where(MetricScore.run_id == run_id,
                                                      MetricScore.error.is_not(None)))
        return set(session.execute(select(column).where(
            MetricScore.run_id == run_id, column.is_not(None))).scalars())


def stored_among(url, run_id: int, noise: bool, subject_ids: list[int]) -> set[int]:
    """Which of these generation (or noise sample) ids the run has a score for now."""
    column = MetricScore.noise_sample_id if noise else MetricScore.generation_id
    found: set[int] = set()
    with session_scope(url) as session:
        for i in range(0, len(subject_ids), _IN_BATCH):
            found.update(session.execute(select(column).where(
                MetricScore.run_id == run_id,
                column.in_(subject_ids[i:i + _IN_BATCH]))).scalars())
    return found


def _finite(x: Optional[float]) -> Optional[float]:
    return x if x is None or math.isfinite(x) else None


def _score_row(run_id: int, item, score, noise: bool) -> MetricScore:
    return MetricScore(run_id=run_id,
                       generation_id=None if noise else item.subject_id,
                       noise_sample_id=item.subject_id if noise else None,
                       precision=_finite(score.precision), recall=_finite(score.recall),
                       f=_finite(score.f), error=score.error, details=dict(score.details))


def insert_scores(url, run_id: int, items, scores, noise: bool) -> None:
    """One chunk of scores in one transaction."""
    try:
        with session_scope(url) as session:
            session.add_all([_score_row(run_id, it, sc, noise) for it, sc in zip(items, scores)])
    except IntegrityError:  # a concurrent runner stored some of these: add only the rest
        column = MetricScore.noise_sample_id if noise else MetricScore.generation_id
        with session_scope(url) as session:
            done = set(session.execute(select(column).where(
                MetricScore.run_id == run_id,
                column.in_([it.subject_id for it in items]))).scalars())
            session.add_all([_score_row(run_id, it, sc, noise) for it, sc in zip(items, scores)
                             if it.subject_id not in done])
