"""The alignment over a real (small) database: label policy, slices, noise, context, groups,
judges, fit/apply splits and saved thresholds."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from align_testkit import fill_align_db
from sklearn.metrics import cohen_kappa_score

from align import data
from align.analysis import context_effect
from align.families import load_model_families, model_group
from align.pipeline import AlignOptions, parse_split, run_alignment
from align.report import write_report
from align.thresholds import load_thresholds
from taxonomy import ACCURACY_LABELS

GOOD = "goodmetric[intfloat/multilingual-e5-small,L8,none]"
GOOD_FULL = "goodmetric[intfloat/multilingual-e5-small,L8,full]"


def row(frame, key, slice_name="all", value="all"):
    hit = frame[(frame.key == key) & (frame.slice == slice_name) & (frame.slice_value == value)]
    assert len(hit) == 1, (key, slice_name, value)
    return hit.iloc[0]


def test_load_scores_has_configurations_noise_and_slices(align_db):
    scores = data.load_scores(align_db["url"])
    assert set(scores.key) == {"bleu", "flatmetric", GOOD, GOOD_FULL}
    real = scores[scores.noise == "none"]
    assert real.groupby("key").size().to_dict()[GOOD] == 120  # not doubled by the noise run
    noise = scores[scores.noise != "none"]
    assert set(noise.noise) == {"uniform"} and set(noise.key) == {GOOD} and len(noise) == 60
    assert set(real.language) == {"en", "nl"} and set(real.model) == {"model-a", "model-b"}
    assert set(data.load_scores(align_db["url"], ["bleu"]).key) == {"bleu"}


def test_human_label_policy(align_db):
    url, truth = align_db["url"], align_db["truth"]
    first = min(truth)
    auto = data.load_human_labels(url).set_index("generation_id")
    assert auto.loc[first, "source"] == "gold" and auto.loc[first, "label"] == "correct"
    assert (auto.drop(first).source == "expert").all()
    assert auto.label.to_dict() == truth
    expert = data.load_human_labels(url, "expert").set_index("generation_id")
    assert expert.loc[first, "label"] == "incorrect"  # the expert's own label, not the gold one
    assert set(data.load_human_labels(url, "annotator:bob").label) == {"partial"}
    gold = data.load_human_labels(url, "gold")
    assert list(gold.generation_id) == [first]
    # majority of expert, ann, bob: expert and ann agree, so their label wins
    majority = data.load_human_labels(url, "majority").set_index("generation_id")
    assert (majority.label == expert.label).all()
    assert (auto.n_annotators == 3).all()
    with pytest.raises(ValueError, match="annotator 'nobody' has no finished labels"):
        data.load_human_labels(url, "annotator:nobody")
    with pytest.raises(ValueError, match="unknown label policy"):
        data.load_human_labels(url, "everyone")


def test_majority_ties_go_to_the_earliest_annotation():
    annotations = pd.DataFrame({
        "annotation_id": [1, 2, 3, 4], "generation_id": [7, 7, 8, 8],
        "annotator": ["a", "b", "a", "b"], "role": ["annotator"] * 4,
        "accuracy": ["partial", "correct", "correct", "incorrect"],
        "codes": [frozenset()] * 4})
    gold = pd.DataFrame(columns=["gold_id", "generation_id", "accuracy", "codes"])
    labels = data.choose_human_labels(annotations, gold, "auto")
    assert labels.label.tolist() == ["partial", "correct"]
    assert labels.source.tolist() == ["majority", "majority"]


def test_alignment_numbers(align_db):
    report = run_alignment(align_db["url"], AlignOptions(bootstrap=200))
    kappa = report.metrics.kappa
    good = row(kappa, GOOD)
    assert good.kappa > 0.9 and good.kappa_low < good.kappa <= good.kappa_high
    assert good.n == 120 and good.n_correct == 61  # 60 + the gold label
    assert row(kappa, GOOD, "language", "nl").kappa > 0.9
    assert row(kappa, "flatmetric").kappa < 0.3
    bleu = row(kappa, "bleu")
    assert bleu.kappa == 0.0 and "100%" in bleu.warning and bleu.regions.endswith("everywhere")
    assert any("bleu" in w for w in report.warnings)
    # kappa is recomputable from the predictions with scikit-learn
    pred = report.metrics.predictions
    mine = pred[(pred.key == GOOD) & (pred.slice == "all")]
    assert good.kappa == pytest.approx(cohen_kappa_score(
        mine.human, mine.predicted, labels=list(ACCURACY_LABELS), weights="quadratic"))
    # confusion rows sum to the class counts
    conf = report.metrics.confusion
    counts = conf[(conf.key == GOOD) & (conf.slice == "all")].groupby("human")["count"].sum()
    assert counts.to_dict() == {"correct": 61, "incorrect": 29, "partial": 30}
    # context: full context is noisier in the fixture, so kappa drops
    ctx = report.context
    full = ctx[(ctx.slice == "all") & (ctx.context == "full")].iloc[0]
    assert full.delta_kappa < 0 and full.kappa_baseline == pytest.approx(good.kappa)
    # noise: uniform noise is far below the real scores
    noise = report.noise[(report.noise.slice == "all")].iloc[0]
    assert noise.f1 > 0.95 and noise.n_noise == 60 and noise.n_real == 120
    # model groups
    assert set(report.groups.value) == {"kappa", "precision_correct"}
    groups = report.groups[(report.groups.slice == "all") & (report.groups.value == "kappa")]
    groups = groups.set_index(["metric", "group"])
    assert groups.loc[("goodmetric", "multilingual"), "n"] == 2
    assert ("bleu", "lexical") in groups.index


def test_judges_and_annotators(align_db):
    report = run_alignment(align_db["url"], AlignOptions(bootstrap=100, slices=("all",)))
    labels = report.labels.set_index("generation_id")
    judge = report.judges.kappa.iloc[0]
    truth = [labels.label[g] for g in sorted(labels.index)]
    judged = ["incorrect" if t == "partial" else t for t in
              [align_db["truth"][g] if g != min(labels.index) else "incorrect"
               for g in sorted(labels.index)]]
    assert judge.kappa == pytest.approx(cohen_kappa_score(
        truth, judged, labels=list(ACCURACY_LABELS), weights="quadratic"))
    assert judge.failure_rate == 0 and judge.n == 120
    assert judge.recall_partial == 0.0  # the fake judge never says partial
    codes = report.judge_codes.set_index("code")
    code = align_db["codes"][0]
    assert codes.loc[code, "recall"] == 1.0 and codes.loc[code, "predicted"] == 60
    # the expert coded all 60 non-correct items; the gold label (now correct) carries no code
    assert codes.loc[code, "support"] == 59
    assert codes.loc[code, "precision"] == pytest.approx(59 / 60)
    pairs = report.annotator_pairs.set_index(["rater_a", "rater_b"])
    assert pairs.loc[("ann", "expert"), "kappa"] > 0.95
    assert pairs.loc[("ann", "bob"), "kappa"] == pytest.approx(0.0)
    assert 0 < report.annotator_alpha < 1


def test_fit_on_one_language_apply_to_another(align_db):
    options = AlignOptions(fit_on="language=en", apply_to="language=nl", bootstrap=0,
                           slices=("all", "language"))
    report = run_alignment(align_db["url"], options)
    kappa = report.metrics.kappa
    nl = row(kappa, GOOD, "language", "nl")
    assert nl.thresholds_from == "saved" and nl.n == 60 and nl.kappa > 0.85
    assert set(kappa.slice_value) == {"all", "nl"}  # en was only fitted on
    assert any("fitted on 'language=en'" in note for note in report.warnings)


def test_random_split_and_saved_thresholds_round_trip(align_db, tmp_path):
    url = align_db["url"]
    split = run_alignment(url, AlignOptions(fit_on="random:0.5", bootstrap=0, slices=("all",)))
    assert 40 <= row(split.metrics.kappa, GOOD).n <= 80
    fitted = run_alignment(url, AlignOptions(bootstrap=0))
    written = write_report(fitted, tmp_path / "out", with_figures=False)
    saved = load_thresholds(written["thresholds"])
    again = run_alignment(url, AlignOptions(bootstrap=0, thresholds=saved))
    a = fitted.metrics.kappa.set_index(["key", "slice", "slice_value"]).kappa
    b = again.metrics.kappa.set_index(["key", "slice", "slice_value"]).kappa
    pd.testing.assert_series_equal(a, b)
    assert (again.metrics.kappa.thresholds_from == "saved").all()


def test_prior_weighting_is_switchable(align_db):
    equal = run_alignment(align_db["url"], AlignOptions(bootstrap=0, slices=("all",)))
    prior = run_alignment(align_db["url"], AlignOptions(bootstrap=0, slices=("all",),
                                                        weighting="prior"))
    assert row(prior.metrics.kappa, GOOD).thresholds != "" and math.isfinite(
        row(prior.metrics.kappa, GOOD).kappa)
    assert row(equal.metrics.kappa, GOOD).kappa > 0.9


def test_parse_split_errors():
    with pytest.raises(ValueError, match="random:SHARE"):
        parse_split("random:2")
    with pytest.raises(ValueError, match="language=CODE"):
        parse_split("colour=red")


def test_context_effect_pure():
    kappa = pd.DataFrame({"key": ["m[none]", "m[minimal]", "m[full]"],
                          "metric": ["m"] * 3, "scorer": ["s"] * 3, "layer": [None] * 3,
                          "slice": ["all"] * 3, "slice_value": ["all"] * 3,
                          "context": ["none", "minimal", "full"], "kappa": [0.5, 0.6, 0.3]})
    out = context_effect(kappa).set_index("context")
    assert out.delta_kappa["minimal"] == pytest.approx(0.1)
    assert out.delta_kappa["full"] == pytest.approx(-0.2)
    assert out.key_baseline.tolist() == ["m[none]", "m[none]"]


def test_family_table_is_extendable(tmp_path):
    extra = tmp_path / "mine.yaml"
    extra.write_text("families:\n  - {pattern: 'intfloat/*', family: mine, group: custom}\n")
    families = load_model_families(extra)
    assert model_group("intfloat/multilingual-e5-small", families) == "custom"
    assert model_group("intfloat/multilingual-e5-small", load_model_families()) == "multilingual"
    assert model_group("GroNLP/bert-base-dutch-cased", families) == "language-specific"
    bad = tmp_path / "bad.yaml"
    bad.write_text("families:\n  - {family: x}\n")
    with pytest.raises(ValueError, match="bad.yaml: family entry 1 needs 'pattern' and 'group'"):
        load_model_families(bad)


def test_same_numbers_on_sqlite_and_postgresql(any_db_url):
    fill_align_db(any_db_url)
    report = run_alignment(any_db_url, AlignOptions(bootstrap=0, slices=("all",)))
    good = row(report.metrics.kappa, GOOD)
    assert good.n == 120 and good.kappa > 0.9
    assert len(report.labels) == 120 and report.judges.kappa.iloc[0].n == 120


def test_runs_differing_in_another_option_stay_apart(tmp_path):
    """Two runs with the same metric, model, layer and context but another option (here idf)
    are two configurations, not one with the second run's scores dropped as duplicates."""
    from sqlmodel import Session, select

    from db.engine import get_engine
    from db.models import MetricRun, MetricScore

    url = f"sqlite:///{tmp_path / 'twin.db'}"
    fill_align_db(url)
    with Session(get_engine(url)) as s:
        first = s.exec(select(MetricRun).where(MetricRun.signature
                                               == "metric:good|ctx:none|noise:none")).one()
        twin = MetricRun(signature="metric:good|idf:yes|ctx:none|noise:none", metric=first.metric,
                         model=first.model, layer=first.layer, context="none")
        s.add(twin)
        s.flush()
        copied = s.exec(select(MetricScore).where(MetricScore.run_id == first.id)).all()
        s.add_all([MetricScore(run_id=twin.id, generation_id=m.generation_id, f=1 - m.f)
                   for m in copied])
        s.commit()
    scores = data.load_scores(url)
    real = scores[scores.noise == "none"]
    twin_key = GOOD[:-1] + ",idf:yes]"
    assert set(scores.key) == {"bleu", "flatmetric", GOOD, GOOD_FULL, twin_key}
    assert real.groupby("key").size().to_dict()[twin_key] == 120
    assert real.groupby("key").size().to_dict()[GOOD] == 120  # its noise run still joins it
    assert set(scores[scores.noise != "none"].key) == {GOOD}


@pytest.mark.parametrize("resamples, alpha, least", [(1, 0.05, 100), (-5, 0.05, 100),
                                                     (99, 0.05, 100), (400, 0.01, 500)])
def test_too_few_resamples_are_refused_for_the_app_too(resamples, alpha, least):
    """The analysis page builds AlignOptions itself: the rule is the CLI's."""
    from nlce.cli import InputError

    with pytest.raises(InputError, match=f"resamples {resamples}: use 0 .* at least {least}"):
        AlignOptions(bootstrap=resamples, alpha=alpha)
    assert AlignOptions(bootstrap=0).bootstrap == 0 and AlignOptions(bootstrap=least).bootstrap
