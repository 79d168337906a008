"""A metric grid (configurations x generations) scored on any executor and stored once.

Three layers, kept apart so that workers never touch the database:

- `GridConfig` (one metric configuration: metric, model, layer, context) and `score_batch(config,
  items)`, the pure per-batch scoring function a worker runs: plain dicts in, plain dicts out.
  Lexical metrics come from `metrics.lexical`, BERTScore from `metrics.bertscore` with the
  encoder loaded once per worker process (`metrics.hub` memoises it; `prepare_config` warms it).
- `plan_shards` (driver, reads the DB): one `MetricRun` per configuration (found or created by
  its signature), the generations that run has no score for yet, cut into batches. A re-run
  therefore only plans what is missing: it resumes, and a finished grid plans nothing.
- `write_scores` (driver): one transaction per finished shard; rows already there are skipped, so
  writing twice changes nothing.

    python -m metrics.grid --db URL --metric bleu --metric bertscore --context none \\
        --executor ray --address auto --batch-size 256

The metrics package's runner (`python -m metrics.score`) can hand its own per-batch function to
the same executors (`metrics.executors.run_shards`).
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Iterable, Optional, Sequence

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

DEFAULT_ENCODER = "intfloat/multilingual-e5-small"
NEURAL_METRICS = ("bertscore",)
DEFAULT_SCORER = "metrics.grid:score_batch"


class GridError(ValueError):
    """A grid that cannot run (unknown metric, bad layer, context a metric cannot use)."""


def lexical_metric_names() -> tuple[str, ...]:
    from metrics.lexical import LEXICAL_METRICS

    return tuple(LEXICAL_METRICS)


@dataclass(frozen=True)
class GridConfig:
    """One metric configuration of the grid (plain data; travels to workers as a dict)."""
    metric: str
    model: str = ""
    layer: Optional[int] = None
    context: str = "none"

    def __post_init__(self):
        from metrics.context import ContextVariant

        known = lexical_metric_names() + NEURAL_METRICS
        if self.metric not in known:
            raise GridError(f"unknown metric {self.metric!r}; choose one of {', '.join(known)}")
        context = ContextVariant.parse(self.context).value
        object.__setattr__(self, "context", context)
        if self.metric in NEURAL_METRICS:
            object.__setattr__(self, "model", self.model or DEFAULT_ENCODER)
            if self.layer is not None and int(self.layer) < 1:
                raise GridError(f"{self.metric}: layer must be >= 1, got {self.layer}")
        else:
            if context != "none":
                raise GridError(f"{self.metric} is lexical: it reads no context (got "
                                f"context {context!r}; use none)")
            object.__setattr__(self, "model", "")
            object.__setattr__(self, "layer", None)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "GridConfig":
        unknown = set(data) - {"metric", "model", "layer", "context"}
        if unknown:
            raise GridError(f"grid configuration {data}: unknown field(s) {sorted(unknown)}")
        return cls(**data)

    def signature(self) -> str:
        """Everything needed to reproduce the scores, sacrebleu-style."""
        if self.metric not in NEURAL_METRICS:
            from metrics.lexical import LEXICAL_SIGNATURES

            return f"{self.metric}|{LEXICAL_SIGNATURES[self.metric]()}"
        return (f"{self.metric}|model:{self.model}|layer:{self.layer or 'last'}|"
                f"context:{self.context}|idf:no|rescale:no|transformers:{_version('transformers')}"
                f"|torch:{_version('torch')}")


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


# ------------------------------------------------------------------------------ worker side

@lru_cache(maxsize=8)
def _bert_scorer(model: str, layer: Optional[int]):
    from metrics.bertscore import BertScorer

    return BertScorer.from_pretrained(model, layer)  # the encoder itself is memoised by hub


def prepare_config(config: dict) -> None:
    """Load what a configuration needs, once per worker process."""
    if config["metric"] in NEURAL_METRICS:
        _bert_scorer(config["model"], config.get("layer"))


def _score_dict(generation_id: int, score) -> dict:
    return dict(generation_id=generation_id, precision=score.precision, recall=score.recall,
                f=score.f, error=score.error, details=score.details)


def score_batch(config: dict, items: Sequence[dict]) -> list[dict]:
    """Scores of one batch under one configuration, one dict per item, in order.

    An item is ``{generation_id, prediction, reference, lang}`` plus ``file`` and ``span`` for
    context ``full``. An item that cannot be scored gets ``error`` instead of numbers; the batch
    goes on."""
    from metrics.scores import MetricInputError, PairScore

    metric = config["metric"]
    if metric not in NEURAL_METRICS:
        from metrics.lexical import LEXICAL_METRICS

        function = LEXICAL_METRICS[metric]
        out = []
        for item in items:
            try:
                score = function(item["prediction"], item["reference"], item["lang"])
            except (MetricInputError, ValueError) as error:
                score = PairScore.failed(str(error))
            out.append(_score_dict(item["generation_id"], score))
        return out

    from metrics.context import ContextVariant, build_segment

    variant = ContextVariant.parse(config["context"])
    scorer = _bert_scorer(config["model"], config.get("layer"))
    predictions, references, errors = [], [], {}
    for i, item in enumerate(items):
        span = tuple(item["span"]) if item.get("span") is not None else None
        try:
            predictions.append(build_segment(item["prediction"], variant, item["lang"],
                                             item.get("file"), span))
            references.append(build_segment(item["reference"], variant, item["lang"],
                                            item.get("file"), span))
        except MetricInputError as error:
            errors[i] = str(error)
    scored = iter(scorer.score_segments(predictions, references,
                                        match_special=variant is ContextVariant.NONE))
    return [_score_dict(item["generation_id"],
                        PairScore.failed(errors[i]) if i in errors else next(scored))
            for i, item in enumerate(items)]


# ------------------------------------------------------------------------------ driver: DB

def ensure_run(session, config: GridConfig) -> int:
    """The id of the MetricRun of this configuration, created if missing (race-safe)."""
    from db.models import MetricRun

    signature = config.signature()
    for _ in range(3):
        found = session.execute(select(MetricRun.id).where(MetricRun.signature == signature)
                                ).scalar()
        if found is not None:
            return found
        run = MetricRun(signature=signature, metric=config.metric, model=config.model,
                        layer=config.layer, tokenizer=_tokenizer_name(config),
                        context=config.context, noise="none", params=config.to_dict(),
                        library_versions={d: _version(d) for d in
                                          ("sacrebleu", "rouge-score", "nltk", "transformers",
                                           "torch")})
        try:
            with session.begin_nested():
                session.add(run)
            return run.id
        except IntegrityError:
            continue  # another driver created it meanwhile
    raise GridError(f"could not create the metric run {signature!r}")


def _tokenizer_name(config: GridConfig) -> str:
    if config.metric in NEURAL_METRICS:
        return config.model
    from metrics.tokenize import family_signature

    return family_signature()


def load_items(session, *, full_context: bool, generation_ids: Iterable[int] | None = None,
               languages: Sequence[str] | None = None) -> list[dict]:
    """Every generation with a predicted comment, as items (file text only for context full)."""
    from db.models import Generation, SourceFile, Target

    columns = [Generation.id, Generation.predicted_comment, Target.original_comment,
               SourceFile.natural_language]
    if full_context:
        columns += [SourceFile.content, Target.span_start, Target.span_end]
    query = (select(*columns).join(Target, Generation.target_id == Target.id)
             .join(SourceFile, Target.source_file_id == SourceFile.id).order_by(Generation.id))
    if generation_ids is not None:
        query = query.where(Generation.id.in_(list(generation_ids)))
    if languages:
        query = query.where(SourceFile.natural_language.in_(list(languages)))
    items = []
    for row in session.execute(query):
        item = dict(generation_id=row[0], prediction=row[1] or "", reference=row[2] or "",
                    lang=row[3])
        if full_context:
            item.update(file=row[4], span=(row[5], row[6]))
        items.append(item)
    return items


def stored_generation_ids(session, run_id: int) -> set[int]:
    from db.models import MetricScore

    return set(session.execute(select(MetricScore.generation_id)
                               .where(MetricScore.run_id == run_id,
                                      MetricScore.generation_id.is_not(None))).scalars())


def plan_shards(url: str, configs: Sequence[GridConfig], *, batch_size: int = 256,
                generation_ids: Iterable[int] | None = None,
                languages: Sequence[str] | None = None) -> tuple[list, dict]:
    """Shards for everything not yet stored, and {run_id: (config, n_items, n_already_stored)}.

    Shard config dicts carry `run_id` so the driver knows where to write."""
    from db import session_scope
    from metrics.executors import Shard

    if batch_size < 1:
        raise GridError(f"batch size must be at least 1, got {batch_size}")
    shards, runs = [], {}
    wanted = None if generation_ids is None else sorted(set(generation_ids))
    with session_scope(url) as session:
        cache: dict[bool, list[dict]] = {}
        for config in configs:
            full = config.context == "full"
            if full not in cache:
                cache[full] = load_items(session, full_context=full, generation_ids=wanted,
                                         languages=languages)
            run_id = ensure_run(session, config)
            done = stored_generation_ids(session, run_id)
            todo = [item for item in cache[full] if item["generation_id"] not in done]
            runs[run_id] = (config, len(cache[full]), len(cache[full]) - len(todo))
            payload = dict(config.to_dict(), run_id=run_id)
            for start in range(0, len(todo), batch_size):
                batch = tuple(todo[start:start + batch_size])
                key = (f"run{run_id}:{config.metric}:g{batch[0]['generation_id']}-"
                       f"{batch[-1]['generation_id']}")
                shards.append(Shard(key, payload, batch))
    return shards, runs


def write_scores(url: str, run_id: int, scores: Sequence[dict]) -> int:
    """Store one shard's scores in one transaction; rows already stored are left alone.
    Returns how many rows were written."""
    from db import session_scope
    from db.models import MetricScore

    with session_scope(url) as session:
        ids = [s["generation_id"] for s in scores]
        present = set(session.execute(select(MetricScore.generation_id).where(
            MetricScore.run_id == run_id, MetricScore.generation_id.in_(ids))).scalars())
        rows = [MetricScore(run_id=run_id, generation_id=s["generation_id"],
                            precision=s["precision"], recall=s["recall"], f=s["f"],
                            error=s["error"], details=_jsonable(s["details"]))
                for s in scores if s["generation_id"] not in present]
        session.add_all(rows)
    return len(rows)


def _jsonable(details: dict) -> dict:
    return json.loads(json.dumps(details or {}, default=str))


def stored_scores(url: str, run_ids: Iterable[int] | None = None) -> dict:
    """{(signature, generation_id): (P, R, F, error)} of what is stored (tests, comparisons)."""
    from db import session_scope
    from db.models import MetricRun, MetricScore

    query = (select(MetricRun.signature, MetricScore.generation_id, MetricScore.precision,
                    MetricScore.recall, MetricScore.f, MetricScore.error)
             .join(MetricRun, MetricScore.run_id == MetricRun.id))
    if run_ids is not None:
        query = query.where(MetricRun.id.in_(list(run_ids)))
    with session_scope(url) as session:
        return {(r[0], r[1]): tuple(r[2:]) for r in session.execute(query)}


# ------------------------------------------------------------------------------ driver: run

def run_grid(url: str, configs: Sequence[GridConfig], executor, *, batch_size: int = 256,
             retries: int = 2, scorer: str = DEFAULT_SCORER, show_progress: bool = True,
             generation_ids: Iterable[int] | None = None,
             languages: Sequence[str] | None = None):
    """Plan what is missing, score it on `executor`, write each shard once. Returns
    (GridReport, runs) where runs is plan_shards' summary."""
    from metrics.executors import run_shards

    shards, runs = plan_shards(url, configs, batch_size=batch_size,
                               generation_ids=generation_ids, languages=languages)
    total = sum(len(s) for s in shards)
    bar = None
    if show_progress and total:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="item", desc=f"scoring on {executor.name}", file=sys.stderr)

    def store(result) -> None:
        write_scores(url, result.shard.config["run_id"], result.scores)

    def failed(shard, message, attempt) -> None:
        line = message.splitlines()[-1] if message else "?"
        (bar.write if bar else print)(f"shard {shard.key} failed (attempt {attempt}): {line}",
                                      file=sys.stderr)

    try:
        report = run_shards(shards, scorer, executor, on_result=store, retries=retries,
                            progress=(lambda r: bar.update(len(r.shard))) if bar else None,
                            on_failure=failed)
    finally:
        if bar is not None:
            bar.close()
    return report, runs


