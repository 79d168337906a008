"""Noise controls (deterministic by seed) and the likelihood metrics' plumbing."""
from __future__ import annotations

import pytest
import torch

from metrics.context import build_segment
from metrics.core import MetricInputError
from metrics.noise import (
    context_without_comment,
    hf_noise_tokenizer,
    lexical_noise_tokenizer,
    lexical_vocabulary,
    make_noise,
)
from metrics.tokenize import tokenize

FILE = "def suma(xs):\n    # Zwraca sumę wszystkich elementów\n    return sum(xs) + offset_value\n"
COMMENT = "# Zwraca sumę wszystkich elementów"
SPAN = (FILE.index(COMMENT), FILE.index(COMMENT) + len(COMMENT))


# ---------------------------------------------------------------- noise

def test_lexical_noise_is_seeded_sized_and_drawn_from_the_right_pool():
    vocab = lexical_vocabulary([FILE, "inne słowa tutaj"], "pl")
    tok = lexical_noise_tokenizer("pl", vocab)
    context = context_without_comment(FILE, SPAN)
    a = make_noise("uniform", COMMENT, tok, seed=7, target_id=3)
    assert a == make_noise("uniform", COMMENT, tok, seed=7, target_id=3)  # deterministic
    assert a != make_noise("uniform", COMMENT, tok, seed=8, target_id=3)
    assert a != make_noise("uniform", COMMENT, tok, seed=7, target_id=4)
    assert len(tokenize(a, "pl")) == len(tokenize(COMMENT, "pl")) == 4
    assert set(tokenize(a, "pl")) <= set(vocab)
    targeted = make_noise("targeted", COMMENT, tok, seed=7, target_id=3, context=context)
    assert set(tokenize(targeted, "pl")) <= set(tokenize(context, "pl"))
    assert "wszystkich" not in tokenize(context, "pl")  # the comment itself is not context


def test_hf_noise_uses_the_vocabulary_without_special_tokens(e5_small_encoder):
    _, tokenizer = e5_small_encoder
    tok = hf_noise_tokenizer(tokenizer, "e5")
    assert tok.name == "hf:e5"
    assert not set(tokenizer.all_special_ids) & set(tok.vocabulary[:10] + tok.vocabulary[-10:])
    ref = "# 计算所有商品的总价"
    texts = {make_noise("uniform", ref, tok, seed=s, target_id=1) for s in range(3)}
    assert len(texts) == 3
    assert make_noise("uniform", ref, tok, 0, 1) == make_noise("uniform", ref, tok, 0, 1)
    targeted = make_noise("targeted", ref, tok, 0, 1, context="return total_price(items)")
    assert targeted.strip() and "计算" not in targeted


def test_noise_bad_input():
    tok = lexical_noise_tokenizer("pl", ["a"])
    with pytest.raises(MetricInputError, match="needs surrounding context"):
        make_noise("targeted", COMMENT, tok, 0, 1, context="   ")
    with pytest.raises(ValueError, match="unknown noise kind"):
        make_noise("gaussian", COMMENT, tok, 0, 1)
    with pytest.raises(MetricInputError, match="empty reference"):
        make_noise("uniform", "", tok, 0, 1)


# ---------------------------------------------------------------- BARTScore (seq2seq)

def _none(text):
    return build_segment(text, "none")


