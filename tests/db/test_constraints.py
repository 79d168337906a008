"""The database itself refuses bad rows (raw SQL, no Python validation in between), on SQLite
and on PostgreSQL."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from db import get_engine, session_scope
from db import models as m

NOW = datetime.now(timezone.utc)


@pytest.fixture
def rows(any_db_url):
    """Ids of one dataset/file/target/generation/annotator/annotation/metric run/noise sample."""
    with session_scope(any_db_url) as session:
        dataset = m.Dataset(name="c")
        session.add(dataset)
        session.flush()
        source = m.SourceFile(dataset_id=dataset.id, natural_language="el", content="// α\n",
                              content_sha256="0")
        session.add(source)
        session.flush()
        target = m.Target(source_file_id=source.id, span_start=0, span_end=4)
        session.add(target)
        session.flush()
        generation = m.Generation(target_id=target.id, model="m")
        annotator = m.Annotator(username="u")
        run = m.MetricRun(signature="s", metric="bleu")
        noise = m.NoiseSample(target_id=target.id, kind="uniform", tokenizer="t", seed=0)
        session.add_all([generation, annotator, run, noise])
        session.flush()
        annotation = m.Annotation(generation_id=generation.id, annotator_id=annotator.id,
                                  accuracy="correct")
        session.add(annotation)
        session.flush()
        ids = {"target": target.id, "generation": generation.id, "annotator": annotator.id,
               "annotation": annotation.id, "run": run.id, "noise": noise.id}
    yield any_db_url, ids
    get_engine(any_db_url).dispose()


def _execute(url, sql, **params):
    with get_engine(url).begin() as connection:
        connection.execute(text(sql), {"now": NOW, **params})


def _refused(url, sql, **params):
    with pytest.raises(IntegrityError):
        _execute(url, sql, **params)


ANNOTATION_SQL = (
    "INSERT INTO annotation (generation_id, annotator_id, accuracy, status, note, seconds_spent,"
    " taxonomy_version, revision, created_at, updated_at) VALUES (:g, :a, :acc, 'done', '', 0,"
    " '', 1, :now, :now)")
SCORE_SQL = ("INSERT INTO metric_score (run_id, generation_id, noise_sample_id, f, details) "
             "VALUES (:r, :g, :n, 0.5, '{}')")


def test_one_generation_per_target_and_model(rows):
    url, ids = rows
    sql = ("INSERT INTO generation (target_id, model, fim_input, raw_output, predicted_comment,"
           " backend, params, created_at) VALUES (:t, :model, '', '', '', '', '{}', :now)")
    _execute(url, sql, t=ids["target"], model="other")  # a second model is fine
    _refused(url, sql, t=ids["target"], model="m")


def test_one_annotation_per_generation_and_annotator(rows):
    url, ids = rows
    _refused(url, ANNOTATION_SQL, g=ids["generation"], a=ids["annotator"], acc="partial")


def test_accuracy_must_be_a_label_of_the_scale(rows):
    url, ids = rows
    with session_scope(url) as session:
        other = m.Annotator(username="v")
        session.add(other)
        session.flush()
        other_id = other.id
    _refused(url, ANNOTATION_SQL, g=ids["generation"], a=other_id, acc="Correct")
    _refused(url, ANNOTATION_SQL, g=ids["generation"], a=other_id, acc="good")
    _execute(url, ANNOTATION_SQL, g=ids["generation"], a=other_id, acc="partial")


def test_error_codes_must_exist_in_the_taxonomy_table(rows):
    url, ids = rows
    sql = "INSERT INTO annotation_code (annotation_id, code) VALUES (:a, :code)"
    _execute(url, sql, a=ids["annotation"], code="SE-HA1")
    _refused(url, sql, a=ids["annotation"], code="SE-HA9")


def test_metric_score_has_exactly_one_subject(rows):
    url, ids = rows
    _refused(url, SCORE_SQL, r=ids["run"], g=ids["generation"], n=ids["noise"])  # both
    _refused(url, SCORE_SQL, r=ids["run"], g=None, n=None)  # neither
    _execute(url, SCORE_SQL, r=ids["run"], g=ids["generation"], n=None)
    _execute(url, SCORE_SQL, r=ids["run"], g=None, n=ids["noise"])


def test_roles_and_statuses_are_checked(rows):
    url, ids = rows
    _refused(url, "INSERT INTO annotator (username, display_name, languages, interface_language,"
                  " role, active, created_at) VALUES ('w', '', '[]', 'en', 'boss', true, :now)")
    # judge_run.strategy is free: a prompt template's name (judges.run --template) is one too
