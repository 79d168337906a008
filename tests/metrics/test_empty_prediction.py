"""A generation the model left empty is scored by a documented rule (issue 12): the floor of the
overlap and embedding metrics, an error for the likelihood metrics."""
from __future__ import annotations

import pytest
from sqlalchemy import select
from test_run_outcomes import _add_target

from metrics.config import ScoringConfig
from metrics.core import ScoringItem, score_items
from metrics.score import main


def _item(prediction: str, subject: str = "generation") -> ScoringItem:
    return ScoringItem(subject=subject, subject_id=1, target_id=1, prediction=prediction,
                       reference="Geeft de som van de lijst terug", lang="nl")


@pytest.mark.parametrize("metric", ["bleu", "chrf", "rouge_l", "meteor"])
def test_lexical_metrics_give_an_empty_prediction_their_floor(metric):
    config = ScoringConfig(metric=metric).validated()
    empty, blank, real = score_items(config, [_item(""), _item("  \n"), _item("Geeft de som")])
    for score in (empty, blank):
        assert (score.precision, score.recall, score.f, score.error) == (0.0, 0.0, 0.0, None)
        assert score.details == {"empty_prediction": True}
    assert real.f > 0 and "empty_prediction" not in real.details


def test_likelihood_metrics_keep_an_empty_prediction_as_an_error():
    from metrics.registry import METRICS

    assert METRICS["lmscore"].empty_prediction_score is None
    assert METRICS["bartscore"].empty_prediction_score is None
    assert METRICS["bertscore"].empty_prediction_score == 0.0


def test_the_runner_stores_the_floor_and_counts_it_scored(db_url, capsys):
    from db import session_scope
    from db.models import Generation, MetricScore

    _add_target(db_url, "nl", "x = 1\n# Geeft de som van de lijst terug\n",
                "# Geeft de som van de lijst terug", predictions=("", "# Geeft de som terug"))
    assert main(["--metric", "bleu", "--db", db_url, "--no-progress"]) == 0
    assert "2 scored" in capsys.readouterr().out
    with session_scope(db_url) as session:
        rows = session.execute(select(Generation.predicted_comment, MetricScore.f,
                                      MetricScore.error, MetricScore.details)
                               .join(MetricScore, MetricScore.generation_id == Generation.id)
                               ).all()
    by_text = {text: (f, error, details) for text, f, error, details in rows}
    assert by_text[""] == (0.0, None, {"empty_prediction": True})
    assert by_text["# Geeft de som terug"][0] > 0
