"""A configuration's key comes from its own options, never from what else is stored; each row of
predictions.csv names its dataset, item and model; runs stored before keys were recorded are
named by the old rule, with a note, until `metrics.score` records them."""
from __future__ import annotations

import csv
import re

from sqlmodel import Session, select

from align.data import load_scores
from align.pipeline import AlignOptions, run_alignment
from align.report import write_report
from db import get_engine
from db.metric_keys import HIGHER_IS_BETTER, KEY_OPTIONS
from db.models import MetricRun
from metrics.config import ScoringConfig
from metrics.runner import score_configuration

OPTIONS = AlignOptions(bootstrap=0, slices=("all",), significance=("kappa",))


def _keys(url) -> set[str]:
    return set(load_scores(url).key)


def test_a_key_does_not_change_when_another_configuration_is_stored(demo_db_url, tmp_path):
    score_configuration(ScoringConfig(metric="bleu"), demo_db_url, progress=False)
    before = run_alignment(demo_db_url, OPTIONS)
    saved = tmp_path / "before"
    write_report(before, saved, with_figures=False)
    assert _keys(demo_db_url) == {"bleu"}
    score_configuration(ScoringConfig(metric="bleu", options=(("bleu_tokenize", "13a"),)),
                        demo_db_url, progress=False)
    assert _keys(demo_db_url) == {"bleu", "bleu[tokenize:13a]"}
    after = run_alignment(demo_db_url, OPTIONS)
    kappa = after.metrics.kappa.set_index("key").kappa
    assert kappa["bleu"] == before.metrics.kappa.set_index("key").kappa["bleu"]
    # thresholds saved before the second run still apply to the first configuration
    from align.thresholds import load_thresholds

    again = run_alignment(demo_db_url, AlignOptions(
        bootstrap=0, slices=("all",), significance=(),
        thresholds=load_thresholds(saved / "thresholds.json")))
    rows = again.metrics.kappa.set_index("key")
    assert rows.loc["bleu", "thresholds_from"] == "saved"
    assert rows.loc["bleu", "kappa"] == kappa["bleu"]
    assert "no saved thresholds" in rows.loc["bleu[tokenize:13a]", "warning"]


def test_runs_record_their_key_options_and_direction(demo_db_url):
    score_configuration(ScoringConfig(metric="chrf", options=(("chrf_tokenize", "none"),)),
                        demo_db_url, progress=False)
    with Session(get_engine(demo_db_url)) as session:
        (run,) = session.exec(select(MetricRun)).all()
    assert run.params[KEY_OPTIONS] == {"tokenize": "none"}
    assert run.params[HIGHER_IS_BETTER] is True
    assert _keys(demo_db_url) == {"chrf[tokenize:none]"}


def test_runs_stored_without_key_options_get_the_old_names_a_note_and_are_recorded_again(
        demo_db_url):
    score_configuration(ScoringConfig(metric="bleu"), demo_db_url, progress=False)
    score_configuration(ScoringConfig(metric="bleu", options=(("bleu_tokenize", "13a"),)),
                        demo_db_url, progress=False)
    with Session(get_engine(demo_db_url)) as session:  # as an earlier version stored them
        for run in session.exec(select(MetricRun)).all():
            run.params = {k: v for k, v in run.params.items()
                          if k not in (KEY_OPTIONS, HIGHER_IS_BETTER)}
            session.add(run)
        session.commit()
    old = run_alignment(demo_db_url, OPTIONS)
    assert all(key.startswith("bleu[") for key in old.metrics.kappa.key)  # qualified, unstable
    assert any("2 metric run(s) were stored before runs recorded their options" in note
               for note in old.notes)
    assert set(old.metrics.kappa.monotone.map(repr)) == {"None"}  # no direction recorded
    score_configuration(ScoringConfig(metric="bleu"), demo_db_url, progress=False)
    score_configuration(ScoringConfig(metric="bleu", options=(("bleu_tokenize", "13a"),)),
                        demo_db_url, progress=False)
    new = run_alignment(demo_db_url, OPTIONS)
    assert set(new.metrics.kappa.key) == {"bleu", "bleu[tokenize:13a]"}
    assert not any("stored before" in note for note in new.notes)
    assert set(new.metrics.kappa.direction) == {"higher"}


def test_predictions_name_dataset_item_and_model(demo_db_url, tmp_path):
    score_configuration(ScoringConfig(metric="rouge_l"), demo_db_url, progress=False)
    report = run_alignment(demo_db_url, OPTIONS)
    write_report(report, tmp_path / "out", with_figures=False)
    with open(tmp_path / "out" / "predictions.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and list(rows[0])[:7] == ["key", "slice", "slice_value", "dataset", "item",
                                          "model", "generation_id"]
    items = {(r["dataset"], r["item"], r["model"]) for r in rows}
    assert len(items) == len(rows) == 125
    # a file's comment: repo/path:start-end, as an export locates it
    assert all(r["dataset"] == "demo" and re.fullmatch(r"demo/[\w./-]+:\d+-\d+", r["item"])
               for r in rows), rows[0]
