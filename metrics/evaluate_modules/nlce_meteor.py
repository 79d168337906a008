"""METEOR (nltk) with nlcomment-eval's comment tokenizer: English stems and WordNet synonyms,
exact matches in other languages.

Load it with ``evaluate.load(metrics.evaluate_modules.module_path("meteor"))``; the arguments of
``compute`` are described in `metrics.evaluate_modules`."""
import evaluate

from metrics.evaluate_modules import compute, info


class NlceMeteor(evaluate.Metric):
    def _info(self):
        return info("meteor", __doc__)

    def _compute(self, predictions, references, **options):
        return compute("meteor", predictions, references, **options)
