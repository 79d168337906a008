"""The metric registry: one class per metric, and a new metric needs nothing but its class."""
from __future__ import annotations

import pytest

import db.models
from metrics.config import ConfigError, ScoringConfig
from metrics.context import ContextVariant
from metrics.core import Metric, PairScore
from metrics.lexical import LexicalMetric
from metrics.noise import NOISE_KINDS
from metrics.registry import METRICS
from metrics.runner import score_configuration


def test_every_metric_implements_the_interface():
    assert set(METRICS) == {"bleu", "rouge_l", "meteor", "chrf", "bertscore", "bartscore",
                            "lmscore", "evaluate"}
    for name, metric in METRICS.items():
        assert isinstance(metric, Metric) and metric.name == name
        for method in ("validate", "signature", "tokenizer_name", "noise_tokenizer_name",
                       "noise_tokenizer", "score_batch"):
            assert getattr(type(metric), method) is not getattr(Metric, method), (name, method)


def test_word_lists_come_from_the_data_model():
    assert tuple(v.value for v in ContextVariant) == db.models.CONTEXT_VARIANTS
    assert ("none",) + NOISE_KINDS == db.models.NOISE_KINDS
    with pytest.raises(ConfigError, match="unknown noise 'gauss'; choose one of none, uniform"):
        ScoringConfig("bleu", noise="gauss").validated()


def _same_length(prediction, reference, lang):
    return PairScore(f=float(len(prediction.split()) == len(reference.split())))


class SameLength(LexicalMetric):
    name = "same_length"
    pair_function = _same_length

    @staticmethod
    def signature_function():
        return "same-length-v1"


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(METRICS, SameLength.name, SameLength())


def test_a_new_metric_is_one_class(registered, scoring_db):
    config = ScoringConfig("same-length", noise="uniform")
    assert config.validated().signature().startswith("metric:same_length|same-length-v1|ctx:none")
    summary = score_configuration(config, scoring_db, progress=False)
    assert (summary.selected, summary.scored, summary.errors, summary.noise_created) == (5, 5, 0, 5)
    summary = score_configuration(ScoringConfig("same_length"), scoring_db, progress=False)
    assert (summary.scored, summary.errors) == (10, 0)
    with pytest.raises(ConfigError, match="--model applies to .* only, not same_length"):
        ScoringConfig("same_length", model="x").validated()
