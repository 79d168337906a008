"""agreement: how far two sources of labels agree, and which human label counts.

Shared by the stages that compare with the humans (the annotation app, `judges.report`,
`align`); it imports only `taxonomy`, `db` and `nlce.cli`.

- `agreement.statistics`: the agreement statistics (weighted kappa, Krippendorff's alpha,
  confusion matrices, bootstrap intervals, per-code precision/recall);
- `agreement.labels`: the label policy, the one rule for which human label counts per generation;
- `agreement.judges`: a judge configuration (one run) against the humans: n, kappa, its interval,
  the confusion matrix, and the one definition of an ok verdict and of failure rates;
- `agreement.robustness`: how much a verdict depends on the run, the prompt language and
  code-mixing (the stored runs grouped into the three studies' tables), and
  `agreement.robustness_report`: their figures and report-page sections;
- `agreement.quality`: model quality from the labels (Wilson and t intervals, exact permutation
  tests, compact letters); `agreement.ppi`: prediction-powered inference (PPI++, cross-PPI);
  `agreement.alt_test` and `agreement.replace`: the alternative annotator test.
"""
from agreement.statistics import (
    Confusion,
    bootstrap_ci,
    code_precision_recall,
    confusion,
    encode_labels,
    kappa_from_counts,
    krippendorff_alpha,
    pairwise_kappa,
    weighted_kappa,
)

__all__ = ["Confusion", "bootstrap_ci", "code_precision_recall", "confusion", "encode_labels",
           "kappa_from_counts", "krippendorff_alpha", "pairwise_kappa", "weighted_kappa"]
