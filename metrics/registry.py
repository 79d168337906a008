"""METRICS: every metric by name, one class each (`metrics.core.Metric`).

Adding a metric is one class (in `metrics.lexical`, `metrics.neural` or a module of its own)
and one line here; the configuration, the CLI flags of its options (`metrics.options`), the
runner, the store and the executors need no change.
"""
from __future__ import annotations

from metrics.core import ConfigError, Metric
from metrics.hf_evaluate import EvaluateMetric
from metrics.lexical import Bleu, Chrf, LexicalMetric, Meteor, RougeL
from metrics.neural import BartScore, BertScore, LMScore, NeuralMetric

METRICS: dict[str, Metric] = {m.name: m for m in (
    Bleu(), RougeL(), Meteor(), Chrf(), BertScore(), BartScore(), LMScore(), EvaluateMetric())}
LEXICAL = tuple(name for name, m in METRICS.items() if isinstance(m, LexicalMetric))
NEURAL = tuple(name for name, m in METRICS.items() if isinstance(m, NeuralMetric))
_ALIASES = {alias: m.name for m in METRICS.values() for alias in m.aliases}


def _choices() -> str:
    return ", ".join(f"{n}:{m.argument_help}" if m.argument else n for n, m in METRICS.items())


def metric_name(name: str) -> str:
    """The registered name of ``name`` (case, dashes and aliases forgiven), or ConfigError."""
    key = (name or "").strip().lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if key not in METRICS:
        raise ConfigError(f"unknown metric {name!r}; choose one of {_choices()}")
    return key


def split_metric(spec: str) -> tuple[str, dict]:
    """``evaluate:./my_metric`` -> ("evaluate", {"evaluate_module": "./my_metric"}): a metric
    that takes an argument (`Metric.argument`, the option it fills) after a colon; any other
    name -> (its registered name, {})."""
    head, colon, argument = (spec or "").partition(":")
    name = metric_name(head if colon else spec)
    if not colon:
        return name, {}
    if not METRICS[name].argument:
        raise ConfigError(f"metric {name} takes no argument after ':' ({spec!r})")
    return name, {METRICS[name].argument: argument.strip()}
