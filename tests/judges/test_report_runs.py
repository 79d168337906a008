"""Runs that differ in a setting or in their prompt template are separate runs, stored on SQLite
and PostgreSQL, and `judges.report` shows what tells them apart and what each cost."""
from __future__ import annotations

import hashlib

import pandas as pd
from judge_testkit import answer_from_request, reply

from judges import report, run
from testing.cli import as_command


def test_settings_and_templates_make_separate_runs_that_the_report_tells_apart(
        judge_db_any, chat_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    chat_server.responder = lambda request: reply(answer_from_request(request, "el"))
    template = tmp_path / "strict-rubric.yaml"
    template.write_text("name: strict-rubric\nbase: rubric\ntexts:\n  el:\n    json_only: "
                        "'Μόνο JSON.'\n", encoding="utf-8")
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  judge-test: {input_per_mtok: 1000, output_per_mtok: 2000}\n")
    common = ["--model", "judge-test", "--lang", "el", "--base-url", chat_server.base_url,
              "--db", judge_db_any, "--cache", str(tmp_path / "c.sqlite3"), "--quiet"]
    assert run.main(common + ["--strategy", "standard", "--prices", str(prices)]) == 0
    assert run.main(common + ["--strategy", "standard", "--temperature", "0.7",
                              "--order", "rotate", "--max-tokens", "500"]) == 0
    assert run.main(common + ["--template", str(template)]) == 0
    assert chat_server.calls == 6  # three runs of two targets: nothing shared between them
    assert "prompt version strict-rubric-el-" in capsys.readouterr().out

    built = report.build_report(judge_db_any, n_resamples=20)
    runs = built["runs"].set_index("run_id")
    assert list(runs["strategy"]) == ["standard", "standard", "strict-rubric"]
    assert list(runs["temperature"]) == [0.0, 0.7, 0.0]
    assert list(runs["max_tokens"]) == [10_000, 500, 10_000]
    assert list(runs["order"]) == ["fixed", "rotate (seed 42)", "fixed"]
    assert set(runs["endpoint"]) == {chat_server.base_url}
    sha = hashlib.sha256(template.read_bytes()).hexdigest()
    assert list(runs["template"]) == ["", "", f"strict-rubric.yaml sha256:{sha[:12]}"]
    assert list(runs["prompt_tokens"]) == [200, 200, 200]
    assert list(runs["completion_tokens"]) == [40, 40, 40]
    costs = list(runs["cost_usd"])
    assert abs(costs[0] - (200 * 1000 + 40 * 2000) / 1e6) < 1e-9
    assert pd.isna(costs[1]) and pd.isna(costs[2])  # no price table given: unknown, not 0
    # every run is its own row in the failure and agreement tables
    assert sorted(built["failure_rates"]["run_id"]) == sorted(runs.index)
    assert sorted(built["kappa"]["run_id"]) == sorted(runs.index)

    assert report.main(["--db", judge_db_any, "--bootstrap", "20"]) == 0
    printed = capsys.readouterr().out
    assert "Runs: the settings that tell them apart" in printed
    assert f"sha256:{sha[:12]}" in printed and "unknown" in printed and "$0.2800" in printed
    # the key column shows each run's whole name, "[...]" included (Rich markup once ate it)
    shown = "".join(line.strip("│ ") for line in printed.splitlines())
    keys = list(built["kappa"]["key"])
    assert len(set(keys)) == 3 and all("[" in key for key in keys)
    assert all(key.replace(" ", "") in shown.replace(" ", "") for key in keys), keys


def test_a_bad_template_file_is_one_line_and_exit_2(judge_db, tmp_path, capsys):
    template = tmp_path / "bad.yaml"
    template.write_text("name: bad\nbase: cot\ntexts:\n  el:\n    rulez: x\n", encoding="utf-8")
    code = as_command(run.main, "python -m judges.run")(
        ["--model", "judge-test", "--template", str(template), "--lang", "el", "--db", judge_db,
         "--no-cache", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "bad.yaml: texts.el: unknown key(s) rulez" in err


def test_integers_print_as_integers_and_rates_without_float_noise(judge_db, chat_server,
                                                                  tmp_path, monkeypatch, capsys):
    """A jury (no sampling of its own) beside two runs made the seed and max_tokens columns
    floats ("seed 42.000", "max_tokens 10000.000"), and 1 - 8/10 wrote 0.19999999999999996."""
    import json

    from judges import jury

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")

    def two_left_out(request):  # the first target's P1 and P2 get no evaluation: 2 of 10
        answer = json.loads(answer_from_request(request, "el"))
        entries = next(iter(answer.values()))
        if "Προσθέτει" in request["messages"][-1]["content"]:
            del entries[:2]
        return reply(json.dumps(answer, ensure_ascii=False))

    chat_server.responder = two_left_out
    common = ["--model", "judge-test", "--strategy", "standard", "--lang", "el", "--base-url",
              chat_server.base_url, "--db", judge_db, "--no-cache", "--quiet"]
    assert run.main(common) == 0 and run.main(common + ["--seed", "43"]) == 0
    assert jury.main(["--runs", "1,2", "--name", "pair", "--db", judge_db]) == 0
    capsys.readouterr()
    out = tmp_path / "report"
    assert report.main(["--db", judge_db, "--bootstrap", "20", "--out", str(out),
                        "--no-figures"]) == 0
    printed = capsys.readouterr().out
    (settings,) = [line for line in printed.splitlines()
                   if line.startswith("│ 1 ") and "│ fixed " in line]
    assert "│ 0 " in settings and "│ 42 " in settings and "│ 10000 " in settings, printed
    assert "│ 4000 " in settings and ".000" not in settings
    runs = pd.read_csv(out / "runs.csv", dtype=str, keep_default_na=False)
    assert list(runs["seed"]) == ["42", "43", ""] and list(runs["max_tokens"]) == [
        "10000", "10000", ""]
    rates = pd.read_csv(out / "failure_rates.csv", dtype=str).set_index("run_id")
    assert rates.loc["1", "failure_rate"] == "0.2" and rates.loc["1", "empty_rate"] == "0.2"
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<td>42</td>" in page and "42.000" not in page


def test_the_report_says_why_verdicts_failed_most_frequent_first(judge_db, chat_server,
                                                                 tmp_path, monkeypatch, capsys):
    """It showed only the counts of each status; the reasons were in the database alone."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")

    def respond(request):
        if "Προσθέτει" in request["messages"][-1]["content"]:  # the first target
            return reply("Invalid value for 'temperature'.", status=400)
        return reply(answer_from_request(request, "el").replace("}, {", "} {", 1))

    chat_server.responder = respond
    assert run.main(["--model", "judge-test", "--strategy", "standard", "--lang", "el",
                     "--base-url", chat_server.base_url, "--db", judge_db, "--no-cache",
                     "--quiet"]) == 0
    capsys.readouterr()
    out = tmp_path / "report"
    assert report.main(["--db", judge_db, "--bootstrap", "20", "--out", str(out),
                        "--no-figures"]) == 0
    printed = capsys.readouterr().out
    assert "Why verdicts failed, per run and status, most frequent first" in printed
    flat = " ".join(printed.split())
    assert "Invalid value for 'temperature'" in flat and "P2: not read: the answer's JSON" in flat
    reasons = pd.read_csv(out / "failure_reasons.csv")
    assert list(zip(reasons["status"], reasons["verdicts"])) == [("api_error", 5),
                                                                 ("parse_error", 4)]
    assert list(reasons["reason"]) == [
        "HTTP N: Error code: N - Invalid value for 'temperature'.",
        "PN: not read: the answer's JSON breaks (Expecting ',' delimiter at line N column N); "
        "only characters N-N of it could be read"]  # P2-P5: one reason
    assert "Why verdicts failed" in (out / "report.html").read_text(encoding="utf-8")
