"""metrics/lexical.py: the lexical metric classes, their options and signatures (the pair
functions themselves: test_tokenize_lexical.py and test_sacrebleu_parity.py)."""
from __future__ import annotations

import pytest
from sacrebleu.metrics import BLEU

from metrics.config import ConfigError, ScoringConfig
from metrics.core import ScoringItem, score_items
from metrics.lexical import bleu, bleu_signature, chrf, chrf_signature
from metrics.noise import LEXICAL_NOISE_TOKENIZER
from metrics.registry import LEXICAL, METRICS
from metrics.tokenize import family_signature, tokenizer_for

CASED = ScoringItem("generation", 1, 1, "Returns the UTF-8 Path.", "Return the path (UTF-8).", "en")


def test_options_apply_to_their_metric_only():
    with pytest.raises(ConfigError, match="^--chrf-tokenize applies to chrf only, not bleu$"):
        ScoringConfig("bleu", chrf_tokenize="none").validated()
    with pytest.raises(ConfigError, match="^--bleu-tokenize must be one of comment, sacrebleu, 13a, "
                                          "not '14a'$"):
        ScoringConfig("bleu", bleu_tokenize="14a").validated()
    with pytest.raises(ConfigError, match="^--chrf-tokenize must be one of comment, none, not '13a'$"):
        ScoringConfig("chrf", chrf_tokenize="13a").validated()
    with pytest.raises(ValueError, match="BLEU tokenize must be one of"):
        bleu("a", "a", "en", tokenize="14a")  # the pair functions check too (Python callers)
    with pytest.raises(ValueError, match="chrF tokenize must be one of"):
        chrf("a", "a", "en", tokenize="13a")


@pytest.mark.parametrize("metric", LEXICAL)
def test_lexical_metrics_refuse_a_context_variant(metric):
    with pytest.raises(ConfigError, match=f"^{metric} is lexical: context variants apply to neural"):
        ScoringConfig(metric, context="minimal").validated()


@pytest.mark.parametrize("metric, key, value, function", [
    ("bleu", "bleu_tokenize", "13a", bleu), ("bleu", "bleu_tokenize", "sacrebleu", bleu),
    ("chrf", "chrf_tokenize", "none", chrf)])
def test_the_option_reaches_the_pair_function(metric, key, value, function):
    config = ScoringConfig(metric, **{key: value}).validated()
    [score] = score_items(config, [CASED])
    assert score == function(CASED.prediction, CASED.reference, "en", tokenize=value)
    [default] = score_items(ScoringConfig(metric).validated(), [CASED])
    assert default == function(CASED.prediction, CASED.reference, "en")
    assert score.f != default.f  # case and punctuation count under the sacrebleu tokenizers


def test_signatures_name_the_tokenizer():
    scorer = BLEU(tokenize="13a", effective_order=True)
    scorer.sentence_score("a b", ["a b"])
    assert bleu_signature("13a") == str(scorer.get_signature())  # sacrebleu's own, as it writes it
    assert f"tok:{family_signature()}" in bleu_signature() and "case:lc" in bleu_signature()
    assert "tok:sacrebleu(zh|char|13a)+lc" in bleu_signature("sacrebleu")
    assert "tok:none|case:mixed" in chrf_signature("none")
    assert f"tok:{family_signature()}" in chrf_signature()


def test_the_tokenizer_a_language_gets_follows_the_option():
    bleu_metric, chrf_metric = METRICS["bleu"], METRICS["chrf"]
    assert bleu_metric.language_tokenizer(ScoringConfig("bleu").validated(), "zh") == \
        tokenizer_for("zh").signature
    assert bleu_metric.language_tokenizer(
        ScoringConfig("bleu", bleu_tokenize="sacrebleu").validated(), "ja") == "sacrebleu char"
    assert bleu_metric.language_tokenizer(
        ScoringConfig("bleu", bleu_tokenize="13a").validated(), "zh") == "sacrebleu 13a (cased)"
    assert chrf_metric.language_tokenizer(
        ScoringConfig("chrf", chrf_tokenize="none").validated(), "el") == "none (the text as written)"
    assert METRICS["meteor"].language_tokenizer(ScoringConfig("meteor").validated(), "el") == \
        tokenizer_for("el").signature


def test_run_records_and_noise_space():
    config = ScoringConfig("bleu", bleu_tokenize="13a").validated()
    assert METRICS["bleu"].run_params(config) == {"bleu_tokenize": "13a"}
    assert METRICS["rouge_l"].run_params(ScoringConfig("rouge").validated()) == {}
    for metric in LEXICAL:
        plain = ScoringConfig(metric).validated()
        assert METRICS[metric].tokenizer_name(plain) == family_signature()
        assert METRICS[metric].noise_tokenizer_name(plain) == LEXICAL_NOISE_TOKENIZER


def test_a_bad_item_gets_its_error_and_the_batch_goes_on():
    items = [CASED, ScoringItem("generation", 2, 1, "!!!", "Return the path", "en")]
    good, bad = METRICS["meteor"].score_batch(ScoringConfig("meteor").validated(), items, None)
    assert good.f > 0 and good.error is None
    assert bad.error.startswith("prediction has no word tokens") and bad.f is None


def test_meteors_wordnet_is_30_with_its_synonyms_and_loaded_once():
    """metrics.wordnet.load_wordnet: nltk's reader without its start-up self-map (3.0 onto
    3.0); the synonyms METEOR matches are WordNet 3.0's."""
    from metrics.wordnet import load_wordnet

    wordnet = load_wordnet()
    assert wordnet is load_wordnet() and wordnet.get_version() == "3.0"
    assert wordnet.map30 is None  # the self-map nltk would have built is skipped
    car = wordnet.synsets("car")
    assert car[0].name() == "car.n.01" and {"auto", "automobile"} <= set(car[0].lemma_names())
