"""Every bad import file is one line naming the file and the line (or row) and what is wrong, and
the database is left as it was: bytes that are not UTF-8 (or not UTF-16 in a file that starts as
UTF-16), JSON nested deeper than the parser goes, a file that is not parquet, a pairs cell over
the CSV reader's default 128 KiB, a pairs row with a cell missing. A UTF-16 pairs file (Excel's
"Unicode text") is read as such."""
from __future__ import annotations

import json

import pytest
from db_testkit import release_rows, small_records, write_jsonl, write_release

from db.__main__ import main as db_main
from db.engine import table_counts
from testing.cli import as_command

main = as_command(db_main, "python -m db")

HEADER = "item_id,language,model,reference,prediction,label\n"
ROWS = "a,en,m,The cat sat.,A cat sat.,partial\nb,en,m,Dogs bark.,Dogs bark loudly.,correct\n"


def _counts(url):
    return {k: v for k, v in table_counts(url).items() if k != "error_code"}


def _refused(capsys, url, args, *expected) -> str:
    """`db import ARGS` fails with one line holding every `expected` text, writing nothing."""
    before = _counts(url)
    assert main(["import", *args, "--db", url]) == 2
    err = "\n".join(line for line in capsys.readouterr().err.strip().splitlines()
                    if not line.startswith("warning: "))  # annotators active: said on purpose
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for text in expected:
        assert text in err, err
    assert _counts(url) == before
    return err


@pytest.fixture
def url(db_url, small_jsonl):
    assert main(["import", "--accounts", "--account-privileges", str(small_jsonl), "--db",
                 db_url]) == 0
    return db_url


def test_bytes_that_are_not_utf8_in_jsonl_name_the_line(url, tmp_path, capsys):
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in small_records()[:2]]
    lines.append('{"type": "dataset", "name": "caf\u00e9"}'.encode("latin-1"))
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    _refused(capsys, url, [str(path)], f"{path}, line 3: not valid UTF-8 (byte 0xe9 at column 33)")


def test_bytes_that_are_not_utf8_in_a_pairs_file_name_the_line(url, tmp_path, capsys):
    path = tmp_path / "pairs.csv"
    path.write_bytes((HEADER + ROWS).encode() + "c,en,m,Caf\u00e9 noir,coffee,correct\n"
                     .encode("latin-1"))
    _refused(capsys, url, ["--format", "pairs", str(path)],
             f"{path}, line 4: not valid UTF-8 (byte 0xe9 at column 11)")


def test_bytes_that_are_not_utf8_in_a_release_file_name_the_line(url, tmp_path, capsys):
    path = write_release(tmp_path / "nl.jsonl", release_rows())
    path.write_bytes(path.read_bytes().replace("Bereken".encode(), "Ber\xe9ken".encode("latin-1"), 1))
    _refused(capsys, url, ["--format", "release", str(path)], f"{path}, line 1: not valid UTF-8")


def test_a_utf16_pairs_file_is_read_as_utf16(url, tmp_path, capsys):
    path = tmp_path / "excel-unicode.tsv"
    path.write_bytes((HEADER + ROWS).replace(",", "\t").encode("utf-16"))  # with its BOM
    assert main(["import", "--format", "pairs", str(path), "--dataset", "u16", "--db", url]) == 0
    assert "generation      2 created" in capsys.readouterr().out


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_a_pairs_file_with_cr_line_ends_is_read(url, tmp_path, capsys, encoding):
    """Old Mac line ends (a lone CR), which the csv module calls "universal-newline mode"; a
    CR inside a quoted cell and a U+2028 inside any cell stay in their cells."""
    path = tmp_path / "mac.csv"
    rows = ROWS.replace("The cat sat.", "The cat\u2028sat.").replace(
        "Dogs bark loudly.", '"Dogs bark\rloudly."')
    path.write_bytes((HEADER + rows).replace("\n", "\r").encode(encoding))
    assert main(["import", "--format", "pairs", str(path), "--dataset", "mac", "--db", url]) == 0
    assert "generation      2 created" in capsys.readouterr().out
    assert main(["export", "--out", str(tmp_path / "out"), "--db", url]) == 0
    exported = (tmp_path / "out" / "export.jsonl").read_text(encoding="utf-8")
    assert '"predicted_comment": "Dogs bark\\rloudly."' in exported
    assert '"original_comment": "The cat\u2028sat."' in exported


def test_a_jsonl_file_with_cr_line_ends_is_read(url, tmp_path, capsys):
    path = write_jsonl(tmp_path / "mac.jsonl", [{"type": "dataset", "name": "mac-1"},
                                                {"type": "dataset", "name": "mac-2"}])
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r"))
    assert main(["import", str(path), "--db", url]) == 0
    assert "dataset         2 created" in capsys.readouterr().out


