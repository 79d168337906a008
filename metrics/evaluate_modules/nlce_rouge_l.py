"""ROUGE-L (rouge-score) with nlcomment-eval's Unicode-aware comment tokenizer.

Load it with ``evaluate.load(metrics.evaluate_modules.module_path("rouge_l"))``; the arguments of
``compute`` are described in `metrics.evaluate_modules`."""
import evaluate

from metrics.evaluate_modules import compute, info


class NlceRougeL(evaluate.Metric):
    def _info(self):
        return info("rouge_l", __doc__)

    def _compute(self, predictions, references, **options):
        return compute("rouge_l", predictions, references, **options)
