"""`judges.importer`: judge results in the study's judge_results.json layout become a judge run on
the release's targets, parsed by the project's parser, compared with the release's expert labels
by judges.report; and a replay of the same answers through judges.run gives the same verdicts and
tokens. Every file here is written for these tests, in the layout's shape."""
from __future__ import annotations

import json

from judge_testkit import completion_body, reply
from sqlmodel import select

from db import models
from db.engine import session_scope
from db.importer import import_release
from judges import importer, report, run
from testing.cli import as_command

MODELS = ("acme/coder-7b", "example/tiny-1b", "foo/bar-3b")
FILES = {
    "7_0": ("calc.py", "def add(a, b):\n    # Telt twee getallen op\n    return a + b\n",
            "# Telt twee getallen op"),
    "9_2": ("io.py", "def close(f):\n    # Sluit het bestand\n    f.close()\n",
            "# Sluit het bestand"),
}
PREDICTED = {"7_0": ("# Telt twee getallen op", "# Telt op", "# Deelt twee getallen"),
             "9_2": ("# Sluit het bestand", "# Opent het bestand", "# sluit")}
EXPERT = {"7_0": ("Correct", "Partial", "Incorrect"), "9_2": ("Correct", "Incorrect", "Partial")}
ANSWERS = {  # the judge's raw answers, in two of the shapes the study's judges wrote
    "7_0": "```json\n" + json.dumps({"evaluations": [
        {"model_name": "acme/coder-7b", "errors": [], "explanation": "same", "overall_quality": "correct"},
        {"model_name": "Example/Tiny-1B", "errors": ["SE-MD"], "explanation": "short",
         "overall_quality": "partially_correct"},
        {"model_name": "foo/bar-3b", "errors": ["SE-HA1", "LG-GR6"], "explanation": "wrong verb",
         "overall_quality": "incorrect"}]}, indent=2) + "\n```",
    "9_2": "I'll evaluate each model's prediction.\n\n" + json.dumps({"results": [
        {"model_name": "acme/coder-7b", "errors": {"SE-MD": "ABSENT", "ST-IF1": "ABSENT"},
         "overall_quality": "correct"},
        {"model_name": "example/tiny-1b", "errors": {"SE-HA1": "PRESENT", "MS-RE": "ABSENT"},
         "overall_quality": "incorrect"},
        {"model_name": "foo/bar-3b", "errors": {"ST-IF1": "PRESENT", "SE-MD": "PRESENT"},
         "overall_quality": "partial"}]}),
}
USAGE = {"7_0": (1200, 150), "9_2": (1100, 130)}


def release_table(tmp_path):
    path = tmp_path / "release" / "nl.jsonl"
    path.parent.mkdir()
    rows = []
    for file_id, (name, content, comment) in FILES.items():
        row = {"file_id": file_id, "content": content, "repo": "example/tools", "path": name,
               "original_comment": comment}
        for model, text, label in zip(MODELS, PREDICTED[file_id], EXPERT[file_id]):
            row |= {f"predicted_comment_{model}": text, f"expert_accuracy_{model}": label,
                    f"error_codes_{model}": "None" if label == "Correct" else "SE-MD"}
        rows.append(json.dumps(row))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def instance(file_id: str, **extra) -> dict:
    name, content, comment = FILES[file_id]
    return {"instance_id": file_id, "metadata": {"file_id": file_id, "language": "Dutch"},
            "code_context": {"source_code": content, "original_comment": comment},
            "model_predictions": [{"model_name": m, "predicted_comment": text, "masked_code": ""}
                                  for m, text in zip(MODELS, PREDICTED[file_id])],
            "judge_evaluations": {"evaluations": [], "parse_method": "direct"},
            "raw_response": ANSWERS[file_id],
            "usage": dict(zip(("prompt_tokens", "completion_tokens"), USAGE[file_id])), **extra}


def study_file(tmp_path, folder="acme_judge-1_-nl_-nl_-rubric", instances=None):
    path = tmp_path / folder / "judge_results.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(instances or [instance(f) for f in FILES]), encoding="utf-8")
    return path


