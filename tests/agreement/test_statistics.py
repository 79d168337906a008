"""The agreement statistics against the reference implementations (scikit-learn, krippendorff)."""
from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

from agreement.statistics import (
    bootstrap_ci,
    code_precision_recall,
    confusion,
    encode_labels,
    krippendorff_alpha,
    pairwise_kappa,
    weighted_kappa,
)
from taxonomy import ACCURACY_LABELS, AccuracyLabel

LABELS = list(ACCURACY_LABELS)


def random_pairs(seed: int, n: int, labels=LABELS):
    rng = np.random.default_rng(seed)
    a = rng.choice(labels, size=n)
    # correlated second rater: keep a's label 60% of the time
    b = np.where(rng.random(n) < 0.6, a, rng.choice(labels, size=n))
    return list(a), list(b)


@pytest.mark.parametrize("weights", ["quadratic", "linear", None])
@pytest.mark.parametrize("seed", range(6))
def test_weighted_kappa_equals_sklearn(seed, weights):
    a, b = random_pairs(seed, 50 + 37 * seed)
    ours = weighted_kappa(a, b, labels=LABELS, weights=weights)
    theirs = cohen_kappa_score(a, b, labels=LABELS, weights=weights)
    assert ours == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("order", [("correct", "incorrect", "partial"),
                                   ("partial", "correct", "incorrect"),
                                   ("incorrect", "partial", "correct")])
def test_string_labels_in_any_order_follow_the_given_order(order):
    a, b = random_pairs(11, 200)
    ours = weighted_kappa(a, b, labels=order)
    assert ours == pytest.approx(cohen_kappa_score(a, b, labels=list(order), weights="quadratic"))


def test_label_order_matters_for_the_quadratic_weights():
    a = ["incorrect", "correct", "partial", "correct"]
    b = ["correct", "correct", "partial", "incorrect"]
    assert weighted_kappa(a, b, labels=("incorrect", "partial", "correct")) != pytest.approx(
        weighted_kappa(a, b, labels=("partial", "incorrect", "correct")))


def test_enum_and_case_variants_are_accepted_and_unknown_labels_named():
    a = [AccuracyLabel.CORRECT, "Partial", " incorrect "]
    assert weighted_kappa(a, ["correct", "partial", "incorrect"]) == 1.0
    with pytest.raises(ValueError, match="unknown label 'wrong' at position 1"):
        weighted_kappa(["correct", "wrong"], ["correct", "correct"])
    with pytest.raises(ValueError, match="differ in length"):
        weighted_kappa(["correct"], ["correct", "partial"])


def test_degenerate_kappa():
    assert math.isnan(weighted_kappa(["partial"] * 5, ["partial"] * 5))
    assert math.isnan(weighted_kappa([], []))
    assert weighted_kappa(["partial"] * 3, ["partial", "correct", "incorrect"]) == 0.0
    assert weighted_kappa(["partial", "correct", "incorrect"], ["correct"] * 3) == 0.0


def test_confusion_normalisations():
    a, b = random_pairs(3, 300)
    c = confusion(a, b, LABELS)
    assert c.counts.sum() == 300
    np.testing.assert_allclose(c.recall.sum(axis=1), 1.0)
    np.testing.assert_allclose(c.precision.sum(axis=0), 1.0)
    p, r, f, s = precision_recall_fscore_support(a, b, labels=LABELS, zero_division=np.nan)
    per = c.per_label()
    for i, label in enumerate(LABELS):
        assert per[label]["precision"] == pytest.approx(p[i])
        assert per[label]["recall"] == pytest.approx(r[i])
        assert per[label]["f1"] == pytest.approx(f[i])
        assert per[label]["support"] == s[i]
    empty_row = confusion(["correct", "correct"], ["partial", "correct"], LABELS)
    assert np.isnan(empty_row.recall[0]).all() and np.isnan(empty_row.precision[:, 0]).all()
    assert empty_row.to_dict()["recall"][0] == [None, None, None]


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", range(4))
def test_krippendorff_alpha_equals_the_package(seed, level):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, size=40)
    data = np.where(rng.random((4, 40)) < 0.7, truth, rng.integers(0, 3, size=(4, 40))).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    theirs = krippendorff.alpha(data, level_of_measurement=level, value_domain=[0, 1, 2])
    as_labels = [[None if np.isnan(v) else LABELS[int(v)] for v in row] for row in data]
    assert krippendorff_alpha(as_labels, level=level) == pytest.approx(theirs, abs=1e-12)
    numeric = krippendorff.alpha(data, level_of_measurement=level)
    assert krippendorff_alpha(data.tolist(), labels=None, level=level) == pytest.approx(numeric)


