"""Lexical metrics per pair, all on the shared comment tokenizer (metrics.tokenize).

Scores are in [0, 1] (sacrebleu's 0-100 BLEU and chrF are divided by 100).

- BLEU: sacrebleu sentence BLEU (exp smoothing, effective order) on text pre-tokenised by the
  comment tokenizer, passed with ``tokenize='none'``: identifiers stay whole, Chinese is split per
  character, Greek/Polish are NFC + lower-cased exactly like the other lexical metrics. With
  ``tokenize='sacrebleu'`` sacrebleu's own tokenizer is used instead: ``zh`` for Chinese,
  ``char`` for Japanese, ``13a`` otherwise (lower-cased). ``tokenize='13a'`` is sacrebleu's own
  default, cased: equal to ``sacrebleu.sentence_bleu(prediction, [reference])`` (MT practice).
- ROUGE-L: rouge-score's ``rougeL`` (P, R, F) with the comment tokenizer plugged in (its default
  tokenizer drops all non-ASCII letters).
- METEOR: nltk's ``single_meteor_score`` with offline WordNet (metrics.wordnet). It is English-
  centric: for English, Porter stems and WordNet synonyms count; for every other language only
  exact token matches count (a no-op stemmer and no synonyms: Porter rules would mangle Dutch or
  Polish words and WordNet has no Greek or Chinese).
- chrF: sacrebleu chrF (char 6-grams, beta 2) on the comment tokens joined by spaces
  (script-agnostic; whitespace is ignored by chrF). ``tokenize='none'`` scores the text as
  written (cased, punctuation kept): equal to ``sacrebleu.sentence_chrf(prediction, [reference])``.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

from metrics.core import (
    ConfigError,
    Metric,
    MetricInputError,
    MetricOption,
    PairScore,
    item_error,
    report_progress,
    require_text,
)
from metrics.tokenize import check_language, family_signature, tokenizer_for

BLEU_TOKENIZE = ("comment", "sacrebleu", "13a")
CHRF_TOKENIZE = ("comment", "none")


def _tokens(text: str, lang: str, what: str) -> list[str]:
    require_text(text, what)
    tokens = tokenizer_for(lang).tokenize(text)
    if not tokens:
        raise MetricInputError(
            f"{what} has no word tokens under {tokenizer_for(lang).signature} "
            f"(only punctuation or symbols): {text[:40]!r}")
    return tokens


# ---------------------------------------------------------------- BLEU

@lru_cache(maxsize=None)
def _bleu(tokenize: str, lowercase: bool):
    from sacrebleu.metrics import BLEU

    return BLEU(tokenize=tokenize, lowercase=lowercase, effective_order=True)


def sacrebleu_tokenizer_for(lang: str) -> str:
    code = check_language(lang)
    return {"zh": "zh", "ja": "char"}.get(code, "13a")


def bleu(prediction: str, reference: str, lang: str, tokenize: str = "comment") -> PairScore:
    if tokenize not in BLEU_TOKENIZE:
        raise ValueError(f"BLEU tokenize must be one of {BLEU_TOKENIZE}, got {tokenize!r}")
    if tokenize == "comment":
        hyp = " ".join(_tokens(prediction, lang, "prediction"))
        ref = " ".join(_tokens(reference, lang, "reference"))
        scorer = _bleu("none", False)  # the comment tokens are lower-cased already
    elif tokenize == "13a":  # sacrebleu's default, cased
        hyp, ref = require_text(prediction, "prediction"), require_text(reference, "reference")
        scorer = _bleu("13a", False)
    else:
        hyp, ref = require_text(prediction, "prediction"), require_text(reference, "reference")
        scorer = _bleu(sacrebleu_tokenizer_for(lang), True)
    result = scorer.sentence_score(hyp, [ref])
    return PairScore(f=min(1.0, result.score / 100.0), details={
        "precisions": [round(p / 100.0, 6) for p in result.precisions], "bp": result.bp,
        "hyp_len": result.sys_len, "ref_len": result.ref_len})


def bleu_signature(tokenize: str = "comment") -> str:
    import sacrebleu

    if tokenize == "13a":  # sacrebleu's own signature of its sentence BLEU
        return f"nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    tok = f"tok:{family_signature()}" if tokenize == "comment" else "tok:sacrebleu(zh|char|13a)+lc"
    return f"nrefs:1|case:lc|eff:yes|{tok}|smooth:exp|version:{sacrebleu.__version__}"


# ---------------------------------------------------------------- ROUGE-L

@lru_cache(maxsize=None)
def _rouge(lang_family: str):
    from rouge_score import rouge_scorer

    tokenizer = tokenizer_for("zh" if lang_family == "cjk" else "en")
    return rouge_scorer.RougeScorer(["rougeL"], tokenizer=tokenizer)


def rouge_l(prediction: str, reference: str, lang: str) -> PairScore:
    hyp, ref = _tokens(prediction, lang, "prediction"), _tokens(reference, lang, "reference")
    family = "cjk" if tokenizer_for(lang).name.startswith("comment-cjk") else "intl"
    # rouge-score re-tokenises with our tokenizer; joining by spaces round-trips exactly.
    result = _rouge(family).score(" ".join(ref), " ".join(hyp))["rougeL"]
    return PairScore(precision=result.precision, recall=result.recall, f=result.fmeasure,
                     details={"hyp_len": len(hyp), "ref_len": len(ref)})


def rouge_signature() -> str:
    import rouge_score

    version = getattr(rouge_score, "__version__", None) or _dist_version("rouge-score")
    return f"rougeL|tok:{family_signature()}|stem:no|version:{version}"


# ---------------------------------------------------------------- METEOR

class _ExactOnlyStemmer:
    def stem(self, word: str) -> str:
        return word


class _NoSynonyms:
    def synsets(self, *_args, **_kwargs):
        return []


@lru_cache(maxsize=None)
def _meteor_resources(english: bool):
    if not english:
        return _ExactOnlyStemmer(), _NoSynonyms()
    from nltk.stem.porter import PorterStemmer

    from metrics.wordnet import load_wordnet

    return PorterStemmer(), load_wordnet()


def meteor(prediction: str, reference: str, lang: str) -> PairScore:
    from nltk.translate.meteor_score import single_meteor_score

    hyp, ref = _tokens(prediction, lang, "prediction"), _tokens(reference, lang, "reference")
    english = check_language(lang) == "en"
    stemmer, wordnet = _meteor_resources(english)
    value = single_meteor_score(ref, hyp, preprocess=_identity, stemmer=stemmer, wordnet=wordnet)
    return PairScore(f=float(value), details={"matching": "stem+synonym" if english else "exact"})


def _identity(text: str) -> str:
    return text


def meteor_signature() -> str:
    import nltk

    return (f"meteor|tok:{family_signature()}|en:porter+wordnet-3.0|other:exact|"
            f"alpha:0.9|beta:3|gamma:0.5|version:{nltk.__version__}")


# ---------------------------------------------------------------- chrF

@lru_cache(maxsize=None)
def _chrf():
    from sacrebleu.metrics import CHRF

    return CHRF()


def chrf(prediction: str, reference: str, lang: str, tokenize: str = "comment") -> PairScore:
    if tokenize not in CHRF_TOKENIZE:
        raise ValueError(f"chrF tokenize must be one of {CHRF_TOKENIZE}, got {tokenize!r}")
    if tokenize == "none":  # as written, as sacrebleu scores it
        hyp, ref = require_text(prediction, "prediction"), require_text(reference, "reference")
    else:
        hyp = " ".join(_tokens(prediction, lang, "prediction"))
        ref = " ".join(_tokens(reference, lang, "reference"))
    return PairScore(f=_chrf().sentence_score(hyp, [ref]).score / 100.0)


def chrf_signature(tokenize: str = "comment") -> str:
    import sacrebleu

    if tokenize == "none":
        return f"chrF2|nc:6|nw:0|tok:none|case:mixed|space:no|version:{sacrebleu.__version__}"
    return f"chrF2|nc:6|nw:0|tok:{family_signature()}|version:{sacrebleu.__version__}"


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


# ---------------------------------------------------------------- the metric classes

class LexicalMetric(Metric):
    """A metric on the comment tokenizer: no model, no context variant, noise drawn from the
    dataset's own vocabulary. Its options reach `pair_function` as keyword arguments, by name."""

    lexical = True
    libraries = ("nlcomment-eval", "sacrebleu", "rouge-score", "nltk")
    pair_function: Callable[..., PairScore]
    signature_function: Callable[[], str]

    def validate(self, config):
        if config.context != "none":
            raise ConfigError(f"{self.name} is lexical: context variants apply to neural "
                              "metrics only (the context would be scored as text)")
        return config

    def signature(self, config) -> list[str]:
        return [type(self).signature_function()]

    def tokenizer_name(self, config) -> str:
        return family_signature()

    def language_tokenizer(self, config, lang: str) -> str:
        return tokenizer_for(lang).signature

    def noise_tokenizer_name(self, config) -> str:
        from metrics.noise import LEXICAL_NOISE_TOKENIZER

        return LEXICAL_NOISE_TOKENIZER

    def noise_tokenizer(self, config, lang, corpus_texts):
        from metrics.noise import lexical_noise_tokenizer, lexical_vocabulary

        return lexical_noise_tokenizer(lang, lexical_vocabulary(corpus_texts(), lang))

    def score_batch(self, config, items, setup):
        function, options = type(self).pair_function, self.option_values(config)
        out = []
        for item in items:
            report_progress(len(out), len(items))
            try:
                out.append(function(item.prediction, item.reference, item.lang, **options))
            except Exception as exc:  # one bad item never aborts the run
                out.append(PairScore.failed(item_error(exc)))
        return out


