"""align's answers to the study's questions on a database built for them (study_testkit):
quality.csv and quality_tests.csv against the labels read directly, estimates.csv and
estimate_tests.csv against ppi-python on the arrays the database gives, replace.csv against
agreement.alt_test on the annotators' matrix, the cross-fitting of metric predictors, the files,
the terminal and the report; and the rows that say why where the data fall short."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from study_testkit import LANGUAGES, MODELS, fill_study_db

from agreement.alt_test import alt_test
from agreement.quality import sign_flip_test
from align.estimates import metric_predictions
from align.pipeline import AlignOptions, run_alignment
from align.quality import QUALITY_COLUMNS, QUALITY_TEST_COLUMNS, quality_frame
from db import get_engine
from taxonomy import ACCURACY_LABELS
from testing.cli import run_in_process

SCORE = {"incorrect": 0.0, "partial": 0.5, "correct": 1.0}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('study') / 'study.db'}"
    info = fill_study_db(url)
    report = run_alignment(url, AlignOptions(bootstrap=400, significance=()))
    yield {**info, "url": url, "report": report}
    get_engine(url).dispose()
    get_engine.cache_clear()


def _labelled(report) -> pd.DataFrame:
    return quality_frame(report.labels, report.generations)


def test_quality_counts_shares_and_intervals_come_from_the_labels(study):
    quality = study["report"].answers.quality
    assert list(quality.columns) == QUALITY_COLUMNS
    assert set(quality.slice) == {"all", "language", "model", "language x model"}
    assert len(quality[quality.slice == "language x model"]) == len(LANGUAGES) * len(MODELS)
    labelled = _labelled(study["report"])
    for language in LANGUAGES:
        for model in MODELS:
            rows = labelled[(labelled.language == language) & (labelled.model == model)]
            cell = quality[quality.slice_value == f"{language} x {model}"].iloc[0]
            assert cell.n == len(rows) > 0
            assert cell.n_correct == (rows.label == "correct").sum()
            assert cell.mean_score == pytest.approx(rows.label.map(SCORE).mean())
            ci = scipy.stats.binomtest(int(cell.n_correct), int(cell.n)).proportion_ci(
                method="wilson")
            assert (cell.share_correct_low, cell.share_correct_high) == pytest.approx(
                (ci.low, ci.high))
            t = scipy.stats.ttest_1samp(rows.label.map(SCORE), 0).confidence_interval()
            assert cell.mean_score_low == pytest.approx(max(t.low, 0.0))
    assert (quality.label_policy == "auto (gold-else-expert-else-majority)").all()
    overall = quality[quality.slice == "all"].iloc[0]
    assert overall.n == len(labelled) and overall.n_correct + overall.n_partial + \
        overall.n_incorrect == overall.n


def test_model_pairs_are_paired_on_targets_and_languages_unpaired(study):
    tests = study["report"].answers.quality_tests
    assert list(tests.columns) == QUALITY_TEST_COLUMNS
    labelled = _labelled(study["report"])
    greek = labelled[labelled.language == "el"].pivot_table(index="target_id", columns="model",
                                                            values="score")
    row = tests[(tests.slice_value == "el") & (tests.a == "model-a") & (tests.b == "model-c")]
    assert len(row) == 1, tests[tests.slice_value == "el"]
    row = row.iloc[0]
    both = greek[["model-a", "model-c"]].dropna()
    expected = sign_flip_test((both["model-c"] - both["model-a"]).to_numpy(), 400, 0)
    assert row.n == len(both) and row.delta == pytest.approx(expected.delta)
    assert row.p_value == pytest.approx(expected.p_value) and row.delta > 0
    assert row.p_holm >= row.p_value
    per_model = tests[tests.comparison == "language"]
    assert set(per_model.slice_value) == set(MODELS)
    assert (per_model.slice == "model").all()
    assert len(per_model) == len(MODELS) * 3  # three pairs of languages per model
    # every pair is written with the better one second
    assert (tests.mean_b >= tests.mean_a).all()


def _arrays(study, language: str):
    """Y, Yhat, Yhat_unlabeled of the judge in one language, straight from what was stored."""
    report = study["report"]
    label_of = dict(zip(report.labels.generation_id, report.labels.label))
    generations = report.generations
    ids = generations.generation_id[generations.language == language]
    y, yhat, unlabeled = [], [], []
    for g in ids:
        verdict = study["judged"][g]
        if verdict is None:
            continue
        if g in label_of:
            y.append(SCORE[label_of[g]])
            yhat.append(SCORE[verdict])
        else:
            unlabeled.append(SCORE[verdict])
    return np.array(y), np.array(yhat), np.array(unlabeled)


def test_judge_assisted_estimates_equal_ppi_python(study):
    estimates = study["report"].answers.estimates
    judge = estimates[estimates.predictor.str.startswith("judge-x")]
    for language in LANGUAGES:
        y, yhat, unlabeled = _arrays(study, language)
        row = judge[(judge.slice_value == language) & (judge.estimand == "mean_score")].iloc[0]
        assert (row.n_labelled, row.n_unlabelled) == (len(y), len(unlabeled))
        assert row.estimate == pytest.approx(float(np.ravel(
            ppi_mean_pointestimate(y, yhat, unlabeled))[0]), abs=1e-12)
        low, high = ppi_mean_ci(y, yhat, unlabeled, alpha=0.05)
        assert (row.ci_low, row.ci_high) == pytest.approx((low[0], high[0]), abs=1e-12)
        assert row.classical_estimate == pytest.approx(y.mean())
        assert row.effective_labels > row.n_labelled  # a judge right 80% of the time helps
        assert "left out (no ok verdict)" in row.method  # its parse errors are counted
    assert set(judge.estimand) == {"share_correct", "share_partial", "share_incorrect",
                                   "mean_score"}
    assert {"all", "language", "model", "language x model"} <= set(judge.slice)


def test_judge_assisted_model_differences_equal_ppi_python_on_target_differences(study):
    tests = study["report"].answers.estimate_tests
    row = tests[(tests.slice_value == "el") & (tests.b == "model-c")
                & (tests.a == "model-a")].iloc[0]
    report = study["report"]
    label_of = dict(zip(report.labels.generation_id, report.labels.label))
    g = report.generations
    greek = g[(g.language == "el") & g.model.isin(["model-a", "model-c"])]
    d, d_hat, d_unlabeled = [], [], []
    for _, pair in greek.groupby("target_id"):
        ids = dict(zip(pair.model, pair.generation_id))
        verdicts = [study["judged"][ids[m]] for m in ("model-a", "model-c")]
        if None in verdicts:
            continue
        predicted = SCORE[verdicts[1]] - SCORE[verdicts[0]]
        if all(ids[m] in label_of for m in ("model-a", "model-c")):
            d.append(SCORE[label_of[ids["model-c"]]] - SCORE[label_of[ids["model-a"]]])
            d_hat.append(predicted)
        else:
            d_unlabeled.append(predicted)
    low, high = ppi_mean_ci(np.array(d), np.array(d_hat), np.array(d_unlabeled), alpha=0.05)
    assert (row.n_labelled, row.n_unlabelled) == (len(d), len(d_unlabeled))
    assert (row.ci_low, row.ci_high) == pytest.approx((low[0], high[0]), abs=1e-12)
    assert row.estimate > 0 and 0 <= row.p_value <= row.p_holm <= 1


def test_a_metric_is_cross_fitted_never_on_its_own_labels(study):
    report = study["report"]
    scores = report.scores
    label_codes = {g: ACCURACY_LABELS.index(label) for g, label in
                   zip(report.labels.generation_id, report.labels.label)}
    generations = report.generations[["generation_id", "target_id", "model", "language"]].assign(
        human=lambda f: [label_codes.get(g, -1) for g in f.generation_id])
    score_of = dict(zip(scores.generation_id, scores.score))
    generation_of = {v: g for g, v in score_of.items()}
    trained_on: list[set] = []
    from align.kde import fit_kde_thresholds

    def spy(key, x, codes):
        trained_on.append({generation_of[v] for v in x})
        return fit_kde_thresholds(x, codes, (0, 1, 2)).thresholds

    (prediction,) = metric_predictions(scores, generations, spy)
    labelled = prediction.frame[prediction.frame.human >= 0]
    assert len(trained_on) == 10 * len(LANGUAGES) and len(labelled) > 0
    language_of = dict(zip(generations.generation_id, generations.language))
    for g, target in zip(labelled.generation_id, labelled.target_id):
        # of its language's folds, exactly one fold's thresholds did not see it
        own = [fold for fold in trained_on if language_of[next(iter(fold))] == language_of[g]]
        assert len(own) == 10
        blind = [fold for fold in own if g not in fold]
        assert len(blind) == 1
        same_target = set(generations.generation_id[generations.target_id == target])
        assert not (same_target & blind[0]), "a target's generations stay in one fold"
    estimates = report.answers.estimates
    metric = estimates[estimates.predictor == "goodmetric"]
    assert len(metric) and metric.method.str.startswith("cross-PPI").all()
    assert metric.effective_labels.dropna().gt(0).all()


def test_the_alternative_annotator_test_runs_on_the_annotators_labels(study):
    report = study["report"]
    replace = report.answers.replace
    row = replace[(replace.slice == "all")].iloc[0]
    annotations = report.generations  # the generations of the aligned dataset
    from align.data import load_annotations

    labels = load_annotations(study["url"])
    labels = labels[labels.generation_id.isin(annotations.generation_id)]
    names = sorted(labels.annotator.unique())
    items = np.sort(labels.generation_id.unique())
    human = np.full((len(names), len(items)), -1)
    for r in labels.itertuples():
        human[names.index(r.annotator), np.searchsorted(items, r.generation_id)] = \
            ACCURACY_LABELS.index(r.accuracy)
    judge = np.array([-1 if study["judged"][g] is None else
                      ACCURACY_LABELS.index(study["judged"][g]) for g in items])
    expected = alt_test(human, judge, names, "accuracy", 0.2)
    assert row.winning_rate == pytest.approx(expected.winning_rate)
    assert row.advantage_probability == pytest.approx(expected.advantage_probability)
    assert row.n_items == expected.n_items and row.n_annotators == expected.tested.sum() == 4
    assert row.passed == expected.passed and row.epsilon == 0.2
    per_language = replace[replace.slice == "language"]
    assert set(per_language.slice_value) == set(LANGUAGES)
    # per language the annotators have too few items for the test: it says so
    short = per_language[per_language.winning_rate.isna()]
    assert short.method.str.startswith("no test: ").all()
    annotators = report.answers.replace_annotators
    assert set(annotators.annotator) == set(names)


def test_files_terminal_and_report_lead_with_the_answers(study, tmp_path):
    out = tmp_path / "report"
    result = run_in_process("align", "--db", study["url"], "--out", str(out), "--resamples",
                            "200", "--no-figures", "--alt-epsilon", "0.1",
                            "--alt-scoring", "neg_rmse")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("which model writes the best comments")
    assert any("can a judge replace the annotators (alt-test, epsilon 0.1" in line
               for line in lines)
    assert any("what a judge or metric adds to the labels" in line for line in lines)
    for name in ("quality", "quality_tests", "code_shares", "estimates", "estimate_tests",
                 "replace", "replace_annotators"):
        assert (out / f"{name}.csv").exists(), name
    replace = pd.read_csv(out / "replace.csv")
    assert set(replace.scoring) == {"neg_rmse"} and set(replace.epsilon) == {0.1}
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["quality"] and results["estimates"] and results["replace"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index("The answers") < page.index("Which configuration agrees best")
    assert "id='quality'" in page


def test_bad_epsilon_is_refused_in_one_line(study, tmp_path):
    result = run_in_process("align", "--db", study["url"], "--out", str(tmp_path / "r"),
                            "--alt-epsilon", "1.5")
    assert result.returncode == 2 and "--alt-epsilon must be at least 0 and below 1" in result.stderr


def test_short_data_give_rows_that_say_why(tmp_path):
    """One annotator, one label in a cell, one class, a judge that reaches no labelled item."""
    from align.questions import answer_questions

    generations = pd.DataFrame({"generation_id": [1, 2, 3, 4, 5], "target_id": [1, 1, 2, 3, 4],
                                "model": ["m", "n", "m", "m", "n"],
                                "language": ["el", "el", "el", "pl", "pl"]})
    labels = pd.DataFrame({"generation_id": [1, 2, 3], "label": ["correct", "partial", "correct"],
                           "codes": [frozenset()] * 3})
    annotations = pd.DataFrame({"generation_id": [1, 2, 3], "annotator": ["solo"] * 3,
                                "accuracy": ["correct", "partial", "correct"]})
    verdicts = pd.DataFrame({"key": "j", "generation_id": [4, 5], "status": "ok",
                             "accuracy": ["correct", "incorrect"]})
    answers = answer_questions(labels, annotations, generations, verdicts, pd.DataFrame(),
                               None, policy="auto", resamples=100, seed=0,
                               alt_scoring="accuracy", alt_epsilon=0.2)
    cell = answers.quality[answers.quality.slice_value == "el x m"].iloc[0]
    assert cell.n == 2 and cell.mean_score == 1.0 and "every label here is the same" in cell.method
    assert 0 < cell.mean_score_low < 1 == cell.mean_score_high
    single = answers.quality_tests[answers.quality_tests.slice_value == "el"].iloc[0]
    assert math.isnan(single.p_value) and single.method.startswith("no test: 1 target")
    judge = answers.estimates[answers.estimates.predictor == "j"]
    assert len(judge) and judge.estimate.isna().all()
    assert judge.method.str.contains("no generation here has both a human label").all()
    assert answers.replace.method.str.contains("1 annotator(s) labelled these items", regex=False).all()
    assert any("2 or more annotators" in note for note in answers.notes)


def test_one_language_is_not_repeated_as_a_slice_of_its_own():
    from align.questions import answer_questions

    generations = pd.DataFrame({"generation_id": range(8), "target_id": [0, 0, 1, 1, 2, 2, 3, 3],
                                "model": ["m", "n"] * 4, "language": "de"})
    labels = pd.DataFrame({"generation_id": range(6), "codes": [frozenset()] * 6,
                           "label": ["correct", "partial", "correct", "incorrect", "correct",
                                     "correct"]})
    verdicts = pd.DataFrame({"key": "j", "generation_id": range(8), "status": "ok",
                             "accuracy": ["correct", "partial", "correct", "incorrect"] * 2})
    answers = answer_questions(labels, None, generations, verdicts, pd.DataFrame(), None,
                               policy="auto", resamples=100, seed=0, alt_scoring="accuracy",
                               alt_epsilon=0.2)
    for table in (answers.quality, answers.quality_tests, answers.code_shares, answers.estimates):
        assert set(table.slice) <= {"all", "model"}, table.slice.unique()
    assert set(answers.quality.slice) == {"all", "model"}
    assert set(answers.estimates.slice) == {"all", "model"}


def test_a_stored_label_plan_adds_its_rows_to_estimates_interim_until_complete(tmp_path):
    from testing.plans import LABELS, fill_plan_db, label

    planned = fill_plan_db(f"sqlite:///{tmp_path / 'plan.db'}")
    drawn = [int(g) for g in planned["pool"][planned["drawn"]]]
    label(planned["url"], planned["expert_id"], {g: LABELS[planned["truth"][g]]
                                                 for g in drawn[:-4]})
    report = run_alignment(planned["url"], AlignOptions(bootstrap=100, significance=()))
    rows = report.answers.estimates[report.answers.estimates.method.str.startswith(
        "active plan 'p1'")]
    assert set(rows.slice) == {"all", "language", "model", "language x model"}
    assert rows.method.str.contains("INCOMPLETE: 4 drawn generation(s) of the plan",
                                    regex=False).all()
    assert any("plan 'p1' waits for 4 drawn generation(s)" in n for n in report.warnings)
    # a uniform plan draws a random sample of its pool: no warning about the PPI++ rows
    assert not any("unequal probabilities" in n for n in report.warnings)
    from agreement.plans import load_plans
    from align.questions import add_plans

    (plan,) = load_plans(planned["url"], dict(zip(report.labels.generation_id,
                                                   report.labels.label)))
    plan.frame.loc[~plan.frame.pilot, "probability"] *= np.linspace(0.5, 1.5, (~plan.frame.pilot)
                                                                    .sum())
    add_plans(report.answers, [plan])
    assert any("plan 'p1' drew generations with unequal probabilities; the PPI++ rows of "
               "judge[standard,en,v1]" in n for n in report.answers.notes)
    label(planned["url"], planned["expert_id"], {g: LABELS[planned["truth"][g]]
                                                 for g in drawn[-4:]})
    report = run_alignment(planned["url"], AlignOptions(bootstrap=100, significance=()))
    rows = report.answers.estimates[report.answers.estimates.method.str.startswith(
        "active plan 'p1'")]
    assert not rows.method.str.contains("INCOMPLETE").any()
    overall = rows[(rows.slice == "all") & (rows.estimand == "mean_score")].iloc[0]
    truth = np.mean([t / 2 for t in planned["truth"].values()])
    assert overall.ci_low <= truth <= overall.ci_high
    get_engine.cache_clear()
