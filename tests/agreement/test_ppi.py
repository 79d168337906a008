"""agreement.ppi: PPI++ and cross-PPI against ppi-python on the same arrays (judges good, bad,
inverted and constant; several estimands at once), and the coverage of the intervals in a
seeded simulation where the truth is known."""
from __future__ import annotations

import numpy as np
import pytest
from ppi_py import (
    classical_mean_ci,
    crossppi_mean_ci,
    crossppi_mean_pointestimate,
    ppi_mean_ci,
    ppi_mean_pointestimate,
    ppi_mean_pval,
)

from agreement.ppi import crossppi_mean, power_tuning, ppi_mean, two_sided_p

LEVELS = np.array([0.0, 0.5, 1.0])


def _judged(rng, n: int, accuracy: float, invert: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Human scores and a judge's: right with probability `accuracy`, else another level."""
    y = rng.choice(LEVELS, n, p=[0.35, 0.25, 0.4])
    wrong = rng.random(n) > accuracy
    other = (y + rng.choice([0.5, 1.0], n)) % 1.5
    yhat = np.where(wrong, other, y)
    return y, (1 - yhat if invert else yhat)


@pytest.mark.parametrize("accuracy,invert,n,big_n", [
    (0.9, False, 80, 900), (0.6, False, 40, 2000), (0.3, False, 200, 300), (0.8, True, 60, 600),
    (0.95, False, 500, 40)])
def test_ppi_mean_equals_ppi_python(accuracy, invert, n, big_n):
    rng = np.random.default_rng(int(accuracy * 100) + n)
    y, yhat = _judged(rng, n, accuracy, invert)
    _, unlabeled = _judged(rng, big_n, accuracy, invert)
    ours = ppi_mean(y, yhat, unlabeled)
    assert ours.estimate[0] == pytest.approx(
        float(np.ravel(ppi_mean_pointestimate(y, yhat, unlabeled))[0]), abs=1e-12)
    low, high = ppi_mean_ci(y, yhat, unlabeled, alpha=0.05)
    assert (ours.ci_low[0], ours.ci_high[0]) == pytest.approx((float(low[0]), float(high[0])),
                                                              abs=1e-12)
    classical = classical_mean_ci(y, alpha=0.05)
    assert (ours.classical_low[0], ours.classical_high[0]) == pytest.approx(
        (float(classical[0]), float(classical[1])), abs=1e-12)
    assert ours.classical_estimate[0] == pytest.approx(y.mean())
    assert 0 <= ours.lam[0] <= 1
    # the labels the judge is worth: n x classical variance / PPI++ variance
    width, classical_width = high[0] - low[0], classical[1] - classical[0]
    assert ours.effective_labels[0] == pytest.approx(n * (classical_width / width) ** 2, rel=1e-9)
    plain = ppi_mean(y, yhat, unlabeled, lam=1.0)
    low, high = ppi_mean_ci(y, yhat, unlabeled, alpha=0.05, lam=1.0)
    assert (plain.ci_low[0], plain.ci_high[0]) == pytest.approx((float(low[0]), float(high[0])))


def test_an_inverted_judge_is_tuned_away_and_a_good_one_is_worth_more_labels():
    rng = np.random.default_rng(3)
    y, yhat = _judged(rng, 100, 0.9, invert=True)
    _, unlabeled = _judged(rng, 2000, 0.9, invert=True)
    assert power_tuning(y[:, None], yhat[:, None], unlabeled[:, None])[0] == 0.0
    inverted = ppi_mean(y, yhat, unlabeled)
    assert inverted.estimate[0] == pytest.approx(y.mean())
    assert inverted.effective_labels[0] == pytest.approx(100)
    y, yhat = _judged(rng, 100, 0.9)
    _, unlabeled = _judged(rng, 2000, 0.9)
    assert ppi_mean(y, yhat, unlabeled).effective_labels[0] > 200


def test_a_constant_judge_gives_the_labels_alone():
    y = np.array([0.0, 1.0, 0.5, 1.0, 1.0])
    ours = ppi_mean(y, np.ones(5), np.ones(50))
    assert ours.lam[0] == 0 and ours.estimate[0] == pytest.approx(y.mean())
    assert (ours.ci_low[0], ours.ci_high[0]) == pytest.approx(
        tuple(float(v) for v in classical_mean_ci(y, alpha=0.05)))
    low, high = ppi_mean_ci(y, np.ones(5), np.ones(50), alpha=0.05)
    assert (ours.ci_low[0], ours.ci_high[0]) == pytest.approx((low[0], high[0]))


def test_several_estimands_at_once_equal_one_call_each():
    rng = np.random.default_rng(4)
    y, yhat = _judged(rng, 70, 0.8)
    _, unlabeled = _judged(rng, 700, 0.8)
    columns = [lambda v: (v == 1.0) * 1.0, lambda v: (v == 0.5) * 1.0, lambda v: v]
    together = ppi_mean(np.stack([f(y) for f in columns], 1), np.stack([f(yhat) for f in columns], 1),
                        np.stack([f(unlabeled) for f in columns], 1))
    for i, f in enumerate(columns):
        alone = ppi_mean(f(y), f(yhat), f(unlabeled))
        assert together.estimate[i] == pytest.approx(alone.estimate[0])
        assert together.ci_low[i] == pytest.approx(alone.ci_low[0])
        assert together.lam[i] == pytest.approx(alone.lam[0])


def test_p_value_equals_ppi_python_given_the_same_lam():
    rng = np.random.default_rng(5)
    y, yhat = _judged(rng, 90, 0.8)
    _, unlabeled = _judged(rng, 900, 0.8)
    y, yhat, unlabeled = y - 0.55, yhat - 0.55, unlabeled - 0.55
    ours = ppi_mean(y, yhat, unlabeled)
    reference = ppi_mean_pval(y, yhat, unlabeled, null=0, lam=float(ours.lam[0]))
    assert two_sided_p(ours)[0] == pytest.approx(float(np.ravel(reference)[0]), abs=1e-12)


def test_crossppi_equals_ppi_python():
    rng = np.random.default_rng(6)
    y, yhat = _judged(rng, 120, 0.75)
    folds = np.stack([_judged(rng, 1000, 0.75)[1] for _ in range(5)], axis=1)
    ours = crossppi_mean(y, yhat, folds)
    assert ours.estimate[0] == pytest.approx(
        float(np.ravel(crossppi_mean_pointestimate(y, yhat, folds))[0]), abs=1e-12)
    low, high = crossppi_mean_ci(y, yhat, folds, alpha=0.05)
    assert (ours.ci_low[0], ours.ci_high[0]) == pytest.approx((float(np.ravel(low)[0]),
                                                               float(np.ravel(high)[0])), abs=1e-12)


def test_nothing_to_combine_is_refused():
    with pytest.raises(ValueError, match="labelled and unlabelled"):
        ppi_mean(np.array([1.0]), np.array([1.0]), np.array([]))


def test_intervals_cover_the_truth_about_95_percent_of_the_time():
    """A population of 20,000 generations whose true mean score is known; 400 draws of 150
    labelled and 3,000 unlabelled ones, with judges of accuracy 0.6 and 0.9."""
    rng = np.random.default_rng(7)
    for accuracy in (0.6, 0.9):
        y_all, yhat_all = _judged(rng, 20_000, accuracy)
        truth = y_all.mean()
        hits = classical_hits = 0
        runs = 400
        for _ in range(runs):
            chosen = rng.choice(len(y_all), 3_150, replace=False)
            labelled, unlabelled = chosen[:150], chosen[150:]
            result = ppi_mean(y_all[labelled], yhat_all[labelled], yhat_all[unlabelled])
            hits += result.ci_low[0] <= truth <= result.ci_high[0]
            classical_hits += result.classical_low[0] <= truth <= result.classical_high[0]
        assert 0.92 <= hits / runs <= 0.98, (accuracy, hits / runs)
        assert 0.92 <= classical_hits / runs <= 0.98
