"""agreement.correlation against scipy and against acc23 computed the long way, pair by pair."""
from __future__ import annotations

import doctest
from itertools import combinations

import numpy as np
import pytest
import scipy.stats

import agreement.correlation as correlation_module
from agreement.correlation import acc23, correlation, item_pairs, kendall, midranks, pearson, spearman

SCIPY = {"pearson": scipy.stats.pearsonr, "spearman": scipy.stats.spearmanr,
         "kendall": scipy.stats.kendalltau}


def _samples(seed: int, count: int = 25):
    """Score vectors with the shapes real metrics have: continuous, rounded (ties), mostly zero
    (BLEU), and three-level verdicts; human labels at three levels."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(4, 120))
        labels = rng.integers(0, 3, n)
        kind = i % 4
        if kind == 0:
            scores = rng.normal(labels * 0.4, 1.0)
        elif kind == 1:
            scores = np.round(rng.normal(labels * 0.3, 0.5), 1)
        elif kind == 2:
            scores = np.where(rng.random(n) < 0.6, 0.0, rng.random(n))
        else:
            scores = np.clip(labels + rng.integers(-1, 2, n), 0, 2).astype(float)
        yield scores, labels


@pytest.mark.parametrize("statistic", ["pearson", "spearman", "kendall"])
def test_each_correlation_equals_scipy_on_one_vector(statistic):
    for scores, labels in _samples(1):
        expected = SCIPY[statistic](scores, labels)[0]
        got = float(correlation(statistic, scores, labels))
        if np.isnan(expected) or np.ptp(scores) == 0:
            assert np.isnan(got)
        else:
            assert got == pytest.approx(expected, abs=1e-12)


def test_rows_are_resamples_with_their_own_labels():
    rng = np.random.default_rng(2)
    scores = np.round(rng.normal(size=(40, 30)), 1)
    labels = rng.integers(0, 3, (40, 30))
    for function, reference in ((pearson, scipy.stats.pearsonr),
                                (spearman, scipy.stats.spearmanr),
                                (kendall, scipy.stats.kendalltau)):
        batched = function(scores, labels)
        one_by_one = [reference(row, own)[0] for row, own in zip(scores, labels)]
        np.testing.assert_allclose(batched, one_by_one, atol=1e-12)
    shared = rng.integers(0, 3, 30)  # one label vector for every row, as in the permutation test
    np.testing.assert_allclose(kendall(scores, shared),
                               [scipy.stats.kendalltau(row, shared)[0] for row in scores],
                               atol=1e-12)
    np.testing.assert_array_equal(midranks(scores), scipy.stats.rankdata(scores, axis=1))


def test_constant_sides_are_undefined_not_zero():
    assert np.isnan(pearson([0.5, 0.5, 0.5], [0, 1, 2]))
    assert np.isnan(spearman([0.1, 0.2, 0.3], [1, 1, 1]))
    assert np.isnan(kendall([0.0, 0.0, 0.0, 0.0], [0, 1, 2, 2]))
    assert np.isnan(kendall([0.3], [1]))
    # constant up to rounding in the mean still counts as constant
    assert np.isnan(pearson([0.1] * 7, [0, 1, 2, 0, 1, 2, 0]))


def test_labels_must_be_levels():
    with pytest.raises(ValueError, match="ordinal levels"):
        kendall([0.1, 0.2], [0.5, 1.5])
    with pytest.raises(ValueError, match=">= 0"):
        acc23([0.1, 0.2], [-1, 1])


def _acc23_the_long_way(scores, labels):
    """Deutsch et al. 2023 by definition: for every candidate threshold (0 and every pairwise
    score distance), count concordant pairs and pairs tied on both sides, pair by pair; the best
    value and the smallest threshold reaching it."""
    pairs = list(combinations(range(len(scores)), 2))
    candidates = sorted({0.0} | {abs(scores[i] - scores[j]) for i, j in pairs})
    best = (-1.0, 0.0)
    for eps in candidates:
        good = 0
        for i, j in pairs:
            metric_tie = abs(scores[i] - scores[j]) <= eps
            human_tie = labels[i] == labels[j]
            if human_tie and metric_tie:
                good += 1
            elif not human_tie and not metric_tie and (
                    (scores[i] - scores[j]) * (labels[i] - labels[j]) > 0):
                good += 1
        value = good / len(pairs)
        if value > best[0]:
            best = (value, eps)
    return best


def test_acc23_finds_the_best_tie_threshold_exactly():
    for scores, labels in _samples(3, count=30):
        if len(scores) > 60:
            scores, labels = scores[:60], labels[:60]
        result = acc23(scores, labels)
        value, threshold = _acc23_the_long_way(list(scores), list(labels))
        assert result.all_pairs and result.pairs == len(scores) * (len(scores) - 1) // 2
        assert float(result.value) == pytest.approx(value, abs=1e-12)
        assert float(result.threshold) == pytest.approx(threshold, abs=1e-12)


def test_acc23_names_what_tying_every_pair_scores():
    """With three levels most pairs may be human ties: the share is what a metric that ties
    everything gets, and a constant metric gets exactly that."""
    labels = np.array([0, 1, 1, 2, 2, 2, 2, 2])
    tied = np.mean([labels[i] == labels[j] for i in range(8) for j in range(i + 1, 8)])
    result = acc23(np.full(8, 0.3), labels)
    assert result.all_ties == pytest.approx(tied) and float(result.value) == pytest.approx(tied)
    assert f"tying every pair scores {tied:.4f}" in result.method
    ordered = acc23(labels + 0.01 * np.arange(8), labels)
    assert float(ordered.value) > ordered.all_ties == result.all_ties


def test_acc23_samples_pairs_beyond_its_limit_and_says_so():
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 3, 400)
    scores = rng.normal(labels * 0.5, 1.0)
    exact = acc23(scores, labels)
    sampled = acc23(scores, labels, max_pairs=20_000, seed=1)
    assert exact.all_pairs and not sampled.all_pairs and sampled.pairs == 20_000
    assert "20,000 random pairs" in sampled.method and "all pairs" in exact.method
    assert float(sampled.value) == pytest.approx(float(exact.value), abs=0.01)
    first, second, complete = item_pairs(400, 20_000, seed=1)
    assert not complete and (first != second).all() and first.max() < 400


def test_acc23_rows_are_independent_searches():
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3, 25)
    rows = np.round(rng.normal(size=(6, 25)), 1)
    batched = acc23(rows, labels)
    for row, value, threshold in zip(rows, batched.value, batched.threshold):
        one = acc23(row, labels)
        assert value == one.value and threshold == one.threshold


def test_doctests():
    result = doctest.testmod(correlation_module)
    assert result.attempted > 0 and result.failed == 0


def test_a_missing_label_level_is_no_problem():
    # no "incorrect" (level 0) at all, and no "partial" either: the rank sums over empty levels
    for labels in ([1, 2, 2, 1, 2], [2, 2, 2, 0, 0]):
        scores = [0.3, 0.9, 0.7, 0.2, 0.5]
        assert float(kendall(scores, labels)) == pytest.approx(
            scipy.stats.kendalltau(scores, labels)[0])
        assert float(spearman(scores, labels)) == pytest.approx(
            scipy.stats.spearmanr(scores, labels)[0])
