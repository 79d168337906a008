"""The shared comment tokenizer and the lexical metrics, on hand-checked el/zh/pl/nl/en pairs."""
from __future__ import annotations

import math

import pytest

from metrics.core import MetricInputError
from metrics.lexical import bleu, chrf, meteor, rouge_l
from metrics.tokenize import UnsupportedLanguageError, check_language, tokenize, tokenizer_for

# ---------------------------------------------------------------- tokenizer

def test_identifiers_stay_whole_in_any_language():
    assert tokenize("Returns the user_id via getUserName() and os.path.join().", "en") == [
        "returns", "the", "user_id", "via", "getusername()", "and", "os.path.join()"]
    assert tokenize("返回user_id的值，否则抛出ValueError。", "zh") == [
        "返", "回", "user_id", "的", "值", "否", "则", "抛", "出", "valueerror"]
    assert tokenize("Zwraca self.buffer_size (w bajtach).", "pl") == [
        "zwraca", "self.buffer_size", "w", "bajtach"]
    assert tokenize("Καλεί το parse_header() πρώτα", "el") == ["καλεί", "το", "parse_header()",
                                                             "πρώτα"]


def test_unicode_normalisation_and_case():
    decomposed = "Επιστρε\u0301φει"  # epsilon + combining acute accent
    assert tokenize(decomposed, "el") == tokenize("Επιστρέφει", "el") == ["επιστρέφει"]
    assert tokenize("ΟΔΟΣ", "el") == ["οδο\u03c2"]  # final sigma
    assert tokenize("ZAŻÓŁĆ gęślą jaźń", "pl") == ["zażółć", "gęślą", "jaźń"]
    assert tokenize("Geeft de waarde 3.14 terug", "nl") == ["geeft", "de", "waarde", "3.14",
                                                            "terug"]


def test_language_families_and_refusals():
    assert tokenizer_for("zh").name == "comment-cjk-v1"
    assert tokenizer_for("el").name == tokenizer_for("pl").name == "comment-intl-v1"
    assert check_language("zh-Hant") == "zh" and check_language("EN") == "en"
    with pytest.raises(UnsupportedLanguageError, match="Thai.*word segmenter"):
        tokenize("สวัสดีครับ", "th")
    with pytest.raises(UnsupportedLanguageError,
                       match="'english' is not a language code; did you mean 'en'"):
        tokenize("hello", "english")
    assert check_language("deu") == "de" and tokenizer_for("de").name == "comment-intl-v1"
    with pytest.raises(UnsupportedLanguageError, match="'xx' is not a language code"):
        check_language("xx")


def test_plugs_into_rouge_score_and_keeps_greek():
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=tokenizer_for("el"))
    assert scorer.score("Ένα σχόλιο", "Ένα σχόλιο")["rougeL"].fmeasure == 1.0
    default = rouge_scorer.RougeScorer(["rougeL"])  # what the package does on its own
    assert default.score("Ένα σχόλιο", "Ένα σχόλιο")["rougeL"].fmeasure == 0.0


# ---------------------------------------------------------------- hand-checked pairs

PAIRS = {  # lang: (prediction, reference)
    "en": ("Returns the user name of the current session.",
           "Return the name of the user for this session."),
    "el": ("Επιστρέφει το όνομα του χρήστη.", "Επιστρέφει το όνομα χρήστη της συνεδρίας."),
    "zh": ("返回当前用户的名称。", "返回用户名称。"),
    "pl": ("Zwraca nazwę bieżącego użytkownika.", "Zwraca nazwę użytkownika."),
    "nl": ("Geeft de naam van de gebruiker terug.", "Geeft de gebruikersnaam terug."),
}
# ROUGE-L by hand: LCS over comment tokens; P = LCS/|pred|, R = LCS/|ref|.
ROUGE_L = {
    "en": (5 / 8, 5 / 9),  # the name of the session
    "el": (4 / 5, 4 / 6),  # επιστρέφει το όνομα χρήστη
    "zh": (6 / 9, 6 / 6),  # 返 回 用 户 名 称 (one token per character)
    "pl": (3 / 4, 3 / 3),  # zwraca nazwę użytkownika
    "nl": (3 / 7, 3 / 4),  # geeft de terug
}


