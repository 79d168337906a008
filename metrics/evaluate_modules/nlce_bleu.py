"""BLEU as nlcomment-eval scores code comments: sacrebleu sentence BLEU on the comment tokenizer
(tokenize='comment', the default), sacrebleu's zh/char/13a lower-cased ('sacrebleu') or
sacrebleu's cased 13a ('13a'); scores in 0..1.

Load it with ``evaluate.load(metrics.evaluate_modules.module_path("bleu"))``; the arguments of
``compute`` are described in `metrics.evaluate_modules`."""
import evaluate

from metrics.evaluate_modules import compute, info


class NlceBleu(evaluate.Metric):
    def _info(self):
        return info("bleu", __doc__)

    def _compute(self, predictions, references, **options):
        return compute("bleu", predictions, references, **options)
