"""Any Hugging Face `evaluate` module as a metric of the grid: ``--metric evaluate:NAME_OR_PATH``.

The module is a hub name (``evaluate:bleu``, fetched by `evaluate` when the hub is reachable)
or a local script or folder (``evaluate:./my_metric``, offline). Each pair gets one score:

- with ``--evaluate-key KEY`` a chunk of pairs goes to ``compute()`` in one call, and
  ``result[KEY]`` must be a list with one number per pair (``precision`` and ``recall`` lists of
  the same length are stored beside it); when ``result[KEY]`` is one number, every pair is a
  call of its own;
- without it every pair is a call of its own, and the result's only number is the score (a
  module that returns several names them in the item's error: choose one with the key).

``--evaluate-args '{"lowercase": true}'`` (a JSON object) is passed to every ``compute()``. A
module whose ``compute`` takes ``lang`` gets each pair's language unless the arguments fix it.
Context: a module that takes ``contexts`` (an input feature or a ``compute`` argument) gets, per
pair, the target-language prefix (``minimal``) or the source file without the comment
(``full``); any other module is refused with ``--context`` other than none. Noise is drawn like
the lexical metrics' (the comment tokenizer over the dataset's own texts), and an empty
generation goes to the module as it is (its floor is the module's business).

The signature names the module, a hash of its code (every ``.py`` file of a local module, the
loaded script of a hub module), the key, the arguments and the evaluate version; the run is
stored as metric ``evaluate:<module name>``, so align lists it under that name.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import math
import numbers
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from metrics.context import MINIMAL_PREFIX
from metrics.core import (
    ConfigError,
    Metric,
    MetricInputError,
    MetricOption,
    PairScore,
    item_error,
    report_progress,
    version,
)

_LOADED: dict = {}  # (module spec, its code's hash if local) -> loaded evaluate module


def is_local(spec: str) -> bool:
    """A path (exists, or is written like one) rather than a hub name."""
    return Path(spec).expanduser().exists() or spec.startswith((".", "/", "~")) \
        or spec.endswith(".py")


def module_name(spec: str) -> str:
    """What evaluate calls the module: the script's or folder's stem, or the hub name's last part."""
    path = Path(spec.rstrip("/")).expanduser()
    return path.stem if is_local(spec) else spec.rstrip("/").split("/")[-1]


