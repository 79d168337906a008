"""BERTScore equals the bert-score package; context variants score exactly the comment's tokens."""
from __future__ import annotations

import pytest

from metrics.bertscore import Baseline, corpus_baseline, truncate_to_layer
from metrics.context import ContextVariant, Segment, build_segment, encode_segment, special_tokens
from metrics.core import MetricInputError, PairScore

pytestmark = pytest.mark.slow

PREDS = ["Returns the user name.", "返回用户名称", "Zwraca nazwę użytkownika.",
         "Επιστρέφει το όνομα.", "  Geeft de naam terug.  ", "Convert parse_header() output"]
REFS = ["Return the name of the user.", "返回用户名", "Zwraca nazwę bieżącego użytkownika.",
        "Επιστρέφει το όνομα του χρήστη.", "Geeft de gebruikersnaam terug.",
        "Converts the output of parse_header()"]


@pytest.fixture(scope="module")
def package_scores():
    """bert-score's own P/R/F for the same model folder and layer (plain and idf)."""
    import bert_score

    from models import resolve_model

    folder = str(resolve_model("intfloat/multilingual-e5-small"))
    plain = bert_score.score(PREDS, REFS, model_type=folder, num_layers=9)
    idf = bert_score.score(PREDS, REFS, model_type=folder, num_layers=9, idf=True)
    return plain, idf


def test_equals_bert_score_package(e5_scorer, package_scores):
    (p, r, f), (_, _, f_idf) = package_scores
    ours = e5_scorer.score(PREDS, REFS)
    for i, s in enumerate(ours):
        assert s.error is None
        assert s.precision == pytest.approx(float(p[i]), abs=1e-5)
        assert s.recall == pytest.approx(float(r[i]), abs=1e-5)
        assert s.f == pytest.approx(float(f[i]), abs=1e-5)
    ours_idf = e5_scorer.score(PREDS, REFS, idf=e5_scorer.idf(REFS))
    for i, s in enumerate(ours_idf):
        assert s.f == pytest.approx(float(f_idf[i]), abs=1e-5)
    assert max(abs(a.f - b.f) for a, b in zip(ours, ours_idf)) > 1e-4  # idf changes something


def test_bfloat16_on_cpu_is_close_but_not_exact(e5_small_encoder, package_scores):
    """The opt-in fast CPU path: bfloat16 matrix products, within a few 1e-3 of the package."""
    from metrics.bertscore import BertScorer

    model, tokenizer = e5_small_encoder
    fast = BertScorer(model, tokenizer, layer=9, device="cpu", dtype="bfloat16")
    (_, _, f), _ = package_scores
    diffs = [abs(s.f - float(f[i])) for i, s in enumerate(fast.score(PREDS, REFS))]
    assert max(diffs) < 5e-3
    assert max(diffs) > 1e-6  # it really ran in bfloat16
    assert str(next(model.parameters()).dtype) == "torch.float32"  # shared model untouched
    with pytest.raises(ValueError, match="float16 is for GPUs"):
        BertScorer(model, tokenizer, layer=9, device="cpu", dtype="float16")


def test_layer_view_leaves_the_shared_model_whole(e5_small_encoder, e5_scorer):
    model, _ = e5_small_encoder
    assert len(model.encoder.layer) == 12 and model.config.num_hidden_layers == 12
    assert len(e5_scorer.encoder.encoder.layer) == 9
    with pytest.raises(ValueError, match="layer 13 is out of range"):
        truncate_to_layer(model, 13)


def _scored_text(tokenizer, encoded):
    return tokenizer.decode([encoded.input_ids[i] for i in encoded.scored]).strip()


@pytest.mark.parametrize("where", ["middle", "start", "end"])
@pytest.mark.parametrize("comment", ["# 计算所有商品的总价", "# Zwraca sumę elementów listy",
                                     "# Υπολογίζει τον μέσο όρο"])
def test_full_context_selects_exactly_the_comment_tokens(e5_scorer, comment, where):
    tokenizer = e5_scorer.tokenizer
    code_before, code_after = "def total(items):\n    ", "\n    return sum(items)\n"
    content = {"middle": code_before + comment + code_after, "start": comment + code_after,
               "end": code_before + comment}[where]
    start = content.index(comment)
    segment = build_segment(comment, "full", "zh", content, (start, start + len(comment)))
    assert segment.comment == comment
    encoded = encode_segment(tokenizer, segment, 512)
    assert _scored_text(tokenizer, encoded) == comment
    assert encoded.input_ids[0] == tokenizer.cls_token_id  # specials wrap the whole input
    assert encoded.input_ids[-1] == tokenizer.sep_token_id
    assert not encoded.details  # nothing cut
    if where == "start":
        assert encoded.scored[0] == 1  # right after <s>
    if where == "end":
        assert encoded.scored[-1] == len(encoded.input_ids) - 2  # right before </s>


