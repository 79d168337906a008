"""The three robustness studies end to end through the CLI and the report, against the scripted
chat server: `judges.run --repeats`, `--prompt-lang en` beside the native prompt, `--code-mix`.

Human labels of the 10 Greek generations (conftest: the expert's, one gold), by target i and
model j (P1..P5 in the prompt, fixed order): i=0: partial (gold), partial, incorrect, correct,
partial; i=1: partial, incorrect, correct, partial, correct -> 3 correct, 5 partial, 2 incorrect.
The server answers by the prompt's output field language and the seed (judge_testkit.
labelled_answer; the runs: conftest's `judged`)."""
from __future__ import annotations

import pytest

from judges import run
from judges.codemix import code_mixed_texts
from judges.i18n import texts
from judges.report import build_report
from judges.report import main as report_main
from testing.cli import as_command


def test_stability_language_and_code_mix_tables(judged):
    db_url, server = judged
    report = build_report(db_url, n_resamples=10)
    (stab,) = report["stability"].to_dict("records")
    assert (stab["k"], stab["n"]) == (3, 10)
    # runs 1-2 say correct everywhere, run 3 says partial for P1 (the two j=0 items, human
    # partial): wrong somewhere = the 7 items not human-correct; wrong always = the 2 incorrect
    # + the 3 partial items with j != 0; flips = the 2 j=0 items
    assert stab["u_at_k"] == pytest.approx(0.7)
    assert stab["i_at_k"] == pytest.approx(0.5)
    assert stab["flip_rate"] == pytest.approx(0.2)
    (lang,) = report["language_consistency"].to_dict("records")
    # English prompt: all correct (right on 3); Greek prompt: all partial (right on 5); never both
    assert (lang["n"], lang["en_only"], lang["x_only"]) == (10, 3, 5)
    assert (lang["cr_en"], lang["cr_x"], lang["cr_bi"], lang["cdr"]) == pytest.approx(
        (0.3, 0.5, 0.0, 0.8))
    assert lang["p_mcnemar"] == pytest.approx(2 * (1 + 8 + 28 + 56) / 256)
    mix = report["code_mix"]
    assert list(mix["cmd"]) == [0.0, 1.0] and list(mix["n"]) == [10, 10]
    assert list(mix["exact_agreement"]) == pytest.approx([0.3, 0.3])
    # the prompts sent: CMD 0 has the Greek wording, CMD 1 the English, both the Greek schema
    systems = [r["messages"][0]["content"] for r in server.requests]
    english = texts("en")["system_role"].format(language="Greek")  # named in English too
    assert any(english in s and "αξιολογήσεις" not in s for s in systems)
    assert code_mixed_texts("el", 1.0, 3)[0]["output_fields"] == texts("el")["output_fields"]


def test_report_writes_the_study_csvs_and_the_cmd_figure(judged, tmp_path, capsys):
    db_url, _ = judged
    out = tmp_path / "report"
    assert report_main(["--db", db_url, "--out", str(out), "--bootstrap", "10"]) == 0
    printed = capsys.readouterr().out
    assert "Stability over K runs" in printed and "Code-mixed prompts" in printed
    for name in ("stability", "stability_codes", "language_consistency", "code_mix"):
        assert (out / f"{name}.csv").read_text().count("\n") >= 2, name
    assert (out / "code_mix.png").stat().st_size > 1000


def test_code_mix_rejects_an_english_prompt(judge_db, capsys):
    code = as_command(run.main, "python -m judges.run")(
        ["--model", "m", "--strategy", "standard", "--lang", "el", "--prompt-lang", "en",
         "--code-mix", "0.5", "--db", judge_db])
    assert code == 2 and "--code-mix" in capsys.readouterr().err


def test_metrics_align_shows_the_same_stability(judged):
    from align.pipeline import AlignOptions, run_alignment
    from align.report import tables

    db_url, _ = judged
    aligned = run_alignment(db_url, AlignOptions(bootstrap=0, slices=("all",)))
    (row,) = aligned.judge_studies["stability"].to_dict("records")
    assert (row["k"], row["n"]) == (3, 10)
    assert (row["u_at_k"], row["i_at_k"], row["flip_rate"]) == pytest.approx((0.7, 0.5, 0.2))
    assert "judge_stability" in tables(aligned)
