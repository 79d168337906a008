"""Juries (judges.jury): the voting rules, and a jury of three judge runs made through judges.run
against a local server, stored as a run, reported, aligned and tested for significance like any
judge, rebuilt from what it recorded."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from judge_testkit import reply
from sqlmodel import select

from db import models
from db.engine import session_scope
from judges import jury, report, run
from judges.jury import MemberVerdict, Rule, combine, majority_label, median_label
from testing.cli import as_command

# judge_db's Greek items: target i, prediction P(j+1) = MODELS[j]; its human label (gold, else
# the expert's): labels[(i + j) % 5], the gold label of (0, 0) is partial
LABELS = ["correct", "partial", "incorrect", "correct", "partial"]
WRONG_ON = {"judge-a": 0, "judge-b": 1, "judge-c": 2}  # each judge is wrong on one prediction
CODES = {"judge-a": ["SE-MD"], "judge-b": ["SE-MD", "LG-GR1"], "judge-c": []}


def human(i: int, j: int) -> str:
    return "partial" if (i, j) == (0, 0) else LABELS[(i + j) % 5]


def juror(request: dict) -> dict:
    """Right on every prediction but one (its WRONG_ON), English field names."""
    user = request["messages"][-1]["content"]
    i = 0 if "Προσθέτει" in user else 1
    model = request["model"]
    entries = []
    for j in range(5):
        label = human(i, j)
        if j == WRONG_ON[model]:
            label = "incorrect" if label != "incorrect" else "correct"
        entries.append({"prediction_id": f"P{j + 1}", "errors": CODES[model],
                        "accuracy": {"partial": "Partially correct"}.get(label, label.title())})
    return reply(json.dumps({"evaluations": entries}))


def test_majority_ties_go_to_the_lower_label_and_the_median_is_the_lower_middle():
    assert majority_label(["correct", "correct", "partial"]) == "correct"
    assert majority_label(["correct", "incorrect"]) == "incorrect"
    assert majority_label(["correct", "partial", "incorrect"]) == "incorrect"
    assert median_label(["correct", "incorrect", "correct"]) == "correct"
    assert median_label(["correct", "partial", "incorrect", "correct"]) == "partial"


def test_codes_need_k_votes_and_a_verdict_needs_a_quorum():
    rule = Rule("majority", min_code_votes=2, quorum=2)
    votes = [MemberVerdict("ok", "partial", ["SE-MD", "LG-GR1"]),
             MemberVerdict("ok", "correct", ["SE-MD"]), MemberVerdict("parse_error", None)]
    status, accuracy, codes = combine(votes, rule)
    assert (status, accuracy) == ("ok", "partial")  # 1-1 tie among the two voters: the lower
    assert codes == [{"code": "SE-MD", "confidence": round(2 / 3, 4), "justification": None}]
    failed = [MemberVerdict("ok", "correct"), MemberVerdict("truncated", None),
              MemberVerdict("api_error", None)]
    assert combine(failed, rule) == ("api_error", None, [])  # the most severe failure


def judge_three(db_url, server, tmp_path):
    for model in WRONG_ON:
        assert run.main(["--model", model, "--strategy", "standard", "--lang", "el",
                         "--prompt-lang", "en", "--base-url", server.base_url, "--db", db_url,
                         "--no-cache", "--quiet"]) == 0


def test_a_jury_of_three_runs_end_to_end(judge_db, chat_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    chat_server.responder = juror
    judge_three(judge_db, chat_server, tmp_path)
    capsys.readouterr()
    assert jury.main(["--runs", "1,2,3", "--rule", "majority", "--name", "poll",
                      "--db", judge_db]) == 0
    out = capsys.readouterr().out
    assert "jury 'poll' (run 4): majority of runs 1, 2, 3 (a tie goes to the lower" in out
    assert "verdicts: 10 (ok 10); left out: 0" in out  # the 10 Greek generations
    kappas = {line.split()[1]: float(line.split()[5]) for line in out.splitlines()
              if line.startswith("  run ")}
    assert kappas["4"] == 1.0 and max(kappas[r] for r in "123") < 1.0  # beats its best member
    with session_scope(judge_db) as s:
        stored = s.get(models.JudgeRun, 4)
        assert (stored.backend, stored.model, stored.strategy) == ("jury", "poll", "jury-majority")
        members = stored.params["jury"]["members"]
        assert [m["run_id"] for m in members] == [1, 2, 3]
        assert stored.params["jury"]["min_code_votes"] == 2 and stored.params["jury"]["quorum"] == 2
        assert stored.prompt_tokens == 3 * 200 and stored.cost_usd is None  # members' together
        verdicts = s.exec(select(models.JudgeVerdict).where(models.JudgeVerdict.run_id == 4)).all()
        # SE-MD named by two of three judges, LG-GR1 by one: only SE-MD is kept
        assert {tuple(c["code"] for c in v.codes) for v in verdicts} == {("SE-MD",)}
        before = sorted((v.generation_id, v.accuracy) for v in verdicts)

    # the report and align treat it like any judge run
    built = report.build_report(judge_db, n_resamples=20)
    kappa = built["kappa"].set_index("run_id")
    assert kappa.loc[4, "kappa"] == 1.0 and kappa.loc[4, "n"] == 10
    # runs.csv says whose tokens the jury's are, so a total can leave it out
    with session_scope(judge_db) as s:
        settings = report.run_settings(s).set_index("run_id")
    assert settings.loc[4, "jury_of"] == "1,2,3" and set(settings.loc[[1, 2, 3], "jury_of"]) == {""}
    assert settings.loc[4, "prompt_tokens"] == settings.loc[[1, 2, 3], "prompt_tokens"].sum()
    from align.__main__ import main as align_main

    out_dir = tmp_path / "align"
    assert align_main(["--db", judge_db, "--out", str(out_dir), "--no-figures", "--resamples",
                       "200", "--slice", "all", "--significance", "kappa", "--min-items", "3"]) == 0
    judges_table = pd.read_csv(out_dir / "judges.csv").set_index("judge_run_id")
    assert judges_table.loc[4, "key"].startswith("poll[jury-majority,en,jury-majority-")
    assert judges_table.loc[4, "kappa"] == 1.0 and judges_table.loc[4, "n"] == 10
    pairs = pd.read_csv(out_dir / "significance.csv")
    with_jury = pairs[pairs.a.str.startswith("poll[") | pairs.b.str.startswith("poll[")]
    assert len(with_jury) == 3 and set(with_jury.statistic) == {"kappa"}
    assert with_jury.p_value.notna().all()

    # the same command again recomputes the same verdicts; --rebuild from what it recorded too
    assert jury.main(["--runs", "1,2,3", "--name", "poll", "--db", judge_db]) == 0
    assert jury.main(["--rebuild", "poll", "--db", judge_db]) == 0
    with session_scope(judge_db) as s:
        verdicts = s.exec(select(models.JudgeVerdict).where(models.JudgeVerdict.run_id == 4)).all()
        assert sorted((v.generation_id, v.accuracy) for v in verdicts) == before
        assert len(s.exec(select(models.JudgeRun)).all()) == 4
    command = as_command(jury.main, "python -m judges.jury")
    capsys.readouterr()
    assert command(["--runs", "1,2", "--name", "poll", "--db", judge_db]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a jury named 'poll' (run 4) has other members" in err
    assert command(["--runs", "1,4", "--name", "poll2", "--db", judge_db]) == 2  # no jury of juries
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run 4 is the jury 'poll' (runs 1, 2, 3, majority)" in err


@pytest.mark.parametrize("argv,message", [
    (["--runs", "1", "--name", "x"], "a jury needs at least two runs"),
    (["--runs", "1,9", "--name", "x"], "--runs: no judge run 9 (runs: 1, 2, 3)"),
    (["--runs", "1,2", "--name", "x", "--quorum", "3"], "--quorum must lie between 1 and the 2"),
    # 0 was replaced by the default (a majority) in silence
    (["--runs", "1,2", "--name", "x", "--quorum", "0"], "--quorum must lie between 1 and the 2"),
    (["--runs", "1,2,3", "--name", "x", "--min-code-votes", "0"],
     "--min-code-votes must lie between 1 and the 3"),
    (["--runs", "1,2", "--name", "x", "--quorum", "-1"], "--quorum must lie between 1 and the 2"),
    (["--runs", "a,b", "--name", "x"], "--runs: expected run ids like 3,4,5"),
    (["--rebuild", "nobody"], "--rebuild: no jury 'nobody' (juries: none)"),
])
def test_bad_juries_are_one_line(judge_db, chat_server, tmp_path, monkeypatch, capsys, argv,
                                 message):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    chat_server.responder = juror
    judge_three(judge_db, chat_server, tmp_path)
    capsys.readouterr()
    assert as_command(jury.main, "python -m judges.jury")(argv + ["--db", judge_db]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_a_jury_with_unknown_costs_on_each_backend(judge_db_any, chat_server, tmp_path,
                                                  monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    chat_server.responder = juror
    judge_three(judge_db_any, chat_server, tmp_path)
    assert jury.main(["--runs", "3,1,2", "--rule", "median", "--name", "m3",
                      "--db", judge_db_any]) == 0
    with session_scope(judge_db_any) as s:
        stored = s.exec(select(models.JudgeRun).where(models.JudgeRun.backend == "jury")).one()
        assert stored.cost_usd is None and stored.params["jury"]["rule"] == "median"
        assert [m["run_id"] for m in stored.params["jury"]["members"]] == [3, 1, 2]
        verdicts = s.exec(select(models.JudgeVerdict).where(
            models.JudgeVerdict.run_id == stored.id)).all()
        assert len(verdicts) == 10 and {v.status for v in verdicts} == {"ok"}
