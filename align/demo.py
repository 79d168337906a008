"""`python -m align --demo`: demo database -> demo scores -> alignment, offline.

1. `db.demo.ensure_demo_database(url)` builds the demo dataset if it is missing.
2. `metrics.runner.score_grid(DEMO_GRID, url=url)` scores it (resumable: finished scores are
   kept); skipped when every demo configuration already has scores.
3. The caller aligns and writes the report.
"""
from __future__ import annotations

from typing import Any

DEMO_ENCODER = "intfloat/multilingual-e5-small"
DEMO_CONTEXTS = ("none", "minimal", "full")


def demo_grid() -> list[dict[str, Any]]:
    """The demo's metric configurations: the lexical metrics, BERTScore with the offline e5
    encoder at every context variant, and both noise controls for each."""
    grid: list[dict[str, Any]] = []
    for metric in ("bleu", "rouge_l", "meteor", "chrf"):
        grid.append({"metric": metric})
        grid.append({"metric": metric, "noise": "uniform"})
        grid.append({"metric": metric, "noise": "targeted"})
    for context in DEMO_CONTEXTS:
        grid.append({"metric": "bertscore", "model": DEMO_ENCODER, "context": context})
    grid.append({"metric": "bertscore", "model": DEMO_ENCODER, "context": "none",
                 "noise": "uniform"})
    grid.append({"metric": "bertscore", "model": DEMO_ENCODER, "context": "none",
                 "noise": "targeted"})
    return grid


def _has_scores(url: str) -> bool:
    from sqlalchemy import func, select
    from sqlmodel import Session

    from db.engine import get_engine
    from db.models import MetricRun, MetricScore

    with Session(get_engine(url)) as session:
        contexts = set(session.execute(
            select(MetricRun.context).join(MetricScore, MetricScore.run_id == MetricRun.id)
            .where(MetricRun.metric == "bertscore").distinct()).scalars())
        lexical = session.execute(select(func.count()).select_from(MetricRun)
                                  .where(MetricRun.metric == "bleu")).scalar_one()
    return lexical > 0 and set(DEMO_CONTEXTS) <= contexts


def prepare_demo(url: str, console) -> int:
    """Steps 1 and 2; returns 0 when alignment can go on, else an exit code (message printed)."""
    try:
        from db.demo import ensure_demo_database
    except ImportError as error:
        console.print(f"[red]error:[/red] the demo dataset builder (db.demo) is not available: "
                      f"{error}")
        return 3
    from db.engine import shown_url

    console.print(f"demo database: {shown_url(url)}")
    ensure_demo_database(url)
    if _has_scores(url):
        console.print("demo scores already there; aligning")
        return 0
    try:
        from metrics.config import ConfigError, ScoringConfig
        from metrics.runner import score_grid
    except ImportError as error:
        console.print("[red]error:[/red] the scoring runner (metrics.runner.score_grid) is not "
                      f"available yet, so the demo cannot compute its scores: {error}. "
                      "Score the database with `python -m metrics.score` and run "
                      "`python -m align` without --demo.")
        return 3
    console.print(f"scoring the demo grid ({len(demo_grid())} configurations; offline models; "
                  f"finished scores are kept if interrupted)")
    try:
        score_grid([ScoringConfig(**config) for config in demo_grid()], url=url)
    except ConfigError as error:
        console.print(f"[red]error:[/red] the scoring runner rejected the demo grid: {error}")
        return 3
    return 0
