"""agreement.active: the sampling probabilities (bounds, budget, proportionality), the seeded draw,
the estimator against its formula written out, uniform draws against PPI, and the coverage and
label savings of the active plan in a seeded simulation where the truth is known."""
from __future__ import annotations

import numpy as np
import pytest

from agreement.active import (
    active_difference,
    active_mean,
    calibrated,
    draw,
    error_scale,
    sampling_probabilities,
)
from agreement.ppi import ppi_mean
from nlce.cli import InputError

LEVELS = np.array([0.0, 0.5, 1.0])


def test_probabilities_are_proportional_bounded_and_sum_to_the_budget():
    rng = np.random.default_rng(0)
    scale = rng.choice([0.05, 0.3, 0.6], 1000)
    pi = sampling_probabilities(scale, 1000, budget=150, min_probability=0.05)
    assert pi.sum() == pytest.approx(150) and pi.min() >= 0.05 - 1e-12 and pi.max() <= 1
    free = pi > 0.05 + 1e-9
    ratio = pi[free] / scale[free]
    assert np.allclose(ratio, ratio[0])  # proportional where no bound binds
    assert (pi[scale == 0.05] == pytest.approx(0.05))  # the floor binds for the reliable ones
    big = sampling_probabilities(scale, 1000, budget=900, min_probability=0.05)
    assert big.sum() == pytest.approx(900) and big.max() == 1.0
    assert np.allclose(sampling_probabilities(None, 40, 10), 0.25)


@pytest.mark.parametrize("budget,minimum,message", [
    (50, 0.05, "more than the 40 generation"), (0, 0.05, "more than the"),
    (1, 0.05, "below the minimum probability 0.05 x 40")])
def test_impossible_budgets_are_refused_in_one_line(budget, minimum, message):
    with pytest.raises(InputError, match=message):
        sampling_probabilities(None, 40, budget, minimum)
    with pytest.raises(InputError, match="no generation to plan"):
        sampling_probabilities(None, 0, 1)


def test_the_judge_is_calibrated_and_its_spread_learned_per_value_on_the_pilot():
    predicted = np.array([1.0] * 10 + [0.5] * 10 + [0.0] * 2)
    human = np.array([1.0] * 9 + [0.0] + [0.0, 1.0] * 5 + [0.5, 0.5])
    shift = (human - predicted).mean()
    assert calibrated(predicted, human, np.array([1.0, 0.5, 0.0])).tolist() == pytest.approx(
        [0.9, 0.5, shift])  # 0 was seen twice only: shifted, not recalibrated
    scale, how = error_scale(predicted, human, np.array([1.0, 0.5, 0.0]))
    assert scale[0] == pytest.approx(np.std(human[:10]))  # around its pilot mean, 0.9
    assert scale[1] == pytest.approx(0.5)
    residual = human - calibrated(predicted, human, predicted)
    assert scale[2] == pytest.approx(np.sqrt((residual ** 2).mean()))  # too few: overall
    assert "pilot of 22 labelled" in how
    with pytest.raises(InputError, match="all the same"):
        error_scale(predicted, np.ones(22), predicted)
    with pytest.raises(InputError, match="agrees with every label"):
        error_scale(human, human, predicted)


def test_the_draw_is_seeded():
    pi = np.full(500, 0.3)
    assert (draw(pi, 7) == draw(pi, 7)).all() and not (draw(pi, 7) == draw(pi, 8)).all()
    assert draw(pi, 7).sum() == pytest.approx(150, abs=40)


