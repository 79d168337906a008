"""align: how well each metric and judge agrees with the humans.

The agreement statistics, the label policy and the judge-vs-human path live in the top-level
`agreement` package (shared with the annotation app and the judges): import them from there.
Here: the KDE threshold classifier (`kde` fits, `thresholds` holds and saves, `evaluation`
applies and compares), data access, the analyses, reports and the `python -m align`
command.
"""
from align.evaluation import evaluate, fit_and_evaluate, noise_separation
from align.kde import fit_kde_thresholds
from align.thresholds import Thresholds, load_thresholds, save_thresholds

__all__ = [
    "Thresholds", "evaluate", "fit_and_evaluate", "fit_kde_thresholds", "load_thresholds",
    "noise_separation", "save_thresholds",
]
