"""The study's whole release: targets found from the FIM prefix of every family's layout, empty
predictions that the experts labelled, a folder of per-language tables in one transaction, and
`--check` listing every problem without writing."""
from __future__ import annotations

import pytest
from db_testkit import REPEATED_COMMENT, release_rows, repeated_comment_file, write_release
from sqlalchemy import func, select

from corpus.fim import build_fim_prompt, get_family
from db import models as m
from db import session_scope
from db.__main__ import main as db_main
from db.__main__ import table_counts
from db.annotations import annotation_codes, annotation_history
from db.formats import FormatError, locate_comment
from db.formats.spans import _starts_by_window
from db.importer import ImportFailed, import_release
from testing.cli import as_command

main = as_command(db_main, "python -m db")

FAMILIES = ("starcoder2", "codellama", "codegemma", "codeqwen1.5", "granite-code", "plain")


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("which", [0, 1])
def test_fim_prefix_singles_out_a_comment_with_identical_surroundings(family, which):
    content, starts = repeated_comment_file()
    fim = build_fim_prompt(content, starts[which], starts[which] + len(REPEATED_COMMENT),
                           get_family(family)).prompt
    if get_family(family).uses_suffix:  # the window rule alone fits both occurrences
        assert _starts_by_window(content, REPEATED_COMMENT, starts, [fim]) == set(starts)
    assert locate_comment(content, REPEATED_COMMENT, [fim]) == (
        starts[which], starts[which] + len(REPEATED_COMMENT))


def test_codellama_layout_keeps_its_spaces():
    content, starts = repeated_comment_file()
    fim = build_fim_prompt(content, starts[1], starts[1] + len(REPEATED_COMMENT),
                           get_family("codellama")).prompt
    assert fim.startswith("<PRE> ") and " <SUF>" in fim and fim.endswith(" <MID>")
    assert locate_comment(content, REPEATED_COMMENT, ["<s>" + fim])[0] == starts[1]  # BOS too


def test_without_fim_input_a_repeated_comment_stays_ambiguous():
    content, starts = repeated_comment_file()
    with pytest.raises(FormatError, match="there is no FIM input"):
        locate_comment(content, REPEATED_COMMENT, ["", None])


def _study_row(file_id="nl-100", which=1):
    """A release row for the repeated comment, FIM inputs laid out per model family."""
    content, starts = repeated_comment_file()
    start, end = starts[which], starts[which] + len(REPEATED_COMMENT)
    row = {"file_id": file_id, "content": content, "repo": "r/cache", "path": "cache.py",
           "original_comment": REPEATED_COMMENT}
    for model, family in (("meta-llama/CodeLlama-7b-hf", "codellama"),
                          ("bigcode/starcoder2-7b", "starcoder2"),
                          ("google/codegemma-7b", "codegemma")):
        row[f"masked_data_{model}"] = build_fim_prompt(content, start, end,
                                                       get_family(family)).prompt
        row[f"predict_{model}"] = " waarde uit de cache\n"
        row[f"predicted_comment_{model}"] = "# Lees de waarde uit de cache"
        row[f"expert_accuracy_{model}"] = "Partial"
        row[f"error_codes_{model}"] = "MS-ET"
    return row, start


def test_release_row_with_a_repeated_comment_imports_at_the_fim_position(tmp_path, db_url):
    row, start = _study_row()
    with session_scope(db_url) as session:
        import_release(session, [write_release(tmp_path / "nl.parquet", [row])])
    with session_scope(db_url) as session:
        target = session.execute(select(m.Target)).scalars().one()
        assert (target.span_start, target.span_end) == (start, start + len(REPEATED_COMMENT))
        assert session.execute(select(func.count()).select_from(m.Annotation)).scalar() == 3


def test_empty_prediction_with_an_expert_label_is_an_empty_generation(tmp_path, any_db_url):
    rows = release_rows()[:1]
    model = "google/codegemma-7b"
    rows[0].update({f"predict_{model}": "", f"predicted_comment_{model}": "",
                    f"expert_accuracy_{model}": "Incorrect", f"error_codes_{model}": "MS-ET"})
    with session_scope(any_db_url) as session:
        import_release(session, [write_release(tmp_path / "nl.jsonl", rows)])
    with session_scope(any_db_url) as session:
        generations = {g.model: g for g in session.execute(select(m.Generation)).scalars()}
        empty = generations[model]
        assert empty.predicted_comment == "" and empty.raw_output == "" and empty.is_empty
        assert not generations["bigcode/starcoder2-7b"].is_empty
        label = session.execute(select(m.Annotation).where(
            m.Annotation.generation_id == empty.id)).scalars().one()
        assert label.accuracy == "incorrect"
        assert annotation_codes(session, label.id) == ("MS-ET",)


def _hub_folder(root, per_language):
    """A release as the hub lays it out: <Config>/train-00000-of-00001.parquet per language."""
    for config, rows in per_language.items():
        (root / config).mkdir(parents=True)
        write_release(root / config / "train-00000-of-00001.parquet", rows)
    return root


CONFIGS = {"Chinese": "zh", "Dutch": "nl", "English": "en", "Greek": "el", "Polish": "pl"}


def _rows_for(config):
    rows = release_rows()
    for row in rows:
        row["file_id"] = f"{config}-{row['file_id']}"
        row["path"] = f"{config}/{row['path']}"
    return rows


