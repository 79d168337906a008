"""`judges.run --batch` against a local server that speaks the OpenAI files and batches protocol
(testing/batch_server.py): the same verdicts as the live path at half the price, in one upload;
a run stopped while it waits collects its batch again without sending anything twice; failed
lines and expired batches are verdicts of their own kinds."""
from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing

import pandas as pd
import pytest
from judge_testkit import answer_from_request, completion_body
from sqlalchemy.engine import make_url
from sqlmodel import select

from db import models
from db.engine import session_scope
from judges import batch as batch_module
from judges import report, run
from testing.batch_server import BatchServer
from testing.cli import as_command

PRICES = "models:\n  judge-test: {input_per_mtok: 1000, output_per_mtok: 2000}\n"


def greek(body: dict) -> tuple[int, dict]:
    return 200, completion_body(answer_from_request(body, "el", code="SE-MD"))


def argv(server, db_url, tmp_path, *extra):
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICES, encoding="utf-8")
    return ["--model", "judge-test", "--strategy", "standard", "--lang", "el", "--base-url",
            server.base_url, "--db", db_url, "--cache", str(tmp_path / "cache.sqlite3"),
            "--prices", str(prices), "--quiet", *extra]


def batches(db_url):
    with session_scope(db_url) as s:
        rows = s.exec(select(models.JudgeBatch).order_by(models.JudgeBatch.id)).all()
        s.expunge_all()
    return rows


def verdicts(db_url, run_id=1):
    with session_scope(db_url) as s:
        rows = s.exec(select(models.JudgeVerdict).where(models.JudgeVerdict.run_id == run_id)
                      .order_by(models.JudgeVerdict.generation_id)).all()
        return [(v.generation_id, v.status, v.accuracy, [c["code"] for c in v.codes])
                for v in rows]


def run_of(db_url, run_id=1):
    with session_scope(db_url) as s:
        found = s.get(models.JudgeRun, run_id)
        s.expunge(found)
    return found


def test_a_batch_run_end_to_end_against_the_live_path(judge_db, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    live_db = f"sqlite:///{tmp_path / 'live.db'}"
    shutil.copy(make_url(judge_db).database, make_url(live_db).database)  # before any run
    with BatchServer(greek, per_poll=1) as server:
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "0")) == 0
        out = capsys.readouterr().out
        hits = dict(server.hits)
        assert server.chat_requests == 2  # the two Greek targets, one request each
        live_dir = tmp_path / "live"
        live_dir.mkdir()
        assert run.main(argv(server, live_db, live_dir)) == 0  # the same items, live
        assert server.chat_requests == 4
    assert "targets: 2 selected, 0 already done, 2 judged now" in out
    assert "responses: ok 2" in out and "requests: 2 (0 from cache)" in out
    assert "batch batch_1: 2 request(s) in one file submitted" in out
    assert "batch batch_1 completed: HTTP requests to the Batch API: upload 1, create 1, poll" in out
    assert hits["POST /v1/files"] == 1 and hits["POST /v1/batches"] == 1
    assert hits["GET /v1/files/([^/]+)/content"] == 1  # the output file; no error file
    assert "POST /v1/chat/completions" not in hits
    (row,) = batches(judge_db)
    assert (row.batch_id, row.status, row.input_file_id) == ("batch_1", "collected", "file-1")
    assert (row.output_file_id, row.error_file_id, row.error) == ("file-2", None, None)
    assert verdicts(judge_db) == verdicts(live_db)  # parsed exactly as the live path parses
    assert {v[1] for v in verdicts(judge_db)} == {"ok"}
    batch_run, live_run = run_of(judge_db), run_of(live_db)
    assert (batch_run.prompt_tokens, batch_run.completion_tokens) == (200, 40)
    assert (live_run.prompt_tokens, live_run.completion_tokens) == (200, 40)
    live_cost = (200 * 1000 + 40 * 2000) / 1e6
    assert live_run.cost_usd == pytest.approx(live_cost)
    assert batch_run.cost_usd == pytest.approx(live_cost / 2)  # the batch price
    with session_scope(judge_db) as s:
        responses = s.exec(select(models.JudgeResponse)).all()
        assert all(r.repairs[0] == {"kind": "batch", "batch_id": "batch_1",
                                    "custom_id": r.repairs[0]["custom_id"]} for r in responses)

    # reported, aligned and tested for significance like any run
    built = report.build_report(judge_db, n_resamples=20)
    assert list(built["kappa"]["run_id"]) == [1] and int(built["kappa"]["n"].iloc[0]) == 10
    from align.__main__ import main as align_main

    both = f"sqlite:///{tmp_path / 'both.db'}"
    with closing(sqlite3.connect(make_url(judge_db).database)) as source, \
            closing(sqlite3.connect(tmp_path / "both.db")) as copy:
        source.backup(copy)  # whole, whatever is still in the WAL
    with BatchServer(lambda body: greek(body) if body["seed"] == 42 else (200, completion_body(
            answer_from_request(body, "el", accuracy_index=1)))) as server:
        assert run.main(argv(server, both, tmp_path, "--batch", "--poll-interval", "0",
                             "--seed", "7")) == 0
    out_dir = tmp_path / "align"
    assert align_main(["--db", both, "--out", str(out_dir), "--no-figures", "--resamples", "100",
                       "--slice", "all", "--significance", "kappa", "--min-items", "3"]) == 0
    pairs = pd.read_csv(out_dir / "significance.csv")
    assert len(pairs) == 1 and pairs.p_value.notna().all()  # the two batch runs compared


