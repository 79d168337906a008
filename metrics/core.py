"""The metric interface: what every metric class implements, and the pure scoring step.

A metric (one class each, registered in `metrics.registry.METRICS`, as sacrebleu does) declares
its options (`Metric.options`, one :class:`MetricOption` each: `metrics.options` makes the CLI
flags, grid keys, checks and other metrics' refusals from them) and answers five questions
about a `metrics.config.ScoringConfig`:

- `validate(config)`: what its options cannot say alone (device, dtype...), or ConfigError;
- `signature(config)`: the metric's part of the run signature (`metrics.config` adds the rest);
- `prepare(config)`: load the model / tokenizer, once per process (None for lexical metrics);
- `prepare_run(config, references, stored)`: run-wide inputs (idf, baselines) from the corpus;
- `score_batch(config, items, setup)`: one PairScore per item, a failing item gets its error.

:func:`score_items` is the functional core used in this process and in every worker
(`metrics.parallel`): plain values in, plain values out, no database.
"""
from __future__ import annotations

import importlib.metadata
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from metrics.tokenize import UnsupportedLanguageError, check_language
from nlce.cli import InputError


class MetricInputError(InputError):
    """An item that cannot be scored (empty text, unsupported language...); the run goes on."""


@dataclass(frozen=True)
class PairScore:
    """P/R/F of one pair (F is the headline score), or the error that kept it from a score."""

    precision: Optional[float] = None
    recall: Optional[float] = None
    f: Optional[float] = None
    details: dict = field(default_factory=dict)
    error: Optional[str] = None

    @classmethod
    def failed(cls, error: str, **details) -> "PairScore":
        return cls(error=error, details=dict(details))


def require_text(text: str, what: str) -> str:
    """The text, or a MetricInputError naming what was empty or not text."""
    if not isinstance(text, str):
        raise MetricInputError(f"{what} is {type(text).__name__}, not text")
    if not text.strip():
        raise MetricInputError(f"empty {what}: nothing to score")
    return text


class ConfigError(InputError):
    """A configuration that cannot run (unknown metric, option that does not apply...)."""


OPTION_TYPES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


@dataclass(frozen=True)
class MetricOption:
    """One option of a metric, declared in its class's `options`. Its key (the grid key and the
    ScoringConfig attribute) is ``<metric>_<name>`` and its flag ``--<metric>-<name>``
    (``bleu_tokenize``, ``--bleu-tokenize``); ``prefix=False`` keeps the bare name (``layer``,
    ``--layer``), one key for every metric that declares it (``model``).

    ``signature``: ``"auto"`` appends ``name:value`` to the metric's signature when the value is
    not the default (so runs stored before the option existed keep theirs); ``"own"``: the
    metric's `signature()` writes it (historical formats); ``"none"``: not part of it.
    ``inert``: values that metrics without this option accept as a no-op (a grid's defaults may
    name ``backend: torch`` for lexical metrics too). A ``bool`` option is a switch, off by
    default (``--idf``). ``in_key``: a value away from the default (and not inert) names another
    configuration in every report (`Metric.key_options`); False for how a run computes (the
    backend) and for what the key shows by position (model, layer)."""

    name: str
    default: Any = None  # None: unset, the metric decides (the last layer, float16 on a GPU)
    choices: tuple = ()
    type: type = str
    help: str = ""
    prefix: bool = True
    signature: str = "auto"
    inert: tuple = ()
    in_key: bool = True

    def __post_init__(self):
        if self.type not in OPTION_TYPES:
            raise TypeError(f"option {self.name}: type must be one of str, int, float, bool")
        if self.signature not in ("auto", "own", "none"):
            raise TypeError(f"option {self.name}: signature must be auto, own or none")
        if self.type is bool and self.default is not False:
            raise TypeError(f"option {self.name}: a bool option is a switch, default False")
        if self.choices and self.default is not None and self.default not in self.choices:
            raise TypeError(f"option {self.name}: default {self.default!r} is not a choice")

    def key(self, metric: str) -> str:
        return f"{metric}_{self.name}" if self.prefix else self.name


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
    has_source: bool = True  # False: a pairs target, no source file around the comment


PAIRS_CONTEXT_ERROR = ("a pairs target has no source file, so context {context!r} does not "
                       "apply: score pairs with --context none")


