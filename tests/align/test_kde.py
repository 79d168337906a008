"""The KDE threshold classifier on synthetic scores where the answer is known."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import gaussian_kde, norm
from sklearn.metrics import cohen_kappa_score

from align.evaluation import evaluate, fit_and_evaluate, noise_separation
from align.kde import class_log_densities, fit_kde_thresholds, parse_bandwidth
from align.thresholds import Thresholds, load_thresholds, save_thresholds
from taxonomy import ACCURACY_LABELS

LABELS = ACCURACY_LABELS


def three_classes(seed=0, means=(0.2, 0.5, 0.8), sd=0.03, sizes=(300, 300, 300)):
    rng = np.random.default_rng(seed)
    scores = np.concatenate([rng.normal(m, sd, n) for m, n in zip(means, sizes)])
    human = [label for label, n in zip(LABELS, sizes) for _ in range(n)]
    return scores, human


def test_well_separated_gaussians_give_near_perfect_kappa_and_midpoint_thresholds():
    scores, human = three_classes()
    fit, result = fit_and_evaluate(scores, human)
    assert result.kappa > 0.99
    assert [label for _, _, label in fit.thresholds.intervals] == list(LABELS)
    cuts = fit.thresholds.boundaries
    assert cuts == pytest.approx([0.35, 0.65], abs=0.03)  # equal sd: crossings at the midpoints
    assert fit.thresholds.orientation == "ascending"
    assert fit.thresholds.intervals_per_class() == {"incorrect": 1, "partial": 1, "correct": 1}
    assert result.warning is None


def test_unequal_variances_cross_where_the_analytic_densities_cross():
    # N(0, 1) vs N(3, 2): the narrow class wins between the two analytic crossings
    rng = np.random.default_rng(4)
    a, b = rng.normal(0, 1, 20000), rng.normal(3, 2, 20000)
    fit = fit_kde_thresholds(np.concatenate([a, b]), ["incorrect"] * a.size + ["correct"] * b.size)
    xs = np.linspace(-8, 12, 200001)
    diff = norm.pdf(xs, 0, 1) - norm.pdf(xs, 3, 2)
    analytic = xs[np.flatnonzero(np.diff(np.sign(diff)))]
    assert len(analytic) == 2
    cuts = fit.thresholds.boundaries
    # the crossings nearest the analytic ones sit on them (a few isolated extreme points may add
    # tiny regions far out in the tails: that is the KDE, not an error)
    nearest = [cuts[np.argmin(np.abs(cuts - a))] for a in analytic]
    assert nearest == pytest.approx(analytic, abs=0.1)
    # not contiguous: "correct" owns both tails
    assert fit.thresholds.intervals_per_class()["correct"] >= 2
    assert fit.thresholds.orientation == "mixed"
    # on fresh data it agrees with the analytic (equal-weight Bayes) classifier almost always
    fresh = np.concatenate([rng.normal(0, 1, 10000), rng.normal(3, 2, 10000)])
    analytic_pred = np.where(norm.pdf(fresh, 0, 1) > norm.pdf(fresh, 3, 2), "incorrect", "correct")
    assert np.mean(np.array(fit.thresholds.classify(fresh)) == analytic_pred) > 0.99


def test_identical_distributions_give_kappa_about_zero():
    rng = np.random.default_rng(1)
    scores = rng.normal(0.5, 0.1, 3000)
    human = rng.choice(LABELS, size=3000)
    _, result = fit_and_evaluate(scores, human)
    assert abs(result.kappa) < 0.1


@pytest.mark.parametrize("seed", range(3))
def test_binned_and_exact_methods_give_the_same_thresholds(seed):
    scores, human = three_classes(seed=seed, sd=0.12)
    binned = fit_kde_thresholds(scores, human)
    exact = fit_kde_thresholds(scores, human, method="exact")
    assert [x[2] for x in binned.thresholds.intervals] == [x[2] for x in exact.thresholds.intervals]
    step = binned.grid[1] - binned.grid[0]
    assert binned.thresholds.boundaries == pytest.approx(exact.thresholds.boundaries, abs=step)
    reliable = exact.log_density > np.log(1e-6)
    np.testing.assert_allclose(binned.log_density[reliable], exact.log_density[reliable],
                               atol=1e-2)


def test_densities_equal_scipy_gaussian_kde():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(0, 1, 50), rng.gamma(2, 1, 80)])
    codes = np.array([0] * 50 + [1] * 80)
    grid = np.linspace(-4, 10, 301)
    for method in ("scott", "silverman", 0.3):
        kdes = [gaussian_kde(x[codes == c], bw_method=method) for c in (0, 1)]
        bws = np.array([math.sqrt(k.covariance[0, 0]) for k in kdes])
        ours = np.exp(class_log_densities(x, codes, 2, grid, bws))
        for c in (0, 1):
            np.testing.assert_allclose(ours[c], kdes[c](grid), rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("spec", ["scott", "silverman", 0.5, "0.05"])
def test_bandwidth_choices_fit(spec):
    scores, human = three_classes(sd=0.08)
    fit, result = fit_and_evaluate(scores, human, bandwidth=spec)
    assert fit.thresholds.bandwidth == parse_bandwidth(spec)
    assert result.kappa > 0.8


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="bandwidth"):
        parse_bandwidth("wide")
    with pytest.raises(ValueError, match="positive"):
        parse_bandwidth(-1)
    with pytest.raises(ValueError, match="weighting"):
        fit_kde_thresholds([0.1, 0.2], ["correct", "partial"], weighting="bayes")
    with pytest.raises(ValueError, match="nothing to fit"):
        fit_kde_thresholds([float("nan")], ["correct"])
    with pytest.raises(ValueError, match="unknown label 'great'"):
        fit_kde_thresholds([0.1], ["great"])


def test_string_labels_in_any_order():
    scores, human = three_classes()
    order = ("correct", "incorrect", "partial")
    fit, result = fit_and_evaluate(scores, human, labels=order)
    assert fit.thresholds.labels == order
    pred = fit.thresholds.classify(scores)
    assert result.kappa == pytest.approx(
        cohen_kappa_score(human, pred, labels=list(order), weights="quadratic"))
    # same regions whatever the order the labels come in
    base = fit_kde_thresholds(scores, human)
    assert [x[2] for x in fit.thresholds.intervals] == [x[2] for x in base.thresholds.intervals]
    assert fit.thresholds.boundaries == pytest.approx(base.thresholds.boundaries)


def test_higher_is_worse_metric_gets_descending_regions_and_same_kappa():
    scores, human = three_classes()
    _, up = fit_and_evaluate(scores, human)
    fit, down = fit_and_evaluate(-scores, human)
    assert fit.thresholds.orientation == "descending"
    assert [x[2] for x in fit.thresholds.intervals] == list(reversed(LABELS))
    assert down.kappa == pytest.approx(up.kappa)


def test_all_zero_scores_single_repeated_value():
    # all BLEU = 0: every class is a point mass at the same spot; nothing can be told apart
    fit, result = fit_and_evaluate([0.0] * 30, ["incorrect"] * 10 + ["partial"] * 10 + ["correct"] * 10)
    assert len(fit.thresholds.intervals) == 1
    assert set(fit.thresholds.point_mass) == set(LABELS)
    assert result.kappa == 0.0
    assert result.warning is not None and "100%" in result.warning


def test_point_mass_class_and_singleton_class_get_a_region():
    rng = np.random.default_rng(3)
    scores = np.concatenate([np.zeros(40), [0.5], rng.normal(0.8, 0.05, 60)])
    human = ["incorrect"] * 40 + ["partial"] + ["correct"] * 60
    fit, result = fit_and_evaluate(scores, human)
    assert set(fit.thresholds.point_mass) == {"incorrect", "partial"}
    pred = fit.thresholds.classify([0.0, 0.5, 0.8])
    assert pred == ["incorrect", "partial", "correct"]
    assert result.kappa > 0.95


def test_two_point_masses_split_between_them_in_log_space():
    fit = fit_kde_thresholds([0.0] * 5 + [1.0] * 5, ["incorrect"] * 5 + ["correct"] * 5)
    assert fit.thresholds.boundaries == pytest.approx([0.5], abs=0.01)
    assert fit.thresholds.classify([0.0, 0.45, 0.55, 1.0]) == ["incorrect", "incorrect",
                                                               "correct", "correct"]
    exact = fit_kde_thresholds([0.0] * 5 + [1.0] * 5, ["incorrect"] * 5 + ["correct"] * 5,
                               method="exact")
    assert np.isfinite(exact.log_density[[0, 2]]).all()  # log space: no underflow to -inf
    assert exact.thresholds.boundaries == pytest.approx([0.5], abs=0.01)
    assert np.isneginf(fit.log_density[1]).all()  # "partial" has no items: no density


def test_missing_class_and_single_class():
    scores, human = three_classes(sizes=(200, 0, 200))
    fit, result = fit_and_evaluate(scores, human)
    assert fit.thresholds.intervals_per_class()["partial"] == 0
    assert result.kappa > 0.99
    fit, result = fit_and_evaluate([0.1, 0.2, 0.3], ["correct"] * 3)
    assert fit.thresholds.intervals == ((-math.inf, math.inf, "correct"),)
    assert math.isnan(result.kappa)  # one class on both sides: undefined, not a crash


def test_prior_weighting_collapses_to_the_majority_and_warns():
    rng = np.random.default_rng(5)
    scores = np.concatenate([rng.normal(0.5, 0.1, 1000), rng.normal(0.55, 0.1, 50),
                             rng.normal(0.6, 0.1, 50)])
    human = ["correct"] * 1000 + ["partial"] * 50 + ["incorrect"] * 50
    _, prior = fit_and_evaluate(scores, human, weighting="prior")
    assert prior.predicted_share["correct"] > 0.9
    assert abs(prior.kappa) < 0.1
    assert prior.warning and "prior weighting" in prior.warning
    _, equal = fit_and_evaluate(scores, human, weighting="equal")
    assert equal.predicted_share["correct"] < 0.9  # minority classes get regions
    assert equal.warning is None


def test_fit_on_one_split_apply_to_another_and_save_load(tmp_path):
    scores, human = three_classes(seed=6, sd=0.08)
    train = np.arange(len(scores)) % 2 == 0
    fit = fit_kde_thresholds(scores[train], [h for h, t in zip(human, train) if t])
    held_out = evaluate(fit.thresholds, scores[~train], [h for h, t in zip(human, train) if not t],
                        bootstrap=200)
    assert held_out.kappa > 0.85
    assert held_out.kappa_low < held_out.kappa < held_out.kappa_high
    path = save_thresholds(tmp_path / "t.json", {"bleu|none": fit.thresholds})
    loaded = load_thresholds(path)["bleu|none"]
    assert loaded.intervals == fit.thresholds.intervals
    assert loaded.classify(scores) == fit.thresholds.classify(scores)
    assert loaded.classify([float("nan")]) == [None]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "nlce-kde-thresholds/1", "thresholds": {
        "x": {"format": "nlce-kde-thresholds/1", "labels": ["a"], "intervals": [[0, None, "a"]]}}}))
    with pytest.raises(ValueError, match="bad.json.*-inf"):
        load_thresholds(bad)
    with pytest.raises(ValueError, match="cannot read"):
        load_thresholds(tmp_path / "missing.json")


def test_threshold_exactly_on_a_boundary_goes_up():
    t = Thresholds(labels=("a", "b"), intervals=((-math.inf, 1.0, "a"), (1.0, math.inf, "b")))
    assert t.classify([0.999, 1.0, 1.001]) == ["a", "b", "b"]
    assert t.describe() == "a < 1 ≤ b"


def test_noise_separation():
    rng = np.random.default_rng(7)
    real = rng.normal(0.8, 0.05, 500)
    clean = noise_separation(real, rng.normal(0.2, 0.05, 500))
    assert clean.f1 > 0.99 and clean.kappa > 0.99
    mixed = noise_separation(real, rng.normal(0.8, 0.05, 500))  # noise scored like real output
    assert mixed.kappa < 0.15
    assert clean.n_real == 500 and clean.n_noise == 500


def test_no_intersection_gives_one_interval_for_the_winner():
    rng = np.random.default_rng(9)
    scores = np.concatenate([rng.normal(0, 1, 2000), rng.normal(0.3, 1, 5)])
    human = ["correct"] * 2000 + ["incorrect"] * 5
    fit, result = fit_and_evaluate(scores, human, weighting="prior")
    assert fit.thresholds.intervals == ((-math.inf, math.inf, "correct"),)
    assert fit.thresholds.orientation == "single" and fit.thresholds.boundaries.size == 0
    assert result.kappa == 0.0 and "prior weighting" in result.warning


def _awkward_scores(seed: int, kind: int):
    """Score shapes that stress the fit: overlapping, rounded (ties), mostly zero, point masses
    far apart, and classes missing."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    human = rng.integers(0, 3, n)
    if kind == 0:
        scores = rng.normal(human * 0.5, 1.0)
    elif kind == 1:
        scores = np.round(rng.normal(human * 0.3, 0.5), 1)
    elif kind == 2:
        scores = np.where(rng.random(n) < 0.5, 0.0, rng.random(n))
    elif kind == 3:
        scores = np.where(human == 0, 0.0, rng.normal(5 + human, 0.01))
    else:
        human = np.where(human == 1, 2, human)  # no "partial"
        scores = rng.normal(human * 0.2, 0.3)
    return scores, human