def test_krippendorff_degenerate():
    assert math.isnan(krippendorff_alpha([["correct", "correct"], ["correct", "correct"]]))
    assert math.isnan(krippendorff_alpha([["correct", None], [None, "partial"]]))
    with pytest.raises(ValueError, match="rectangular"):
        krippendorff_alpha([["correct"], ["correct", "partial"]])


def test_bootstrap_vectorised_matches_the_item_loop_in_distribution():
    a, b = random_pairs(5, 400)
    est, low, high = bootstrap_ci(a, b, n_resamples=2000, seed=0)
    assert est == pytest.approx(weighted_kappa(a, b))
    assert low < est < high

    def slow_kappa(x, y, labels):  # no from_counts: takes the per-resample path
        return weighted_kappa(x, y, labels)

    est2, low2, high2 = bootstrap_ci(a, b, statistic=slow_kappa, n_resamples=300, seed=0)
    assert est2 == pytest.approx(est)
    assert low2 == pytest.approx(low, abs=0.03) and high2 == pytest.approx(high, abs=0.03)
    assert bootstrap_ci(a, b, seed=3) == bootstrap_ci(a, b, seed=3)  # reproducible


def test_code_precision_recall_equals_sklearn_per_code():
    rng = np.random.default_rng(2)
    codes = ["SE-MD", "MS-ET", "LG-GR1", "ST-IF"]
    truth = [{c for c in codes if rng.random() < 0.3} for _ in range(80)]
    pred = [{c for c in codes if rng.random() < 0.4} | {"NOT-A-CODE"} for _ in range(80)]
    table = code_precision_recall(truth, pred, codes)
    for code in codes:
        t = [code in s for s in truth]
        p = [code in s for s in pred]
        prec, rec, f1, _ = precision_recall_fscore_support(t, p, average="binary", zero_division=0)
        assert table.loc[code, "precision"] == pytest.approx(prec)
        assert table.loc[code, "recall"] == pytest.approx(rec)
        assert table.loc[code, "f1"] == pytest.approx(f1)
        assert table.loc[code, "support"] == sum(t)
    never = code_precision_recall([set()], [set()], ["X"])
    assert never.isna().loc["X", "precision"] and never.isna().loc["X", "recall"]


def test_pairwise_kappa():
    a, b = random_pairs(8, 60)
    by_rater = {"ann": dict(enumerate(a)), "bob": dict(enumerate(b)),
                "cas": {0: "correct", 1: None}}
    table = pairwise_kappa(by_rater)
    assert list(zip(table.rater_a, table.rater_b)) == [("ann", "bob"), ("ann", "cas"),
                                                       ("bob", "cas")]
    assert table.kappa[0] == pytest.approx(cohen_kappa_score(a, b, labels=LABELS,
                                                             weights="quadratic"))
    assert table.n_items.tolist() == [60, 1, 1]
    assert math.isnan(table.kappa[1])


def test_encode_labels_missing():
    assert encode_labels([None, float("nan"), "correct"], LABELS, allow_missing=True).tolist() == [
        -1, -1, 2]
    with pytest.raises(ValueError, match="missing label at position 0"):
        encode_labels([None], LABELS)