def test_bartscore_none_equals_the_models_own_loss(tiny_bart):
    from metrics.likelihood import Seq2SeqScorer

    model, tokenizer = tiny_bart
    scorer = Seq2SeqScorer(model, tokenizer, model_name="tiny-bart")
    pred, ref = "Zwraca sumę elementów.", "Zwraca sumę wszystkich elementów listy."
    score = scorer.pair_scores([_none(pred)], [_none(ref)])[0]

    def mean_loglik(src, tgt):  # neulab BARTScore: -loss with labels = target ids (all tokens)
        with torch.no_grad():
            out = model(**tokenizer(src, return_tensors="pt"),
                        labels=tokenizer(tgt, return_tensors="pt")["input_ids"])
        return -float(out.loss)

    assert score.precision == pytest.approx(mean_loglik(ref, pred), abs=1e-5)  # forward
    assert score.recall == pytest.approx(mean_loglik(pred, ref), abs=1e-5)  # reverse
    assert score.f == pytest.approx((score.precision + score.recall) / 2)
    # batching and padding change nothing: score a batch of mixed lengths, compare one by one
    preds = [pred, "短", "Ένα πολύ μεγαλύτερο σχόλιο για να υπάρχει padding στο batch"]
    batch = scorer.pair_scores([_none(p) for p in preds], [_none(ref)] * 3)
    for p, s in zip(preds, batch):
        alone = scorer.pair_scores([_none(p)], [_none(ref)])[0]
        assert s.f == pytest.approx(alone.f, abs=1e-5)


def test_bartscore_with_context_scores_only_comment_tokens(tiny_bart):
    from metrics.likelihood import Seq2SeqScorer

    model, tokenizer = tiny_bart
    scorer = Seq2SeqScorer(model, tokenizer)
    pred = "# Zwraca sumę"
    src_seg = build_segment(COMMENT, "full", "pl", FILE, SPAN)
    tgt_seg = build_segment(pred, "full", "pl", FILE, SPAN)
    score = scorer.pair_scores([tgt_seg], [src_seg], context="full")[0]
    # by hand: full target sequence as labels, mean log-prob over the comment's positions only
    src = tokenizer(src_seg.text, return_tensors="pt")
    tgt = tokenizer(tgt_seg.text, return_offsets_mapping=True)
    labels = torch.tensor([tgt["input_ids"]])
    with torch.no_grad():
        logits = model(**src, labels=labels).logits
    logp = torch.log_softmax(logits[0], -1)[torch.arange(labels.shape[1]), labels[0]]
    inside = [i for i, (a, b) in enumerate(tgt["offset_mapping"])
              if b > a and b > tgt_seg.start and a < tgt_seg.end]
    assert score.precision == pytest.approx(float(logp[inside].mean()), abs=1e-5)
    assert len(inside) < labels.shape[1] - 10  # the context was there and was not scored


# ---------------------------------------------------------------- lmscore (causal, SmolLM2)

@pytest.mark.slow
def test_lmscore_prefers_a_correct_target_over_noise(smollm2_scorer):
    tok = hf_noise_tokenizer(smollm2_scorer.tokenizer, "smollm2")
    cases = [("en", "Returns the name of the current user.", "Return the current user's name."),
             ("pl", "Zwraca nazwę bieżącego użytkownika.", "Zwraca nazwę użytkownika."),
             ("nl", "Geeft de naam van de huidige gebruiker terug.", "Geeft de gebruikersnaam terug.")]
    for target_id, (lang, ref, pred) in enumerate(cases):
        for kind, context in (("uniform", None), ("targeted", FILE)):
            noise = make_noise(kind, ref, tok, seed=0, target_id=target_id, context=context)
            real, fake = smollm2_scorer.pair_scores([_none(pred), _none(noise)],
                                                    [_none(ref), _none(ref)], lang=lang)
            assert real.f > fake.f, (lang, kind, noise)
            assert real.precision < 0 and real.recall < 0  # log-probabilities


@pytest.mark.slow
def test_lmscore_full_context_reads_code_before_the_comment(smollm2_scorer):
    ref = build_segment(COMMENT, "full", "pl", FILE, SPAN)
    pred = build_segment("# Sortuje listę", "full", "pl", FILE, SPAN)
    full = smollm2_scorer.pair_scores([pred], [ref], context="full")[0]
    none = smollm2_scorer.pair_scores([_none("# Sortuje listę")], [_none(COMMENT)])[0]
    assert full.error is None and full.f != pytest.approx(none.f, abs=1e-3)
    assert full.details["forward"]["target"]["code_after_comment_ignored_chars"] > 0
