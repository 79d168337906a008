"""Project JSONL and parquet: round trips, idempotent re-import, one-transaction failures."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from db_testkit import database_fingerprint, small_records, write_jsonl
from sqlalchemy import select, update
from sqlmodel import SQLModel

from db import models as m
from db import session_scope
from db.__main__ import main as db_main
from db.__main__ import table_counts
from db.annotations import annotation_history
from db.exporter import export_jsonl, export_parquet, export_records
from db.importer import ImportFailed, import_jsonl, import_parquet_export
from db.importer.accounts import ACCOUNTS_CREATE
from db.passwords import hash_password
from testing.cli import as_command, run_in_process

main = as_command(db_main, "python -m db")


def _import(url, path):
    with session_scope(url) as session:
        return import_jsonl(session, [path], accounts=ACCOUNTS_CREATE, privileges=True).as_dict()


def _export(url):
    """Every record, times included: a move keeps when each label was made."""
    with session_scope(url) as session:
        return list(export_records(session))


def test_jsonl_import_writes_every_table(db_url, small_jsonl):
    stats = _import(db_url, small_jsonl)
    assert stats["generation"] == {"created": 4}
    counts = table_counts(db_url)
    assert counts["source_file"] == 2 and counts["target"] == 2 and counts["generation"] == 4
    assert counts["annotation"] == 2 and counts["annotation_code"] == 2
    assert counts["gold_label"] == 1 and counts["metric_score"] == 2
    assert counts["judge_verdict"] == 1 and counts["judge_response"] == 1
    with session_scope(db_url) as session:
        zh_target = session.execute(select(m.Target).where(
            m.Target.original_comment.startswith("//"))).scalars().one()
        source = session.get(m.SourceFile, zh_target.source_file_id)
        assert source.content[zh_target.span_start:zh_target.span_end] == \
            zh_target.original_comment  # located from the text alone
        assert source.content_sha256 and source.external_id == "zh-1"
        revised = session.execute(select(m.Annotation).where(
            m.Annotation.accuracy == "correct")).scalars().one()
        history = annotation_history(session, revised.id)
        assert [(e.revision, e.accuracy, e.codes) for e in history] == \
            [(1, "partial", ["SE-MD"]), (2, "correct", [])]
        run = session.execute(select(m.JudgeRun)).scalars().one()
        assert run.cost_usd is None  # unknown stays unknown, not the column default


def test_reimport_is_idempotent(db_url, small_jsonl):
    _import(db_url, small_jsonl)
    before, exported = table_counts(db_url), _export(db_url)
    stats = _import(db_url, small_jsonl)
    assert table_counts(db_url) == before
    assert _export(db_url) == exported
    assert all(set(outcomes) == {"unchanged"} for outcomes in stats.values()), stats


def test_jsonl_round_trip(tmp_path, db_url, small_jsonl):
    _import(db_url, small_jsonl)
    with session_scope(db_url) as session:
        path, counts = export_jsonl(session, tmp_path / "out")
    assert counts["annotation"] == 2 and counts["judge_verdict"] == 1
    for record in map(json.loads, path.read_text(encoding="utf-8").splitlines()):
        assert "password_hash" not in record  # secrets never leave the database
    second = f"sqlite:///{tmp_path / 'second.db'}"
    _import(second, path)
    assert _export(second) == _export(db_url)
    assert table_counts(second) == table_counts(db_url)


def test_parquet_round_trip(tmp_path, db_url, small_jsonl):
    _import(db_url, small_jsonl)
    with session_scope(db_url) as session:
        folder, counts = export_parquet(session, tmp_path / "pq")
    assert (folder / "metric_score.parquet").exists() and counts["metric_score"] == 2
    second = f"sqlite:///{tmp_path / 'second.db'}"
    with session_scope(second) as session:
        import_parquet_export(session, folder, accounts=ACCOUNTS_CREATE, privileges=True)
    assert _export(second) == _export(db_url)
    with session_scope(second) as session:  # and again: nothing changes
        stats = import_parquet_export(session, folder, accounts=ACCOUNTS_CREATE, privileges=True).as_dict()
    assert all(set(outcomes) == {"unchanged"} for outcomes in stats.values())


def test_round_trip_on_postgresql(tmp_path, any_db_url, small_jsonl):
    _import(any_db_url, small_jsonl)
    with session_scope(any_db_url) as session:
        path, _ = export_jsonl(session, tmp_path / "out")
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    _import(copy, path)
    assert _export(copy) == _export(any_db_url)


@pytest.mark.parametrize("line, field, message", [
    ({"type": "generation", "dataset": "mini", "repo": "t/mini", "path": "calc.py",
      "span": [0, 62], "model": 7}, "model", "expected a string"),
    ({"type": "annotation", "dataset": "mini", "repo": "t/mini", "path": "calc.py",
      "span": [0, 62], "model": "m/a", "annotator": "anna", "accuracy": "great"},
     "accuracy", "unknown accuracy label"),
    ({"type": "annotation", "dataset": "mini", "repo": "t/mini", "path": "calc.py",
      "span": [0, 62], "model": "m/a", "annotator": "anna", "accuracy": "partial",
      "codes": ["XX-99"]}, "codes", "XX-99"),
    ({"type": "target", "dataset": "mini", "repo": "t/mini", "path": "calc.py",
      "span": [5, 2]}, "span", "start <= end"),
    ({"type": "generation", "dataset": "mini", "repo": "t/mini", "path": "nope.py",
      "span": [0, 62], "model": "m/x"}, "path", "unknown"),
    ({"type": "file", "dataset": "mini", "repo": "t/mini", "path": "x.py",
      "natural_language": "nl", "content": "x", "colour": "blue"}, "colour", "unknown field"),
    ({"type": "metric_score", "run": "bleu|tok:13a|v2", "dataset": "mini", "repo": "t/mini",
      "path": "calc.py", "span": [0, 62], "f": 1.0}, "model", "exactly one subject"),
])
def test_corrupt_record_changes_nothing(tmp_path, db_url, small_jsonl, line, field, message):
    _import(db_url, small_jsonl)
    before, exported = table_counts(db_url), _export(db_url)
    records = small_records()
    records[4:4] = [{"type": "dataset", "name": "new-one"}]  # writes before the bad line ...
    records.append({"type": "annotation", "dataset": "mini", "repo": "t/mini",
                    "path": "calc.py", "span": [0, 62], "model": "m/b", "annotator": "anna",
                    "accuracy": "incorrect"})  # ... and a new label just before it
    records.append(line)
    path = write_jsonl(tmp_path / "corrupt.jsonl", records)
    with pytest.raises(ImportFailed) as caught:
        _import(db_url, path)
    error = caught.value
    assert error.source == str(path)
    assert error.location == f"line {len(records)}"
    assert error.field == field and message in str(error)
    assert table_counts(db_url) == before  # ... all rolled back
    assert _export(db_url) == exported


def test_bad_json_names_the_line(tmp_path, db_url):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"type": "dataset", "name": "a"}\n\n{"type": "dataset", "name": \n',
                    encoding="utf-8")
    with pytest.raises(ImportFailed, match=r"broken.jsonl, line 3: not valid JSON"):
        _import(db_url, path)
    assert table_counts(db_url)["dataset"] == 0


def test_changed_file_content_is_refused(tmp_path, db_url, small_jsonl):
    _import(db_url, small_jsonl)
    records = small_records()[:2]
    records[1] = {**records[1], "content": records[1]["content"] + "# more\n"}
    with pytest.raises(ImportFailed) as caught:
        _import(db_url, write_jsonl(tmp_path / "changed.jsonl", records))
    assert caught.value.field == "content" and "different content" in caught.value.message


def test_cli_import_export_info(tmp_path, db_url, small_jsonl, capsys):
    assert main(["import", "--accounts", "--account-privileges", str(small_jsonl),
                 "--db", db_url]) == 0
    assert "generation      4 created" in capsys.readouterr().out
    assert main(["export", "--format", "parquet", "--out", str(tmp_path / "pq"),
                 "--db", db_url]) == 0
    assert main(["info", "--db", db_url]) == 0
    assert "annotation_event" in capsys.readouterr().out
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"type": "nonsense"}])
    assert main(["import", str(bad), "--db", db_url]) == 2
    assert "bad.jsonl, line 1, field 'type'" in capsys.readouterr().err


def test_module_aliases_run(tmp_path, small_jsonl):
    url = f"sqlite:///{tmp_path / 'alias.db'}"
    done = run_in_process("db.import", "--accounts", "--account-privileges", str(small_jsonl),
                          "--db", url)  # as `python -m db.import` runs it, in this process
    assert done.returncode == 0, done.stderr
    done = run_in_process("db.export", "--out", str(tmp_path / "o"), "--db", url)
    assert done.returncode == 0, done.stderr
    exported = (tmp_path / "o" / "export.jsonl").read_text(encoding="utf-8")
    assert exported.count("\n") == len(small_records())  # every record comes back


def test_format_doc_example_imports(tmp_path, db_url):
    """The example in db/FORMAT.md is valid and imports as described."""
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "db" / "FORMAT.md").read_text(encoding="utf-8")
    block = doc.split("```json\n", 1)[1].split("```", 1)[0]
    decoder, records, at = json.JSONDecoder(), [], 0
    while block[at:].strip():
        at += len(block[at:]) - len(block[at:].lstrip())
        record, at = decoder.raw_decode(block, at)
        records.append(record)
    stats = _import(db_url, write_jsonl(tmp_path / "example.jsonl", records))
    assert stats["annotation"] == {"created": 1} and stats["generation"] == {"created": 1}
    with session_scope(db_url) as session:
        target = session.execute(select(m.Target)).scalars().one()
        source = session.get(m.SourceFile, target.source_file_id)
        assert source.content[target.span_start:target.span_end] == target.original_comment


THEN = datetime(2021, 3, 4, 5, 6, 7, 891011, tzinfo=timezone.utc)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_move_keeps_every_row_id_and_time(tmp_path, any_db_url, small_jsonl, request, fmt):
    """Issue 34.6: export -> import keeps the whole database (fingerprint of every table a move
    carries), the times each row was made included, in both formats; on PostgreSQL, a move to
    SQLite and from there to a new PostgreSQL database."""
    _import(any_db_url, small_jsonl)
    with session_scope(any_db_url) as session:  # times apart from one another and from now
        for offset, table in enumerate(SQLModel.metadata.sorted_tables):
            for name in ("created_at", "updated_at"):
                if name in table.c:
                    session.execute(table.update().values(
                        {name: THEN + timedelta(days=offset, hours=name == "updated_at")}))
        session.execute(update(m.Annotator).where(m.Annotator.username == "anna")
                        .values(password_hash=hash_password("correct horse")))
    chain = [any_db_url, f"sqlite:///{tmp_path / 'copy.db'}"]
    if any_db_url.startswith("postgresql"):
        chain.append(request.getfixturevalue("postgres_server").create_database())
    expected = database_fingerprint(any_db_url)
    assert all(expected[name] for name in ("dataset", "generation", "metric_run", "judge_run",
                                           "judge_response", "judge_verdict", "judge_batch",
                                           "label_plan", "label_plan_item", "annotator"))
    for step, (source, target) in enumerate(zip(chain, chain[1:])):
        out = tmp_path / f"move-{step}"
        assert main(["export", "--format", fmt, "--include-password-hashes", "--out", str(out),
                     "--db", source]) == 0
        path = out if fmt == "parquet" else out / "export.jsonl"
        assert main(["import", "--format", fmt, "--trust-accounts", "--account-privileges",
                     str(path), "--db", target]) == 0
        moved = database_fingerprint(target)
        for name, rows in expected.items():
            assert moved[name] == rows, f"{source} -> {target}: table {name} differs"


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_move_keeps_the_ids_of_labels_revised_out_of_order(tmp_path, any_db_url, small_jsonl,
                                                               fmt):
    """Issue 41.5: history rows are written label by label on import; when labels were revised
    out of id order (one label, then another, then the first again) their event ids came back
    in another order (134 -> 140). A move keeps them, as docs/db.md promises."""
    from db.annotations import save_annotation, save_gold_label

    _import(any_db_url, small_jsonl)
    with session_scope(any_db_url) as session:
        anna, lead = (session.execute(select(m.Annotator.id).where(m.Annotator.username == name)
                                      ).scalar_one() for name in ("anna", "lead"))
        labelled = session.execute(select(m.Annotation.generation_id)
                                   .order_by(m.Annotation.id)).scalars().all()
        generations = session.execute(select(m.Generation.id).order_by(m.Generation.id)
                                      ).scalars().all()
        for generation_id, accuracy in [(labelled[0], "incorrect"), (labelled[1], "partial"),
                                        (labelled[0], "correct"), (generations[3], "partial")]:
            save_annotation(session, generation_id=generation_id, annotator_id=anna,
                            accuracy=accuracy, codes=[])
        for generation_id, accuracy in [(generations[1], "correct"), (generations[0], "partial"),
                                        (generations[1], "incorrect")]:
            save_gold_label(session, generation_id=generation_id, adjudicator_id=lead,
                            accuracy=accuracy, codes=[])
    expected = database_fingerprint(any_db_url)
    events = [row for row in expected["annotation_event"]]
    assert [dict(e)["annotation_id"] for e in events] != sorted(dict(e)["annotation_id"]
                                                                for e in events)
    target = f"sqlite:///{tmp_path / 'moved.db'}"
    assert main(["export", "--format", fmt, "--out", str(tmp_path / "move"),
                 "--db", any_db_url]) == 0
    path = tmp_path / "move" if fmt == "parquet" else tmp_path / "move" / "export.jsonl"
    assert main(["import", "--format", fmt, "--accounts", "--account-privileges", str(path),
                 "--db", target]) == 0
    moved = database_fingerprint(target)
    for name in ("annotation_event", "gold_label_event", "annotation", "gold_label"):
        assert moved[name] == expected[name], name


def test_a_history_entry_with_a_bad_seq_is_refused_naming_it(tmp_path, db_url, capsys):
    records = [r for r in small_records() if r["type"] != "gold_label"]
    for record in records:
        if record["type"] == "annotation" and record.get("history"):
            record["history"][0]["seq"] = "first"
            break
    else:
        raise AssertionError("small_records has no annotation with a history")
    path = write_jsonl(tmp_path / "bad.jsonl", records)
    assert main(["import", "--accounts", "--account-privileges", str(path), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert "field 'history[0].seq': expected a whole number 0 or more, got 'first'" in err, err
