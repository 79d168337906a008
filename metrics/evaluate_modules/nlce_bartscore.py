"""BARTScore (neulab) with any seq2seq model, with context; P = forward, R = reverse, F = their
mean.

Load it with ``evaluate.load(metrics.evaluate_modules.module_path("bartscore"))``; the arguments of
``compute`` are described in `metrics.evaluate_modules`."""
import evaluate

from metrics.evaluate_modules import compute, info


class NlceBartscore(evaluate.Metric):
    def _info(self):
        return info("bartscore", __doc__)

    def _compute(self, predictions, references, **options):
        return compute("bartscore", predictions, references, **options)
