"""Alembic migrations: they build the same schema as db.models, and a database made by an older
release moves to the newest one keeping its labels (SQLite and PostgreSQL)."""
from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from db import get_engine
from db.migrate import current_revision, head_revision, schema_differences, upgrade
from testing.cli import run_in_process


def test_migrations_build_exactly_the_tables_of_db_models(any_db_url):
    engine = create_engine(any_db_url)
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    assert schema_differences(engine) == []
    engine.dispose()


def test_new_database_is_stamped_at_head_and_matches_models(any_engine):
    assert current_revision(any_engine) == head_revision()
    assert schema_differences(any_engine) == []


def _first_release_rows(connection) -> None:
    """Rows as the first release wrote them (plain SQL: the ORM describes the newest schema)."""
    connection.execute(text(
        "INSERT INTO error_code (code, level, parent, taxonomy_version) VALUES "
        "('SE-HA2', 'leaf', 'SE-HA', 'v1')"))
    connection.execute(text(
        "INSERT INTO dataset (id, name, description, created_at) VALUES (1, 'd', '', '2026-01-01')"))
    connection.execute(text(
        "INSERT INTO source_file (id, dataset_id, natural_language, programming_language, repo, "
        "path, licence, content, content_sha256) VALUES (1, 1, 'el', 'python', 'r', 'a.py', '', "
        "'# σχόλιο', 'x')"))
    connection.execute(text(
        "INSERT INTO target (id, source_file_id, span_start, span_end, original_comment, "
        "comment_kind) VALUES (1, 1, 0, 8, '# σχόλιο', 'line')"))
    connection.execute(text(
        "INSERT INTO generation (id, target_id, model, fim_input, raw_output, predicted_comment, "
        "backend, params, created_at) VALUES (1, 1, 'm', '', '', '# άλλο', '', '{}', '2026-01-01')"))
    connection.execute(text(
        "INSERT INTO annotator (id, username, display_name, languages, interface_language, role, "
        "active, created_at) VALUES (1, 'eleni', '', '[\"el\"]', 'el', 'annotator', true, "
        "'2026-01-01')"))
    connection.execute(text(
        "INSERT INTO annotation (id, generation_id, annotator_id, accuracy, status, note, "
        "seconds_spent, taxonomy_version, revision, created_at, updated_at) VALUES "
        "(1, 1, 1, 'partial', 'done', 'σημείωση', 12.5, 'v1', 2, '2026-01-01', '2026-01-02')"))
    connection.execute(text("INSERT INTO annotation_code (annotation_id, code) VALUES (1, 'SE-HA2')"))
    connection.execute(text(
        "INSERT INTO judge_run (id, signature, model, backend, strategy, prompt_language, "
        "prompt_version, params, prompt_tokens, completion_tokens, cost_usd, created_at) VALUES "
        "(1, 's', 'j', 'openai', 'cot', 'el', 'p1', '{}', 10, 5, 0.25, '2026-01-01')"))


def test_upgrade_from_first_release_keeps_every_label(any_db_url):
    old = create_engine(any_db_url)
    upgrade(old, "0001")
    with old.begin() as connection:
        _first_release_rows(connection)
    with pytest.raises(IntegrityError), old.begin() as connection:  # 0001 knew no drafts
        connection.execute(text("UPDATE annotation SET status = 'draft'"))
    old.dispose()

    engine = get_engine(any_db_url)  # opening with the new release migrates
    assert current_revision(engine) == head_revision()
    assert schema_differences(engine) == []
    with engine.begin() as connection:
        row = connection.execute(text(
            "SELECT a.accuracy, a.note, a.seconds_spent, a.revision, c.code FROM annotation a "
            "JOIN annotation_code c ON c.annotation_id = a.id")).one()
        assert tuple(row) == ("partial", "σημείωση", 12.5, 2, "SE-HA2")
        assert connection.execute(text("SELECT cost_usd FROM judge_run")).scalar_one() == 0.25
        connection.execute(text("UPDATE annotation SET status = 'draft'"))  # now allowed
        connection.execute(text("UPDATE judge_run SET cost_usd = NULL"))
    engine.dispose()
    get_engine.cache_clear()


def test_upgrade_command_reports_the_move(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    old = create_engine(url)
    upgrade(old, "0001")
    old.dispose()
    result = run_in_process("db", "upgrade", "--db", url)
    assert result.returncode == 0, result.stderr
    assert f"schema 0001 -> {head_revision()}" in result.stdout
