"""`python -m metrics.score`: score every generation (or its noise controls) and store the scores.

    python -m metrics.score --metric bertscore --model intfloat/multilingual-e5-small --layer 9 \\
        --context full --noise none [--lang zh --lang el] [--batch-size 64] [--limit 100]
    python -m metrics.score --grid grid.yaml [--db URL]

Python API (used by the demo command and, later, distributed executors):
``score_configuration(config, url=...)`` and ``score_grid(configs, url=...)``.

Each configuration is one MetricRun (unique signature). Re-running skips every generation or noise
sample the run already has a score for (errors included; ``--retry-errors`` re-scores those).
Scores are inserted chunk by chunk, each chunk in its own transaction.
"""
from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass, field, replace
from typing import Iterable, Optional, Sequence

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from metrics.runner import (ConfigError, ScoringConfig, ScoringItem, _finite, get_scorer,
                            load_grid, prepare_setup, score_items)

log = logging.getLogger(__name__)


@dataclass
class RunSummary:
    run_id: int
    signature: str
    selected: int = 0
    skipped: int = 0
    scored: int = 0
    errors: int = 0
    noise_created: int = 0
    noise_failed: int = 0
    error_examples: list = field(default_factory=list)
    unscored: int = 0  # items of chunks whose worker kept failing (--executor); a re-run retries

    def line(self) -> str:
        extra = f", {self.noise_created} noise samples created" if self.noise_created else ""
        if self.noise_failed:
            extra += f", {self.noise_failed} targets without noise"
        if self.unscored:
            extra += f", {self.unscored} not scored (worker failures; re-run to retry)"
        return (f"run {self.run_id}: {self.selected} selected, {self.skipped} already stored, "
                f"{self.scored} scored, {self.errors} errors{extra}")


@dataclass(frozen=True)
class _Row:
    generation_id: int
    target_id: int
    source_file_id: int
    dataset_id: int
    lang: str
    prediction: str
    reference: str
    span: tuple[int, int]


def _select_rows(session, config: ScoringConfig) -> list[_Row]:
    from db.models import Dataset, Generation, SourceFile, Target

    stmt = (select(Generation.id, Target.id, SourceFile.id, SourceFile.dataset_id,
                   SourceFile.natural_language, Generation.predicted_comment,
                   Target.original_comment, Target.span_start, Target.span_end)
            .join(Target, Generation.target_id == Target.id)
            .join(SourceFile, Target.source_file_id == SourceFile.id))
    if config.langs:
        stmt = stmt.where(SourceFile.natural_language.in_(config.langs))
    if config.dataset:
        stmt = stmt.join(Dataset, SourceFile.dataset_id == Dataset.id).where(
            Dataset.name == config.dataset)
    stmt = stmt.order_by(Generation.id)
    return [_Row(g, t, f, d, lang, pred or "", ref or "", (s, e))
            for g, t, f, d, lang, pred, ref, s, e in session.execute(stmt).all()]


def _file_contents(session, file_ids: Iterable[int]) -> dict[int, str]:
    from db.models import SourceFile

    ids = sorted(set(file_ids))
    out: dict[int, str] = {}
    for i in range(0, len(ids), 500):
        stmt = select(SourceFile.id, SourceFile.content).where(SourceFile.id.in_(ids[i:i + 500]))
        out.update(dict(session.execute(stmt).all()))
    return out


def _references(url, config: ScoringConfig, rows: list[_Row]) -> dict[int, tuple[str, str]]:
    """Every target of the datasets (and languages) in play: idf documents and baseline pairs
    come from the whole corpus, not from whatever slice (--limit) this invocation scores."""
    if config.metric != "bertscore" or not (config.idf or config.rescale != "none"):
        return {}
    from db import session_scope
    from db.models import SourceFile, Target

    datasets = sorted({r.dataset_id for r in rows})
    stmt = (select(Target.id, Target.original_comment, SourceFile.natural_language)
            .join(SourceFile, Target.source_file_id == SourceFile.id)
            .where(SourceFile.dataset_id.in_(datasets)))
    if config.langs:
        stmt = stmt.where(SourceFile.natural_language.in_(config.langs))
    with session_scope(url) as session:
        return {t: (text or "", lang) for t, text, lang in session.execute(stmt).all()}


