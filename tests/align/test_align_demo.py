"""`python -m align --demo`: the demo grid fits the scoring runner's contract, the demo
database is built when missing, and scoring is skipped when the demo scores are there."""
from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console
from sqlalchemy import select
from sqlmodel import Session

from align.__main__ import main
from align.demo import DEMO_CONTEXTS, demo_grid, prepare_demo
from db import get_engine
from db.models import Generation, MetricRun, MetricScore


def test_demo_grid_is_accepted_by_the_scoring_runner():
    runner = pytest.importorskip("metrics.config")
    configs = [runner.ScoringConfig(**config).validated() for config in demo_grid()]
    assert {c.context for c in configs if c.metric == "bertscore"} == set(DEMO_CONTEXTS)
    assert {c.noise for c in configs} == {"none", "uniform", "targeted"}


def test_demo_builds_the_database_and_aligns_existing_scores(db_url, tmp_path, capsys):
    pytest.importorskip("db.demo")
    from db.demo import ensure_demo_database

    ensure_demo_database(db_url)
    rng = np.random.default_rng(0)
    with Session(get_engine(db_url)) as session:
        generations = list(session.execute(select(Generation.id)).scalars())
        runs = [MetricRun(signature="demo-test|bleu", metric="bleu")] + [
            MetricRun(signature=f"demo-test|bertscore|{c}", metric="bertscore",
                      model="intfloat/multilingual-e5-small", context=c) for c in DEMO_CONTEXTS]
        session.add_all(runs)
        session.flush()
        for run in runs:
            session.add_all([MetricScore(run_id=run.id, generation_id=g, f=float(rng.random()))
                             for g in generations])
        session.commit()
    console = Console(file=open(tmp_path / "log.txt", "w"), width=120)
    prepare_demo(db_url, console)  # nothing to score: no model is loaded
    console.file.close()
    assert "demo scores already there" in (tmp_path / "log.txt").read_text()
    out = tmp_path / "report"
    assert main(["--demo", "--db", db_url, "--out", str(out), "--no-figures", "--bootstrap",
                 "0", "--slice", "all"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "aligned 4 metric configuration(s) on 125 of 125 labelled generations" in printed
    assert (out / "report.html").is_file()
