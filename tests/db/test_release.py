"""The study's public-release layout: parquet and JSON lines tables, error-code spellings,
taxonomy variants, locating the target, and clear errors that change nothing."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from db_testkit import release_rows, write_release
from sqlalchemy import select

from db import models as m
from db import session_scope
from db.__main__ import main, table_counts
from db.annotations import annotation_codes
from db.importer import ImportFailed, import_release


def _import(url, paths, **kwargs):
    with session_scope(url) as session:
        return import_release(session, paths, **kwargs).as_dict()


def _expert_labels(url):
    with session_scope(url) as session:
        rows = session.execute(
            select(m.SourceFile.external_id, m.Generation.model, m.Annotation)
            .join(m.Target, m.Target.source_file_id == m.SourceFile.id)
            .join(m.Generation, m.Generation.target_id == m.Target.id)
            .join(m.Annotation, m.Annotation.generation_id == m.Generation.id)
            .join(m.Annotator, m.Annotator.id == m.Annotation.annotator_id)
            .where(m.Annotator.username == "expert")).all()
        return {(fid, model): (a.accuracy, set(annotation_codes(session, a.id)))
                for fid, model, a in rows}


EXPECTED = {
    ("nl-001", "bigcode/starcoder2-7b"): ("partial", {"SE-MD", "MS-LT"}),
    ("nl-001", "google/codegemma-7b"): ("correct", set()),
    ("nl-002", "bigcode/starcoder2-7b"): ("incorrect", {"SE-HA3"}),
    ("nl-003", "bigcode/starcoder2-7b"): ("correct", set()),
    ("nl-003", "google/codegemma-7b"): ("partial", {"MS-ET", "SE-MD"}),
}


@pytest.mark.parametrize("name", ["dutch.jsonl", "nl.parquet"])
def test_release_table_imports(tmp_path, db_url, name):
    path = write_release(tmp_path / name, release_rows())
    stats = _import(db_url, [path])
    assert stats["generation"] == {"created": 5}  # nl-002 has no codegemma prediction
    assert _expert_labels(db_url) == EXPECTED
    with session_scope(db_url) as session:
        files = session.execute(select(m.SourceFile)).scalars().all()
        assert {f.natural_language for f in files} == {"nl"}  # from the file name
        assert {f.programming_language for f in files} == {"python"}
        expert = session.execute(select(m.Annotator).where(
            m.Annotator.username == "expert")).scalars().one()
        assert expert.role == "expert"
        generation = session.execute(select(m.Generation).where(
            m.Generation.model == "bigcode/starcoder2-7b")).scalars().first()
        assert generation.fim_input.startswith("<fim_prefix>")  # masked_data_* -> fim_input
        assert generation.raw_output.startswith(" som van twee")  # predict_* -> raw_output
        assert generation.predicted_comment == "# Bereken de som van twee getallen"


def test_duplicate_comment_is_located_through_the_fim_input(tmp_path, db_url):
    _import(db_url, [write_release(tmp_path / "nl.jsonl", release_rows())])
    with session_scope(db_url) as session:
        source = session.execute(select(m.SourceFile).where(
            m.SourceFile.external_id == "nl-003")).scalars().one()
        target = session.execute(select(m.Target).where(
            m.Target.source_file_id == source.id)).scalars().one()
        first = source.content.index(target.original_comment)
        assert target.span_start > first  # the second occurrence, as the FIM input says
        assert source.content[target.span_start:target.span_end] == target.original_comment


def test_error_codes_as_list_column_in_parquet(tmp_path, db_url):
    rows = release_rows()
    for row in rows:  # a real list<string> column, as parquet can hold it
        for model in ("bigcode/starcoder2-7b", "google/codegemma-7b"):
            value = row[f"error_codes_{model}"]
            row[f"error_codes_{model}"] = (
                [c.strip() for c in value.replace(";", ",").split(",")]
                if isinstance(value, str) and value != "None" else
                ([] if value in ("None", None) else value))
    path = tmp_path / "polish_release.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert pq.read_schema(path).field("error_codes_bigcode/starcoder2-7b").type == \
        pa.list_(pa.string())
    _import(db_url, [path], lang="nl")  # --lang wins over the name
    assert _expert_labels(db_url) == EXPECTED


def test_reimport_is_idempotent(tmp_path, db_url):
    path = write_release(tmp_path / "nl.parquet", release_rows())
    _import(db_url, [path])
    before = table_counts(db_url)
    stats = _import(db_url, [path])
    assert table_counts(db_url) == before
    assert all(set(outcomes) == {"unchanged"} for outcomes in stats.values()), stats


def test_taxonomy_variant_codes_are_mapped(tmp_path, db_url):
    rows = release_rows()[:1]
    rows[0]["error_codes_bigcode/starcoder2-7b"] = "LG-GR6, ST-IF2"
    path = write_release(tmp_path / "nl.jsonl", rows)
    with pytest.raises(ImportFailed) as caught:  # not codes of this taxonomy ...
        _import(db_url, [path])
    assert caught.value.field == "error_codes_bigcode/starcoder2-7b"
    _import(db_url, [path], taxonomy_variant="variant-gr6")  # ... but of the variant
    labels = _expert_labels(db_url)
    assert labels[("nl-001", "bigcode/starcoder2-7b")] == ("partial", {"LG-GR4", "ST-IF"})


def test_variant_meta_codes_map_and_a_group_is_named_a_group(tmp_path, db_url):
    rows = release_rows()[:1]
    rows[0]["error_codes_bigcode/starcoder2-7b"] = "E, SE-MD"
    _import(db_url, [write_release(tmp_path / "nl.jsonl", rows)], taxonomy_variant="variant-gr6")
    assert _expert_labels(db_url)[("nl-001", "bigcode/starcoder2-7b")] == ("partial",
                                                                           {"EX", "SE-MD"})
    rows[0]["error_codes_bigcode/starcoder2-7b"] = "MS-RE"
    with pytest.raises(ImportFailed) as caught:
        _import(db_url, [write_release(tmp_path / "nl2.jsonl", rows)],
                taxonomy_variant="variant-gr6", lang="nl")
    assert "'MS-RE' (a group; assign one of its leaves)" in caught.value.message


@pytest.mark.parametrize("change, location, field, message", [
    (lambda rows: rows[1].update(original_comment="# komt niet voor in het bestand"),
     "row 2", "original_comment", "not found"),
    (lambda rows: rows[2].update({"masked_data_bigcode/starcoder2-7b": "",
                                  "masked_data_google/codegemma-7b": None}),
     "row 3", "original_comment", "ambiguous"),
    (lambda rows: rows[0].update({"expert_accuracy_google/codegemma-7b": "Mostly"}),
     "row 1", "expert_accuracy_google/codegemma-7b", "unknown accuracy label"),
    (lambda rows: rows[2].update({"error_codes_google/codegemma-7b": "MS-ET, XX-1"}),
     "row 3", "error_codes_google/codegemma-7b", "XX-1"),
    (lambda rows: rows[1].update({"error_codes_google/codegemma-7b": "MS-ET"}),
     "row 2", "error_codes_google/codegemma-7b", "without an expert accuracy"),
    (lambda rows: rows[0].pop("content"), "row 1", "content", "missing"),
])
def test_bad_row_names_file_row_field_and_changes_nothing(tmp_path, db_url, change, location,
                                                          field, message):
    rows = release_rows()
    change(rows)
    good = write_release(tmp_path / "nl_good.jsonl", release_rows()[:1])
    bad = write_release(tmp_path / "nl_bad.parquet", rows)
    with pytest.raises(ImportFailed) as caught:
        _import(db_url, [good, bad])  # the good file comes first, in the same transaction
    error = caught.value
    assert (error.source, error.location, error.field) == (str(bad), location, field)
    assert message in error.message
    counts = table_counts(db_url)
    assert counts["source_file"] == counts["generation"] == counts["annotator"] == 0


def test_language_must_be_known(tmp_path, db_url, capsys):
    path = write_release(tmp_path / "table.jsonl", release_rows())
    assert main(["import", "--format", "release", str(path), "--db", db_url]) == 2
    assert "no natural language in the path" in capsys.readouterr().err
    assert main(["import", "--format", "release", "--lang", "nl", "--dataset", "study",
                 str(path), "--db", db_url]) == 0
    assert "annotation      5 created" in capsys.readouterr().out


def test_release_import_on_postgresql_too(tmp_path, any_db_url):
    path = write_release(tmp_path / "nl.parquet", release_rows())
    _import(any_db_url, [path])
    assert _expert_labels(any_db_url) == EXPECTED
    bad = release_rows()
    bad[2]["error_codes_google/codegemma-7b"] = "XX-1"
    before = table_counts(any_db_url)
    with pytest.raises(ImportFailed):
        _import(any_db_url, [write_release(tmp_path / "nl_bad.jsonl", bad)], dataset="other")
    assert table_counts(any_db_url) == before


def test_rows_sharing_a_file_or_only_its_path(tmp_path, db_url):
    rows = release_rows()
    second_target = dict(rows[0], file_id="nl-001",  # same file, another comment row
                         original_comment="def optellen(a, b):")
    other_file = dict(rows[1], file_id="nl-009", repo="r/a", path="calc.py")  # path clash
    path = write_release(tmp_path / "nl.jsonl", rows + [second_target, other_file])
    _import(db_url, [path])
    before = table_counts(db_url)
    assert before["source_file"] == 4 and before["target"] == 5
    with session_scope(db_url) as session:
        paths = {f.external_id: f.path for f in session.execute(select(m.SourceFile)).scalars()}
    assert paths["nl-001"] == "calc.py" and paths["nl-009"] == "calc.py@nl-009"
    _import(db_url, [path])
    assert table_counts(db_url) == before