class Bleu(LexicalMetric):
    name = "bleu"
    pair_function = bleu
    options = (MetricOption(
        "tokenize", "comment", BLEU_TOKENIZE, signature="own",
        help="comment: the comment tokenizer; sacrebleu: its zh/char/13a, lower-cased; 13a: "
             "sacrebleu's default, cased (standard MT BLEU)"),)

    def signature(self, config) -> list[str]:
        return [bleu_signature(config.bleu_tokenize)]

    def language_tokenizer(self, config, lang: str) -> str:
        if config.bleu_tokenize == "comment":
            return super().language_tokenizer(config, lang)
        if config.bleu_tokenize == "13a":
            return "sacrebleu 13a (cased)"
        return f"sacrebleu {sacrebleu_tokenizer_for(lang)}"

    def run_params(self, config) -> dict:
        return {"bleu_tokenize": config.bleu_tokenize}


class RougeL(LexicalMetric):
    name = "rouge_l"
    aliases = ("rouge", "rougel")
    pair_function = rouge_l
    signature_function = rouge_signature


class Meteor(LexicalMetric):
    name = "meteor"
    pair_function = meteor
    signature_function = meteor_signature


class Chrf(LexicalMetric):
    name = "chrf"
    pair_function = chrf
    options = (MetricOption(
        "tokenize", "comment", CHRF_TOKENIZE, signature="own",
        help="comment: the comment tokenizer; none: the text as written, cased (sacrebleu's "
             "chrF)"),)

    def signature(self, config) -> list[str]:
        return [chrf_signature(config.chrf_tokenize)]

    def language_tokenizer(self, config, lang: str) -> str:
        if config.chrf_tokenize == "none":
            return "none (the text as written)"
        return super().language_tokenizer(config, lang)
