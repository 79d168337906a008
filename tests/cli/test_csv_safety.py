"""Every CSV the project writes shows a name that looks like a spreadsheet formula as text: the
cell gets a leading single quote (OWASP, "CSV Injection"). Checked through the real commands on
a database whose dataset, models and judge carry such names (run in this process), by opening
each CSV."""
from __future__ import annotations

import csv
import io

import pytest
from outputs_kit import (
    HOSTILE_DATASET,
    HOSTILE_JUDGE,
    HOSTILE_MODELS,
    csv_cells,
    hostile_records,
    write_jsonl,
)

from nlce.outputs import FORMULA_STARTS, csv_cell, csv_text, write_csv
from testing.cli import run_in_process


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1",
                                  '=HYPERLINK("http://host/x","click")'])
def test_a_formula_start_gets_a_quote(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["plain", "", " =1", "'=1", "model-a", 0.5, -0.5, -3, None])
def test_everything_else_is_unchanged(value):
    assert csv_cell(value) == value


def test_frames_keep_their_numbers_and_quote_their_texts():
    import pandas as pd

    frame = pd.DataFrame({"=h": ["=1+1", "ok", None], "n": [-1.5, 2.0, 3.0],
                          "k": pd.Categorical(["@x", "y", "@x"])})
    buffer = io.StringIO()
    write_csv(buffer, frame)
    rows = list(csv.reader(io.StringIO(buffer.getvalue())))
    assert rows[0] == ["'=h", "n", "k"]
    assert rows[1:] == [["'=1+1", "-1.5", "'@x"], ["ok", "2.0", "y"], ["", "3.0", "'@x"]]
    assert list(frame.columns) == ["=h", "n", "k"]  # the caller's frame is left alone


def test_rows_of_dicts_quote_headers_too():
    text = csv_text([{"language": "nl", "=HYPERLINK(1) correct": 3}])
    assert list(csv.reader(io.StringIO(text))) == [["language", "'=HYPERLINK(1) correct"],
                                                   ["nl", "3"]]
    assert csv_text([]) == ""


def _assert_no_live_formula(tables: dict[str, list[list[str]]]) -> set[str]:
    """No cell of any table starts like a formula; returns every cell text (for the check that
    the hostile names did reach the files)."""
    cells = set()
    for name, rows in tables.items():
        for number, row in enumerate(rows, 1):
            for cell in row:
                assert not cell.startswith(FORMULA_STARTS), f"{name} row {number}: {cell!r}"
                cells.add(cell)
    return cells


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    url = f"sqlite:///{folder / 'hostile.db'}"
    path = write_jsonl(folder / "hostile.jsonl", hostile_records())
    result = run_in_process("db", "import", "--accounts", str(path), "--db", url)
    assert result.returncode == 0, result.stderr
    return url


def _found_in(cells: set[str], name: str) -> bool:
    """The name reached a file (in a cell of its own, or after the dataset: `@SUM(1+1)/-2+3`)."""
    return any(name in cell for cell in cells)


def test_align_out_csvs_show_hostile_names_as_text(hostile_db, tmp_path):
    out = tmp_path / "align"
    result = run_in_process("align", "--db", hostile_db, "--out", str(out), "--no-figures",
                            "--bootstrap", "0", "--format", "csv")
    assert result.returncode == 0, result.stderr
    tables = csv_cells(out)
    assert {"kappa.csv", "predictions.csv", "judges.csv", "confusion.csv"} <= set(tables)
    cells = _assert_no_live_formula(tables)
    assert all(_found_in(cells, name) for name in [*HOSTILE_MODELS, HOSTILE_DATASET,
                                                    HOSTILE_JUDGE])
    # the CSV printed on stdout too
    printed = list(csv.reader(io.StringIO(result.stdout)))
    assert len(printed) > 1 and printed[0][0] == "key"
    _assert_no_live_formula({"stdout": printed})


def test_judges_report_csvs_show_hostile_names_as_text(hostile_db, tmp_path):
    out = tmp_path / "judges"
    result = run_in_process("judges.report", "--db", hostile_db, "--out", str(out),
                            "--bootstrap", "0")
    assert result.returncode == 0, result.stderr
    tables = csv_cells(out)
    assert {"runs.csv", "kappa.csv", "failure_rates.csv"} <= set(tables)
    cells = _assert_no_live_formula(tables)
    assert _found_in(cells, HOSTILE_JUDGE)


def test_the_apps_table_download_quotes_model_headers(hostile_db):
    """The lead's summary page: Table 2 has a column per model and label, and its download
    button serves `service.rows_to_csv` of it (annotate/views/summary.py)."""
    from annotate import service
    from db import session_scope
    from db.models import Annotator

    with session_scope(hostile_db) as session:
        lead = Annotator(username="lead-csv", role="lead")
        session.add(lead)
        session.flush()
        labels = service.finished_labels(session, acting=lead.id)
        gold = service.gold_labels(session, acting=lead.id)
        session.rollback()
    resolved, _ = service.resolve_labels(labels, gold)
    downloads = {"accuracy_per_model.csv": service.rows_to_csv(service.accuracy_table(resolved)),
                 "errors_per_code.csv": service.rows_to_csv(service.error_table(resolved))}
    tables = {name: list(csv.reader(io.StringIO(text))) for name, text in downloads.items()}
    header = tables["accuracy_per_model.csv"][0]
    assert "'" + HOSTILE_MODELS[0] + " correct" in header
    _assert_no_live_formula(tables)