def test_release_folder_imports_every_language_in_one_transaction(tmp_path, any_db_url):
    folder = _hub_folder(tmp_path / "release", {c: _rows_for(c) for c in CONFIGS})
    assert main(["import", "--format", "release", str(folder), "--db", any_db_url]) == 0
    with session_scope(any_db_url) as session:
        languages = dict(session.execute(
            select(m.SourceFile.natural_language, func.count()).group_by(
                m.SourceFile.natural_language)).all())
        assert languages == {code: 3 for code in CONFIGS.values()}
        assert session.execute(select(func.count()).select_from(m.Generation)).scalar() == 25


def test_one_bad_row_in_one_language_imports_nothing(tmp_path, db_url, capsys):
    tables = {c: _rows_for(c) for c in CONFIGS}
    tables["Polish"][1]["original_comment"] = "# nergens in het bestand"
    folder = _hub_folder(tmp_path / "release", tables)
    assert main(["import", "--format", "release", str(folder), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert "Polish/train-00000-of-00001.parquet, row 2, field 'original_comment'" in err
    assert table_counts(db_url)["source_file"] == 0


def test_check_lists_every_problem_and_writes_nothing(tmp_path, db_url, capsys):
    tables = {c: _rows_for(c) for c in CONFIGS}
    tables["Dutch"][0]["expert_accuracy_google/codegemma-7b"] = "Mostly"
    tables["Dutch"][2]["original_comment"] = "# nergens"
    tables["Greek"][1]["error_codes_bigcode/starcoder2-7b"] = "XX-9"
    folder = _hub_folder(tmp_path / "release", tables)
    assert main(["import", "--format", "release", "--check", str(folder), "--db", db_url]) == 2
    err = capsys.readouterr().err
    for where in ("Dutch/train-00000-of-00001.parquet, row 1, field "
                  "'expert_accuracy_google/codegemma-7b'",
                  "Dutch/train-00000-of-00001.parquet, row 3, field 'original_comment'",
                  "Greek/train-00000-of-00001.parquet, row 2, field "
                  "'error_codes_bigcode/starcoder2-7b'"):
        assert where in err
    assert "check: 3 problem(s)" in err
    counts = table_counts(db_url)
    assert counts["source_file"] == counts["annotation"] == counts["annotator"] == 0


def test_check_of_clean_files_exits_zero_and_writes_nothing(tmp_path, db_url, capsys):
    folder = _hub_folder(tmp_path / "release", {"Dutch": _rows_for("Dutch")})
    assert main(["import", "--format", "release", "--check", str(folder), "--db", db_url]) == 0
    assert "annotation      5 created" in capsys.readouterr().out
    assert table_counts(db_url)["generation"] == 0


def test_check_of_jsonl_lists_bad_json_and_bad_records(tmp_path, db_url, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type": "dataset", "name": "d"}\n{not json\n'
                    '{"type": "file", "dataset": "d", "repo": "r", "path": "p", '
                    '"natural_language": "german", "content": "x"}\n'
                    '{"type": "annotator", "username": "u", "languages": ["de"]}\n',
                    encoding="utf-8")
    assert main(["import", "--check", "--accounts", str(path), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert "line 2: not valid JSON" in err
    assert "line 3, field 'natural_language': 'german' is not a language code; did you mean " \
           "'de'?" in err
    assert "line 4, field 'languages': 'de' (German) is not a language of the labelling app" in err
    assert table_counts(db_url)["dataset"] == 0


def test_bulk_and_per_record_paths_store_the_same_labels_and_history(tmp_path):
    rows = release_rows()
    path = write_release(tmp_path / "nl.jsonl", rows)
    changed = [dict(rows[0], **{"expert_accuracy_bigcode/starcoder2-7b": "Incorrect"})]
    changed_path = write_release(tmp_path / "nl_changed.jsonl", changed)
    seen = []
    for bulk in (True, False):
        url = f"sqlite:///{tmp_path / f'bulk_{bulk}.db'}"
        for table in (path, changed_path):
            with session_scope(url) as session:
                import_release(session, [table], bulk=bulk)
        with session_scope(url) as session:
            labels = {}
            for model, external_id, a in session.execute(
                    select(m.Generation.model, m.SourceFile.external_id, m.Annotation)
                    .join(m.Annotation, m.Annotation.generation_id == m.Generation.id)
                    .join(m.Target, m.Target.id == m.Generation.target_id)
                    .join(m.SourceFile, m.SourceFile.id == m.Target.source_file_id)):
                labels[(external_id, model)] = (
                    a.accuracy, a.revision, a.taxonomy_version,
                    annotation_codes(session, a.id),
                    [(e.revision, e.accuracy, tuple(e.codes), e.status)
                     for e in annotation_history(session, a.id)])
            seen.append(labels)
    assert seen[0] == seen[1]
    assert seen[0][("nl-001", "bigcode/starcoder2-7b")][1] == 2  # the change is revision 2
    assert len(seen[0]) == 5


def test_reimport_through_the_bulk_path_changes_nothing(tmp_path, any_db_url):
    folder = _hub_folder(tmp_path / "release", {"Greek": _rows_for("Greek")})
    with session_scope(any_db_url) as session:
        import_release(session, [folder])
    before = table_counts(any_db_url)
    with session_scope(any_db_url) as session:
        stats = import_release(session, [folder]).as_dict()
    assert table_counts(any_db_url) == before
    assert all(set(outcomes) == {"unchanged"} for outcomes in stats.values()), stats


def test_bad_language_option_names_the_code_to_use(tmp_path, db_url, capsys):
    path = write_release(tmp_path / "table.jsonl", release_rows())
    assert main(["import", "--format", "release", "--lang", "dutch", str(path),
                 "--db", db_url]) == 2
    assert "did you mean 'nl'?" in capsys.readouterr().err
    with pytest.raises(ImportFailed):
        with session_scope(db_url) as session:
            import_release(session, [path], lang="xx")
