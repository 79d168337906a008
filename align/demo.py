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


def prepare_demo(url: str, console) -> None:
    """Steps 1 and 2: the demo database, then its scores unless they are there already."""
    from db.demo import ensure_demo_database
    from db.engine import shown_url
    from metrics.config import ScoringConfig
    from metrics.runner import score_grid

    console.print(f"demo database: {shown_url(url)}")
    ensure_demo_database(url)
    if _has_scores(url):
        console.print("demo scores already there; aligning")
        return
    console.print(f"scoring the demo grid ({len(demo_grid())} configurations; offline models; "
                  f"finished scores are kept if interrupted)")
    score_grid([ScoringConfig(**config) for config in demo_grid()], url=url)