def test_a_run_stopped_while_waiting_collects_its_batch_without_sending_again(
        judge_db_any, tmp_path, monkeypatch, capsys):
    judge_db = judge_db_any  # SQLite and PostgreSQL
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with BatchServer(greek, per_poll=1) as server:
        polls = {"n": 0}

        def interrupt(seconds):
            polls["n"] += 1
            raise KeyboardInterrupt  # Ctrl-C (or a kill) while it waits

        monkeypatch.setattr(batch_module, "pause", interrupt)
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "5")) == 130
        err = capsys.readouterr().err
        assert "interrupted: the submitted batch is stored; run the same command" in err
        (row,) = batches(judge_db)
        assert row.batch_id == "batch_1" and row.status == "in_progress"
        monkeypatch.setattr(batch_module, "pause", lambda seconds: None)
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "5")) == 0
        out = capsys.readouterr().out
        assert "batch batch_1: resumed (submitted before; nothing sent again)" in out
        assert server.hits["POST /v1/files"] == 1 and server.hits["POST /v1/batches"] == 1
        assert server.chat_requests == 2
        assert run.main(argv(server, judge_db, tmp_path, "--batch")) == 0  # all done now
        assert "2 already done, 0 judged now" in capsys.readouterr().out
        assert server.hits["POST /v1/batches"] == 1
    assert {v[1] for v in verdicts(judge_db)} == {"ok"} and len(verdicts(judge_db)) == 10


def test_a_database_moved_while_its_batch_waits_collects_it_without_sending_again(
        judge_db, tmp_path, monkeypatch, capsys):
    """`db export` -> `db import` carries the submission (its requests by target key, not id):
    the run goes on in the new database by the stored batch id."""
    from db.__main__ import main as db_main

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    moved = f"sqlite:///{tmp_path / 'moved.db'}"
    with BatchServer(greek, per_poll=1) as server:
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--no-wait")) == 0
        (row,) = batches(judge_db)
        assert row.batch_id == "batch_1" and len(row.requests) == 2
        assert db_main(["export", "--out", str(tmp_path / "move"), "--db", judge_db]) == 0
        assert db_main(["import", "--accounts", "--account-privileges",
                        str(tmp_path / "move" / "export.jsonl"),
                        "--db", moved]) == 0
        (carried,) = batches(moved)
        assert (carried.submission, carried.batch_id, carried.status) == (
            row.submission, "batch_1", row.status)
        assert carried.requests == row.requests  # the same target ids in a fresh database
        capsys.readouterr()
        monkeypatch.setattr(batch_module, "pause", lambda seconds: None)
        assert run.main(argv(server, moved, tmp_path, "--batch", "--poll-interval", "5")) == 0
        assert "batch batch_1: resumed (submitted before; nothing sent again)" in \
            capsys.readouterr().out
        assert server.hits["POST /v1/files"] == 1 and server.hits["POST /v1/batches"] == 1
    assert {v[1] for v in verdicts(moved)} == {"ok"} and len(verdicts(moved)) == 10
    assert batches(moved)[0].status == "collected"


