"""Metric options, made from what each metric class declares (`metrics.core.MetricOption`).

One table (`declared`: key -> the metrics that declare it, from `metrics.registry.METRICS`) gives
everything else, so adding an option is one edit of its metric's class:

- `resolve`: a metric's options checked (type, choices) and their defaults filled in; an option
  the metric does not declare is refused, naming the metrics that take it;
- `add_arguments` / `from_args`: the CLI flags of `python -m metrics.score`, one argparse group
  per set of metrics (``--bleu-tokenize`` under bleu; ``--model`` under the neural metrics);
- the keys of `metrics.config.ScoringConfig` and of grid files are the same keys.
"""
from __future__ import annotations

import argparse
from typing import Any

from metrics.core import OPTION_TYPES, ConfigError, Metric, MetricOption

Declarations = dict[str, list[tuple[Metric, MetricOption]]]


def declared() -> Declarations:
    """Option key -> (metric, option) for every metric declaring it, in registry order. Read on
    every call: a metric registered later (a test's) is in it. Metrics sharing a key must agree
    on its type and help (one flag serves them all)."""
    from metrics.registry import METRICS

    table: Declarations = {}
    for metric in METRICS.values():
        for option in metric.options:
            table.setdefault(option.key(metric.name), []).append((metric, option))
    for key, holders in table.items():
        first = holders[0][1]
        for metric, option in holders[1:]:
            if (option.type, option.help) != (first.type, first.help):
                raise TypeError(f"option {key}: {metric.name} declares another type or help "
                                f"than {holders[0][0].name}; a shared option has one flag")
    return table


def flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def _inert(holders: list[tuple[Metric, MetricOption]]) -> list:
    """Values a metric without this option accepts as a no-op: unset, the default every
    declaring metric shares (``idf: false``), and the options' `inert` values."""
    values: list = [None]
    defaults = {repr(option.default) for _, option in holders}
    if len(defaults) == 1:
        values.append(holders[0][1].default)
    return values + [value for _, option in holders for value in option.inert]


def _same(value, values: list) -> bool:
    """``value in values`` where True is not 1 and 0 is not False."""
    return any(type(value) is type(v) and value == v for v in values)


def _check(metric: Metric, key: str, option: MetricOption, value, shared: bool) -> Any:
    kind = option.type
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(f"{flag(key)} must be {OPTION_TYPES[kind]}, not {value!r}")
    if option.choices and not _same(value, list(option.choices)):
        where = f" for {metric.name}" if shared else ""
        raise ConfigError(f"{flag(key)}{where} must be one of "
                          f"{', '.join(str(c) for c in option.choices)}, not {value!r}")
    return value


def resolve(metric: Metric, given: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """``metric``'s options from ``given`` (key -> value; None = unset), checked, defaults
    filled in, sorted by key; ConfigError for a bad value or an option ``metric`` does not take."""
    table = declared()
    own = {option.key(metric.name): option for option in metric.options}
    for key, value in given.items():
        holders = table.get(key, [])
        if key not in own and not _same(value, _inert(holders)):
            takers = ", ".join(m.name for m, _ in holders) or "no metric"
            raise ConfigError(f"{flag(key)} applies to {takers} only, not {metric.name}")
    values = {}
    for key, option in own.items():
        value = given.get(key)
        if value is not None:
            value = _check(metric, key, option, value, len(table[key]) > 1)
        value = option.default if value is None else value
        if value is not None:
            values[key] = value
    return tuple(sorted(values.items()))


def _help(holders: list[tuple[Metric, MetricOption]]) -> str:
    """The first declaration's help, then the choices and defaults (per metric where they
    differ)."""
    described: dict[str, list[str]] = {}
    for metric, option in holders:
        bits = [" | ".join(str(c) for c in option.choices)] if option.choices else []
        if option.default is not None and option.type is not bool:
            bits.append(f"default {option.default}")
        described.setdefault(", ".join(bits), []).append(metric.name)
    parts = [text if len(described) == 1 else f"{'/'.join(names)}: {text}"
             for text, names in described.items() if text]
    text = holders[0][1].help + (f" [{'; '.join(parts)}]" if parts else "")
    return text.replace("%", "%%")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per option key, grouped by the metrics that take it; every flag's default is
    None (unset), so a flag not given never overrides a grid or a metric's default."""
    groups: dict[tuple[str, ...], Any] = {}
    for key, holders in declared().items():
        names = tuple(m.name for m, _ in holders)
        if names not in groups:
            groups[names] = parser.add_argument_group(f"{', '.join(names)} options")
        option = holders[0][1]
        kwargs: dict[str, Any] = {"action": "store_true"} if option.type is bool \
            else {"type": option.type}
        groups[names].add_argument(flag(key), dest=key, default=None, help=_help(holders),
                                   **kwargs)


def from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The options given on the command line, key -> value."""
    return {key: getattr(args, key) for key in declared() if getattr(args, key, None) is not None}
