"""The neural metric classes: BERTScore and the two likelihood metrics, on any HF model.

What they share (`NeuralMetric`): a model id with a default, a device and a precision, the
model's own tokenizer in the signature and for noise, context variants, batches scored at once
(one failing batch is re-scored item by item to isolate the culprit), and one loaded model per
process and configuration (`prepare`). The computations live in `metrics.bertscore` and
`metrics.likelihood`; this module only adapts them to `metrics.core.Metric`.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, replace
from typing import Optional

from metrics.context import build_segment
from metrics.core import (
    ConfigError,
    Metric,
    MetricInputError,
    MetricOption,
    PairScore,
    item_error,
    version,
)
from metrics.encoders import BACKENDS

log = logging.getLogger(__name__)

RESCALE_CHOICES = ("none", "package", "corpus")
_LOADED: dict = {}  # (metric, model, layer, device, dtype, backend, batch size) -> scorer


def model_option(default: str) -> MetricOption:
    return MetricOption("model", default, prefix=False, signature="own", in_key=False,
                        help="HF id or local folder")


def dtype_option(default: Optional[str], choices: tuple[str, ...]) -> MetricOption:
    return MetricOption(
        "dtype", default, choices, prefix=False, signature="own", inert=("float32",),
        help="the encoder's precision: half precision is faster and less exact; float16 needs "
             "a GPU (bertscore's default: float16 on a GPU, else float32)")


FLOAT32_ONLY = dtype_option("float32", ("float32",))  # half precision is bertscore's alone


class NeuralMetric(Metric):
    lexical = False
    libraries = ("nlcomment-eval", "torch", "transformers", "tokenizers")

    def validate(self, config):
        from metrics.bertscore import resolve_dtype
        from models import pick_device

        device = pick_device(config.device)
        try:
            dtype = resolve_dtype(device, config.dtype)
        except ValueError as exc:
            raise ConfigError(f"--{exc}") from None
        return replace(config, device=device, dtype=dtype)

    def signature(self, config) -> list[str]:
        layer = config.layer if config.layer is not None else "last"
        from metrics.encoders import backend_versions

        # torch runs keep the signature they had before there were backends
        backend = [f"backend:{config.backend}"] if config.backend not in (None, "torch") else []
        return ([f"model:{config.model}", f"layer:{layer}", f"tok:hf:{config.model}",
                 f"dtype:{config.dtype}"] + backend + self.options_signature(config)
                + [f"versions:torch-{version('torch')},transformers-{version('transformers')}"
                   f"{backend_versions(config.backend)}"])

    def options_signature(self, config) -> list[str]:
        return []

    def tokenizer_name(self, config) -> str:
        return f"hf:{config.model}"

    noise_tokenizer_name = tokenizer_name

    def language_tokenizer(self, config, lang: str) -> str:
        return self.tokenizer_name(config)

    def noise_tokenizer(self, config, lang, corpus_texts):
        from metrics.noise import hf_noise_tokenizer

        return hf_noise_tokenizer(self.prepare(config).tokenizer, config.model)

    def run_params(self, config) -> dict:
        from models import describe_model

        return {"model_provenance": describe_model(config.model)}

    def prepare(self, config):
        key = (self.name, config.model, config.layer, config.device, config.dtype,
               config.backend, config.batch_size)
        if key not in _LOADED:
            options = {"batch_size": config.batch_size} if config.batch_size else {}
            _LOADED[key] = loaded = self.load(config, **options)
            fell_back = getattr(loaded, "backend", config.backend)
            if fell_back != config.backend:  # the onnx export failed: torch runs it
                _LOADED[key[:5] + (fell_back,) + key[6:]] = loaded
        return _LOADED[key]

    def load(self, config, **options):
        raise NotImplementedError

    def check_item(self, config, item, setup) -> None:
        """Raise MetricInputError for an item this run cannot score (before any model runs)."""

    def score_segments(self, config, scorer, items, predictions, references, setup):
        raise NotImplementedError

    def score_batch(self, config, items, setup):
        scorer = self.prepare(config)
        out: list[Optional[PairScore]] = [None] * len(items)
        ok, predictions, references = [], [], []
        for i, item in enumerate(items):
            try:
                pair = [build_segment(text, config.context, item.lang, item.file_content,
                                      item.span) for text in (item.prediction, item.reference)]
                self.check_item(config, item, setup)
            except Exception as exc:
                out[i] = PairScore.failed(item_error(exc))
                continue
            ok.append(i)
            predictions.append(pair[0])
            references.append(pair[1])
        if ok:
            try:
                scores = self.score_segments(config, scorer, [items[i] for i in ok],
                                             predictions, references, setup)
            except Exception as exc:  # a batch failed as a whole: isolate the culprit
                if len(ok) == 1:
                    scores = [PairScore.failed(item_error(exc))]
                else:
                    log.warning("batch of %d failed (%s); scoring one by one", len(ok), exc)
                    scores = [self.score_batch(config, [items[i]], setup)[0] for i in ok]
            for i, score in zip(ok, scores):
                out[i] = score
        return out


@dataclass
class BertScoreSetup:
    """Run-wide inputs computed once and stored in MetricRun.params (idf, baselines)."""

    idf: Optional[dict] = None
    baselines: dict = field(default_factory=dict)  # lang -> Baseline


class BertScore(NeuralMetric):
    name = "bertscore"
    aliases = ("bert_score",)
    options = (
        model_option("intfloat/multilingual-e5-small"),
        MetricOption("layer", type=int, prefix=False, signature="own", in_key=False,
                     help="use the output of this layer (default: the last)"),
        dtype_option(None, ("float32", "float16", "bfloat16")),
        MetricOption("backend", None, BACKENDS, prefix=False, signature="own", inert=("torch",),
                     in_key=False,
                     help="the encoder: openvino (OpenVINO, CPU, float32: the default there), "
                          "onnx (ONNX Runtime on the same ONNX export, CPU, float32) or torch"),
        MetricOption("idf", False, type=bool, prefix=False, signature="own",
                     help="idf weighting"),
        MetricOption("rescale", "none", RESCALE_CHOICES, prefix=False, signature="own",
                     help="baseline rescaling: package (bert-score's files) or corpus (computed "
                          "from unrelated reference pairs)"))

    def validate(self, config):
        from metrics.encoders import BackendError, resolve_backend

        config = super().validate(config)
        try:
            backend = resolve_backend(config.device, config.dtype, config.backend)
        except BackendError as exc:
            raise ConfigError(f"--{exc}") from None
        return replace(config, backend=backend)

    def options_signature(self, config) -> list[str]:
        return [f"idf:{'yes' if config.idf else 'no'}", f"rescale:{config.rescale}"]

    def load(self, config, **options):
        from metrics.bertscore import BertScorer

        return BertScorer.from_pretrained(config.model, config.layer, device=config.device,
                                          dtype=config.dtype, backend=config.backend, **options)

    def needs_references(self, config) -> bool:
        return config.idf or config.rescale != "none"

    def prepare_run(self, config, references, stored):
        """idf / baselines from the run's references (target id -> (text, lang))."""
        from metrics.bertscore import Baseline, corpus_baseline, packaged_baseline

        stored = dict(stored or {})
        setup = BertScoreSetup()
        scorer = self.prepare(config)
        if config.idf:
            if "idf" not in stored:
                texts = [text for _, (text, _) in sorted(references.items()) if text.strip()]
                weights = scorer.idf(texts)
                stored["idf"] = {str(k): v for k, v in weights.items() if k is not None}
                stored["idf_default"] = weights[None]
                stored["idf_documents"] = len(texts)
            setup.idf = {int(k): v for k, v in stored["idf"].items()}
            setup.idf[None] = stored["idf_default"]
        if config.rescale != "none":
            baselines = dict(stored.get("baselines", {}))
            by_lang: dict[str, list[str]] = {}
            for _, (text, lang) in sorted(references.items()):
                if text.strip():
                    by_lang.setdefault(lang, []).append(text)
            for lang, texts in by_lang.items():
                if lang in baselines or (config.rescale == "corpus" and len(set(texts)) < 2):
                    continue  # items of such a language get a clear per-item error
                if config.rescale == "package":
                    baseline = packaged_baseline(config.model, lang, scorer.layer)
                    if baseline is None:
                        continue  # items of this language get a clear per-item error
                else:
                    baseline = corpus_baseline(
                        scorer, [build_segment(t, "none") for t in texts], seed=config.seed,
                        idf=setup.idf, match_special=True, source=f"corpus:{lang}")
                baselines[lang] = asdict(baseline)
            stored["baselines"] = baselines
            setup.baselines = {lang: Baseline(**b) for lang, b in baselines.items()}
        return setup, stored

    def check_item(self, config, item, setup):
        baselines = setup.baselines if setup else {}
        if config.rescale != "none" and item.lang and item.lang not in baselines:
            raise MetricInputError(
                f"no rescaling baseline for language {item.lang!r} ({config.rescale}: "
                "bert-score ships none for this model/language, or the corpus has fewer "
                "than two distinct references in it)")

    def score_segments(self, config, scorer, items, predictions, references, setup):
        setup = setup or BertScoreSetup()
        scores = scorer.score_segments(predictions, references, idf=setup.idf,
                                       match_special=config.context == "none")
        if config.rescale != "none":
            scores = [setup.baselines[it.lang].rescale(s) for it, s in zip(items, scores)]
        return scores