def test_a_batch_created_but_not_recorded_is_found_by_its_submission_id(judge_db, tmp_path,
                                                                        monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    create = batch_module.BatchApi.create

    def create_then_die(self, file_id, metadata):
        create(self, file_id, metadata)  # the provider has it ...
        raise KeyboardInterrupt  # ... but the process dies before storing its id

    with BatchServer(greek) as server:
        monkeypatch.setattr(batch_module.BatchApi, "create", create_then_die)
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--no-wait")) == 130
        (row,) = batches(judge_db)
        assert row.batch_id is None and row.input_file_id == "file-1"
        monkeypatch.setattr(batch_module.BatchApi, "create", create)
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "0")) == 0
        assert server.hits["POST /v1/batches"] == 1 and server.hits["POST /v1/files"] == 1
        assert server.chat_requests == 2
    assert {v[1] for v in verdicts(judge_db)} == {"ok"}


def test_failed_lines_and_an_expired_batch_are_verdicts_of_their_own(judge_db, tmp_path,
                                                                     monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")

    def refuse_the_add_target(body):  # the first target's line fails, the other is answered
        if "Προσθέτει" in body["messages"][-1]["content"]:
            return 400, {"error": {"message": "Invalid value for 'temperature'", "type": "x"}}
        return greek(body)

    with BatchServer(refuse_the_add_target, per_poll=2) as server:
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "0")) == 0
        assert server.hits["GET /v1/files/([^/]+)/content"] == 2  # output and error files
        out = capsys.readouterr().out
        assert "responses: batch_error 1, ok 1" in out
        with session_scope(judge_db) as s:
            failed = s.exec(select(models.JudgeResponse).where(
                models.JudgeResponse.status == "batch_error")).one()
            assert failed.error == "batch: HTTP 400: Invalid value for 'temperature'"
        assert sorted({v[1] for v in verdicts(judge_db)}) == ["batch_error", "ok"]
        (row,) = batches(judge_db)  # both files kept with the submission
        assert row.output_file_id and row.error_file_id and row.output_file_id != row.error_file_id

        # the next run asks again for the failed target only; its batch expires unanswered
        server.answer, server.per_poll, server.expire_after = greek, 0, 1
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "0")) == 1
        second = batches(judge_db)[1]
        lines = server.files[second.input_file_id]["content"].decode().splitlines()
        assert len(lines) == 1 and "Προσθέτει" in json.loads(lines[0])["body"]["messages"][-1][
            "content"]
        out = capsys.readouterr().out
    assert "1 already done, 1 judged now" in out and "responses: expired 1" in out
    assert sorted({v[1] for v in verdicts(judge_db)}) == ["expired", "ok"]
    # as OpenAI writes it: the request the batch never ran is a line of its error file
    error_file = server.files[batches(judge_db)[1].error_file_id]["content"].decode()
    assert json.loads(error_file)["error"]["code"] == "batch_expired"
    with session_scope(judge_db) as s:
        expired = s.exec(select(models.JudgeResponse).where(
            models.JudgeResponse.status == "expired")).one()
        assert expired.error == ("batch: batch_expired: This request could not be executed "
                                 "before the completion window expired.")
    built = report.build_report(judge_db, n_resamples=0)
    rates = built["failure_rates"].iloc[0]
    assert (rates["expired"], rates["ok"]) == (5, 5)
    assert rates["parse_failure_rate"] == 0.0  # no answer came: not a parse failure


