"""metrics/core.py: the metric interface (MetricOption, Metric), and the pure scoring step."""
from __future__ import annotations

import pytest

from metrics.config import ScoringConfig
from metrics.core import (
    PAIRS_CONTEXT_ERROR,
    Metric,
    MetricInputError,
    MetricOption,
    PairScore,
    ScoringItem,
    item_error,
    progress_to,
    report_progress,
    require_text,
    score_chunk,
    score_items,
)
from metrics.lexical import LexicalMetric
from metrics.registry import METRICS
from metrics.tokenize import UnsupportedLanguageError


def test_score_items_one_bad_item_never_aborts():
    items = [ScoringItem("generation", 1, 1, "Zwraca sumę", "Zwraca sumę", "pl"),
             ScoringItem("generation", 2, 1, "", "Zwraca sumę", "pl"),
             ScoringItem("generation", 3, 1, "สวัสดี", "สวัสดี", "th"),
             ScoringItem("generation", 4, 1, "计算总价", "计算商品总价", "zh")]
    scores = score_items(ScoringConfig(metric="rouge_l").validated(), items)
    assert scores[0].f == 1.0
    assert (scores[1].f, scores[1].error, scores[1].details) == (0.0, None,
                                                                 {"empty_prediction": True})
    assert "Thai" in scores[2].error
    assert scores[3].f == pytest.approx(2 * 1 * (4 / 6) / (1 + 4 / 6))



def test_option_keys_carry_the_metrics_prefix_unless_shared():
    assert MetricOption("tokenize").key("bleu") == "bleu_tokenize"
    assert MetricOption("layer", prefix=False).key("bertscore") == "layer"


@pytest.mark.parametrize("kwargs, message", [
    ({"type": list}, "type must be one of str, int, float, bool"),
    ({"signature": "always"}, "signature must be auto, own or none"),
    ({"type": bool, "default": True}, "a bool option is a switch, default False"),
    ({"default": "x", "choices": ("a", "b")}, "default 'x' is not a choice"),
])
def test_a_bad_declaration_fails_at_import(kwargs, message):
    with pytest.raises(TypeError, match=f"option opt: {message}"):
        MetricOption("opt", **kwargs)


class _Knobs(LexicalMetric):
    name = "knobs"
    signature_function = staticmethod(lambda: "knobs-v1")
    options = (MetricOption("width", 4, type=int), MetricOption("strict", False, type=bool),
               MetricOption("cache", "on", ("on", "off"), signature="none"),
               MetricOption("mode", "a", ("a", "b"), signature="own"))


def test_run_signature_appends_auto_options_away_from_their_default(monkeypatch):
    monkeypatch.setitem(METRICS, "knobs", _Knobs())
    default = ScoringConfig("knobs").validated()
    assert METRICS["knobs"].option_values(default) == {
        "width": 4, "strict": False, "cache": "on", "mode": "a"}
    assert METRICS["knobs"].run_signature(default) == ["knobs-v1"]
    changed = ScoringConfig("knobs", knobs_width=8, knobs_strict=True, knobs_cache="off",
                            knobs_mode="b").validated()
    # "none" is how to run only; "own" is the metric's signature()'s to write
    assert METRICS["knobs"].run_signature(changed) == ["knobs-v1", "width:8", "strict:yes"]


def test_the_base_metric_states_what_a_subclass_must_implement():
    metric = Metric()
    config = ScoringConfig("bleu")
    assert metric.validate(config) is config and metric.option_values(config) == {}
    for method in ("signature", "tokenizer_name", "noise_tokenizer_name"):
        with pytest.raises(NotImplementedError):
            getattr(metric, method)(config)
    assert metric.prepare(config) is None and not metric.needs_references(config)
    assert metric.prepare_run(config, {}, {"idf": 1}) == (None, {"idf": 1})


def test_text_checks_and_error_messages():
    assert require_text(" x ", "prediction") == " x "
    with pytest.raises(MetricInputError, match="^empty reference: nothing to score$"):
        require_text(" \n", "reference")
    with pytest.raises(MetricInputError, match="^prediction is int, not text$"):
        require_text(3, "prediction")
    assert item_error(MetricInputError("empty")) == "empty"
    assert item_error(UnsupportedLanguageError("no th")) == "no th"
    assert item_error(KeyError("k")) == "KeyError: 'k'"
    assert PairScore.failed("bad", at=3) == PairScore(error="bad", details={"at": 3})


def test_pairs_targets_refuse_a_context_per_item():
    """A pairs target (no source file) gets an error under a context variant; the others score."""
    config = ScoringConfig("bertscore", context="minimal", device="cpu").validated()
    items = [ScoringItem("generation", 1, 1, "x", "y", "en", has_source=False),
             ScoringItem("generation", 2, 2, "x", "y", "xx")]
    scores = score_items(config, items)  # both fail before any model is loaded
    assert scores[0].error == PAIRS_CONTEXT_ERROR.format(context="minimal")
    assert "xx" in scores[1].error


def test_a_worker_chunk_scores_like_this_process():
    config = ScoringConfig("chrf").validated()
    items = [ScoringItem("generation", 1, 1, "Zwraca sumę", "Zwraca sumę listy", "pl"),
             ScoringItem("noise", 2, 1, "", "Zwraca sumę", "pl")]
    assert score_chunk((config, None), items) == score_items(config, items)
    assert score_items(config, items)[1].error == "empty prediction: nothing to score"


def _pairs(n: int, lang: str = "nl") -> list[ScoringItem]:
    return [ScoringItem("generation", i, i, f"Geeft de som van lijst {i}",
                        f"Geeft de som van alle waarden {i}", lang) for i in range(n)]


def test_a_scorer_moves_the_progress_bar_before_its_call_ends():
    moved: list[int] = []
    with progress_to(moved.append):
        scores = score_items(ScoringConfig("chrf").validated(), _pairs(10))
    assert len(scores) == 10
    assert moved == [1] * 9  # per item; the runner moves the bar by the rest when the chunk ends
    report_progress(1, 2)  # outside progress_to: nobody listens, nothing happens
    with progress_to(moved.append):
        report_progress(1, 2)  # outside score_items: no items to move by
    assert moved == [1] * 9


@pytest.mark.slow  # SmolLM2 and e5-small
@pytest.mark.parametrize("metric", ["lmscore", "bertscore"])
def test_neural_scorers_move_it_per_batch(metric):
    moved: list[int] = []
    config = ScoringConfig(metric, device="cpu", batch_size=4, context="minimal").validated()
    with progress_to(moved.append):
        scores = score_items(config, _pairs(24) + _pairs(16, "pl"))
    assert all(s.error is None for s in scores)
    assert len(moved) >= 3 and sum(moved) <= 40  # batch by batch
