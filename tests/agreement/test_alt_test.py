"""agreement.alt_test against the procedure of Calderon, Reichart & Dror (2025) written out item
by item, annotator by annotator (testing.alt_test_reference: dicts, scipy's one-sample t-test
and scipy's Benjamini-Yekutieli), on data shaped like the authors' (several annotators with
gaps, labels from a noisy gold label, ties), for both scorings."""
from __future__ import annotations

import doctest

import numpy as np
import pytest
import scipy.stats

import agreement.alt_test as alt_test_module
from agreement.alt_test import alt_test, benjamini_yekutieli
from testing.alt_test_reference import reference_alt_test


def test_doctests():
    assert doctest.testmod(alt_test_module).failed == 0


def _shaped_like_theirs(rng, n_items: int, n_annotators: int, categories: int, noise_human: float,
                        noise_judge: float, coverage: float):
    priors = rng.dirichlet(np.ones(categories))
    gold = rng.choice(categories, n_items, p=priors)

    def noisy(noise: float) -> np.ndarray:
        probs = np.tile(priors * noise, (n_items, 1))
        probs[np.arange(n_items), gold] += 1 - noise
        probs /= probs.sum(axis=1, keepdims=True)
        return (probs.cumsum(axis=1) > rng.random((n_items, 1))).argmax(axis=1)

    human = np.stack([noisy(noise_human) for _ in range(n_annotators)])
    human[rng.random(human.shape) > coverage] = -1
    judge = noisy(noise_judge)
    judge[rng.random(n_items) < 0.05] = -1  # a few items without a judge label
    return human, judge


def _as_dicts(human, judge):
    humans = {f"h{a}": {i: int(v) for i, v in enumerate(row) if v >= 0}
              for a, row in enumerate(human)}
    return humans, {i: int(v) for i, v in enumerate(judge) if v >= 0}


@pytest.mark.parametrize("scoring", ["accuracy", "neg_rmse"])
@pytest.mark.parametrize("seed", range(6))
def test_winning_rate_and_advantage_equal_the_authors_procedure(scoring, seed):
    rng = np.random.default_rng(seed)
    human, judge = _shaped_like_theirs(
        rng, n_items=int(rng.integers(40, 400)), n_annotators=int(rng.integers(2, 9)),
        categories=int(rng.integers(2, 6)), noise_human=float(rng.uniform(0.1, 0.5)),
        noise_judge=float(rng.uniform(0.05, 0.6)), coverage=float(rng.uniform(0.3, 1.0)))
    epsilon = [0.1, 0.15, 0.2][seed % 3]
    expected = reference_alt_test(*_as_dicts(human, judge), scoring, epsilon)
    result = alt_test(human, judge, [f"h{a}" for a in range(len(human))], scoring, epsilon)
    if expected is None:
        assert not result.tested.any() and np.isnan(result.winning_rate)
        return
    winning_rate, advantage, p_values = expected
    assert result.winning_rate == pytest.approx(winning_rate, abs=1e-12)
    assert result.advantage_probability == pytest.approx(advantage, abs=1e-12)
    np.testing.assert_allclose(result.p_values[result.tested], p_values, atol=1e-12)
    assert result.passed == (winning_rate >= 0.5)


def test_a_judge_that_always_ties_with_the_annotators_follows_scipys_zero_spread_rule():
    human = np.tile(np.array([[0, 1, 2] * 12]), (3, 1))  # everyone agrees on every item
    result = alt_test(human, human[0].copy(), ["a", "b", "c"], "accuracy", 0.2)
    # W_human - W_judge is 0 everywhere: mean 0 < epsilon, no spread: t = -inf, p = 0
    assert result.p_values.tolist() == [0.0, 0.0, 0.0]
    assert result.winning_rate == 1.0 and result.advantage_probability == 1.0


def test_too_few_annotators_or_items_say_why():
    few = alt_test(np.zeros((1, 50), int), np.zeros(50, int), ["solo"])
    assert np.isnan(few.winning_rate)
    assert few.why_untested.startswith("1 annotator(s) labelled these items")
    short = alt_test(np.zeros((3, 20), int), np.zeros(20, int), ["a", "b", "c"])
    assert "no annotator has 30 or more of the 20 items" in short.why_untested
    unjudged = alt_test(np.zeros((3, 40), int), np.full(40, -1), ["a", "b", "c"])
    assert "no item has 2 or more human labels and a judge label" in unjudged.why_untested
    with pytest.raises(ValueError, match="scoring must be one of"):
        alt_test(np.zeros((2, 40), int), np.zeros(40, int), scoring="f1")


def test_benjamini_yekutieli_rejects_what_scipys_adjusted_p_values_put_below_q():
    rng = np.random.default_rng(9)
    for m in (1, 2, 5, 12, 40):
        for _ in range(20):
            p = rng.uniform(0, 0.05, m) ** rng.uniform(0.5, 2)
            expected = scipy.stats.false_discovery_control(p, method="by") <= 0.05
            assert benjamini_yekutieli(p, 0.05).tolist() == expected.tolist()