def test_a_batch_that_fails_validation_keeps_every_request_as_a_batch_error(judge_db, tmp_path,
                                                                           monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with BatchServer(greek, invalid="the model judge-test does not support batches") as server:
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "0")) == 1
    assert "responses: batch_error 2" in capsys.readouterr().out
    with session_scope(judge_db) as s:
        errors = {r.error for r in s.exec(select(models.JudgeResponse)).all()}
    assert errors == {"the batch batch_1 failed: invalid_request: the model judge-test does not "
                      "support batches"}
    (row,) = batches(judge_db)
    assert row.error == "invalid_request: the model judge-test does not support batches"


def test_a_batch_created_but_not_recorded_is_found_past_the_first_page_of_batches(
        judge_db, tmp_path, monkeypatch, capsys):
    """OpenAI lists an account's batches 20 (at most 100) at a time: with 150 batches made since
    (other jobs on the account), the resume pages through and creates nothing twice."""
    import openai

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    create = batch_module.BatchApi.create

    def create_then_die(self, file_id, metadata):
        create(self, file_id, metadata)
        raise KeyboardInterrupt

    with BatchServer(greek) as server:
        monkeypatch.setattr(batch_module.BatchApi, "create", create_then_die)
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--no-wait")) == 130
        monkeypatch.setattr(batch_module.BatchApi, "create", create)
        other = openai.OpenAI(api_key="test", base_url=server.base_url)
        empty = other.files.create(file=("other.jsonl", b""), purpose="batch")
        for _ in range(150):
            other.batches.create(input_file_id=empty.id, endpoint="/v1/chat/completions",
                                 completion_window="24h")
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "0")) == 0
        assert server.hits["POST /v1/batches"] == 151  # ours once, and the other 150
        assert server.hits["GET /v1/batches"] == 2  # the second page held it
        assert server.chat_requests == 2
    assert "batch batch_1: resumed" in capsys.readouterr().out
    assert {v[1] for v in verdicts(judge_db)} == {"ok"}


def test_a_reasoning_model_is_batched_with_max_completion_tokens(judge_db, tmp_path,
                                                                  monkeypatch, capsys):
    """o-series and gpt-5 models reject max_tokens (the stand-in does, as OpenAI documents): the
    batch's lines carry max_completion_tokens, as the live path's requests do."""
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with BatchServer(greek) as server:
        args = argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "0")
        args[args.index("judge-test")] = "o3-mini"
        assert run.main(args) == 0
        lines = server.files["file-1"]["content"].decode().splitlines()
    assert "responses: ok 2" in capsys.readouterr().out
    bodies = [json.loads(line)["body"] for line in lines]
    assert [b.get("max_completion_tokens") for b in bodies] == [10_000, 10_000]
    assert not any("max_tokens" in b for b in bodies)


def test_a_batch_endpoint_that_rejects_max_tokens_gets_max_completion_tokens_next_time(
        judge_db, tmp_path, monkeypatch, capsys):
    """A deployment whose name says nothing (Azure's are the user's): the error lines teach
    what the live path learns from its 400, and the next run sends it."""
    from testing.batch_server import UNSUPPORTED_MAX_TOKENS

    monkeypatch.setenv("OPENAI_API_KEY", "test")

    def deployment(body):
        return (400, UNSUPPORTED_MAX_TOKENS) if "max_tokens" in body else greek(body)

    with BatchServer(deployment) as server:
        args = argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "0")
        assert run.main(args) == 1
        out = capsys.readouterr().out
        assert "responses: batch_error 2" in out
        assert "2 request(s) rejected max_tokens for max_completion_tokens: the next run" in out
        assert run.main(args) == 0
        second = batches(judge_db)[1]
        lines = server.files[second.input_file_id]["content"].decode().splitlines()
    assert "responses: ok 2" in capsys.readouterr().out
    assert {json.loads(line)["body"]["max_completion_tokens"] for line in lines} == {10_000}