def test_long_file_is_windowed_around_the_whole_comment(e5_scorer):
    tokenizer = e5_scorer.tokenizer
    before = "".join(f"x_{i} = compute({i})\n" for i in range(400))
    after = "".join(f"y_{i} = compute({i})\n" for i in range(50))
    comment = "# 返回用户名称，然后保存"
    content = before + comment + "\n" + after
    start = len(before)
    segment = build_segment(comment, "full", "zh", content, (start, start + len(comment)))
    encoded = encode_segment(tokenizer, segment, 128)
    assert len(encoded.input_ids) == 128
    alone = tokenizer(comment, add_special_tokens=False)["input_ids"]  # (its normaliser maps
    assert [encoded.input_ids[i] for i in encoded.scored] == alone  # the full-width comma)
    cut = encoded.details
    assert cut["context_cut_left"]["tokens"] > 0 and cut["context_cut_right"]["tokens"] > 0
    assert 0 < cut["context_cut_left"]["chars"] < len(before)
    # the comment's own tokens are never cut unless it alone exceeds the window
    tiny = encode_segment(tokenizer, segment, 6)
    assert tiny.details["comment_tokens_cut"] > 0 and len(tiny.input_ids) == 6


def test_context_variants_identical_pair_is_perfect(e5_scorer):
    content = "def f(xs):\n    # Zwraca sumę elementów\n    return sum(xs)\n"
    comment = "# Zwraca sumę elementów"
    start = content.index(comment)
    span = (start, start + len(comment))
    full = [build_segment(c, "full", "pl", content, span) for c in (comment, "# Sortuje listę")]
    ref = build_segment(comment, "full", "pl", content, span)
    same, other = e5_scorer.score_segments(full, [ref, ref], match_special=False)
    assert same.f == pytest.approx(1.0, abs=1e-6)
    assert other.f < same.f
    minimal = e5_scorer.score(["Zwraca sumę"], ["Zwraca sumę elementów"], context="minimal",
                              lang="pl")[0]
    none = e5_scorer.score(["Zwraca sumę"], ["Zwraca sumę elementów"])[0]
    assert minimal.f != pytest.approx(none.f, abs=1e-4)  # the context went through the encoder


def test_baseline_rescaling(e5_scorer):
    refs = [build_segment(t, "none") for t in REFS]
    baseline = corpus_baseline(e5_scorer, refs, seed=1)
    assert 0 < baseline.f < 1 and baseline.source.startswith("corpus")
    assert corpus_baseline(e5_scorer, refs, seed=1) == baseline  # seeded
    raw = e5_scorer.score(PREDS[:2], REFS[:2])
    scaled = e5_scorer.score(PREDS[:2], REFS[:2], baseline=baseline)
    for a, b in zip(raw, scaled):
        assert b.f == pytest.approx((a.f - baseline.f) / (1 - baseline.f))
        assert b.details["raw"][2] == pytest.approx(a.f)
    assert Baseline(0.5, 0.5, 0.5).rescale(PairScore(1.0, 1.0, 1.0)).f == 1.0


def test_bad_items_get_errors_not_exceptions(e5_scorer):
    out = e5_scorer.score(["", "Returns the name", "..."], ["Return a name", "", "Return"])
    assert out[0].error and "empty" in out[0].error
    assert out[1].error and "empty" in out[1].error
    assert out[2].error is None  # punctuation is still text to an encoder
    with pytest.raises(MetricInputError, match="full context needs"):
        build_segment("x", "full")
    with pytest.raises(ValueError, match="unknown context variant"):
        ContextVariant.parse("whole")


def test_special_tokens_found_for_xlmr(e5_scorer):
    specials = special_tokens(e5_scorer.tokenizer)
    assert specials.prefix == (0,) and specials.suffix == (2,)
    seg = Segment("abc", 0, 3)
    assert encode_segment(e5_scorer.tokenizer, seg, 512, add_special=False).special == ()
