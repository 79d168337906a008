"""`python -m metrics.score`: score every generation (or its noise controls) and store the scores.

    python -m metrics.score --metric bertscore --model intfloat/multilingual-e5-small --layer 9 \\
        --context full --noise none [--lang zh --lang el] [--batch-size 64] [--limit 100]
    python -m metrics.score --grid grid.yaml [--db URL]

The command line only: configurations are `metrics.config`, the run is `metrics.runner`
(Python API: ``score_configuration(config, url=...)``, ``score_grid(configs, url=...)``).
Each configuration is one MetricRun (unique signature). Re-running skips every generation or noise
sample the run already has a score for (errors included; ``--retry-errors`` re-scores those).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from metrics import options
from metrics.config import ScoringConfig, load_grid
from metrics.runner import score_configuration
from nlce.cli import EXIT_ERROR, EXIT_NOTHING_DONE, EXIT_OK, UserError, run_main


def build_parser() -> argparse.ArgumentParser:
    from db import add_database_argument
    from metrics.parallel import add_executor_arguments
    from metrics.registry import METRICS

    parser = argparse.ArgumentParser(
        prog="python -m metrics.score",
        description="Score generations (or noise controls) with a metric and store the scores.")
    parser.add_argument("--metric", help=f"one of: {', '.join(METRICS)} (evaluate:NAME_OR_PATH: "
                                         "a Hugging Face evaluate module)")
    parser.add_argument("--context", default="none", help="none | minimal | full")
    parser.add_argument("--noise", default="none", help="none | uniform | targeted")
    parser.add_argument("--seed", type=int, default=0, help="noise / baseline seed")
    parser.add_argument("--lang", action="append", default=[],
                        help="only these natural languages (repeatable)")
    parser.add_argument("--dataset", help="only this dataset (by name)")
    parser.add_argument("--limit", type=int, help="score at most N items")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--device", help="cpu | cuda | cuda:1 (default: cuda if available)")
    parser.add_argument("--grid", metavar="FILE.yaml", help="run every configuration in a grid")
    parser.add_argument("--retry-errors", action="store_true",
                        help="re-score items whose stored score is an error")
    parser.add_argument("--no-progress", action="store_true")
    add_database_argument(parser)
    options.add_arguments(parser)  # each metric's options (metrics.options), grouped by metric
    add_executor_arguments(parser)  # --executor inprocess|process|ray, --workers, --address
    return parser


def quiet_model_loading() -> None:
    """No progress bars from Hugging Face loaders either ("Loading weights"): the variable is
    read when transformers is imported (here, or in a spawned worker, which inherits it)."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:  # imported already: switch its bars off too
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()


def _name(config: ScoringConfig) -> str:
    return config.implementation.run_name(config)


def main(argv: Optional[Sequence[str]] = None) -> int:
    from db.engine import project_database

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.no_progress:
        quiet_model_loading()
    if args.grid:
        if args.metric:
            parser.error("give either --metric or --grid, not both")
        configs = load_grid(args.grid)
    elif args.metric:
        configs = [ScoringConfig(
            args.metric, context=args.context, noise=args.noise, seed=args.seed,
            device=args.device, batch_size=args.batch_size, langs=tuple(args.lang),
            limit=args.limit, dataset=args.dataset, **options.from_args(args)).validated()]
    else:
        parser.error("give --metric (see --help) or --grid FILE.yaml")
    status = EXIT_OK
    from metrics.parallel import ExecutorError, executor_from_args

    try:
        executor = executor_from_args(args)  # checks the flags even for inprocess
        executor = None if args.executor == "inprocess" else executor  # the plain loop
    except ExecutorError as exc:
        parser.error(str(exc))
    args.db = project_database(args.db)  # an existing project database, before any model
    warned: set[str] = set()
    for config in configs:
        try:
            summary = score_configuration(config, args.db, progress=not args.no_progress,
                                          retry_errors=args.retry_errors, executor=executor,
                                          retries=args.retries)
        except (UserError, OSError) as exc:  # this configuration cannot run; the grid goes on
            model = f" ({config.model})" if config.model else ""
            print(f"error: {_name(config)}{model}: {exc}", file=sys.stderr)
            status = EXIT_ERROR
            continue
        print(f"{_name(config)} ctx={config.context} noise={config.noise}: {summary.line()}")
        print(f"  signature: {summary.signature}")
        for example in summary.error_examples[:3]:
            print(f"  e.g. {example}")
        for warning in summary.warnings:
            if warning not in warned:  # once per command, not once per configuration
                warned.add(warning)
                print(f"warning: {warning}", file=sys.stderr)
        failure = summary.failure()
        if failure:
            print(f"error: {_name(config)} ctx={config.context} noise={config.noise}: "
                  f"{failure}", file=sys.stderr)
        if summary.unscored or failure:
            status = max(status, EXIT_NOTHING_DONE)
    if executor is not None:
        executor.close()
    return status


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m metrics.score"))
