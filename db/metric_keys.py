"""The name of a metric configuration in every report: its key.

A key depends on the configuration alone, never on what else is stored, so thresholds saved in
one report apply in the next and kappa.csv of two reports join on it: metric, then in brackets
the scoring model, the layer (L8) and the context where there is a scoring model or a context,
then every option set away from its default as name:value (`metrics` decides which options
count, `Metric.key_options`, and stores them with the run as ``params["key_options"]``).

>>> metric_key("bleu", "", None, "none")
'bleu'
>>> metric_key("bleu", "", None, "none", {"tokenize": "13a"})
'bleu[tokenize:13a]'
>>> metric_key("bertscore", "intfloat/multilingual-e5-small", 8, "full", {"idf": "yes"})
'bertscore[intfloat/multilingual-e5-small,L8,full,idf:yes]'
"""
from __future__ import annotations

import math
from typing import Mapping

KEY_OPTIONS = "key_options"  # the MetricRun.params entry: {option name: value as text}
HIGHER_IS_BETTER = "higher_is_better"  # the MetricRun.params entry: true, false or null


def metric_key(metric: str, scorer: str | None, layer, context: str | None,
               options: Mapping[str, str] | None = None) -> str:
    """The key of one metric configuration (see the module's docstring)."""
    parts = []
    if scorer:
        parts.append(str(scorer))
    if layer is not None and not (isinstance(layer, float) and math.isnan(layer)):
        parts.append(f"L{int(layer)}")
    if context and context != "none" or parts:
        parts.append(context or "none")
    parts += [f"{name}:{value}" for name, value in sorted((options or {}).items())]
    return f"{metric}[{','.join(parts)}]" if parts else str(metric)