class LikelihoodMetric(NeuralMetric):
    """Likelihood metrics: each item in its own language (the minimal-context prefix), all of a
    chunk's items in one call so that the scorer batches them together."""

    empty_prediction_score = None  # a log-likelihood has no floor: an empty prediction is an error

    def score_segments(self, config, scorer, items, predictions, references, setup):
        return scorer.pair_scores(predictions, references, config.context,
                                  [it.lang for it in items], **self.scorer_options(config))

    def scorer_options(self, config) -> dict:
        return {}


class BartScore(LikelihoodMetric):
    name = "bartscore"
    aliases = ("bart_score",)
    options = (model_option("facebook/bart-large-cnn"), FLOAT32_ONLY)

    def load(self, config, **options):
        from metrics.likelihood import Seq2SeqScorer

        return Seq2SeqScorer.from_pretrained(config.model, device=config.device, **options)


class LMScore(LikelihoodMetric):
    name = "lmscore"
    aliases = ("lm_score",)
    options = (model_option("HuggingFaceTB/SmolLM2-135M-Instruct"), FLOAT32_ONLY,
               MetricOption("prompt", "v1", ("v1", "v2"), signature="own",
                            help="v1: the reference, then the file up to the comment (context "
                                 "full); v2: the file first, the reference in the comment's "
                                 "place, then the comment: a target's inputs share the file, "
                                 "about 2x less CPU in full (other scores; none/minimal: as v1)"))

    def options_signature(self, config) -> list[str]:
        return [f"prompt:{config.lmscore_prompt}"]

    def scorer_options(self, config) -> dict:
        return {"prompt": config.lmscore_prompt}

    def load(self, config, **options):
        from metrics.likelihood import CausalLMScorer

        return CausalLMScorer.from_pretrained(config.model, device=config.device, **options)