def test_the_batched_refit_classifies_as_fit_then_classify_per_resample():
    from align.kde import refit_classify

    for seed in range(20):
        scores, human = _awkward_scores(seed, seed % 5)
        rows = np.random.default_rng(seed).integers(0, len(scores), (12, len(scores)))
        batched = refit_classify(scores[rows], human[rows], 3)
        for row, predicted in zip(rows, batched):
            fit = fit_kde_thresholds(scores[row], human[row], (0, 1, 2))
            np.testing.assert_array_equal(predicted, fit.thresholds.classify_codes(scores[row]))


def _mass_kept(fit, cuts, classes) -> float:
    """Each class's density mass inside its own region for ordered cuts at grid nodes."""
    step = fit.grid[1] - fit.grid[0]
    density = np.exp(fit.log_density)
    bounds = [0, *cuts, len(fit.grid)]
    return sum(density[c, lo:hi].sum() * step for c, lo, hi in zip(classes, bounds, bounds[1:]))


def test_ordered_thresholds_keep_the_most_density_of_all_ordered_splits():
    from align.kde import ordered_thresholds

    rng = np.random.default_rng(3)
    # "correct" comments with two kinds of score: most high, some lowest of all (chrF-like)
    human = np.array([0] * 60 + [1] * 40 + [2] * 80)
    scores = np.concatenate([rng.normal(0.3, 0.08, 60), rng.normal(0.45, 0.1, 40),
                             rng.normal(0.15, 0.03, 20), rng.normal(0.65, 0.1, 60)])
    fit = fit_kde_thresholds(scores, human, (0, 1, 2), grid_size=128)
    assert fit.thresholds.orientation == "mixed"
    for ascending in (True, False):
        ordered = ordered_thresholds(fit, ascending)
        assert ordered.orientation == ("ascending" if ascending else "descending")
        classes = [0, 1, 2] if ascending else [2, 1, 0]
        inside = np.flatnonzero((fit.grid >= scores.min()) & (fit.grid <= scores.max()))
        best = max(_mass_kept(fit, (i, j), classes) for i in inside for j in inside if i <= j)
        cuts = [int(np.searchsorted(fit.grid, lo)) for lo, _, _ in ordered.intervals[1:]]
        if len(cuts) == 1:  # a class left without a region: its cut coincides with another
            cuts = [cuts[0], cuts[0]] if ordered.intervals[0][2] == classes[0] else [0, cuts[0]]
        assert _mass_kept(fit, cuts, classes) == pytest.approx(best, rel=1e-12)
    ordered_fit = fit_kde_thresholds(*three_classes())
    assert ordered_thresholds(ordered_fit) is ordered_fit.thresholds  # in order already