@lru_cache(maxsize=64)
def _hash_files(files: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for name, _, _ in files:
        digest.update(Path(name).name.encode() + b"\0" + Path(name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def code_hash(path: Path) -> str:
    """sha256 (16 hex digits) of a script, or of every .py file in a folder (by name)."""
    path = path.expanduser().resolve()
    files = [path] if path.is_file() else sorted(path.glob("*.py"))
    return _hash_files(tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files))


def _load(spec: str):
    """The loaded module (memoised per process and version of a local module's code);
    ConfigError with evaluate's reason."""
    key = (spec, code_hash(Path(spec)) if is_local(spec) else None)
    if key not in _LOADED:
        try:
            import evaluate
        except ImportError:
            raise ConfigError("evaluate is not installed: pip install evaluate") from None
        target = str(Path(spec).expanduser().resolve()) if is_local(spec) else spec
        try:
            # in memory: no cache files, so worker processes never share one
            _LOADED[key] = evaluate.load(target, keep_in_memory=True)
        except Exception as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            where = "" if is_local(spec) else " (a hub name needs the Hugging Face hub: offline, " \
                                               "give the module's local script or folder)"
            raise ConfigError(f"cannot load evaluate module {spec!r}: {reason}{where}") from None
    return _LOADED[key]


def _compute_parameters(module) -> set[str]:
    features = module.features if isinstance(module.features, list) else [module.features]
    names = {name for feature in features if feature for name in feature}
    return names | set(inspect.signature(module._compute).parameters)


def _args(config) -> dict:
    return json.loads(config.evaluate_args) if config.evaluate_args else {}


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{what} is {value!r}, not a finite number")
    return float(value)


def _only_number(result: dict) -> float:
    """The one number of a pair's result (a number, or a list of one number)."""
    found = {}
    for key, value in result.items():
        if isinstance(value, (list, tuple)) and len(value) == 1:
            value = value[0]
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            found[key] = value
    if len(found) != 1:
        names = ", ".join(found or result) or "nothing"
        raise MetricInputError(f"compute() returned {'the numbers ' if found else ''}{names}: "
                               f"choose the score with --evaluate-key")
    key, value = next(iter(found.items()))
    return _number(value, key)


class EvaluateMetric(Metric):
    name = "evaluate"
    argument = "evaluate_module"  # `--metric evaluate:X` sets this option to X
    argument_help = "NAME_OR_PATH"
    lexical = True  # noise as the lexical metrics draw it; no model of ours
    libraries = ("nlcomment-eval", "evaluate")
    empty_prediction_score = None  # an empty generation goes to the module as it is
    higher_is_better = None  # a module may be an error rate: align infers what it must (--monotone)
    options = (
        MetricOption("module", help="the evaluate module: a hub name, or a local script or "
                                    "folder (also --metric evaluate:NAME_OR_PATH)",
                     signature="own", in_key=False),  # its name is the run's: evaluate:NAME
        MetricOption("key", help="the key of compute()'s result holding one score per pair "
                                 "(then a chunk is one call); without it, a call per pair and "
                                 "its only number", signature="own"),
        MetricOption("args", help="keyword arguments for compute(), a JSON object, e.g. "
                                  "'{\"lowercase\": true}'", signature="own"))

    def validate(self, config):
        spec = config.evaluate_module
        if not spec or not spec.strip():
            raise ConfigError("evaluate needs a module: --metric evaluate:NAME_OR_PATH")
        if is_local(spec) and not Path(spec).expanduser().exists():
            raise ConfigError(f"evaluate module {spec}: no such file or folder")
        try:
            args = _args(config)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--evaluate-args is not JSON: {exc}") from None
        if not isinstance(args, dict):
            raise ConfigError(f"--evaluate-args must be a JSON object, not {config.evaluate_args}")
        return config

    def run_name(self, config) -> str:
        return f"evaluate:{module_name(config.evaluate_module)}"

    def signature(self, config) -> list[str]:
        spec = config.evaluate_module
        if is_local(spec):
            code = code_hash(Path(spec))
        else:  # the script evaluate fetched
            code = code_hash(Path(inspect.getfile(type(self.prepare(config)))))
        parts = [f"module:{module_name(spec)}", f"code:{code}"]
        if config.evaluate_key:
            parts.append(f"key:{config.evaluate_key}")
        if config.evaluate_args:
            parts.append(f"args:{json.dumps(_args(config), sort_keys=True, ensure_ascii=False)}")
        return parts + [f"version:{version('evaluate')}"]

    def tokenizer_name(self, config) -> str:
        return f"{self.run_name(config)} (its own)"

    def language_tokenizer(self, config, lang: str) -> str:
        return self.tokenizer_name(config)

    def noise_tokenizer_name(self, config) -> str:
        from metrics.noise import LEXICAL_NOISE_TOKENIZER

        return LEXICAL_NOISE_TOKENIZER

    def noise_tokenizer(self, config, lang, corpus_texts):
        from metrics.noise import lexical_noise_tokenizer, lexical_vocabulary

        return lexical_noise_tokenizer(lang, lexical_vocabulary(corpus_texts(), lang))

    def prepare(self, config):
        module = _load(config.evaluate_module)
        if config.context != "none" and "contexts" not in _compute_parameters(module):
            raise ConfigError(
                f"{self.run_name(config)} takes no context (its compute() has no `contexts` "
                f"input): score it with --context none")
        return module

    def score_batch(self, config, items, setup):
        module, args = self.prepare(config), _args(config)
        takes = _compute_parameters(module)
        groups: dict[Optional[str], list[int]] = {}
        for i, item in enumerate(items):  # one language per call where compute takes `lang`
            groups.setdefault(item.lang if "lang" in takes and "lang" not in args else None,
                              []).append(i)
        out: list[Optional[PairScore]] = [None] * len(items)
        for lang, indices in groups.items():
            extra = dict(args, **({"lang": lang} if lang else {}))
            for i, score in zip(indices, self._scores(config, module, [items[i] for i in indices],
                                                      extra)):
                out[i] = score
        return out

    def _inputs(self, config, items) -> dict[str, Any]:
        inputs = {"predictions": [it.prediction for it in items],
                  "references": [it.reference for it in items]}
        if config.context == "minimal":
            inputs["contexts"] = [MINIMAL_PREFIX.get(it.lang, MINIMAL_PREFIX["en"])
                                  for it in items]
        elif config.context == "full":
            from metrics.noise import context_without_comment

            inputs["contexts"] = [context_without_comment(it.file_content, it.span)
                                  for it in items]
        return inputs

    def _scores(self, config, module, items, args) -> list[PairScore]:
        key = config.evaluate_key
        if key and len(items) > 1:  # the chunk in one call, if the key holds a list per pair
            try:
                result = module.compute(**self._inputs(config, items), **args)
            except Exception:  # a pair it cannot take: each pair on its own finds which
                result = {}
            values = result.get(key)
            if isinstance(values, (list, tuple)) and len(values) == len(items):
                return [self._pair(result, values, k) for k in range(len(items))]
        out = []
        for item in items:
            report_progress(len(out), len(items))
            try:
                result = module.compute(**self._inputs(config, [item]), **args)
                if not key:
                    out.append(PairScore(f=_only_number(result)))
                    continue
                if key not in result:
                    raise MetricInputError(f"compute() returned no {key!r} (it returned "
                                     f"{', '.join(result) or 'nothing'})")
                value = result[key]
                if isinstance(value, (list, tuple)) and len(value) == 1:
                    value = value[0]
                out.append(PairScore(f=_number(value, key)))
            except Exception as exc:  # this pair fails; the others go on
                out.append(PairScore.failed(item_error(exc)))
        return out

    def _pair(self, result: dict, values, k: int) -> PairScore:
        try:
            side = {name: _number(result[name][k], name) for name in ("precision", "recall")
                    if isinstance(result.get(name), (list, tuple))
                    and len(result[name]) == len(values)}
            return PairScore(side.get("precision"), side.get("recall"), _number(values[k], "score"))
        except ValueError as exc:
            return PairScore.failed(item_error(exc))
