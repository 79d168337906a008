"""agreement.quality: Wilson and t intervals against scipy, the permutation tests against
scipy.stats.permutation_test (exact where every permutation is made, within sampling noise where
not), the bootstrap intervals' coverage, and the compact letter display against its definition."""
from __future__ import annotations

import doctest
import math
from itertools import combinations

import numpy as np
import pytest
import scipy.stats

import agreement.quality as quality_module
from agreement.quality import (
    compact_letters,
    label_scores,
    mean_score_interval,
    permutation_test,
    sign_flip_test,
    wilson_interval,
)

HALF_POINTS = np.array([0.0, 0.5, 1.0])


def test_doctests():
    assert doctest.testmod(quality_module).failed == 0


def test_wilson_equals_scipy_for_every_count_including_none_and_all():
    for n in (1, 2, 7, 30, 125, 500):
        k = np.arange(n + 1)
        low, high = wilson_interval(k, np.full(n + 1, n))
        for i in range(n + 1):
            ci = scipy.stats.binomtest(int(k[i]), n).proportion_ci(0.95, method="wilson")
            assert low[i] == pytest.approx(ci.low, abs=1e-12)
            assert high[i] == pytest.approx(ci.high, abs=1e-12)
    low, high = wilson_interval([3], [0])
    assert math.isnan(low[0]) and math.isnan(high[0])


def test_wilson_at_another_confidence_equals_scipy():
    low, high = wilson_interval(17, 40, confidence=0.9)
    ci = scipy.stats.binomtest(17, 40).proportion_ci(0.9, method="wilson")
    assert (float(low), float(high)) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_mean_score_interval_is_scipys_t_interval_clipped_to_the_scale():
    rng = np.random.default_rng(1)
    for n in (2, 5, 40, 300):
        for _ in range(5):
            x = rng.choice(HALF_POINTS, n)
            if x.var() == 0:
                x[0] = 0.0 if x[0] else 1.0
            low, high = mean_score_interval(x.mean(), x.var(ddof=1), n)
            ci = scipy.stats.ttest_1samp(x, 0).confidence_interval(0.95)
            assert float(low) == pytest.approx(max(ci.low, 0.0), abs=1e-12)
            assert float(high) == pytest.approx(min(ci.high, 1.0), abs=1e-12)
            assert 0 <= low <= x.mean() <= high <= 1


def test_one_label_throughout_gets_the_bounds_its_wilson_share_allows():
    for n in (1, 4, 30):
        share_low = scipy.stats.binomtest(n, n).proportion_ci(0.95, method="wilson").low
        for score in (0.0, 0.5, 1.0):
            low, high = mean_score_interval(score, 0.0 if n > 1 else math.nan, n)
            # the share of this label is at least share_low, the rest anywhere on the scale
            assert float(low) == pytest.approx(score * share_low, abs=1e-12)
            assert float(high) == pytest.approx(1 - (1 - score) * share_low, abs=1e-12)
            assert low <= score <= high and high - low > 0
    low, high = mean_score_interval(math.nan, math.nan, 0)
    assert math.isnan(float(low)) and math.isnan(float(high))


def test_label_scores_follow_the_ordinal_scale():
    assert label_scores(["incorrect", "Correct", "partial"]).tolist() == [0.0, 1.0, 0.5]
    with pytest.raises(ValueError, match="unknown label 'great'"):
        label_scores(["great"])


def _scipy_paired(d, resamples):
    return scipy.stats.permutation_test((d,), np.mean, permutation_type="samples",
                                        n_resamples=resamples, vectorized=True,
                                        alternative="two-sided", rng=0).pvalue


def _scipy_unpaired(a, b, resamples):
    return scipy.stats.permutation_test(
        (b, a), lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        permutation_type="independent", n_resamples=resamples, vectorized=True,
        alternative="two-sided", rng=0).pvalue


def test_sign_flip_p_value_equals_scipys_exact_one():
    rng = np.random.default_rng(2)
    for n in (2, 3, 6, 9, 12):
        for _ in range(4):
            d = rng.choice(HALF_POINTS, n) - rng.choice(HALF_POINTS, n)
            ours = sign_flip_test(d, resamples=2 ** n)
            assert ours.exact and ours.resamples == 2 ** n
            assert ours.p_value == pytest.approx(_scipy_paired(d, 2 ** n), abs=1e-12)
            assert ours.delta == pytest.approx(d.mean())


def test_sign_flip_with_random_signs_is_within_sampling_noise_of_the_exact_p():
    rng = np.random.default_rng(3)
    d = rng.choice(HALF_POINTS, 16) - rng.choice(HALF_POINTS, 16) + 0.25 * (rng.random(16) < .4)
    exact = sign_flip_test(d, resamples=2 ** 16).p_value
    sampled = sign_flip_test(d, resamples=20_000, seed=5)
    assert not sampled.exact and sampled.resamples == 20_000
    assert abs(sampled.p_value - exact) < 4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-4


