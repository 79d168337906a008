"""Prediction-powered inference for a mean: a few human labels and many predictions (judge
verdicts, or a metric's classifications) combined into an estimate whose interval stays valid
however wrong the predictor is, and is narrower than the labels' alone when it is any good.

- `ppi_mean`: PPI++ (Angelopoulos, Duchi & Zrnic 2023): the power-tuned estimate
  lam * mean(Yhat_unlabeled) + mean(Y - lam * Yhat) with lam chosen from the data (clipped to
  [0, 1]; 0 is the labels alone, 1 plain PPI), its normal 95% interval, the classical interval of
  the labels alone, and the labels the predictions are worth. Equal to ppi-python's
  `ppi_mean_pointestimate` / `ppi_mean_ci(Y, Yhat, Yhat_unlabeled, lam=None)` (tests compare);
  where the predictor is constant, ppi-python's lam is 0/0 (nan), here 0 (the labels alone).
- `crossppi_mean`: cross-prediction-powered inference (Zrnic & Candes 2024) for a predictor
  trained on the labels themselves (a metric's thresholds): each labelled item predicted by the
  model fitted without its fold, the unlabelled ones by every fold's model (columns); equal to
  ppi-python's `crossppi_mean_pointestimate` / `crossppi_mean_ci`.

Arrays may be (n,) for one estimand or (n, d) for d estimands at once, each column on its own
(its own lam), as if called once per column. Pure numpy; variances with ddof 0 as ppi-python's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agreement.statistics import as_columns, normal_quantile, normal_two_sided_p


@dataclass(frozen=True)
class MeanEstimate:
    """One estimate per column (arrays of shape (d,)) and what it rests on."""
    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    se: np.ndarray
    classical_estimate: np.ndarray  # the mean of the labels alone
    classical_low: np.ndarray
    classical_high: np.ndarray
    classical_se: np.ndarray
    lam: np.ndarray  # power tuning: 0 = the labels alone, 1 = plain PPI (nan for cross-PPI)
    n_labelled: int
    n_unlabelled: int

    @property
    def effective_labels(self) -> np.ndarray:
        """n_labelled x classical variance / estimate's variance: the labelled items that would
        give the same interval width without the predictions (nan where either is 0)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = self.classical_se ** 2 / self.se ** 2
        return np.where(np.isfinite(ratio) & (self.se > 0), self.n_labelled * ratio, np.nan)


def power_tuning(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> np.ndarray:
    """PPI++'s lam per column for a mean: cov(Y, Yhat) / ((1 + n/N) var(Yhat and Yhat_unlabeled)),
    the covariance with ddof 0 and the variance with ddof 1 (as ppi-python's `_calc_lam_glm`),
    clipped to [0, 1]; 0 where the predictions do not vary."""
    n, big_n = len(y), len(yhat_unlabeled)
    covariance = ((y - y.mean(axis=0)) * (yhat - yhat.mean(axis=0))).sum(axis=0) / n
    variance = np.concatenate([yhat, yhat_unlabeled]).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = covariance / ((1 + n / big_n) * variance)
    return np.where(variance > 0, np.clip(lam, 0, 1), 0.0)


def _classical(y: np.ndarray, z: float):
    estimate = y.mean(axis=0)
    se = y.std(axis=0) / np.sqrt(len(y))
    return estimate, estimate - z * se, estimate + z * se, se


def ppi_mean(y, yhat, yhat_unlabeled, confidence: float = 0.95, lam=None) -> MeanEstimate:
    """PPI++ estimate of the mean of Y from labelled (Y, Yhat) and unlabelled Yhat: see the
    module. `lam` fixes the power tuning (1: plain PPI, 0: the classical estimate)."""
    y, yhat, unlabeled = as_columns(y), as_columns(yhat), as_columns(yhat_unlabeled)
    n, big_n = len(y), len(unlabeled)
    if n < 1 or big_n < 1:
        raise ValueError(f"PPI needs labelled and unlabelled items, got {n} and {big_n}")
    lam = power_tuning(y, yhat, unlabeled) if lam is None else np.broadcast_to(
        np.asarray(lam, dtype=float), (y.shape[1],))
    z = normal_quantile(confidence)
    estimate = lam * unlabeled.mean(axis=0) + (y - lam * yhat).mean(axis=0)
    se = np.sqrt((lam * unlabeled).var(axis=0) / big_n + (y - lam * yhat).var(axis=0) / n)
    return MeanEstimate(estimate, estimate - z * se, estimate + z * se, se, *_classical(y, z),
                        lam=np.asarray(lam, dtype=float), n_labelled=n, n_unlabelled=big_n)


def crossppi_mean(y, yhat, yhat_unlabeled_by_fold, confidence: float = 0.95) -> MeanEstimate:
    """Cross-PPI estimate of the mean of Y: `yhat` (n,) or (n, d) predicted for each labelled
    item by the model fitted without its fold, `yhat_unlabeled_by_fold` (N, K) or (N, K, d) by
    each of the K fold models (plain PPI on the fold-averaged predictions, no power tuning)."""
    y, yhat = as_columns(y), as_columns(yhat)
    folds = np.asarray(yhat_unlabeled_by_fold, dtype=float)
    folds = folds[:, :, None] if folds.ndim == 2 else folds
    n, big_n = len(y), len(folds)
    if n < 1 or big_n < 1:
        raise ValueError(f"cross-PPI needs labelled and unlabelled items, got {n} and {big_n}")
    averaged = folds.mean(axis=1)
    z = normal_quantile(confidence)
    estimate = averaged.mean(axis=0) + (y - yhat).mean(axis=0)
    se = np.sqrt(averaged.var(axis=0) / big_n + (yhat - y).var(axis=0) / n)
    return MeanEstimate(estimate, estimate - z * se, estimate + z * se, se, *_classical(y, z),
                        lam=np.full(y.shape[1], np.nan), n_labelled=n, n_unlabelled=big_n)


def two_sided_p(estimate: MeanEstimate, null: float = 0.0) -> np.ndarray:
    """The two-sided normal p-value of each column's estimate against `null`, with the same
    standard error as its interval (ppi-python's `ppi_mean_pval` given the same lam)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(estimate.estimate - null) / np.maximum(estimate.se, 1e-16)
    return normal_two_sided_p(z)


__all__ = ["MeanEstimate", "crossppi_mean", "power_tuning", "ppi_mean", "two_sided_p"]
