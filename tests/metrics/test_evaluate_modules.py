"""metrics/evaluate_modules: the project's metrics loaded with `evaluate.load(PATH)` offline give
the numbers `python -m metrics.score` stores for the same demo pairs and options."""
from __future__ import annotations

import pytest
from sqlalchemy import select

from db import session_scope
from db.models import MetricScore
from metrics import store
from metrics.config import ScoringConfig
from metrics.evaluate_modules import MODULES, module_path
from metrics.runner import score_configuration

evaluate = pytest.importorskip("evaluate")


def _stored_and_computed(url, metric, context="none", limit=None, **options):
    """(stored (P, R, F) per generation, the module's (P, R, F) for the same pairs, its
    signature, the stored run's signature)."""
    config = ScoringConfig(metric, context=context, limit=limit, **options)
    summary = score_configuration(config, url, progress=False)
    assert summary.errors == 0 and summary.scored == (limit or 125)
    with session_scope(url) as session:
        stored = {g: (p, r, f) for g, p, r, f in session.execute(
            select(MetricScore.generation_id, MetricScore.precision, MetricScore.recall,
                   MetricScore.f).where(MetricScore.run_id == summary.run_id)).all()}
    rows = [row for row in store.select_rows(url, config.validated()) if row.generation_id in stored]
    files = store.file_contents(url, [row.source_file_id for row in rows])
    module = evaluate.load(module_path(metric))
    extra = {"files": [files[row.source_file_id] for row in rows],
             "spans": [row.span for row in rows]} if context == "full" else {}
    result = module.compute(predictions=[row.prediction for row in rows],
                            references=[row.reference for row in rows],
                            languages=[row.lang for row in rows], context=context,
                            **extra, **options)
    assert result["errors"] == [None] * len(rows)
    computed = list(zip(result["precision"], result["recall"], result["score"]))
    return [stored[row.generation_id] for row in rows], computed, result["signature"], \
        summary.signature


def test_every_module_file_is_where_the_helper_says():
    from pathlib import Path

    for name in MODULES:
        assert Path(module_path(name)).is_file()
    with pytest.raises(ValueError, match="no evaluate module for 'blue'; choose one of bleu"):
        module_path("blue")


@pytest.mark.parametrize("metric, options", [
    ("bleu", {}), ("bleu", {"tokenize": "13a"}), ("bleu", {"bleu_tokenize": "sacrebleu"}),
    ("chrf", {}), ("chrf", {"tokenize": "none"}), ("rouge_l", {})])
def test_lexical_modules_equal_metrics_score_on_the_demo(demo_db_url, metric, options):
    keys = {f"{metric}_{k}" if k == "tokenize" else k: v for k, v in options.items()}
    stored, computed, signature, run_signature = _stored_and_computed(demo_db_url, metric,
                                                                      **keys)
    assert computed == stored  # exactly: the same function on the same text
    assert signature == run_signature


def test_languages_are_required_and_lengths_checked():
    module = evaluate.load(module_path("chrf"))
    with pytest.raises(ValueError, match=r"give lang='nl' \(every pair\) or languages="):
        module.compute(predictions=["a b"], references=["a c"])
    with pytest.raises(ValueError, match="2 languages for 1 predictions"):
        module.compute(predictions=["a b"], references=["a c"], languages=["en", "nl"])


@pytest.mark.slow  # e5-small
@pytest.mark.parametrize("context, limit", [("none", None), ("full", 25)])
def test_bertscore_with_context_equals_metrics_score_on_the_demo(demo_db_url, context, limit):
    stored, computed, signature, run_signature = _stored_and_computed(
        demo_db_url, "bertscore", context=context, limit=limit, layer=9)
    assert signature == run_signature and f"|ctx:{context}|" in signature
    assert len(computed) == (limit or 125)
    for s, c in zip(stored, computed):
        assert c == pytest.approx(s, abs=1e-6)


@pytest.mark.slow  # SmolLM2
def test_lmscore_equals_metrics_score_on_the_demo(demo_db_url):
    stored, computed, signature, run_signature = _stored_and_computed(
        demo_db_url, "lmscore", context="minimal", limit=10)
    assert signature == run_signature
    for s, c in zip(stored, computed):
        assert c == pytest.approx(s, abs=1e-5)


@pytest.mark.slow  # a (tiny, random) seq2seq model loaded from a folder
def test_bartscore_equals_metrics_score_on_the_demo(demo_db_url, tiny_bart, tmp_path):
    model, tokenizer = tiny_bart
    model.save_pretrained(tmp_path / "bart")
    tokenizer.save_pretrained(tmp_path / "bart")
    stored, computed, signature, run_signature = _stored_and_computed(
        demo_db_url, "bartscore", limit=10, model=str(tmp_path / "bart"))
    assert signature == run_signature
    for s, c in zip(stored, computed):
        assert c == pytest.approx(s, abs=1e-5)