@pytest.mark.parametrize("lang", sorted(PAIRS))
def test_rouge_l_hand_checked(lang):
    pred, ref = PAIRS[lang]
    p, r = ROUGE_L[lang]
    score = rouge_l(pred, ref, lang)
    assert score.precision == pytest.approx(p) and score.recall == pytest.approx(r)
    assert score.f == pytest.approx(2 * p * r / (p + r))


@pytest.mark.parametrize("lang", sorted(PAIRS))
@pytest.mark.parametrize("metric", [bleu, rouge_l, meteor, chrf])
def test_identical_pair_scores_the_maximum(metric, lang):
    pred, ref = PAIRS[lang]
    same = metric(ref, ref, lang).f
    assert same == pytest.approx(1.0, abs=0.02)  # METEOR's fragmentation penalty: 1 - 0.5/n^3
    assert same > metric(pred, ref, lang).f > 0  # partially overlapping: never silently empty


def test_bleu_hand_checked_greek_and_chinese():
    # p1..p4 = 3/4, 2/3, 1/2, 0/1 -> exp smoothing makes p4 = (1/2)/1; equal lengths, BP = 1.
    score = bleu("Επιστρέφει το όνομα χρήστη", "Επιστρέφει το όνομα αρχείου", "el")
    assert score.f == pytest.approx((0.75 * (2 / 3) * 0.5 * 0.5) ** 0.25, abs=1e-9)
    # 6 vs 9 characters: p1 = 6/6, p2 = 3/5, p3 = 0/4 -> (1/2)/4, p4 = 0/3 -> (1/4)/3;
    # BP = exp(1 - 9/6).
    score = bleu("计算商品总价", "计算所有商品的总价", "zh")
    expected = math.exp(1 - 9 / 6) * (1 * 0.6 * 0.125 * (0.25 / 3)) ** 0.25
    assert score.f == pytest.approx(expected, abs=1e-9)
    # sacrebleu's own 'zh' tokenizer splits Chinese too; '13a' alone would not.
    assert bleu("计算商品总价", "计算所有商品的总价", "zh", tokenize="sacrebleu").f > 0


def test_meteor_exact_matches_outside_english():
    # m = 3, P = 1, R = 3/4, Fmean = PR/(0.9P + 0.1R); 2 chunks -> penalty 0.5 (2/3)^3.
    fmean = 0.75 / (0.9 + 0.1 * 0.75)
    expected = fmean * (1 - 0.5 * (2 / 3) ** 3)
    assert meteor("Zwraca nazwę użytkownika", "Zwraca nazwę bieżącego użytkownika",
                  "pl").f == pytest.approx(expected)
    assert meteor("werken", "werk", "nl").f == 0.0  # no Porter stemming of Dutch
    assert meteor("working", "works", "en").f > 0.4  # English: Porter stems match
    # WordNet synonyms (nltk looks synonyms up on the *stemmed* leftovers: "car" stems to itself)
    synonym = meteor("returns the car", "returns the auto", "en").f
    assert synonym > 0.9 > meteor("returns the car", "returns the auto", "nl").f


def test_chrf_script_agnostic():
    assert chrf("αβγ δεζ", "ηθι κλμ", "el").f == 0.0
    assert 0 < chrf(*PAIRS["el"], "el").f < 1


@pytest.mark.parametrize("metric", [bleu, rouge_l, meteor, chrf])
def test_bad_input_is_a_clear_error(metric):
    with pytest.raises(MetricInputError, match="empty prediction"):
        metric("   ", "Zwraca sumę.", "pl")
    with pytest.raises(MetricInputError, match="no word tokens"):
        metric("...!", "Zwraca sumę.", "pl")
    with pytest.raises(UnsupportedLanguageError):
        metric("ok", "ok", "th")