def test_broken_utf16_names_the_line(url, tmp_path, capsys):
    path = tmp_path / "broken.csv"
    path.write_bytes((HEADER + ROWS).encode("utf-16") + b"\x00\xd8"  # a lone high surrogate
                     + "c,en,m,r,p,\n".encode("utf-16-le"))
    _refused(capsys, url, ["--format", "pairs", str(path)], f"{path}, line 4: not valid UTF-16")


def test_json_nested_too_deep_names_the_line(url, tmp_path, capsys):
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(small_records()[0]) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    _refused(capsys, url, [str(path)], f"{path}, line 2: nested too deeply")


@pytest.mark.parametrize("layout", ["release", "parquet", "pairs"])
def test_a_file_that_is_not_parquet_names_the_file(url, tmp_path, capsys, layout):
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / ("nl.parquet" if layout == "release" else "dataset.parquet")
    path.write_bytes(b"PAR1 this is no parquet file PAR1")
    source = str(path) if layout == "pairs" else str(folder)
    _refused(capsys, url, ["--format", layout, source, "--lang", "nl"],
             f"{path}, file: not a readable parquet file")


def test_a_broken_json_column_in_a_parquet_export_names_the_row(url, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "export"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist([{"signature": "s", "metric": "bleu",
                                          "params": "[" * 100_000}]), folder / "metric_run.parquet")
    _refused(capsys, url, ["--format", "parquet", str(folder)],
             f"{folder / 'metric_run.parquet'}, row 1: column 'params': not valid JSON")


def test_a_pairs_cell_over_128_kib_is_read_and_judged_by_the_import_limits(url, tmp_path,
                                                                           capsys):
    big = "x" * 200_000  # csv's own default limit is 131,072 characters a cell
    context = tmp_path / "context.csv"
    context.write_text("item_id,language,model,reference,prediction,context\n"
                       f"a,en,m,ref,pred,{big}\n")
    assert main(["import", "--format", "pairs", str(context), "--dataset", "ctx",
                 "--db", url]) == 0  # a document field: under the 1,000,000 default
    capsys.readouterr()
    reference = tmp_path / "reference.csv"
    reference.write_text(HEADER + f"a,en,m,{big},pred,correct\n")
    _refused(capsys, url, ["--format", "pairs", str(reference), "--dataset", "ref"],
             f"{reference}, line 2, field 'reference': 200000 characters, over the limit "
             f"of 10000 (set with --max-text-chars")
    assert main(["import", "--format", "pairs", str(reference), "--dataset", "ref",
                 "--max-text-chars", "300000", "--db", url]) == 0
    capsys.readouterr()
    huge = tmp_path / "huge.csv"
    huge.write_text(HEADER + f"a,en,m,ref,{'y' * 1_100_000},correct\n")
    _refused(capsys, url, ["--format", "pairs", str(huge), "--dataset", "huge"],
             f"{huge}, line 2: a cell of more than 1000000 characters")


def test_the_cell_limit_is_the_imports_whatever_the_process_set_before(url, tmp_path, capsys):
    """csv's cell limit is process-wide: an earlier reader (another import, another library)
    that raised it must not lift this import's limit, and the import puts it back after."""
    import csv
    import sys

    huge = tmp_path / "huge.csv"
    huge.write_text(HEADER + f"a,en,m,ref,{'y' * 1_100_000},correct\n")
    csv.field_size_limit(sys.maxsize)
    try:
        _refused(capsys, url, ["--format", "pairs", str(huge), "--dataset", "huge"],
                 f"{huge}, line 2: a cell of more than 1000000 characters")
        assert csv.field_size_limit() == sys.maxsize
    finally:
        csv.field_size_limit(131_072)


def test_a_pairs_row_with_a_missing_cell_is_refused(url, tmp_path, capsys):
    path = tmp_path / "short.csv"
    path.write_text(HEADER + ROWS + "c,en,m,Rain falls.,Rain\n")  # no label cell, no comma
    _refused(capsys, url, ["--format", "pairs", str(path)],
             f"{path}, line 4: 5 cell(s), fewer than the 6 header columns")
    tsv = tmp_path / "short.tsv"
    tsv.write_text((HEADER + ROWS).replace(",", "\t") + "c\ten\tm\tRain falls.\n")
    _refused(capsys, url, ["--format", "pairs", str(tsv)], f"{tsv}, line 4: 4 cell(s)")


def test_check_lists_every_bad_line(url, tmp_path, capsys):
    short = tmp_path / "short.csv"
    short.write_text(HEADER + "c,en,m,Rain falls.,Rain\n" + ROWS)
    latin = tmp_path / "latin.csv"
    latin.write_bytes((HEADER + "c,en,m,Caf\u00e9,coffee,correct\n" + ROWS).encode("latin-1"))
    assert main(["import", "--check", "--format", "pairs", str(short), str(latin),
                 "--db", url]) == 2
    err = capsys.readouterr().err
    assert f"{short}, line 2: 5 cell(s)" in err and f"{latin}, line 2: not valid UTF-8" in err
    assert "check: 2 problem(s)" in err
