"""`python -m align` on a small database filled in the test."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from align.__main__ import main
from testing.cli import as_command, run_in_process

ROOT = Path(__file__).resolve().parents[2]


def test_cli_writes_every_output(align_db, tmp_path, capsys):
    out = tmp_path / "report"
    code = main(["--db", align_db["url"], "--out", str(out), "--bootstrap", "100"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "quadratic weighted kappa" in printed and "goodmetric" in printed
    assert "warning" in printed and "bleu" in printed  # the all-zero metric is flagged
    for name in ("kappa.csv", "confusion.csv", "noise.csv", "context.csv", "groups.csv",
                 "judges.csv", "judge_codes.csv", "annotators.csv", "predictions.csv",
                 "results.json", "thresholds.json", "report.html"):
        assert (out / name).is_file(), name
    figures = {p.name.split("_")[0] for p in (out / "figures").glob("*.png")}
    assert {"fig2", "fig3", "fig5", "fig6", "fig7", "fig9", "fig10", "fig11", "fig17", "fig18",
            "fig19"} <= figures
    html = (out / "report.html").read_text()
    assert "data-figure='fig5_kde_bleu'" in html and "kappa.csv" in html
    results = json.loads((out / "results.json").read_text())
    assert {r["key"] for r in results["kappa"]} >= {"bleu", "flatmetric"}
    kappa = pd.read_csv(out / "kappa.csv")
    assert set(kappa.slice) == {"all", "language", "model"}


def test_cli_json_csv_and_apply_saved_thresholds(align_db, tmp_path, capsys):
    out = tmp_path / "a"
    assert main(["--db", align_db["url"], "--out", str(out), "--format", "json",
                 "--no-figures", "--bootstrap", "0", "--slice", "all"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["options"]["slices"] == ["all"] and len(data["kappa"]) == 4
    assert main(["--db", align_db["url"], "--out", str(tmp_path / "b"), "--format", "csv",
                 "--no-figures", "--bootstrap", "0", "--slice", "all",
                 "--thresholds", str(out / "thresholds.json")]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("key,") and "saved" in printed


def test_cli_fit_on_apply_to(align_db, tmp_path, capsys):
    assert main(["--db", align_db["url"], "--out", str(tmp_path), "--format", "csv",
                 "--no-figures", "--bootstrap", "0", "--fit-on", "model=model-a",
                 "--apply-to", "model=model-b", "--slice", "model"]) == 0
    kappa = pd.read_csv(tmp_path / "kappa.csv")
    assert set(kappa.slice_value) == {"model-b"}


@pytest.mark.parametrize("argv, message", [
    (["--bandwidth", "wide"], "bandwidth must be"),
    (["--labels", "annotator:nobody"], "annotator 'nobody' has no finished labels"),
    (["--fit-on", "colour=red"], "split 'colour=red'"),
    (["--apply-to", "language=en"], "--apply-to needs --fit-on"),
    (["--resamples", "1"], "--resamples 1: use 0 (no intervals, tests or ranks) or at least 100; "
                           "with fewer, the ends of a 95% interval and p-values near alpha 0.05"),
    (["--resamples", "-5"], "--resamples -5: use 0 (no intervals, tests or ranks) or at least 100"),
    (["--bootstrap", "99"], "--resamples 99: use 0"),
    (["--min-items", "2"], "--min-items 2: a slice needs at least 3 labelled items"),
    (["--resamples", "200", "--alpha", "0.01"], "--resamples 200: use 0 (no intervals, tests or "
                                                "ranks) or at least 500"),
])
def test_cli_bad_input_gets_a_clear_error(align_db, tmp_path, capsys, argv, message):
    align = as_command(main, "python -m align")
    assert align(["--db", align_db["url"], "--out", str(tmp_path), "--no-figures"] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m align: error: ") and err.count("\n") == 1, err
    assert message in " ".join(err.split())


def test_cli_on_an_empty_database_says_what_is_missing(engine, db_url, tmp_path, capsys):
    align = as_command(main, "python -m align")
    assert align(["--db", db_url, "--out", str(tmp_path / "out"), "--no-figures"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "python -m align: error: nothing aligned: no human labels " \
        "found" in err, err
    assert not (tmp_path / "out").exists()


def test_labels_without_scores_still_say_which_model_is_best(demo_db_url, tmp_path, capsys):
    """The demo before any scoring: labels, no scores. Nothing is aligned, but the labels answer
    the study's Table 2 (quality.csv): written, exit 0, and the run says to score first."""
    out = tmp_path / "out"
    align = as_command(main, "python -m align")
    assert align(["--db", demo_db_url, "--out", str(out), "--no-figures"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("which model writes the best comments")
    assert "no metric scores found: the database has 0 metric run(s)" in captured.out
    assert "run `python -m metrics.score` first" in captured.out
    quality = (out / "quality.csv").read_text(encoding="utf-8").splitlines()
    assert len(quality) > 1 and quality[1].startswith("all,all,125,")


def test_nothing_to_report_is_exit_1_and_leaves_the_last_report(engine, db_url, tmp_path,
                                                                  capsys):
    """No labels (so no quality either) and nothing aligned: the README's rule, a run that did
    nothing useful exits 1, and the report of an earlier run stays as it was."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "kappa.csv").write_text("key,kappa\nbleu,0.5\n", encoding="utf-8")
    align = as_command(main, "python -m align")
    assert align(["--db", db_url, "--out", str(out), "--no-figures"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing aligned: no human labels found" in err, err
    assert (out / "kappa.csv").read_text(encoding="utf-8") == "key,kappa\nbleu,0.5\n"


def test_an_unknown_metric_is_refused_with_the_stored_names(align_db, tmp_path, capsys):
    align = as_command(main, "python -m align")
    assert align(["--db", align_db["url"], "--out", str(tmp_path / "out"), "--no-figures",
                  "--metric", "blue", "goodmetric"]) == 2
    err = capsys.readouterr().err
    assert err == ("python -m align: error: metric not stored: 'blue' (did you mean 'bleu'?); "
                   "this database has: bleu, flatmetric, goodmetric\n")
    assert not (tmp_path / "out").exists()


def test_help_imports_no_torch_and_no_matplotlib():
    """How long --help takes is a benchmark's business; what it must not import is checked."""
    probe = ("import sys; import align.__main__ as m; m.build_parser().format_help(); "
             "print('torch' in sys.modules, 'matplotlib' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    torch_loaded, mpl_loaded = result.stdout.split()
    assert torch_loaded == "False" and mpl_loaded == "False"


def test_old_name_metrics_align_runs_align(align_db, tmp_path):
    """`python -m metrics.align` (the name before align became its own stage) still works."""
    result = run_in_process("metrics.align", "--db", align_db["url"], "--out", str(tmp_path),
                            "--format", "csv", "--no-figures", "--bootstrap", "0", "--slice", "all")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("key,") and "goodmetric" in result.stdout
    assert (tmp_path / "kappa.csv").is_file()


@pytest.mark.parametrize("content, message", [
    (b"families:\n  - {pattern: 'allegro/*', family: herbert, group: sp\xe9cifique}\n",
     "the model family table is not UTF-8 text (byte 0xe9 on line 2): save it as UTF-8"),
    (b"families:\n  - {pattern: 'allegro/*', group: x\n",
     "the model family table is not valid YAML at line 3, column 1: expected ',' or '}'"),
])
def test_a_families_file_that_cannot_be_read_is_one_line(align_db, tmp_path, capsys, content,
                                                          message):
    families = tmp_path / "families.yaml"
    families.write_bytes(content)
    align = as_command(main, "python -m align")
    assert align(["--db", align_db["url"], "--out", str(tmp_path / "out"), "--no-figures",
                  "--bootstrap", "0", "--families", str(families)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"python -m align: error: {families}: {message}"), err
    assert not (tmp_path / "out").exists()
