"""Scoring configurations: one metric configuration, its validation and signature, grid files.

:class:`ScoringConfig` is plain, picklable, hashable data: what every metric shares (metric,
context, noise, seed, and how to run: device, batch size, languages, limit, dataset) and the
metric's own options (`options`: key -> value, the keys `metrics.options` makes from the metric
classes' declarations; ``config.layer`` reads one, None when unset). :meth:`ScoringConfig.validated`
checks the shared fields, has `metrics.options.resolve` check the options (refusing those the
metric does not take) and hands the rest to the metric's class (`metrics.registry.METRICS`);
:meth:`ScoringConfig.signature` names the configuration reproducibly (sacrebleu-style) and is the
MetricRun's unique key: equal signatures, equal scores.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, fields, replace
from typing import Any, Optional

from db.models import NOISE_KINDS
from metrics import options as metric_options
from metrics.context import ContextVariant
from metrics.core import ConfigError, Metric, version
from metrics.registry import METRICS, split_metric
from nlce.option_files import load_option_yaml

RUNNER_VERSION = "1"


@dataclass(frozen=True, init=False)
class ScoringConfig:
    metric: str
    context: str = "none"
    noise: str = "none"
    seed: int = 0
    # how to run, not what is computed: not part of the signature
    device: Optional[str] = None
    batch_size: Optional[int] = None
    langs: tuple[str, ...] = ()
    limit: Optional[int] = None
    dataset: Optional[str] = None
    # the metric's options, (key, value) sorted by key; an unset option is absent
    options: tuple[tuple[str, Any], ...] = ()

    def __init__(self, metric: str, *, context: str = "none", noise: str = "none", seed: int = 0,
                 device: Optional[str] = None, batch_size: Optional[int] = None,
                 langs: tuple[str, ...] = (), limit: Optional[int] = None,
                 dataset: Optional[str] = None, options=(), **named):
        """``ScoringConfig("bertscore", layer=9, idf=True)``: options by key, or as ``options``."""
        values = {**dict(options), **named}
        unknown = set(values) - set(option_keys())
        if unknown:
            raise ConfigError(f"unknown option(s) {', '.join(sorted(unknown))}; known: "
                              f"{', '.join(option_keys())}")
        for name, value in (("metric", metric), ("context", context), ("noise", noise),
                            ("seed", seed), ("device", device), ("batch_size", batch_size),
                            ("langs", langs), ("limit", limit), ("dataset", dataset)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "options", tuple(sorted(
            (key, value) for key, value in values.items() if value is not None)))

    def __getattr__(self, name: str):
        """An option by key (``config.layer``, ``config.bleu_tokenize``): None when unset."""
        if name.startswith("__") or name == "options":
            raise AttributeError(name)  # pickle and copy probe before the fields exist
        for key, value in self.options:
            if key == name:
                return value
        if name in option_keys():
            return None
        raise AttributeError(f"ScoringConfig has no field or option {name!r}")

    def validated(self) -> "ScoringConfig":
        """A normalised copy, or ConfigError naming the bad field."""
        name, argument = split_metric(self.metric)  # evaluate:PATH fills its module option
        config = replace(self, metric=name, options=tuple(sorted({**dict(self.options),
                                                                  **argument}.items())))
        try:
            config = replace(config, context=ContextVariant.parse(self.context).value)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if self.noise not in NOISE_KINDS:
            raise ConfigError(f"unknown noise {self.noise!r}; choose one of "
                              f"{', '.join(NOISE_KINDS)}")
        config = replace(config, options=metric_options.resolve(config.implementation,
                                                                dict(config.options)))
        config = config.implementation.validate(config)
        if self.limit is not None and self.limit < 1:
            raise ConfigError("--limit must be at least 1")
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError("--batch-size must be at least 1")
        from taxonomy.languages import LanguageCodeError, normalise_language

        try:
            langs = tuple(sorted({normalise_language(lang) for lang in self.langs
                                  if lang.strip()}))
        except LanguageCodeError as exc:
            raise ConfigError(f"--lang: {exc}") from None
        return replace(config, langs=langs)

    @property
    def implementation(self) -> Metric:
        """The metric's class (`metrics.registry.METRICS`) of a validated configuration."""
        return METRICS[self.metric]

    @property
    def is_lexical(self) -> bool:
        return self.implementation.lexical

    def noise_tokenizer_name(self) -> str:
        return self.implementation.noise_tokenizer_name(self)

    def signature(self) -> str:
        """metric, its options and versions, ctx, noise, seed: equal signatures, equal scores."""
        parts = [f"metric:{self.metric}", *self.implementation.run_signature(self),
                 f"ctx:{self.context}", f"noise:{self.noise}"]
        if self.noise != "none":
            parts.append(f"noisetok:{self.noise_tokenizer_name()}")
        parts += [f"seed:{self.seed}", f"runner:{RUNNER_VERSION}"]
        return "|".join(parts)

    def library_versions(self) -> dict:
        names = list(self.implementation.libraries)
        from metrics.encoders import RUNTIMES

        if self.backend in RUNTIMES:
            names.append(RUNTIMES[self.backend])
        return {name: version(name) for name in names}


def option_keys() -> list[str]:
    """Every metric option's key (also a grid key and a ScoringConfig attribute)."""
    keys = list(metric_options.declared())
    clash = set(keys) & {f.name for f in fields(ScoringConfig)}
    if clash:
        raise TypeError(f"metric option(s) {', '.join(sorted(clash))} clash with ScoringConfig's "
                        "own fields: rename them")
    return keys


def expand_grid(spec: dict) -> list[ScoringConfig]:
    """``{defaults: {...}, runs: [{metric: [a, b], noise: [...], ...}, ...]}`` -> configs; a list
    value in a run expands into one configuration per element (cartesian product)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("runs"), list):
        raise ConfigError("a grid file is a mapping with a `runs:` list (and optional `defaults:`)")
    defaults = spec.get("defaults") or {}
    known = [f.name for f in fields(ScoringConfig) if f.name != "options"] + option_keys()
    configs = []
    for n, run in enumerate(spec["runs"], 1):
        if not isinstance(run, dict):
            raise ConfigError(f"grid run #{n} is not a mapping: {run!r}")
        merged = {**defaults, **run}
        if "lang" in merged:  # the flag's name (--lang) as a grid key too
            if "langs" in merged:
                raise ConfigError(f"grid run #{n}: give `lang` or `langs`, not both")
            merged["langs"] = merged.pop("lang")
        unknown = set(merged) - set(known)
        if unknown:
            raise ConfigError(f"grid run #{n}: unknown field(s) {', '.join(sorted(unknown))}; "
                              f"known: {', '.join(known)}")
        keys = list(merged)
        values = [v if isinstance(v, list) and k != "langs" else [v] for k, v in merged.items()]
        if "metric" not in merged:
            raise ConfigError(f"grid run #{n} names no metric: {run!r}")
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
    """The configurations of a grid file, a few kilobytes of YAML read as every option file is
    (`nlce.option_files`: at most `MAX_OPTION_FILE_BYTES`)."""
    spec = load_option_yaml(path, "grid file", error=ConfigError)
    try:
        return expand_grid(spec)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