def test_regions_out_of_order_are_flagged_and_monotone_orders_them():
    import pandas as pd

    from align.analysis import align_metrics

    rng = np.random.default_rng(4)
    n = 180
    labels = np.array(["incorrect"] * 60 + ["partial"] * 40 + ["correct"] * 80)
    score = np.concatenate([rng.normal(0.3, 0.08, 60), rng.normal(0.45, 0.1, 40),
                            rng.normal(0.1, 0.02, 25), rng.normal(0.65, 0.1, 55)])
    scores = pd.DataFrame({
        "key": "chrf", "metric": "chrf", "scorer": "", "layer": None, "context": "none",
        "key_none": "chrf", "noise": "none", "generation_id": np.arange(n), "target_id": np.arange(n),
        "score": score, "model": "m", "language": "de", "higher_is_better": True})
    frame = pd.DataFrame({"generation_id": np.arange(n), "label": labels})
    plain = align_metrics(scores, frame).kappa.iloc[0]
    assert (plain.direction, plain.monotone, plain.orientation) == ("higher", False, "mixed")
    ordered = align_metrics(scores, frame, monotone=True).kappa.iloc[0]
    assert (ordered.monotone, ordered.orientation) == (True, "ascending")
    assert ordered.thresholds_from == "fitted, ordered"
    unknown = align_metrics(scores.assign(higher_is_better=None), frame, monotone=True).kappa
    assert unknown.monotone.iloc[0] is None and unknown.orientation.iloc[0] == "ascending"
