"""The scoring runner: configurations, the pure scoring step, and the database shell around it.

- :class:`ScoringConfig` is one metric configuration; :meth:`ScoringConfig.signature` names it
  reproducibly (sacrebleu-style) and is the MetricRun's unique key.
- :func:`score_items` is the functional core: ``(config, items, setup) -> [PairScore]`` over plain
  :class:`ScoringItem` values, no database. A later sharding layer (processes, Ray) can call it on
  any slice of items; models are loaded once per process (:func:`get_scorer`).
- :func:`score_configuration` / :func:`score_grid` are the shell: select generations (or noise
  samples, created on demand), get-or-create the MetricRun, skip what is stored, score in chunks
  and commit each chunk (an interrupted run keeps every finished chunk; re-running resumes).
  One bad item gets ``MetricScore.error`` and the run goes on.
"""
from __future__ import annotations

import importlib.metadata
import itertools
import logging
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Iterable, Optional, Sequence

from metrics.context import ContextVariant, build_segment
from metrics.scores import MetricInputError, PairScore
from metrics.tokenize import UnsupportedLanguageError

log = logging.getLogger(__name__)

LEXICAL = ("bleu", "rouge_l", "meteor", "chrf")
NEURAL = ("bertscore", "bartscore", "lmscore")
METRICS = LEXICAL + NEURAL
NOISE_CHOICES = ("none", "uniform", "targeted")
RESCALE_CHOICES = ("none", "package", "corpus")
DEFAULT_MODELS = {"bertscore": "intfloat/multilingual-e5-small",
                  "lmscore": "HuggingFaceTB/SmolLM2-135M-Instruct",
                  "bartscore": "facebook/bart-large-cnn"}
RUNNER_VERSION = "1"


class ConfigError(ValueError):
    """A configuration that cannot run (unknown metric, option that does not apply...)."""