def _get_or_create_run(url, config: ScoringConfig) -> tuple[int, dict]:
    from db import session_scope
    from db.models import MetricRun

    signature = config.signature()
    with session_scope(url) as session:
        found = session.execute(select(MetricRun.id, MetricRun.params)
                                .where(MetricRun.signature == signature)).first()
        if found:
            return found[0], dict(found[1] or {})
    params = {k: v for k, v in (("device", config.device), ("batch_size", config.batch_size),
                                ("bleu_tokenize", config.bleu_tokenize if config.metric == "bleu"
                                 else None)) if v is not None}
    if not config.is_lexical:
        from metrics.hub import describe_model

        params["model_provenance"] = describe_model(config.model)
    if config.is_lexical:
        from metrics.tokenize import family_signature

        tokenizer = family_signature()
    else:
        tokenizer = f"hf:{config.model}"
    try:
        with session_scope(url) as session:
            run = MetricRun(signature=signature, metric=config.metric, model=config.model or "",
                            layer=config.layer, tokenizer=tokenizer, context=config.context,
                            noise=config.noise, seed=config.seed, params=params,
                            library_versions=config.library_versions())
            session.add(run)
            session.flush()
            return run.id, params
    except IntegrityError:  # another process created it first
        with session_scope(url) as session:
            found = session.execute(select(MetricRun.id, MetricRun.params)
                                    .where(MetricRun.signature == signature)).one()
            return found[0], dict(found[1] or {})


def _store_params(url, run_id: int, params: dict) -> None:
    from db import session_scope
    from db.models import MetricRun

    with session_scope(url) as session:
        run = session.get(MetricRun, run_id)
        run.params = dict(params)


def _noise_tokenizer(config: ScoringConfig, session, row: _Row, cache: dict):
    from metrics.noise import hf_noise_tokenizer, lexical_noise_tokenizer, lexical_vocabulary

    if not config.is_lexical:
        if "hf" not in cache:
            cache["hf"] = hf_noise_tokenizer(get_scorer(config).tokenizer, config.model)
        return cache["hf"]
    key = (row.dataset_id, row.lang)
    if key not in cache:
        from db.models import SourceFile

        contents = session.execute(select(SourceFile.content).where(
            SourceFile.dataset_id == row.dataset_id,
            SourceFile.natural_language == row.lang)).scalars().all()
        cache[key] = lexical_noise_tokenizer(row.lang, lexical_vocabulary(contents, row.lang))
    return cache[key]


def _ensure_noise(url, config: ScoringConfig, rows: list[_Row], summary: RunSummary,
                  progress: bool) -> dict[int, tuple[int, str]]:
    """target id -> (noise sample id, text), creating missing samples (committed per chunk)."""
    from db import session_scope
    from db.models import NoiseSample
    from metrics.noise import context_without_comment, make_noise

    name = config.noise_tokenizer_name()
    targets: dict[int, _Row] = {}
    for row in rows:
        targets.setdefault(row.target_id, row)
    found: dict[int, tuple[int, str]] = {}
    with session_scope(url) as session:
        ids = sorted(targets)
        for i in range(0, len(ids), 500):
            stmt = select(NoiseSample.target_id, NoiseSample.id, NoiseSample.text).where(
                NoiseSample.target_id.in_(ids[i:i + 500]), NoiseSample.kind == config.noise,
                NoiseSample.tokenizer == name, NoiseSample.seed == config.seed)
            for t, n, text in session.execute(stmt).all():
                found[t] = (n, text)
    missing = [t for t in sorted(targets) if t not in found]
    if not missing:
        return found
    cache: dict = {}
    bar = _progress(len(missing), f"noise {config.noise}", progress)
    for i in range(0, len(missing), 200):
        chunk = missing[i:i + 200]
        with session_scope(url) as session:
            contents = _file_contents(session, [targets[t].source_file_id for t in chunk])
            new = []
            for t in chunk:
                row = targets[t]
                try:
                    tok = _noise_tokenizer(config, session, row, cache)
                    text = make_noise(config.noise, row.reference, tok, config.seed, t,
                                      context_without_comment(contents[row.source_file_id],
                                                              row.span))
                except Exception as exc:  # this target gets no noise; the others go on
                    summary.noise_failed += 1
                    if len(summary.error_examples) < 5:
                        summary.error_examples.append(f"target {t}: noise: {exc}")
                    continue
                sample = NoiseSample(target_id=t, kind=config.noise, tokenizer=name,
                                     seed=config.seed, text=text)
                session.add(sample)
                new.append(sample)
            try:
                session.flush()
            except IntegrityError:  # created concurrently: take theirs
                session.rollback()
                new = []
            for sample in new:
                found[sample.target_id] = (sample.id, sample.text)
            summary.noise_created += len(new)
        bar.update(len(chunk))
    bar.close()
    if len(found) < len(targets):  # re-read anything created by a concurrent process
        return _ensure_noise_reread(url, config, targets, found)
    return found


def _ensure_noise_reread(url, config, targets, found):
    from db import session_scope
    from db.models import NoiseSample

    with session_scope(url) as session:
        stmt = select(NoiseSample.target_id, NoiseSample.id, NoiseSample.text).where(
            NoiseSample.target_id.in_(sorted(set(targets) - set(found))),
            NoiseSample.kind == config.noise,
            NoiseSample.tokenizer == config.noise_tokenizer_name(),
            NoiseSample.seed == config.seed)
        for t, n, text in session.execute(stmt).all():
            found[t] = (n, text)
    return found


