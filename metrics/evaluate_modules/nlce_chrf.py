"""chrF as nlcomment-eval scores code comments: sacrebleu chrF on the comment tokens
(tokenize='comment') or on the text as written ('none'); scores in 0..1.

Load it with ``evaluate.load(metrics.evaluate_modules.module_path("chrf"))``; the arguments of
``compute`` are described in `metrics.evaluate_modules`."""
import evaluate

from metrics.evaluate_modules import compute, info


class NlceChrf(evaluate.Metric):
    def _info(self):
        return info("chrf", __doc__)

    def _compute(self, predictions, references, **options):
        return compute("chrf", predictions, references, **options)