@pytest.mark.e2e  # a process killed with SIGKILL while it waits (in-process sibling: Ctrl-C above)
def test_a_process_killed_while_waiting_resumes_by_the_stored_batch_id(judge_db, tmp_path,
                                                                       monkeypatch):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    with BatchServer(greek, per_poll=0) as server:  # stays in progress until told otherwise
        args = argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "0.1")
        env = {**os.environ, "OPENAI_API_KEY": "test", "PYTHONPATH": str(repo)}
        proc = subprocess.Popen([sys.executable, "-m", "judges.run", *args], cwd=repo, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while (server.hits["GET /v1/batches/([^/]+)"] < 2 and proc.poll() is None
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            assert server.hits["GET /v1/batches/([^/]+)"] >= 2, proc.stderr.read()
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        (row,) = batches(judge_db)
        assert row.batch_id == "batch_1" and row.status == "in_progress"
        server.per_poll = 5
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        assert run.main(args) == 0
        assert server.hits["POST /v1/files"] == 1 and server.hits["POST /v1/batches"] == 1
        assert server.chat_requests == 2
    assert {v[1] for v in verdicts(judge_db)} == {"ok"} and len(verdicts(judge_db)) == 10


def test_an_endpoint_without_a_batch_api_stops_in_one_line(judge_db, tmp_path, monkeypatch,
                                                          capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with BatchServer(greek, batch_api=False) as server:
        command = as_command(run.main, "python -m judges.run")
        assert command(argv(server, judge_db, tmp_path, "--batch")) == 1
        assert server.chat_requests == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: stopped: http://127.0.0.1:")
    assert "has no Batch API (upload: HTTP 404); run without --batch" in err
    assert batches(judge_db) == [] or all(b.batch_id is None for b in batches(judge_db))


def test_a_schema_the_batch_endpoint_rejects_is_sent_in_the_form_it_takes_next_time(
        judge_db, tmp_path, monkeypatch, capsys):
    # as llama-cpp-python answers OpenAI's json_schema form: HTTP 500 naming json_object
    monkeypatch.setenv("OPENAI_API_KEY", "test")

    def llama_like(body):
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return 500, {"error": {"message": "response_format type must be one of 'text' or "
                                              "'json_object', but got: json_schema"}}
        return greek(body)

    with BatchServer(llama_like) as server:
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "0")) == 1
        assert "responses: batch_error 2" in capsys.readouterr().out
        assert run.main(argv(server, judge_db, tmp_path, "--batch", "--poll-interval", "0")) == 0
        second = batches(judge_db)[1]
        lines = server.files[second.input_file_id]["content"].decode().splitlines()
        assert {json.loads(line)["body"]["response_format"]["type"] for line in lines} == {
            "json_object"}  # the same schema, as the server's grammar
    assert "responses: ok 2" in capsys.readouterr().out
    assert {v[1] for v in verdicts(judge_db)} == {"ok"}


@pytest.mark.parametrize("status, message, rejected, json_object", [
    (500, "response_format type must be one of 'text' or 'json_object', but got: json_schema",
     True, True),
    (400, "This model does not support structured outputs with json_schema.", True, False),
    (400, "Invalid value for 'temperature'.", False, False),
    (429, "Rate limit reached for response_format requests", False, False),
])
def test_an_error_line_names_a_rejected_structured_output_as_the_live_path_does(
        status, message, rejected, json_object):
    """A batch's error line is read with the live path's rule (client.mentions_response_format
    on the whole message, for HTTP 400, 422 and 5xx): the next batch then sends the fallback."""
    record = {"custom_id": "r1", "response": {"status_code": status,
                                              "body": {"error": {"message": message}}}}
    result = batch_module.line_result(record, "batch_1")
    assert result.error.startswith(f"batch: HTTP {status}: ")
    assert (result.structured_rejected, result.json_object_offered) == (rejected, json_object)
