"""testing.synthetic.study_corpus: the study-shaped corpus bench/study_grid.py times the grid on."""
from __future__ import annotations

import statistics

from sqlalchemy import text

from testing.synthetic import MODELS, STUDY_LANGUAGES, insert_corpus, study_corpus


def test_every_language_has_its_targets_with_one_prediction_per_model():
    corpus = study_corpus(6)
    assert len(corpus) == 6 * len(STUDY_LANGUAGES)
    for lang in STUDY_LANGUAGES:
        rows = [r for r in corpus if r.lang == lang]
        assert [r.index for r in rows] == list(range(6))
        assert {r.programming_language for r in rows} == {"python", "java", "javascript"}
    for r in corpus:
        assert [model for model, _, _ in r.predictions] == list(MODELS)
        marker = "#" if r.programming_language == "python" else "//"
        assert r.comment.startswith(marker + " ")
        assert r.content.count(r.comment) >= 1
        for _, raw, predicted in r.predictions:
            assert raw.startswith(predicted) and predicted.startswith(marker + " ")


def test_texts_are_distinct_and_primed_like_the_study():
    corpus = study_corpus(40)
    references = [r.comment for r in corpus]
    assert len(set(references)) == len(references)  # no free cache hits between targets
    predictions = [p for r in corpus for _, _, p in r.predictions]
    assert len(set(predictions)) > 0.95 * len(predictions)
    for r in corpus:  # the study primed every generation with the reference's first 3 units
        body = r.comment.split(" ", 1)[1]  # after the comment marker
        head = body[:3] if r.lang == "zh" else " ".join(body.split()[:3])
        for _, _, p in r.predictions:
            assert p.split(" ", 1)[1].startswith(head)


def test_lengths_follow_the_demo_and_files_fill_an_encoder_window():
    from transformers import AutoTokenizer

    from models import resolve_model

    corpus = study_corpus(30)
    chars = {lang: statistics.median(len(r.comment) for r in corpus if r.lang == lang)
             for lang in STUDY_LANGUAGES}
    assert chars["zh"] < chars["en"] / 2  # Han characters: far fewer per comment, as in the demo
    assert all(60 <= chars[lang] <= 140 for lang in ("en", "nl", "el", "pl")), chars
    assert all(1500 <= len(r.content) <= 14000 for r in corpus)
    tokenizer = AutoTokenizer.from_pretrained(str(resolve_model("intfloat/multilingual-e5-small")))
    tokens = [len(tokenizer(r.content, add_special_tokens=False)["input_ids"]) for r in corpus[::7]]
    assert statistics.median(tokens) > 512  # context full fills the 512-token window


def test_a_record_does_not_depend_on_the_corpus_size():
    small, large = study_corpus(3, seed=4), study_corpus(9, seed=4)
    assert [r for r in large if r.index < 3] == small
    assert study_corpus(3, seed=5) != small


def test_insert_corpus_writes_files_targets_and_generations(tmp_path):
    from db import session_scope

    corpus = study_corpus(4)
    url = f"sqlite:///{tmp_path / 'study.db'}"
    with session_scope(url) as session:
        assert insert_corpus(session, corpus, "study") == len(corpus) * len(MODELS)
    with session_scope(url) as session:
        rows = session.execute(text(
            "select f.content, t.span_start, t.span_end, t.original_comment, f.natural_language, "
            "(select count(*) from generation g where g.target_id = t.id) "
            "from target t join source_file f on f.id = t.source_file_id")).all()
    assert len(rows) == len(corpus)
    for content, start, end, comment, lang, generations in rows:
        assert content[start:end] == comment and lang in STUDY_LANGUAGES
        assert generations == len(MODELS)
