"""metrics.align: how well each metric and judge agrees with the humans.

`agreement` holds the project's one implementation of the agreement statistics (weighted kappa,
Krippendorff's alpha, confusion matrices, bootstrap intervals, per-code precision/recall); the
annotation app and the judges import them from here. The KDE threshold classifier, data access,
reports and the `python -m metrics.align` command live in the sibling modules.
"""
from agreement.statistics import (
    Confusion, bootstrap_ci, code_precision_recall, confusion, encode_labels, kappa_from_counts,
    krippendorff_alpha, pairwise_kappa, weighted_kappa,
)
from metrics.align.evaluation import evaluate, fit_and_evaluate, noise_separation
from metrics.align.kde import fit_kde_thresholds
from metrics.align.thresholds import Thresholds, load_thresholds, save_thresholds

__all__ = [
    "Confusion", "bootstrap_ci", "code_precision_recall", "confusion", "encode_labels",
    "kappa_from_counts", "krippendorff_alpha", "pairwise_kappa", "weighted_kappa",
    "Thresholds", "evaluate", "fit_and_evaluate", "fit_kde_thresholds", "load_thresholds",
    "noise_separation", "save_thresholds",
]