@dataclass(frozen=True)
class ScoringConfig:
    metric: str
    model: Optional[str] = None
    layer: Optional[int] = None
    context: str = "none"
    noise: str = "none"
    seed: int = 0
    idf: bool = False
    rescale: str = "none"
    bleu_tokenize: str = "comment"
    dtype: Optional[str] = None
    backend: Optional[str] = None  # bertscore encoder: torch | onnx (metrics.encoders)
    # how to run, not what is computed: not part of the signature
    device: Optional[str] = None
    batch_size: Optional[int] = None
    langs: tuple[str, ...] = ()
    limit: Optional[int] = None
    dataset: Optional[str] = None

    def validated(self) -> "ScoringConfig":
        """A normalised copy, or ConfigError naming the bad field."""
        metric = (self.metric or "").strip().lower().replace("-", "_")
        metric = {"rouge": "rouge_l", "rougel": "rouge_l", "bert_score": "bertscore",
                  "bart_score": "bartscore", "lm_score": "lmscore"}.get(metric, metric)
        if metric not in METRICS:
            raise ConfigError(f"unknown metric {self.metric!r}; choose one of {', '.join(METRICS)}")
        try:
            context = ContextVariant.parse(self.context).value
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if self.noise not in NOISE_CHOICES:
            raise ConfigError(f"unknown noise {self.noise!r}; choose one of "
                              f"{', '.join(NOISE_CHOICES)}")
        if self.rescale not in RESCALE_CHOICES:
            raise ConfigError(f"unknown rescale {self.rescale!r}; choose one of "
                              f"{', '.join(RESCALE_CHOICES)}")
        model, layer = self.model, self.layer
        if metric in LEXICAL:
            if model or layer is not None:
                raise ConfigError(f"{metric} is lexical: it takes no --model/--layer")
            if context != "none":
                raise ConfigError(f"{metric} is lexical: context variants apply to neural metrics "
                                  "only (the context would be scored as text)")
        else:
            model = model or DEFAULT_MODELS[metric]
            if layer is not None and metric != "bertscore":
                raise ConfigError(f"--layer applies to bertscore only, not {metric}")
        device, dtype = self.device, self.dtype
        if metric in NEURAL:
            from metrics.bertscore import resolve_dtype
            from metrics.hub import pick_device

            device = pick_device(device)
            try:
                dtype = resolve_dtype(device, dtype if metric == "bertscore" else
                                      dtype or "float32")
            except ValueError as exc:
                raise ConfigError(f"--{exc}") from None
            if dtype != "float32" and metric != "bertscore":
                raise ConfigError("half precision is implemented for bertscore only")
        backend = self.backend
        if metric == "bertscore":
            from metrics.encoders import BackendError, resolve_backend

            try:
                backend = resolve_backend(device, dtype, backend)
            except BackendError as exc:
                raise ConfigError(f"--{exc}") from None
        elif backend not in (None, "torch"):
            raise ConfigError(f"--backend applies to bertscore only, not {metric}")
        else:
            backend = None
        if (self.idf or self.rescale != "none") and metric != "bertscore":
            raise ConfigError("--idf and --rescale apply to bertscore only")
        if metric != "bleu" and self.bleu_tokenize != "comment":
            raise ConfigError("--bleu-tokenize applies to bleu only")
        if self.bleu_tokenize not in ("comment", "sacrebleu"):
            raise ConfigError(f"--bleu-tokenize must be comment or sacrebleu, "
                              f"not {self.bleu_tokenize!r}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError("--limit must be at least 1")
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError("--batch-size must be at least 1")
        langs = tuple(sorted({lang.strip().lower() for lang in self.langs if lang.strip()}))
        return replace(self, metric=metric, model=model, layer=layer, context=context, langs=langs,
                       device=device, dtype=dtype, backend=backend)

    @property
    def is_lexical(self) -> bool:
        return self.metric in LEXICAL

    def noise_tokenizer_name(self) -> str:
        from metrics.noise import LEXICAL_NOISE_TOKENIZER

        return LEXICAL_NOISE_TOKENIZER if self.is_lexical else f"hf:{self.model}"

    def signature(self) -> str:
        """metric|model|layer|tok|ctx|noise|seed|options|versions: equal signatures, equal scores."""
        parts = [f"metric:{self.metric}"]
        if self.is_lexical:
            from metrics import lexical

            if self.metric == "bleu":
                parts.append(lexical.bleu_signature(self.bleu_tokenize))
            else:
                parts.append(lexical.LEXICAL_SIGNATURES[self.metric]())
        else:
            parts += [f"model:{self.model}", f"layer:{self.layer if self.layer is not None else 'last'}",
                      f"tok:hf:{self.model}", f"dtype:{self.dtype}"]
            if self.backend == "onnx":  # torch runs keep the signature they had before backends
                parts.append("backend:onnx")
            if self.metric == "bertscore":
                parts += [f"idf:{'yes' if self.idf else 'no'}", f"rescale:{self.rescale}"]
            if self.metric == "lmscore":
                from metrics.likelihood import CAUSAL_PROMPT_VERSION

                parts.append(f"prompt:{CAUSAL_PROMPT_VERSION}")
            from metrics.encoders import backend_versions

            parts.append(f"versions:torch-{_version('torch')},transformers-{_version('transformers')}"
                         f"{backend_versions(self.backend)}")
        parts += [f"ctx:{self.context}", f"noise:{self.noise}"]
        if self.noise != "none":
            parts.append(f"noisetok:{self.noise_tokenizer_name()}")
        parts += [f"seed:{self.seed}", f"runner:{RUNNER_VERSION}"]
        return "|".join(parts)

    def library_versions(self) -> dict:
        names = ["nlcomment-eval", "sacrebleu", "rouge-score", "nltk"] if self.is_lexical else \
            ["nlcomment-eval", "torch", "transformers", "tokenizers"]
        if self.backend == "onnx":
            names.append("onnxruntime")
        return {n: _version(n) for n in names}


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class ScoringItem:
    """One thing to score: a prediction (generation or noise text) against its reference."""

    subject: str  # "generation" | "noise"
    subject_id: int
    target_id: int
    prediction: str
    reference: str
    lang: str
    file_content: Optional[str] = None
    span: Optional[tuple[int, int]] = None


@dataclass
class ScoringSetup:
    """Run-wide inputs computed once and stored in MetricRun.params (idf, baselines)."""

    idf: Optional[dict] = None
    baselines: dict = field(default_factory=dict)  # lang -> Baseline


# ---------------------------------------------------------------- the functional core

_SCORERS: dict = {}


def get_scorer(config: ScoringConfig):
    """The loaded model scorer of a neural config (once per process), None for lexical ones."""
    if config.is_lexical:
        return None
    key = (config.metric, config.model, config.layer, config.device, config.dtype,
           config.backend, config.batch_size)
    if key not in _SCORERS:
        kwargs = {"batch_size": config.batch_size} if config.batch_size else {}
        if config.metric == "bertscore":
            from metrics.bertscore import BertScorer

            scorer = BertScorer.from_pretrained(config.model, config.layer, device=config.device,
                                                dtype=config.dtype, backend=config.backend,
                                                **kwargs)
            _SCORERS[key] = scorer
            if scorer.backend != config.backend:  # the onnx export failed: torch runs it
                _SCORERS[key[:5] + (scorer.backend,) + key[6:]] = scorer
        elif config.metric == "bartscore":
            from metrics.likelihood import Seq2SeqScorer

            _SCORERS[key] = Seq2SeqScorer.from_pretrained(config.model, device=config.device,
                                                          **kwargs)
        else:
            from metrics.likelihood import CausalLMScorer

            _SCORERS[key] = CausalLMScorer.from_pretrained(config.model, device=config.device,
                                                           **kwargs)
    return _SCORERS[key]


def _segments(item: ScoringItem, context: str):
    return (build_segment(item.prediction, context, item.lang, item.file_content, item.span),
            build_segment(item.reference, context, item.lang, item.file_content, item.span))


def _item_error(exc: Exception) -> str:
    if isinstance(exc, (MetricInputError, UnsupportedLanguageError)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def score_items(config: ScoringConfig, items: Sequence[ScoringItem],
                setup: Optional[ScoringSetup] = None) -> list[PairScore]:
    """Scores of ``items`` under ``config``, in order; a failing item gets PairScore.error."""
    setup = setup or ScoringSetup()
    if config.is_lexical:
        from metrics.lexical import LEXICAL_METRICS

        fn = LEXICAL_METRICS[config.metric]
        kwargs = {"tokenize": config.bleu_tokenize} if config.metric == "bleu" else {}
        out = []
        for item in items:
            try:
                out.append(fn(item.prediction, item.reference, item.lang, **kwargs))
            except Exception as exc:  # one bad item never aborts the run
                out.append(PairScore.failed(_item_error(exc)))
        return out
    scorer = get_scorer(config)
    out: list[Optional[PairScore]] = [None] * len(items)
    ok, preds, refs = [], [], []
    for i, item in enumerate(items):
        try:
            p, r = _segments(item, config.context)
            if config.metric == "bertscore" and item.lang and config.rescale != "none" \
                    and item.lang not in setup.baselines:
                raise MetricInputError(
                    f"no rescaling baseline for language {item.lang!r} ({config.rescale}: "
                    "bert-score ships none for this model/language, or the corpus has fewer "
                    "than two distinct references in it)")
        except Exception as exc:
            out[i] = PairScore.failed(_item_error(exc))
            continue
        ok.append(i)
        preds.append(p)
        refs.append(r)
    if ok:
        try:
            scores = _score_neural(config, scorer, [items[i] for i in ok], preds, refs, setup)
        except Exception as exc:  # a batch failed as a whole: isolate the culprit item by item
            if len(ok) == 1:
                scores = [PairScore.failed(_item_error(exc))]
            else:
                log.warning("batch of %d failed (%s); scoring one by one", len(ok), exc)
                scores = [score_items(config, [items[i]], setup)[0] for i in ok]
        for i, s in zip(ok, scores):
            out[i] = s
    return out  # type: ignore[return-value]


def _score_neural(config, scorer, items, preds, refs, setup) -> list[PairScore]:
    if config.metric == "bertscore":
        scores = scorer.score_segments(preds, refs, idf=setup.idf,
                                       match_special=config.context == "none")
        if config.rescale != "none":
            scores = [setup.baselines[it.lang].rescale(s) for it, s in zip(items, scores)]
        return scores
    # likelihood metrics take one language per call (minimal-context prefix)
    out: list[Optional[PairScore]] = [None] * len(items)
    for lang in sorted({it.lang for it in items}):
        idx = [i for i, it in enumerate(items) if it.lang == lang]
        res = scorer.pair_scores([preds[i] for i in idx], [refs[i] for i in idx],
                                 config.context, lang)
        for i, s in zip(idx, res):
            out[i] = s
    return out  # type: ignore[return-value]


def prepare_setup(config: ScoringConfig, references: dict[int, tuple[str, str]],
                  stored: Optional[dict] = None) -> tuple[ScoringSetup, dict]:
    """idf / baselines for a bertscore run from the run's references (target id -> (text, lang));
    reuses what a previous invocation stored in MetricRun.params so resumed runs stay equal.
    Returns the setup and the params to store."""
    stored = dict(stored or {})
    setup = ScoringSetup()
    if config.metric != "bertscore":
        return setup, stored
    from metrics.bertscore import Baseline, corpus_baseline, packaged_baseline

    scorer = get_scorer(config)
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
                b = packaged_baseline(config.model, lang, scorer.layer)
                if b is None:
                    continue  # items of this language get a clear per-item error
            else:
                segs = [build_segment(t, "none") for t in texts]
                b = corpus_baseline(scorer, segs, seed=config.seed, idf=setup.idf,
                                    match_special=True,
                                    source=f"corpus:{lang}")
            baselines[lang] = asdict(b)
        stored["baselines"] = baselines
        setup.baselines = {lang: Baseline(**b) for lang, b in baselines.items()}
    return setup, stored


# ---------------------------------------------------------------- grids

def expand_grid(spec: dict) -> list[ScoringConfig]:
    """``{defaults: {...}, runs: [{metric: [a, b], noise: [...], ...}, ...]}`` -> configs; a list
    value in a run expands into one configuration per element (cartesian product)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("runs"), list):
        raise ConfigError("a grid file is a mapping with a `runs:` list (and optional `defaults:`)")
    defaults = spec.get("defaults") or {}
    fields = set(ScoringConfig.__dataclass_fields__)
    configs = []
    for n, run in enumerate(spec["runs"], 1):
        if not isinstance(run, dict):
            raise ConfigError(f"grid run #{n} is not a mapping: {run!r}")
        merged = {**defaults, **run}
        unknown = set(merged) - fields
        if unknown:
            raise ConfigError(f"grid run #{n}: unknown field(s) {', '.join(sorted(unknown))}; "
                              f"known: {', '.join(sorted(fields))}")
        keys = list(merged)
        values = [v if isinstance(v, list) and k != "langs" else [v] for k, v in merged.items()]
        for combo in itertools.product(*values):
            kwargs = dict(zip(keys, combo))
            if "langs" in kwargs:
                langs = kwargs["langs"]
                kwargs["langs"] = tuple([langs] if isinstance(langs, str) else langs)
            try:
                configs.append(ScoringConfig(**kwargs).validated())
            except ConfigError as exc:
                raise ConfigError(f"grid run #{n} ({kwargs}): {exc}") from None
    return configs


def load_grid(path: str) -> list[ScoringConfig]:
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            spec = yaml.safe_load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read grid file {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"grid file {path} is not valid YAML: {exc}") from None
    try:
        return expand_grid(spec)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _finite(x: Optional[float]) -> Optional[float]:
    return x if x is None or math.isfinite(x) else None


__all__ = ["ScoringConfig", "ScoringItem", "ScoringSetup", "ConfigError", "score_items",
           "get_scorer", "prepare_setup", "expand_grid", "load_grid", "METRICS"]
