"""metrics/runner.py and metrics/score.py: runs stored, resumed and reused, and the CLI
(configurations: test_config.py; the pure scoring step: test_core.py)."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

from metrics.config import ScoringConfig
from metrics.runner import score_configuration, score_grid
from metrics.score import main
from testing.cli import as_command


def _count(url, model, **where):
    from db import session_scope

    with session_scope(url) as session:
        stmt = select(func.count()).select_from(model)
        for key, value in where.items():
            stmt = stmt.where(getattr(model, key) == value)
        return session.execute(stmt).scalar_one()


# ---------------------------------------------------------------- the database shell

def test_run_is_stored_resumable_and_idempotent(any_scoring_db):
    from db.models import MetricRun, MetricScore

    url = any_scoring_db
    config = ScoringConfig(metric="bleu", limit=4)
    first = score_configuration(config, url, progress=False)
    assert (first.selected, first.scored, first.skipped) == (4, 4, 0)
    assert first.errors == 0  # nl's "   " is an empty prediction: the metric's floor, 0
    # an interrupted run resumed: the rest is scored, the first four are skipped
    second = score_configuration(ScoringConfig(metric="bleu"), url, progress=False)
    assert second.run_id == first.run_id
    assert (second.selected, second.scored, second.skipped) == (10, 6, 4)
    assert second.errors == 0
    third = score_configuration(ScoringConfig(metric="bleu"), url, progress=False)
    assert (third.scored, third.skipped) == (0, 10)
    assert _count(url, MetricScore, run_id=first.run_id) == 10
    assert _count(url, MetricRun) == 1
    from db import session_scope

    with session_scope(url) as session:
        run = session.get(MetricRun, first.run_id)
        assert run.signature == first.signature and run.metric == "bleu"
        assert run.library_versions["sacrebleu"]
        floors = session.execute(select(MetricScore.f, MetricScore.error).where(
            MetricScore.details["empty_prediction"].as_boolean().is_(True))).all()
        assert floors == [(0.0, None)]
    from test_run_outcomes import _add_target  # an item that fails: Thai has no tokenizer here

    _add_target(url, "th", "x = 1\n# สวัสดี\n", "# สวัสดี", predictions=("# สวัสดี",))
    fourth = score_configuration(ScoringConfig(metric="bleu"), url, progress=False)
    assert (fourth.scored, fourth.errors) == (1, 1) and "Thai" in fourth.error_examples[0]
    retried = score_configuration(ScoringConfig(metric="bleu"), url, progress=False,
                                  retry_errors=True)
    assert retried.scored == 1 and retried.errors == 1


def test_noise_samples_are_stored_and_reused(scoring_db):
    from db.models import MetricScore, NoiseSample

    url = scoring_db
    runs = score_grid([ScoringConfig(metric="rouge_l", noise="uniform"),
                       ScoringConfig(metric="chrf", noise="uniform"),
                       ScoringConfig(metric="rouge_l", noise="targeted")], url, progress=False)
    assert [r.noise_created for r in runs] == [5, 0, 5]  # chrf reuses rouge_l's uniform noise
    assert all(r.scored == 5 and r.errors == 0 for r in runs)
    assert _count(url, NoiseSample) == 10
    assert _count(url, MetricScore, run_id=runs[0].run_id) == 5
    again = score_configuration(ScoringConfig(metric="rouge_l", noise="uniform"), url,
                                progress=False)
    assert (again.noise_created, again.scored, again.skipped) == (0, 0, 5)
    other_seed = score_configuration(ScoringConfig(metric="rouge_l", noise="uniform", seed=1),
                                     url, progress=False)
    assert other_seed.noise_created == 5 and other_seed.run_id != runs[0].run_id


@pytest.mark.slow
def test_bertscore_full_context_run(scoring_db, e5_small_encoder):
    import hashlib

    from db import session_scope
    from db.models import Generation, MetricRun, MetricScore, SourceFile, Target

    with session_scope(scoring_db) as session:  # a second Greek target: el gets a baseline
        content = "def f(x):\n    # Επιστρέφει το μήκος της λίστας\n    return len(x)\n"
        f = SourceFile(dataset_id=1, natural_language="el", path="el2.py", content=content,
                       content_sha256=hashlib.sha256(content.encode()).hexdigest())
        session.add(f)
        session.flush()
        start = content.index("#")
        t = Target(source_file_id=f.id, span_start=start, span_end=content.index("\n", start),
                   original_comment=content[start:content.index("\n", start)])
        session.add(t)
        session.flush()
        session.add(Generation(target_id=t.id, model="model-0", predicted_comment="# Μήκος"))
    config = ScoringConfig(metric="bertscore", layer=9, context="full", langs=("zh", "el"),
                           device="cpu", rescale="corpus")
    summary = score_configuration(config, scoring_db, progress=False)
    assert (summary.selected, summary.scored, summary.errors) == (5, 5, 2)
    assert all("no rescaling baseline for language 'zh'" in e for e in summary.error_examples)
    with session_scope(scoring_db) as session:
        rows = session.execute(select(MetricScore).where(MetricScore.error.is_(None))
                               ).scalars().all()
        assert len(rows) == 3
        assert all(r.f is not None and -2 < r.f <= 1.0 for r in rows)
        assert all(len(r.details["raw"]) == 3 for r in rows)  # rescaled; raw kept
        params = session.get(MetricRun, summary.run_id).params
        assert set(params["baselines"]) == {"el"}
        assert params["model_provenance"].startswith("intfloat/multilingual-e5-small")


# ---------------------------------------------------------------- the CLI

def test_cli_clear_errors(capsys, db_url, scoring_db):
    assert as_command(main, "python -m metrics.score")(["--metric", "blue", "--db", db_url]) == 2
    assert "unknown metric 'blue'" in capsys.readouterr().err
    assert main(["--metric", "bertscore", "--model", "no-such-org/no-such-model",
                 "--db", scoring_db]) == 2
    err = capsys.readouterr().err
    assert "no-such-org/no-such-model" in err and "offline" in err


def test_cli_grid(tmp_path, scoring_db, capsys):
    grid = tmp_path / "grid.yaml"
    grid.write_text("defaults:\n  langs: [pl, nl]\nruns:\n  - metric: [bleu, meteor]\n",
                    encoding="utf-8")
    assert main(["--grid", str(grid), "--db", scoring_db, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count("4 selected") == 2 and "signature: metric:meteor" in out
