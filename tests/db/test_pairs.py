"""Pairs files (reference / prediction / label rows in CSV, TSV or JSON lines): targets without a
source file, several models per item, labels with history, clear errors, export round trip."""
from __future__ import annotations

import csv
import json

import pytest
from sqlalchemy import select

from db import models as m
from db import session_scope
from db.__main__ import main as db_main
from db.__main__ import table_counts
from db.annotations import annotation_codes, annotation_history
from db.exporter import export_jsonl
from db.formats import FormatError
from db.formats.pairs import pairs_row_records
from db.importer import import_jsonl
from testing.cli import as_command

main = as_command(db_main, "python -m db")

ROWS = [
    {"item_id": "wmt-1", "language": "en", "model": "sys-a", "reference": "The cat sat down.",
     "prediction": "A cat sat.", "label": "partial", "codes": "MS-ET",
     "context": "Die Katze setzte sich."},
    {"item_id": "wmt-1", "language": "en", "model": "sys-b", "reference": "The cat sat down.",
     "prediction": "", "label": "incorrect", "codes": "", "context": "Die Katze setzte sich."},
    {"item_id": "wmt-2", "language": "de", "model": "sys-a", "reference": "Guten Morgen.",
     "prediction": "Guten Morgen.", "label": "Correct", "codes": "", "context": ""},
]


def _write(path, rows):
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]),
                                    delimiter="\t" if path.suffix == ".tsv" else ",")
            writer.writeheader()
            writer.writerows(rows)
    return path


def _pairs(url):
    with session_scope(url) as session:
        out = {}
        for target, g in session.execute(
                select(m.Target, m.Generation).join(m.Generation,
                                                    m.Generation.target_id == m.Target.id)):
            label = session.execute(select(m.Annotation).where(
                m.Annotation.generation_id == g.id)).scalars().first()
            out[(target.external_id, g.model)] = (
                target.source_file_id, target.natural_language, target.original_comment,
                target.context, g.predicted_comment, g.is_empty,
                label and (label.accuracy, annotation_codes(session, label.id)))
        return out


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_pairs_file_imports_targets_without_files(tmp_path, any_db_url, suffix):
    path = _write(tmp_path / f"mqm{suffix}", ROWS)
    assert main(["import", "--format", "pairs", "--dataset", "wmt", str(path),
                 "--db", any_db_url]) == 0
    pairs = _pairs(any_db_url)
    assert pairs[("wmt-1", "sys-a")] == (None, "en", "The cat sat down.",
                                         "Die Katze setzte sich.", "A cat sat.", False,
                                         ("partial", ("MS-ET",)))
    assert pairs[("wmt-1", "sys-b")][4:] == ("", True, ("incorrect", ()))
    assert pairs[("wmt-2", "sys-a")][1] == "de"
    counts = table_counts(any_db_url)
    assert counts["source_file"] == 0 and counts["target"] == 2 and counts["generation"] == 3
    before = counts
    assert main(["import", "--format", "pairs", "--dataset", "wmt", str(path),
                 "--db", any_db_url]) == 0
    assert table_counts(any_db_url) == before  # importing again changes nothing


def test_rows_without_item_id_share_an_item_by_reference(tmp_path, db_url):
    rows = [{"reference": "Sort the list.", "prediction": p, "model": s, "label": "correct"}
            for p, s in (("Sorts the list.", "a"), ("Sort it.", "b"))]
    path = _write(tmp_path / "mine.csv", rows)
    assert main(["import", "--format", "pairs", "--lang", "en", str(path), "--db", db_url]) == 0
    pairs = _pairs(db_url)
    assert len({item for item, _ in pairs}) == 1 and len(pairs) == 2


def test_changed_label_is_a_new_revision_with_history(tmp_path, db_url):
    path = _write(tmp_path / "a.csv", ROWS[:1])
    assert main(["import", "--format", "pairs", str(path), "--db", db_url]) == 0
    changed = _write(tmp_path / "b.csv", [dict(ROWS[0], label="correct", codes="")])
    assert main(["import", "--format", "pairs", str(changed), "--db", db_url]) == 0
    with session_scope(db_url) as session:
        label = session.execute(select(m.Annotation)).scalars().one()
        assert (label.accuracy, label.revision) == ("correct", 2)
        assert [e.accuracy for e in annotation_history(session, label.id)] == [
            "partial", "correct"]


