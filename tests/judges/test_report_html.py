"""report.html of `judges.report --out` and of `align --out`: every figure that was written
is on the page as a PNG, each robustness study has its section with a figure and a table whose
numbers are the CSV's, and both reports show the same study numbers for the same runs (one
grouping, `agreement.robustness`). Runs: conftest's `judged` (scripted server, hand-worked labels
in test_robustness_runs.py: stability n 10, U@K 0.7, I@K 0.5, flips 0.2; prompt language
n 10, CR_en 0.3, CR_x 0.5, CR_bi 0, CDR 0.8; CMD 0 and 1 with exact agreement 0.3)."""
from __future__ import annotations

import base64
import csv
import json
import math

import pytest
from sqlmodel import select

from testing.html_page import ReportPage

PNG = b"\x89PNG\r\n\x1a\n"
STUDIES = ("stability", "language_consistency", "code_mix")


def _csv(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _same(shown: str, stored: str) -> bool:
    """A cell of the page (rates to 3 decimals, '–' for missing) against the CSV's value."""
    if stored in ("", "nan"):
        return shown == "–"
    try:
        return math.isclose(float(shown), float(stored), abs_tol=5e-4)
    except ValueError:
        return shown == stored


def _assert_table_is_the_csv(table, rows: list[dict]) -> None:
    shown = table.records()
    assert len(shown) == len(rows) > 0
    for page_row, csv_row in zip(shown, rows):
        for column, value in page_row.items():
            assert _same(value, csv_row[column]), (column, value, csv_row[column])


def _image(folder, src: str) -> bytes:
    """A page's image: embedded as a data URI (align's page) or a PNG beside it."""
    if src.startswith("data:image/png;base64,"):
        return base64.b64decode(src.split(",", 1)[1])
    return (folder / src).read_bytes()


def _assert_images_are_the_pngs(page, folder) -> None:
    images = [_image(folder, src) for _, src in page.images]
    for image in images:
        assert image.startswith(PNG)
    written = [p.read_bytes() for p in folder.rglob("*.png")]
    assert sorted(images) == sorted(written)  # every figure written is shown once, nothing else


def test_judges_report_page_has_every_figure_and_the_three_studies(judged, tmp_path):
    from judges.report import main as report_main

    db_url, _ = judged
    out = tmp_path / "report"
    assert report_main(["--db", db_url, "--out", str(out), "--bootstrap", "10"]) == 0
    page = ReportPage((out / "report.html").read_text(encoding="utf-8"))
    _assert_images_are_the_pngs(page, out)
    assert {src for _, src in page.images} >= {"failure_rates.png", "code_precision_recall.png",
                                                "stability.png", "language_consistency.png",
                                                "code_mix.png"}
    for study in STUDIES:
        assert study in page.sections
        assert page.images_in(study) == [f"{study}.png"]
        table, *rest = page.tables_in(study)
        _assert_table_is_the_csv(table, _csv(out / f"{study}.csv"))
    (stability,) = page.tables_in("stability")[0].records()
    assert (stability["k"], stability["n"], stability["u_at_k"]) == ("3", "10", "0.700")
    (language,) = page.tables_in("language_consistency")[0].records()
    assert (language["cr_en"], language["cr_x"], language["cdr"]) == ("0.300", "0.500", "0.800")
    # the per-run tables are there too, with the CSV's numbers
    kappa = next(t for t in page.tables if "kappa_low" in t.header)
    _assert_table_is_the_csv(kappa, _csv(out / "kappa.csv"))
    runs = next(t for t in page.tables if "endpoint" in t.header)
    assert [r["run_id"] for r in runs.records()] == [str(i) for i in range(1, 8)]


def test_a_database_without_study_runs_says_how_to_make_them(judge_db, chat_server, tmp_path,
                                                              monkeypatch):
    from judge_testkit import labelled_answer

    from judges import run
    from judges.report import main as report_main

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    chat_server.responder = labelled_answer
    assert run.main(["--model", "judge-test", "--strategy", "standard", "--lang", "el",
                     "--base-url", chat_server.base_url, "--db", judge_db, "--no-cache",
                     "--quiet"]) == 0
    out = tmp_path / "report"
    assert report_main(["--db", judge_db, "--out", str(out), "--bootstrap", "0"]) == 0
    text = (out / "report.html").read_text(encoding="utf-8")
    page = ReportPage(text)
    for study in STUDIES:
        assert study in page.sections and not page.tables_in(study)
        assert not (out / f"{study}.png").exists() and not (out / f"{study}.csv").exists()
    assert "judges.run --repeats K" in text and "judges.run --code-mix" in text
    _assert_images_are_the_pngs(page, out)


def test_user_text_is_escaped(judged, tmp_path):
    from db import models
    from db.engine import session_scope
    from judges.report import main as report_main

    db_url, _ = judged
    with session_scope(db_url) as session:
        for judge_run in session.exec(select(models.JudgeRun)).all():
            judge_run.model = "<b>judge</b>&co"
    out = tmp_path / "report"
    assert report_main(["--db", db_url, "--out", str(out), "--bootstrap", "0",
                        "--no-figures"]) == 0
    text = (out / "report.html").read_text(encoding="utf-8")
    assert not list(out.rglob("*.png")) and "<img" not in text  # --no-figures: none written
    assert "<b>judge</b>" not in text and "&lt;b&gt;judge&lt;/b&gt;&amp;co" in text
    page = ReportPage(text)
    assert page.tables_in("stability")[0].records()[0]["judge"] == "<b>judge</b>&co"


def _by(rows: list[dict], *keys: str) -> dict:
    return {tuple(str(r[k]) for k in keys): r for r in rows}


def test_metrics_align_shows_the_same_study_numbers_as_judges_report(judged, tmp_path):
    from align.__main__ import main as align_main
    from judges.report import main as report_main

    db_url, _ = judged
    judges_out, align_out = tmp_path / "judges", tmp_path / "align"
    assert report_main(["--db", db_url, "--out", str(judges_out), "--bootstrap", "0"]) == 0
    assert align_main(["--db", db_url, "--out", str(align_out), "--bootstrap", "0",
                       "--slice", "all"]) == 0
    results = json.loads((align_out / "results.json").read_text(encoding="utf-8"))
    compared = {"stability": (("repeat_group",), ["k", "n", "u_at_k", "i_at_k", "flip_rate",
                                                  "kappa_min", "kappa_max", "runs"]),
                "stability_codes": (("repeat_group", "code"), ["n", "found_in_all",
                                                               "found_in_some", "u_at_k"]),
                "language_consistency": (("english_run", "native_run"),
                                         ["n", "cr_en", "cr_x", "cr_bi", "cdr", "en_only",
                                          "x_only", "p_mcnemar"]),
                "code_mix": (("run_id",), ["cmd", "n", "exact_agreement", "kappa",
                                           "parse_failure_rate"])}
    for study, (keys, columns) in compared.items():
        mine = _by(_csv(judges_out / f"{study}.csv"), *keys)
        theirs = _by(results[f"judge_{study}"], *keys)
        assert mine.keys() == theirs.keys() and mine, study
        for key, row in mine.items():
            for column in columns:
                assert _equal(theirs[key][column], row[column]), (study, key, column)
            assert row["label_policy"] == theirs[key]["label_policy"] == results["label_policy"]
    # kappa of a code-mixed run is the kappa both reports give that run
    (cmd1,) = [r for r in results["judge_code_mix"] if r["cmd"] == 1.0]
    (judge_row,) = [r for r in results["judges"] if r["judge_run_id"] == cmd1["run_id"]]
    assert judge_row["kappa"] == pytest.approx(cmd1["kappa"]) and judge_row["n"] == cmd1["n"]
    # the page: a section per study with its figure (figures/judge_<study>.png, embedded) and
    # table
    page = ReportPage((align_out / "report.html").read_text(encoding="utf-8"))
    _assert_images_are_the_pngs(page, align_out)
    for study in STUDIES:
        (src,) = page.images_in(study)
        assert _image(align_out, src) == (align_out / f"figures/judge_{study}.png").read_bytes()
        _assert_table_is_the_csv(page.tables_in(study)[0],
                                 _csv(align_out / f"judge_{study}.csv"))


def _equal(json_value, csv_value: str) -> bool:
    """A value of results.json (None for nan) against the CSV's text of the same number."""
    if json_value is None:
        return csv_value in ("", "nan")
    if isinstance(json_value, str):
        return json_value == csv_value
    return math.isclose(float(json_value), float(csv_value), rel_tol=1e-9, abs_tol=1e-12)