def test_the_estimate_is_the_formula_and_uniform_draws_give_back_ppi():
    rng = np.random.default_rng(1)
    pilot = rng.choice(LEVELS, 30)
    predicted = rng.choice(LEVELS, 200)
    human = np.where(rng.random(200) < 0.7, predicted, rng.choice(LEVELS, 200))
    pi = np.full(200, 0.25)
    drawn = draw(pi, 3)
    result = active_mean(pilot, predicted, np.where(drawn, human, np.nan), drawn, pi, lam=1.0)
    terms = np.concatenate([pilot, predicted + (human - predicted) * drawn / pi])
    assert result.estimate[0] == pytest.approx(terms.mean())
    assert result.se[0] == pytest.approx(terms.std(ddof=1) / np.sqrt(230))
    # tuned: the same formula with the reported lam, and no wider than lam 1 or 0
    tuned = active_mean(pilot, predicted, np.where(drawn, human, np.nan), drawn, pi)
    lam = tuned.lam[0]
    terms = np.concatenate([pilot, lam * predicted + (human - lam * predicted) * drawn / pi])
    assert 0 <= lam <= 1 and tuned.estimate[0] == pytest.approx(terms.mean())
    alone = active_mean(pilot, predicted, np.where(drawn, human, np.nan), drawn, pi, lam=0.0)
    assert tuned.se[0] <= min(result.se[0], alone.se[0]) + 1e-12
    # uniform pi, no pilot: PPI (lambda 1) on the drawn subset, up to drawing n vs pi N of them
    alone = active_mean([], predicted, np.where(drawn, human, np.nan), drawn, pi, lam=1.0)
    ppi = ppi_mean(human[drawn], predicted[drawn], predicted, lam=1.0)
    scale = drawn.sum() / (0.25 * 200)
    rectifier = (human - predicted)[drawn].mean()
    assert alone.estimate[0] == pytest.approx(predicted.mean() + scale * rectifier)
    assert ppi.estimate[0] == pytest.approx(predicted.mean() + rectifier)
    with pytest.raises(ValueError, match="drawn generation without its human label"):
        active_mean(pilot, predicted, np.full(200, np.nan), drawn, pi)


def _population(rng, n: int):
    """Human scores and a judge that is always right when it says correct (and says it of every
    correct comment), and guesses between incorrect and partial otherwise."""
    human = rng.choice(LEVELS, n, p=[0.3, 0.3, 0.4])
    predicted = np.where(human == 1.0, 1.0, rng.choice(LEVELS[:2], n))
    return human, predicted


def test_active_intervals_cover_the_truth_and_are_narrower_than_uniform_draws():
    """20,000 generations whose mean is known; a pilot of 100, a budget of 400; 300 seeded
    plans: both the uniform and the active draw cover about 95% of the time, and the active
    one's intervals are narrower."""
    rng = np.random.default_rng(2)
    human, predicted = _population(rng, 20_000)
    truth = human.mean()
    hits = {"uniform": 0, "active": 0}
    width = {"uniform": [], "active": []}
    for run in range(300):
        order = rng.permutation(len(human))
        pilot, pool = order[:100], order[100:]
        scale, _ = error_scale(predicted[pilot], human[pilot], predicted[pool])
        fitted = calibrated(predicted[pilot], human[pilot], predicted[pool])
        for name, weights in (("uniform", None), ("active", scale)):
            pi = sampling_probabilities(weights, len(pool), 400, 0.005)
            drawn = draw(pi, run)
            result = active_mean(human[pilot], fitted, np.where(drawn, human[pool], np.nan),
                                 drawn, pi)
            hits[name] += result.ci_low[0] <= truth <= result.ci_high[0]
            width[name].append(result.ci_high[0] - result.ci_low[0])
    for name in hits:
        assert 0.92 <= hits[name] / 300 <= 0.98, (name, hits[name])
    # where it errs is 60% of the pool: about sqrt(0.6) of the width, the floor aside
    assert np.mean(width["active"]) < 0.85 * np.mean(width["uniform"])


def test_two_groups_are_compared_with_a_normal_p_value():
    rng = np.random.default_rng(4)
    a = active_mean(rng.choice(LEVELS, 300, p=[.5, .3, .2]), [], [], [], [])
    b = active_mean(rng.choice(LEVELS, 300, p=[.2, .3, .5]), [], [], [], [])
    delta, p = active_difference(a, b)
    assert delta[0] > 0.2 and p[0] < 1e-6