def configs_from_args(args) -> list[GridConfig]:
    """Grid file entries, plus the product of --metric x --context (x --layer for neural)."""
    configs: list[GridConfig] = []
    if args.grid:
        path = Path(args.grid)
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise GridError(f"grid file {path}: {error}") from error
        if not isinstance(entries, list):
            raise GridError(f"grid file {path}: expected a JSON list of configurations")
        for n, entry in enumerate(entries, 1):
            try:
                configs.append(GridConfig.from_dict(entry))
            except (GridError, ValueError, TypeError) as error:
                raise GridError(f"grid file {path}, entry {n}: {error}") from error
    contexts = args.context or ["none"]
    for metric in args.metric or []:
        if metric in NEURAL_METRICS:
            for context, layer in itertools.product(contexts, args.layer or [None]):
                configs.append(GridConfig(metric, args.model or "", layer, context))
        else:
            configs.append(GridConfig(metric))
    if not configs:
        raise GridError("nothing to score: give --metric (repeatable) or --grid FILE")
    return list(dict.fromkeys(configs))


def main(argv: list[str] | None = None) -> int:
    from db.engine import add_database_argument, resolve_url
    from metrics.executors import ExecutorError, add_executor_arguments, executor_from_args

    parser = argparse.ArgumentParser(prog="python -m metrics.grid", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    add_database_argument(parser)
    parser.add_argument("--metric", action="append", help="bleu, rouge_l, meteor, chrf, "
                        "bertscore (repeatable)")
    parser.add_argument("--model", default=None, help=f"encoder for bertscore "
                        f"(default {DEFAULT_ENCODER})")
    parser.add_argument("--layer", type=int, action="append", help="bertscore layer(s)")
    parser.add_argument("--context", action="append", choices=("none", "minimal", "full"),
                        help="context variant(s) for neural metrics (default none)")
    parser.add_argument("--grid", help="JSON list of {metric, model, layer, context}")
    parser.add_argument("--lang", action="append", help="only these natural languages")
    parser.add_argument("--batch-size", type=int, default=256,
                        help="generations per shard (default 256)")
    add_executor_arguments(parser)
    args = parser.parse_args(argv)
    try:
        configs = configs_from_args(args)
        executor = executor_from_args(args)
        url = resolve_url(args.db)
        report, runs = run_grid(url, configs, executor, batch_size=args.batch_size,
                                retries=args.retries, languages=args.lang)
    except (GridError, ExecutorError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        if "executor" in locals():
            executor.close()
    for run_id, (config, n_items, n_before) in runs.items():
        print(f"run {run_id} {config.metric} {config.model or ''} layer={config.layer} "
              f"context={config.context}: {n_items} items, {n_before} already stored")
    rate = report.items / report.wall_s if report.wall_s else 0.0
    print(f"{executor.describe()}: scored {report.items} items in {len(report.done)} shards in "
          f"{report.wall_s:.1f}s ({rate:.1f} items/s; start-up {report.start_s:.1f}s), "
          f"{sum(report.retried.values())} failed attempt(s), {len(report.failed)} shard(s) "
          f"failed")
    for key, message in report.failed.items():
        print(f"FAILED {key}: {message.splitlines()[-1] if message else '?'}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