def test_unpaired_permutation_p_value_equals_scipys_exact_one():
    rng = np.random.default_rng(4)
    for n_a, n_b in ((2, 2), (3, 4), (5, 5), (4, 9), (8, 7)):
        a, b = rng.choice(HALF_POINTS, n_a), rng.choice(HALF_POINTS, n_b)
        every = math.comb(n_a + n_b, n_b)
        ours = permutation_test(a, b, resamples=every)
        assert ours.exact and ours.resamples == every
        assert ours.p_value == pytest.approx(_scipy_unpaired(a, b, every), abs=1e-12)
        assert ours.delta == pytest.approx(b.mean() - a.mean())


def test_unpaired_with_random_splits_is_within_sampling_noise_of_the_exact_p():
    rng = np.random.default_rng(6)
    # off the half-point grid (a quarter here and there): sampled, not computed exactly
    a = rng.choice(HALF_POINTS, 9, p=[.5, .3, .2]) + 0.25 * (rng.random(9) < .3)
    b = rng.choice(HALF_POINTS, 10, p=[.2, .3, .5])
    exact = permutation_test(a, b, resamples=math.comb(19, 10)).p_value
    sampled = permutation_test(a, b, resamples=20_000, seed=1)
    assert not sampled.exact
    assert abs(sampled.p_value - exact) < 4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-4


def test_label_scores_get_the_exact_permutation_distribution_at_any_size():
    """Hundreds of targets: the exact p equals scipy's random permutations within their noise,
    and a clear difference gets a p far below what 1,000 random permutations can show (no
    floor of 2 / 1,001, so Holm over 120 pairs still finds it)."""
    rng = np.random.default_rng(11)
    a = rng.choice(HALF_POINTS, 300, p=[.3, .3, .4])
    b = rng.choice(HALF_POINTS, 300, p=[.25, .3, .45])
    for ours, reference in ((sign_flip_test(b - a), _scipy_paired(b - a, 40_000)),
                            (permutation_test(a, b), _scipy_unpaired(a, b, 40_000))):
        assert ours.exact
        assert abs(ours.p_value - reference) < 4 * math.sqrt(reference / 40_000) + 2e-4
    better = np.clip(a + 0.5, 0, 1)
    assert sign_flip_test(better - a).p_value < 1e-30
    assert permutation_test(a, better).p_value < 1e-20


def test_a_difference_no_test_can_make_has_no_p_value_and_no_interval():
    one = sign_flip_test([0.5])
    assert one.delta == 0.5 and math.isnan(one.p_value) and math.isnan(one.ci_low)
    empty = permutation_test([], [1.0, 0.5])
    assert math.isnan(empty.delta) and math.isnan(empty.p_value)
    untested = permutation_test([0.0, 0.5], [1.0], resamples=0)
    assert untested.delta == pytest.approx(0.75) and math.isnan(untested.p_value)


def test_bootstrap_intervals_cover_the_true_difference_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    paired_hits = unpaired_hits = 0
    runs = 300
    for run in range(runs):
        a = rng.choice(HALF_POINTS, 60, p=[.3, .3, .4])
        b = rng.choice(HALF_POINTS, 60, p=[.2, .3, .5])
        true = (0.3 * .5 + .5) - (0.3 * .5 + .4)  # 0.1
        paired = sign_flip_test(b - a, resamples=400, seed=run)
        unpaired = permutation_test(a, b, resamples=400, seed=run)
        paired_hits += paired.ci_low <= true <= paired.ci_high
        unpaired_hits += unpaired.ci_low <= true <= unpaired.ci_high
    # 95% +- about 3.5 standard errors of a share over 300 runs
    assert 0.90 <= paired_hits / runs <= 0.99
    assert 0.90 <= unpaired_hits / runs <= 0.99


def _letters_agree_with(significant: np.ndarray, letters: list[str]) -> bool:
    for i, j in combinations(range(len(letters)), 2):
        share = bool(set(letters[i]) & set(letters[j]))
        if share == bool(significant[i, j]):
            return False
    return True


def test_compact_letters_share_a_letter_exactly_when_not_significantly_different():
    rng = np.random.default_rng(8)
    for n in (1, 2, 3, 5, 7):
        for _ in range(30):
            upper = np.triu(rng.random((n, n)) < 0.4, 1)
            significant = upper | upper.T
            letters = compact_letters(significant)
            assert all(letters), letters
            assert _letters_agree_with(significant, letters), (significant, letters)
    assert compact_letters(np.zeros((3, 3), dtype=bool)) == ["a", "a", "a"]
    assert compact_letters(~np.eye(3, dtype=bool)) == ["a", "b", "c"]