def item_error(exc: Exception) -> str:
    """The message stored in MetricScore.error: ours as they are, others with their type."""
    if isinstance(exc, (MetricInputError, UnsupportedLanguageError)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class Metric:
    """Base class of every metric; subclasses override what differs."""

    name = "?"
    lexical = True
    aliases: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()  # distributions whose versions a run records
    # What a generation the model left empty scores: the metric's floor (nothing of the
    # reference is matched), or None for metrics without a floor (likelihoods): an error then.
    empty_prediction_score: Optional[float] = 0.0
    options: tuple[MetricOption, ...] = ()  # this metric's own options (see MetricOption)
    # the direction of a better comment: True for every metric here (overlap, similarity,
    # likelihood); None where unknown. Stored with each run; align flags thresholds against it.
    higher_is_better: Optional[bool] = True
    argument: Optional[str] = None  # the option `--metric NAME:VALUE` sets (evaluate:PATH)
    argument_help = ""  # how that VALUE reads in the list of metrics

    def run_name(self, config) -> str:
        """MetricRun.metric: how align and reports name this metric's runs."""
        return self.name

    def validate(self, config):
        """Called after `metrics.options.resolve` checked and filled in the declared options."""
        return config

    def option_values(self, config) -> dict[str, Any]:
        """This metric's options in ``config``, by option name (``tokenize``, ``layer``)."""
        given = dict(config.options)
        return {o.name: given.get(o.key(self.name), o.default) for o in self.options}

    def signature(self, config) -> list[str]:
        raise NotImplementedError

    def key_options(self, config) -> dict[str, str]:
        """The options that name this configuration in reports beside metric, model, layer and
        context: those set away from their default (and from their inert values), name ->
        value as text. Stored with the run (`MetricRun.params`, `db.metric_keys`)."""
        values = self.option_values(config)
        return {o.name: _signed(values[o.name]) for o in self.options
                if o.in_key and values[o.name] is not None and values[o.name] != o.default
                and values[o.name] not in o.inert}

    def run_signature(self, config) -> list[str]:
        """`signature` and the ``"auto"`` options set away from their defaults, as name:value."""
        values = self.option_values(config)
        return self.signature(config) + [
            f"{o.name}:{_signed(values[o.name])}" for o in self.options
            if o.signature == "auto" and values[o.name] != o.default]

    def tokenizer_name(self, config) -> str:
        """MetricRun.tokenizer."""
        raise NotImplementedError

    def language_tokenizer(self, config, lang: str) -> str:
        """The tokenizer a text in ``lang`` is scored with (the signature names the rule)."""
        raise NotImplementedError

    def noise_tokenizer_name(self, config) -> str:
        """NoiseSample.tokenizer: noise is drawn in this tokenizer's token space."""
        raise NotImplementedError

    def noise_tokenizer(self, config, lang: str, corpus_texts: Callable[[], list[str]]):
        """A metrics.noise.NoiseTokenizer; `corpus_texts()` gives the files of the target's
        dataset and language (only the lexical vocabulary needs them)."""
        raise NotImplementedError

    def run_params(self, config) -> dict:
        """What this metric adds to MetricRun.params when the run is created."""
        return {}

    def prepare(self, config) -> Any:
        """Load what scoring needs (memoised per process); None when nothing is loaded."""
        return None

    def needs_references(self, config) -> bool:
        """Whether `prepare_run` needs every reference of the corpus in play."""
        return False

    def prepare_run(self, config, references: dict, stored: dict) -> tuple[Any, dict]:
        """(setup handed to every score_batch, params to store); `stored` holds what a previous
        invocation of the same run computed, so a resumed run stays equal."""
        return None, stored

    def score_batch(self, config, items: Sequence[ScoringItem], setup) -> list[PairScore]:
        raise NotImplementedError


def _signed(value) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


# Progress inside one score_items call, for a progress bar in this process: the runner sets the
# callback (`progress_to`), score_items the number of items in play, and a scorer reports how
# far through its batches it is (`report_progress`); it arrives as items.
_PROGRESS: dict = {"callback": None, "items": 0, "shown": 0}


@contextmanager
def progress_to(callback: Callable[[int], None]):
    """While inside, scorers in this process report partial progress as ``callback(items)``."""
    saved = dict(_PROGRESS)
    _PROGRESS.update(callback=callback, items=0, shown=0)
    try:
        yield
    finally:
        _PROGRESS.update(saved)


def report_progress(done: float, total: float) -> None:
    """A scorer has done ``done`` of ``total`` units (segments, inputs) of the current call."""
    callback, items = _PROGRESS["callback"], _PROGRESS["items"]
    if callback is None or not items or total <= 0:
        return
    now = int(items * min(done, total) / total)
    if now > _PROGRESS["shown"]:
        callback(now - _PROGRESS["shown"])
        _PROGRESS["shown"] = now


def score_items(config, items: Sequence[ScoringItem], setup=None) -> list[PairScore]:
    """Scores of ``items`` under ``config``, in order; a failing item gets PairScore.error.
    Every metric refuses a language code that is not one (`metrics.tokenize.check_language`)."""
    _PROGRESS.update(items=0, shown=0)  # reports of an earlier call count no more
    out: list[Optional[PairScore]] = [None] * len(items)
    valid = []
    floor = config.implementation.empty_prediction_score
    for i, item in enumerate(items):
        try:
            check_language(item.lang)
        except UnsupportedLanguageError as exc:
            out[i] = PairScore.failed(item_error(exc))
            continue
        if config.context != "none" and not item.has_source:
            out[i] = PairScore.failed(PAIRS_CONTEXT_ERROR.format(context=config.context))
        elif floor is not None and item.subject == "generation" and isinstance(item.prediction, str) \
                and not item.prediction.strip() and str(item.reference).strip():
            out[i] = PairScore(floor, floor, floor, {"empty_prediction": True})
        else:
            valid.append(i)
    _PROGRESS["items"] = len(valid)
    try:
        scores = config.implementation.score_batch(config, [items[i] for i in valid], setup) \
            if valid else []
    finally:
        _PROGRESS["items"] = 0
    for i, score in zip(valid, scores):
        out[i] = score
    return out  # type: ignore[return-value]


def score_chunk(payload, items) -> list[PairScore]:
    """A worker's function (`metrics.parallel`): payload is (config, setup)."""
    config, setup = payload
    return score_items(config, items, setup)


def _prepare_chunk(payload) -> None:
    config = payload[0]
    config.implementation.prepare(config)  # loads the model once per worker process


score_chunk.prepare = _prepare_chunk