def _progress(total: int, desc: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="item", disable=not enabled, file=sys.stderr,
                dynamic_ncols=True)


def score_configuration(config: ScoringConfig, url: Optional[str] = None, *,
                        progress: bool = True, retry_errors: bool = False,
                        chunk_size: Optional[int] = None, executor=None,
                        retries: int = 2) -> RunSummary:
    """Score the selected generations (or their noise) under ``config`` and store the scores.
    ``executor`` (metrics.executors) scores the chunks in worker processes or on Ray; the
    scores are still written here, once per chunk."""
    from db import session_scope
    from db.models import MetricScore

    config = config.validated()
    if not config.is_lexical:
        scorer = get_scorer(config)  # fail fast on an unknown model, before creating a run
        if getattr(scorer, "backend", config.backend) != config.backend:  # onnx fell back
            config = replace(config, backend=scorer.backend)  # store under what really runs
    run_id, params = _get_or_create_run(url, config)
    summary = RunSummary(run_id, config.signature())
    with session_scope(url) as session:
        rows = _select_rows(session, config)
    noise = config.noise != "none"
    if noise:  # one noise sample per target: the first generation row stands for its target
        seen, unique = set(), []
        for row in rows:
            if row.target_id not in seen:
                seen.add(row.target_id)
                unique.append(row)
        rows = unique
    if config.limit:
        rows = rows[:config.limit]
    summary.selected = len(rows)
    if not rows:
        return summary

    setup, new_params = prepare_setup(config, _references(url, config, rows), params)
    if new_params != params:
        _store_params(url, run_id, new_params)

    noise_of = _ensure_noise(url, config, rows, summary, progress) if noise else {}
    subject_col = MetricScore.noise_sample_id if noise else MetricScore.generation_id
    with session_scope(url) as session:
        if retry_errors:
            session.execute(delete(MetricScore).where(MetricScore.run_id == run_id,
                                                      MetricScore.error.is_not(None)))
        done = set(session.execute(select(subject_col).where(
            MetricScore.run_id == run_id, subject_col.is_not(None))).scalars())

    def subject_of(row: _Row) -> Optional[int]:
        if not noise:
            return row.generation_id
        return noise_of[row.target_id][0] if row.target_id in noise_of else None

    todo = [r for r in rows if subject_of(r) is not None and subject_of(r) not in done]
    summary.skipped = sum(1 for r in rows if subject_of(r) in done)
    needs_content = config.context == "full"
    size = chunk_size or max(64, (config.batch_size or 64) * 4)
    bar = _progress(len(todo), config.metric, progress)

    def item_chunks():
        for i in range(0, len(todo), size):
            chunk = todo[i:i + size]
            with session_scope(url) as session:
                contents = _file_contents(session, [r.source_file_id for r in chunk]) \
                    if needs_content else {}
            yield [ScoringItem("noise" if noise else "generation", subject_of(r), r.target_id,
                               noise_of[r.target_id][1] if noise else r.prediction, r.reference,
                               r.lang, contents.get(r.source_file_id), r.span) for r in chunk]

    from metrics.executors import score_chunks

    for items, scores, failure in score_chunks(config, setup, item_chunks(), executor,
                                               retries=retries, key=f"run{run_id}"):
        if scores is None:  # nothing stored for these: the next run picks them up
            summary.unscored += len(items)
            summary.error_examples.append(f"{len(items)} items: worker failed: "
                                          f"{failure.splitlines()[-1]}")
            bar.update(len(items))
            continue
        _insert_scores(url, run_id, items, scores, noise)
        summary.scored += len(items)
        for item, score in zip(items, scores):
            if score.error:
                summary.errors += 1
                if len(summary.error_examples) < 5:
                    summary.error_examples.append(f"{item.subject} {item.subject_id}: "
                                                  f"{score.error}")
        bar.update(len(items))
    bar.close()
    return summary


def _score_row(run_id: int, item: ScoringItem, score, noise: bool):
    from db.models import MetricScore

    return MetricScore(run_id=run_id,
                       generation_id=None if noise else item.subject_id,
                       noise_sample_id=item.subject_id if noise else None,
                       precision=_finite(score.precision), recall=_finite(score.recall),
                       f=_finite(score.f), error=score.error, details=dict(score.details))


