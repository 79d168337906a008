"""BERTScore as nlcomment-eval computes it, with context: none, minimal (a target-language
prefix) or full (the source file with the comment in place); only the comment's tokens are
matched. Any HF encoder and layer, idf, rescaling, torch/onnx/openvino backends.

Load it with ``evaluate.load(metrics.evaluate_modules.module_path("bertscore"))``; the arguments of
``compute`` are described in `metrics.evaluate_modules`."""
import evaluate

from metrics.evaluate_modules import compute, info


class NlceBertscore(evaluate.Metric):
    def _info(self):
        return info("bertscore", __doc__)

    def _compute(self, predictions, references, **options):
        return compute("bertscore", predictions, references, **options)