@pytest.mark.parametrize("change, where", [
    ({"language": "german"}, "line 2, field 'language': 'german' is not a language code; "
                             "did you mean 'de'?"),
    ({"label": "sort of"}, "line 2, field 'label': unknown accuracy label"),
    ({"codes": "XX-1"}, "line 2, field 'codes'"),
    ({"reference": ""}, "line 2, field 'reference': missing or empty"),
])
def test_bad_rows_are_named_and_nothing_is_written(tmp_path, db_url, capsys, change, where):
    path = _write(tmp_path / "bad.csv", [dict(ROWS[0], **change), ROWS[2]])
    assert main(["import", "--format", "pairs", str(path), "--db", db_url]) == 2
    assert where in capsys.readouterr().err
    assert table_counts(db_url)["target"] == 0


def test_check_lists_every_bad_pair(tmp_path, db_url, capsys):
    rows = [dict(ROWS[0], language="german"), dict(ROWS[1], label="?"), ROWS[2]]
    path = _write(tmp_path / "bad.tsv", rows)
    assert main(["import", "--format", "pairs", "--check", str(path), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert "line 2, field 'language'" in err and "line 3, field 'label'" in err
    assert "check: 2 problem(s)" in err


def test_unknown_or_missing_columns_are_refused():
    with pytest.raises(FormatError) as caught:
        pairs_row_records({"reference": "a", "prediction": "b", "score": 1}, dataset="d",
                          language="en", model="m", annotator="x")
    assert caught.value.field == "score"
    with pytest.raises(FormatError) as caught:
        pairs_row_records({"reference": "a"}, dataset="d", language="en", model="m",
                          annotator="x")
    assert caught.value.field == "prediction"


def test_pairs_targets_survive_export_and_import(tmp_path, db_url):
    path = _write(tmp_path / "mqm.jsonl", ROWS)
    assert main(["import", "--format", "pairs", str(path), "--db", db_url]) == 0
    with session_scope(db_url) as session:
        exported, _ = export_jsonl(session, tmp_path / "out")
    other = f"sqlite:///{tmp_path / 'other.db'}"
    with session_scope(other) as session:
        import_jsonl(session, [exported], accounts="create")
    assert _pairs(other) == _pairs(db_url)
    assert table_counts(other) == table_counts(db_url)


def test_target_language_and_dataset_cover_both_kinds(tmp_path, any_db_url):
    from db_testkit import release_rows, write_release

    from db.importer import import_release
    from db.targets import IS_PAIRS_TARGET, TARGET_DATASET_ID, TARGET_LANGUAGE, with_source

    assert main(["import", "--format", "pairs", "--dataset", "wmt",
                 str(_write(tmp_path / "p.csv", ROWS)), "--db", any_db_url]) == 0
    with session_scope(any_db_url) as session:
        import_release(session, [write_release(tmp_path / "nl.jsonl", release_rows()[:1])])
    with session_scope(any_db_url) as session:
        datasets = {d.id: d.name for d in session.execute(select(m.Dataset)).scalars()}
        rows = session.execute(with_source(select(
            m.Target.original_comment, TARGET_LANGUAGE, TARGET_DATASET_ID, IS_PAIRS_TARGET))
            .order_by(m.Target.id)).all()
    assert [(lang, datasets[d], pairs) for _, lang, d, pairs in rows] == [
        ("en", "wmt", True), ("de", "wmt", True), ("nl", "release", False)]


def test_an_empty_table_is_an_error_not_a_success(tmp_path, db_url, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("reference,prediction,label\n", encoding="utf-8")
    assert main(["import", "--format", "pairs", "--lang", "en", str(empty), "--db", db_url]) == 2
    assert "empty.csv, file: no rows in it" in capsys.readouterr().err
    (tmp_path / "nl.jsonl").write_text("", encoding="utf-8")
    assert main(["import", "--format", "release", str(tmp_path / "nl.jsonl"),
                 "--db", db_url]) == 2
    assert "nl.jsonl, file: no rows in it" in capsys.readouterr().err


def test_an_existing_annotator_keeps_its_role(tmp_path, db_url):
    users = tmp_path / "users.jsonl"
    users.write_text('{"type": "annotator", "username": "anna", "languages": ["en"]}\n',
                           encoding="utf-8")
    assert main(["import", "--accounts", str(users), "--db", db_url]) == 0
    path = _write(tmp_path / "p.csv", ROWS[:1])
    assert main(["import", "--format", "pairs", "--annotator", "anna", str(path),
                 "--db", db_url]) == 0
    with session_scope(db_url) as session:
        anna = session.execute(select(m.Annotator)).scalars().one()
        assert (anna.role, anna.languages) == ("annotator", ["en"])
        assert session.execute(select(m.Annotation.annotator_id)).scalar() == anna.id
