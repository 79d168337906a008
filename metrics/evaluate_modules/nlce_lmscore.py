"""Prompted likelihood with a causal LM (SmolLM2 by default), with context; P = forward, R =
reverse, F = their mean.

Load it with ``evaluate.load(metrics.evaluate_modules.module_path("lmscore"))``; the arguments of
``compute`` are described in `metrics.evaluate_modules`."""
import evaluate

from metrics.evaluate_modules import compute, info


class NlceLmscore(evaluate.Metric):
    def _info(self):
        return info("lmscore", __doc__)

    def _compute(self, predictions, references, **options):
        return compute("lmscore", predictions, references, **options)
