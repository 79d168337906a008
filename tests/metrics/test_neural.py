"""metrics/neural.py: the neural metric classes: their options and defaults, one loaded model per
configuration, batches whose bad items (or a failing batch) never abort the run. The models here
are the offline tiny BART (tests/metrics/conftest.py); the computations: test_bertscore_context.py,
test_noise_likelihood.py, test_encoders.py."""
from __future__ import annotations

import logging

import pytest

from metrics import neural
from metrics.config import ConfigError, ScoringConfig
from metrics.core import MetricInputError, ScoringItem
from metrics.encoders import onnx_available
from metrics.likelihood import Seq2SeqScorer
from metrics.neural import BartScore, BertScoreSetup
from metrics.registry import METRICS, NEURAL


def test_each_metric_fills_in_its_own_defaults():
    models = {"bertscore": "intfloat/multilingual-e5-small", "bartscore": "facebook/bart-large-cnn",
              "lmscore": "HuggingFaceTB/SmolLM2-135M-Instruct"}
    for metric in NEURAL:
        config = ScoringConfig(metric, device="cpu").validated()
        assert (config.model, config.device, config.dtype) == (models[metric], "cpu", "float32")
        assert config.layer is None and config.idf is (False if metric == "bertscore" else None)
    bert = ScoringConfig("bertscore", device="cpu").validated()
    assert bert.backend == ("openvino" if onnx_available("openvino") else "torch")  # CPU default
    assert ScoringConfig("bertscore", device="cpu", dtype="bfloat16").validated().backend == "torch"


def test_precision_and_backend_are_checked_against_the_device():
    with pytest.raises(ConfigError, match="^--dtype float16 is for GPUs; on cpu use float32"):
        ScoringConfig("bertscore", device="cpu", dtype="float16").validated()
    with pytest.raises(ConfigError, match="^--backend onnx runs float32 only, not bfloat16"):
        ScoringConfig("bertscore", device="cpu", dtype="bfloat16", backend="onnx").validated()
    with pytest.raises(ConfigError, match="^--dtype for bartscore must be one of float32"):
        ScoringConfig("bartscore", device="cpu", dtype="bfloat16").validated()


def test_signatures_name_the_model_its_tokenizer_and_the_prompt():
    sig = METRICS["lmscore"].run_signature(ScoringConfig("lmscore", model="a/b", layer=None,
                                                         device="cpu").validated())
    assert sig[:5] == ["model:a/b", "layer:last", "tok:hf:a/b", "dtype:float32", "prompt:v1"]
    assert sig[5].startswith("versions:torch-") and len(sig) == 6
    bart = METRICS["bartscore"].run_signature(ScoringConfig("bartscore", device="cpu").validated())
    assert not any(part.startswith(("prompt:", "idf:", "backend:")) for part in bart)
    bert = METRICS["bertscore"].run_signature(ScoringConfig(
        "bertscore", layer=4, idf=True, rescale="corpus", device="cpu", backend="torch").validated())
    assert bert[1] == "layer:4" and bert[4:6] == ["idf:yes", "rescale:corpus"]


def test_bertscore_needs_the_corpus_only_for_idf_or_rescaling():
    metric = METRICS["bertscore"]
    plain = ScoringConfig("bertscore", device="cpu", backend="torch").validated()
    assert not metric.needs_references(plain)
    for options in ({"idf": True}, {"rescale": "package"}):
        assert metric.needs_references(ScoringConfig("bertscore", device="cpu", backend="torch",
                                                     **options).validated())
    rescaled = ScoringConfig("bertscore", rescale="corpus", device="cpu",
                             backend="torch").validated()
    item = ScoringItem("generation", 1, 1, "a", "b", "el")
    with pytest.raises(MetricInputError, match="no rescaling baseline for language 'el'"):
        metric.check_item(rescaled, item, BertScoreSetup(baselines={"pl": object()}))
    metric.check_item(plain, item, None)  # nothing to check without rescaling


class TinyBartScore(BartScore):
    """bartscore with the offline tiny BART instead of a downloaded model."""

    def __init__(self, model, tokenizer):
        self.model, self.tokenizer, self.loads = model, tokenizer, 0

    def load(self, config, **options):
        self.loads += 1
        return Seq2SeqScorer(self.model, self.tokenizer, model_name=config.model,
                             device=config.device, **options)


@pytest.fixture
def tiny(tiny_bart, monkeypatch):
    monkeypatch.setattr(neural, "_LOADED", {})  # this test's models only
    return TinyBartScore(*tiny_bart)


def _config(**kwargs):
    return ScoringConfig("bartscore", model="tiny-bart", device="cpu", **kwargs).validated()


def test_a_model_is_loaded_once_per_configuration(tiny):
    first = tiny.prepare(_config())
    assert tiny.prepare(_config(noise="uniform", seed=3)) is first and tiny.loads == 1
    other = tiny.prepare(_config(batch_size=2))  # another batch size is another scorer
    assert other is not first and other.batch_size == 2 and tiny.loads == 2


def test_bad_items_get_their_error_and_languages_are_scored_apart(tiny):
    config = _config()
    items = [ScoringItem("generation", 1, 1, "Zwraca sumę", "Zwraca sumę listy", "pl"),
             ScoringItem("noise", 2, 2, "  ", "Returns the sum", "en"),
             ScoringItem("generation", 3, 3, "Returns a sum", "Returns the sum", "en"),
             ScoringItem("generation", 4, 4, "Zwraca", "Zwraca sumę", "pl")]
    scores = tiny.score_batch(config, items, None)
    assert scores[1].error == "empty comment: nothing to score"
    for i in (0, 2, 3):  # in order, each as if scored alone
        assert scores[i].error is None
        assert scores[i].f == pytest.approx(tiny.score_batch(config, [items[i]], None)[0].f,
                                            abs=1e-5)


def test_a_failing_batch_is_rescored_item_by_item(tiny_bart, monkeypatch, caplog):
    """A model that cannot score at all (no decoder start token) fails the whole batch; each item
    then gets the error, and the run goes on."""
    from transformers import BartForConditionalGeneration

    model, tokenizer = tiny_bart
    config = model.config.__class__(**{**model.config.to_dict(), "decoder_start_token_id": None})
    broken = BartForConditionalGeneration(config).eval()
    monkeypatch.setattr(neural, "_LOADED", {})
    metric = TinyBartScore(broken, tokenizer)
    items = [ScoringItem("generation", k, k, "Zwraca sumę", "Zwraca sumę listy", "pl")
             for k in (1, 2, 3)]
    with caplog.at_level(logging.WARNING, logger="metrics.neural"):
        scores = metric.score_batch(_config(), items, None)
    assert "batch of 3 failed" in caplog.text
    assert [s.error for s in scores] == [
        "ValueError: BartForConditionalGeneration config has no decoder_start_token_id"] * 3