def _insert_scores(url, run_id: int, items, scores, noise: bool) -> None:
    from db import session_scope
    from db.models import MetricScore

    try:
        with session_scope(url) as session:
            session.add_all([_score_row(run_id, it, sc, noise) for it, sc in zip(items, scores)])
    except IntegrityError:  # a concurrent runner stored some of these: add only the rest
        col = MetricScore.noise_sample_id if noise else MetricScore.generation_id
        with session_scope(url) as session:
            done = set(session.execute(select(col).where(
                MetricScore.run_id == run_id,
                col.in_([it.subject_id for it in items]))).scalars())
            session.add_all([_score_row(run_id, it, sc, noise) for it, sc in zip(items, scores)
                             if it.subject_id not in done])


def score_grid(configs: Sequence[ScoringConfig], url: Optional[str] = None, *,
               progress: bool = True, retry_errors: bool = False, executor=None,
               retries: int = 2) -> list[RunSummary]:
    """Score several configurations in turn (models stay loaded between them)."""
    return [score_configuration(c, url, progress=progress, retry_errors=retry_errors,
                                executor=executor, retries=retries)
            for c in configs]


def build_parser() -> argparse.ArgumentParser:
    from db import add_database_argument
    from metrics.runner import METRICS

    parser = argparse.ArgumentParser(
        prog="python -m metrics.score",
        description="Score generations (or noise controls) with a metric and store the scores.")
    parser.add_argument("--metric", help=f"one of: {', '.join(METRICS)}")
    parser.add_argument("--model", help="HF id or local folder (neural metrics; default: "
                                        "e5-small for bertscore, SmolLM2 for lmscore)")
    parser.add_argument("--layer", type=int, help="bertscore: use the output of this layer "
                                                  "(default: last)")
    parser.add_argument("--context", default="none", help="none | minimal | full")
    parser.add_argument("--noise", default="none", help="none | uniform | targeted")
    parser.add_argument("--seed", type=int, default=0, help="noise / baseline seed")
    parser.add_argument("--lang", action="append", default=[],
                        help="only these natural languages (repeatable)")
    parser.add_argument("--dataset", help="only this dataset (by name)")
    parser.add_argument("--limit", type=int, help="score at most N items")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--idf", action="store_true", help="bertscore: idf weighting")
    parser.add_argument("--rescale", default="none",
                        help="bertscore baseline: none | package (bert-score's files) | corpus "
                             "(computed from unrelated reference pairs)")
    parser.add_argument("--bleu-tokenize", default="comment", help="comment | sacrebleu")
    parser.add_argument("--device", help="cpu | cuda | cuda:1 (default: cuda if available)")
    parser.add_argument("--dtype", help="float32 | float16 (GPU) | bfloat16: bertscore "
                        "in half precision, faster and less exact (default float16 on GPU)")
    parser.add_argument("--backend", help="bertscore encoder: torch | onnx (ONNX Runtime, CPU, "
                        "float32; default onnx there when onnxruntime is installed, else torch)")
    parser.add_argument("--grid", metavar="FILE.yaml", help="run every configuration in a grid")
    parser.add_argument("--retry-errors", action="store_true",
                        help="re-score items whose stored score is an error")
    parser.add_argument("--no-progress", action="store_true")
    add_database_argument(parser)
    from metrics.executors import add_executor_arguments

    add_executor_arguments(parser)  # --executor inprocess|process|ray, --workers, --address
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    from metrics.hub import ModelUnavailableError

    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.grid:
            if args.metric:
                parser.error("give either --metric or --grid, not both")
            configs = load_grid(args.grid)
        elif args.metric:
            configs = [ScoringConfig(
                metric=args.metric, model=args.model, layer=args.layer, context=args.context,
                noise=args.noise, seed=args.seed, idf=args.idf, rescale=args.rescale,
                bleu_tokenize=args.bleu_tokenize, dtype=args.dtype, backend=args.backend,
                device=args.device,
                batch_size=args.batch_size, langs=tuple(args.lang), limit=args.limit,
                dataset=args.dataset).validated()]
        else:
            parser.error("give --metric (see --help) or --grid FILE.yaml")
        status = 0
        from metrics.executors import ExecutorError, executor_from_args

        try:
            executor = executor_from_args(args)  # checks the flags even for inprocess
            executor = None if args.executor == "inprocess" else executor  # the plain loop
        except ExecutorError as exc:
            parser.error(str(exc))
        for config in configs:
            try:
                summary = score_configuration(config, args.db, progress=not args.no_progress,
                                              retry_errors=args.retry_errors, executor=executor,
                                              retries=args.retries)
            except (ConfigError, ModelUnavailableError, ValueError, OSError) as exc:
                print(f"error: {config.metric} ({config.model or 'lexical'}): {exc}",
                      file=sys.stderr)
                status = 2
                continue
            print(f"{config.metric} ctx={config.context} noise={config.noise}: {summary.line()}")
            print(f"  signature: {summary.signature}")
            for example in summary.error_examples[:3]:
                print(f"  e.g. {example}")
            if summary.unscored:
                status = 1
        if executor is not None:
            executor.close()
        return status
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
