"""Migration 0004_ui_gold_history: a database with gold labels from before it moves to the
newest schema with each gold label as the first entry of its history, codes included (SQLite
and PostgreSQL), and goes back down cleanly."""
from __future__ import annotations

import json

from sqlalchemy import create_engine, text

from db import get_engine
from db.migrate import current_revision, downgrade, head_revision, schema_differences, upgrade

BEFORE = "0003_annotate"


def _rows_before_gold_history(connection) -> None:
    for statement in (
        "INSERT INTO error_code (code, level, parent, taxonomy_version) VALUES "
        "('SE-HA2', 'leaf', 'SE-HA', 'v1'), ('LG-GR1', 'leaf', 'LG-GR', 'v1')",
        "INSERT INTO dataset (id, name, description, created_at) VALUES (1, 'd', '', "
        "'2026-01-01')",
        "INSERT INTO source_file (id, dataset_id, natural_language, programming_language, repo, "
        "path, licence, content, content_sha256) VALUES (1, 1, 'pl', 'python', 'r', 'a.py', '', "
        "'# komentarz', 'x')",
        "INSERT INTO target (id, source_file_id, span_start, span_end, original_comment, "
        "comment_kind) VALUES (1, 1, 0, 11, '# komentarz', 'line')",
        "INSERT INTO generation (id, target_id, model, fim_input, raw_output, predicted_comment, "
        "backend, params, created_at) VALUES (1, 1, 'm', '', '', '# inny', '', '{}', "
        "'2026-01-01')",
        "INSERT INTO annotator (id, username, display_name, languages, interface_language, role, "
        "active, created_at) VALUES (1, 'lead', '', '[\"pl\"]', 'pl', 'lead', true, "
        "'2026-01-01')",
        "INSERT INTO gold_label (id, generation_id, adjudicator_id, accuracy, note, "
        "taxonomy_version, created_at) VALUES (1, 1, 1, 'incorrect', 'zła liczba', 'v1', "
        "'2026-01-03')",
        "INSERT INTO gold_label_code (gold_label_id, code) VALUES (1, 'SE-HA2'), (1, 'LG-GR1')",
    ):
        connection.execute(text(statement))


def test_existing_gold_labels_start_their_history(any_db_url):
    old = create_engine(any_db_url)
    upgrade(old, BEFORE)
    with old.begin() as connection:
        _rows_before_gold_history(connection)
    old.dispose()

    engine = get_engine(any_db_url)  # opening with the new release migrates
    assert current_revision(engine) == head_revision()
    assert schema_differences(engine) == []
    with engine.begin() as connection:
        rows = connection.execute(text(
            "SELECT gold_label_id, adjudicator_id, accuracy, codes, note FROM gold_label_event"
        )).all()
    assert len(rows) == 1
    gold_id, adjudicator, accuracy, codes, note = rows[0]
    codes = json.loads(codes) if isinstance(codes, str) else codes
    assert (gold_id, adjudicator, accuracy, sorted(codes), note) == (
        1, 1, "incorrect", ["LG-GR1", "SE-HA2"], "zła liczba")

    downgrade(engine, BEFORE)
    assert current_revision(engine) == BEFORE
    with engine.begin() as connection:  # the gold label itself is untouched
        assert connection.execute(text("SELECT accuracy FROM gold_label")).scalar_one() == \
            "incorrect"
    engine.dispose()
    get_engine.cache_clear()