def verdicts(db_url, run_id):
    with session_scope(db_url) as s:
        rows = s.exec(select(models.Generation.target_id, models.Generation.model,
                             models.JudgeVerdict.status, models.JudgeVerdict.accuracy,
                             models.JudgeVerdict.codes)
                      .join(models.JudgeVerdict,
                            models.JudgeVerdict.generation_id == models.Generation.id)
                      .where(models.JudgeVerdict.run_id == run_id)).all()
    return {(t, m): (st, acc, [c["code"] for c in codes]) for t, m, st, acc, codes in rows}


def test_the_study_layout_imports_onto_the_release_and_is_reported(db_url, tmp_path, capsys):
    with session_scope(db_url) as session:
        import_release(session, [release_table(tmp_path)], dataset="release")
    folder = study_file(tmp_path).parent
    assert importer.main([str(folder), "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "judge acme_judge-1, rubric, prompt nl: 2 instances; answers: ok 2" in out
    assert "generation" not in out and "file " not in out  # the release's, not new ones
    with session_scope(db_url) as s:
        (stored_run,) = s.exec(select(models.JudgeRun)).all()
        responses = s.exec(select(models.JudgeResponse)).all()
        assert (stored_run.model, stored_run.strategy, stored_run.prompt_language,
                stored_run.backend) == ("acme_judge-1", "rubric", "nl", "import")
        assert (stored_run.prompt_tokens, stored_run.completion_tokens) == (2300, 280)
        assert stored_run.cost_usd is None and stored_run.params["code_variant"] == "variant-gr6"
        assert all(r.repairs[-1]["kind"] == "study_parse" for r in responses)
        assert sorted((r.prompt_tokens, r.completion_tokens) for r in responses) == [
            (1100, 130), (1200, 150)]
        run_id = stored_run.id
    got = verdicts(db_url, run_id)
    by_model = {(t, m): v for (t, m), v in got.items()}
    assert len(got) == 6 and {v[0] for v in got.values()} == {"ok"}
    assert sorted(v[1:] for v in by_model.values()) == sorted([
        ("correct", []), ("partial", ["SE-MD"]), ("incorrect", ["SE-HA1", "LG-GR4"]),
        ("correct", []), ("incorrect", ["SE-HA1"]), ("partial", ["ST-IF", "SE-MD"])])

    assert importer.main([str(folder), "--db", db_url]) == 0  # again: nothing changes
    again = capsys.readouterr().out
    assert "created" not in again and "updated" not in again

    built = report.build_report(db_url, n_resamples=50)
    (row,) = built["kappa"].to_dict("records")
    assert row["run_id"] == run_id and row["n"] == 6  # every verdict meets its expert label
    assert built["human_labels"] == 6
    assert row["kappa"] == 1.0  # the judge gave each generation its expert's label


def test_a_replay_through_judges_run_gives_the_same_verdicts_and_tokens(db_url, tmp_path,
                                                                       chat_server, monkeypatch,
                                                                       capsys):
    """The imported answers served by a local OpenAI-protocol server to judges.run: the same
    labels and codes, the same tokens; run again, it resumes; from a cold start, the cache."""
    folder = study_file(tmp_path).parent
    assert importer.main([str(folder), "--db", db_url, "--taxonomy-variant", "none"]) == 0

    def replay(request):
        prompt = request["messages"][-1]["content"]
        file_id = next(f for f, (_, _, comment) in FILES.items() if comment in prompt)
        tokens = dict(zip(("prompt_tokens", "completion_tokens"), USAGE[file_id]))
        return reply(body=completion_body(ANSWERS[file_id], **tokens))

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    chat_server.responder = replay
    def argv(db):
        return ["--model", "acme_judge-1", "--strategy", "rubric", "--lang", "nl", "--dataset",
                "release", "--base-url", chat_server.base_url, "--db", db, "--cache",
                str(tmp_path / "cache.sqlite3"), "--quiet"]
    assert run.main(argv(db_url)) == 0
    out = capsys.readouterr().out
    assert "targets: 2 selected, 0 already done, 2 judged now" in out
    assert "tokens billed now: 2300 prompt + 280 completion" in out
    assert verdicts(db_url, 2) == verdicts(db_url, 1)
    assert run.main(argv(db_url)) == 0
    assert "2 already done, 0 judged now" in capsys.readouterr().out
    other = f"sqlite:///{tmp_path / 'other.db'}"  # the same run in another database: the cache
    assert importer.main([str(folder), "--db", other, "--taxonomy-variant", "none"]) == 0
    assert run.main(argv(other)) == 0
    assert "requests: 2 (2 from cache)" in capsys.readouterr().out
    assert chat_server.calls == 2


def test_hierarchical_answers_per_cluster_are_merged(db_url, tmp_path, capsys):
    clusters = [
        {"cluster_name": "semantic_accuracy", "raw_response": json.dumps({"evaluations": [
            {"model_name": m, "errors": ["SE-MD"] if m == "foo/bar-3b" else [],
             "explanation": "x"} for m in MODELS]}), "parsed_evaluations": []},
        {"cluster_name": "meta", "raw_response": "Here:\n" + json.dumps({"evaluations": [
            {"model_name": m, "errors": ["E"] if m == "acme/coder-7b" else [],
             "explanation": "y"} for m in MODELS]}), "parsed_evaluations": []}]
    one = instance("7_0", cluster_details=clusters)
    del one["usage"], one["raw_response"]
    path = study_file(tmp_path, folder="output_3", instances=[one])
    assert importer.main([str(path), "--model", "judge-h", "--db", db_url]) == 0
    assert "judge judge-h, hierarchical, prompt nl: 1 instances; answers: ok 2" in \
        capsys.readouterr().out
    got = {m: v for (_, m), v in verdicts(db_url, 1).items()}
    # no cluster asked for a label: the codes are the verdict, accuracy stays unknown
    assert got == {"acme/coder-7b": ("ok", None, ["EX"]), "example/tiny-1b": ("ok", None, []),
                   "foo/bar-3b": ("ok", None, ["SE-MD"])}


def test_bad_files_are_one_line_naming_what_and_where(db_url, tmp_path, capsys):
    unnamed = study_file(tmp_path, folder="output_22")
    command = as_command(importer.main, "python -m judges.importer")
    assert command([str(unnamed), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert err == (f"python -m judges.importer: error: {unnamed}, file: the file does not say "
                   "its judge's model: give --model\n")
    broken = instance("9_2")
    del broken["code_context"]["original_comment"]
    path = study_file(tmp_path, instances=[instance("7_0"), broken])
    assert command([str(path), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert err == (f"python -m judges.importer: error: {path}, instance 1, field "
                   "'code_context.original_comment': missing or not a text\n")
    with session_scope(db_url) as s:  # one transaction: nothing of the file was kept
        assert s.exec(select(models.JudgeRun)).all() == []
        assert s.exec(select(models.Target)).all() == []
    not_json = tmp_path / "x" / "judge_results.json"
    not_json.parent.mkdir()
    not_json.write_text("{not json", encoding="utf-8")
    assert command([str(not_json), "--model", "m", "--strategy", "cot", "--db", db_url]) == 2
    assert capsys.readouterr().err.startswith(f"python -m judges.importer: error: {not_json}, "
                                              "file: not JSON: ")


def test_check_lists_every_problem_and_writes_nothing(db_url, tmp_path, capsys):
    bad = instance("9_2")
    bad["usage"] = {"prompt_tokens": "many"}
    worse = instance("7_0")
    worse["model_predictions"] = "three models"
    good = study_file(tmp_path, folder="a_-nl_-nl_-cot", instances=[instance("7_0")])
    path = study_file(tmp_path, instances=[bad, worse])
    assert as_command(importer.main, "python -m judges.importer")(
        [str(good), str(path), "--check", "--db", db_url]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{path}, instance 0, field 'usage': a token count must be a whole number, got 'many'",
        f"{path}, instance 1, field 'model_predictions': expected a list of {{model_name, "
        "predicted_comment}",
        "python -m judges.importer: error: check: 2 problem(s); nothing was written"]
    assert importer.main([str(good), "--check", "--db", db_url]) == 0
    assert "check: an import would write:" in capsys.readouterr().out
    with session_scope(db_url) as s:
        assert s.exec(select(models.JudgeRun)).all() == []
        assert s.exec(select(models.Dataset)).all() == []


def test_check_on_a_database_that_is_not_there_creates_nothing(tmp_path, capsys):
    missing = tmp_path / "new.db"
    folder = study_file(tmp_path).parent
    assert importer.main([str(folder), "--check", "--db", f"sqlite:///{missing}"]) == 0
    out = capsys.readouterr().out
    assert "checked against an empty one" in out and "judge_run       1 created" in out
    assert not missing.exists() and list(tmp_path.glob("new.db*")) == []


def test_an_import_with_no_answer_read_ok_says_why_in_one_line(db_url, tmp_path, capsys):
    prose = [instance(f, raw_response="I think these comments are fine.") for f in FILES]
    path = study_file(tmp_path, instances=prose)
    assert as_command(importer.main, "python -m judges.importer")([str(path), "--db", db_url]) == 1
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("error: none of the 2 answers was read ok (parse_error 2)")
    assert "judges.report" in line and "Traceback" not in captured.err
    with session_scope(db_url) as s:  # the answers are kept, as the judge gave them
        assert len(s.exec(select(models.JudgeResponse)).all()) == 2


def test_tokens_a_file_did_not_keep_are_unknown_not_zero(db_url, tmp_path, capsys):
    without = [instance(f) for f in FILES]
    for one in without:
        del one["usage"]
    folder = study_file(tmp_path, instances=without).parent
    assert importer.main([str(folder), "--db", db_url]) == 0
    with session_scope(db_url) as s:
        (stored_run,) = s.exec(select(models.JudgeRun)).all()
        responses = s.exec(select(models.JudgeResponse)).all()
        assert (stored_run.prompt_tokens, stored_run.completion_tokens) == (None, None)
        assert {(r.prompt_tokens, r.completion_tokens) for r in responses} == {(None, None)}
    capsys.readouterr()
    assert report.main(["--db", db_url, "--bootstrap", "0"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.strip("│ ").startswith("1 ") and "fixed" in line)
    assert row.count("unknown") == 3 and " 0 " not in row  # tokens and cost alike


def experiments_entry(file_id: str, content: str | None, finish_reason: str = "stop") -> dict:
    """One entry of the study's experiments layout (rubric_results.json), written here."""
    one = instance(file_id)
    completion = {"id": "gen-1", "object": "chat.completion", "model": "acme/judge-70b",
                  "choices": [{"index": 0, "finish_reason": finish_reason,
                               "message": {"role": "assistant", "content": content}}],
                  "usage": {"prompt_tokens": 900, "completion_tokens": 90, "total_tokens": 990}}
    return {"instance": {k: one[k] for k in ("metadata", "code_context", "model_predictions")},
            "judge_evaluation": {"rubric_evaluator": {"acme/judge-70b": completion}}}


def test_the_rubric_experiments_layout_imports(db_url, tmp_path, capsys):
    cut = ANSWERS["9_2"][:len(ANSWERS["9_2"]) // 2]  # stopped at the token limit
    path = tmp_path / "rubric_evaluation" / "rubric_results.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"7_0": experiments_entry("7_0", ANSWERS["7_0"]),
                                "9_2": experiments_entry("9_2", cut, "length")}),
                    encoding="utf-8")
    assert importer.main([str(path), "--prompt-lang", "nl", "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "judge acme/judge-70b, rubric, prompt nl: 2 instances; answers: ok 1, truncated 1" in out
    with session_scope(db_url) as s:
        (stored_run,) = s.exec(select(models.JudgeRun)).all()
        assert (stored_run.prompt_tokens, stored_run.completion_tokens) == (1800, 180)
    bad = tmp_path / "other" / "rubric_results.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"7_0": {"instance": {}, "scores": []}}), encoding="utf-8")
    assert as_command(importer.main, "python -m judges.importer")([str(bad), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "entry '7_0', field 'judge_evaluation'" in err
