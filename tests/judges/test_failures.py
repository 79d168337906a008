"""Endpoints that misbehave, through the CLI as an experimenter runs it: a failure must look like
one (one line on stderr, exit status 1, nothing half-written), and a dead endpoint must not be
asked again for every remaining request."""
from __future__ import annotations

import time

from judge_testkit import answer_from_request, dead_url, llama_cpp_python_like, reply
from sqlmodel import select

from db import models
from db.engine import session_scope
from judges import run


def argv_for(base_url, db_url, tmp_path, *extra, strategy="standard"):
    return ["--model", "judge-test", "--strategy", strategy, "--lang", "el", "--base-url",
            base_url, "--db", db_url, "--cache", str(tmp_path / "cache.sqlite3"), "--quiet",
            *extra]


def stored(db_url):
    with session_scope(db_url) as s:
        runs = s.exec(select(models.JudgeRun).order_by(models.JudgeRun.id)).all()
        responses = s.exec(select(models.JudgeResponse).order_by(models.JudgeResponse.id)).all()
        s.expunge_all()
    return runs, responses


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_an_unreachable_endpoint_stops_the_run_at_once(judge_db, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    started = time.monotonic()
    code = run.main(argv_for(dead_url(), judge_db, tmp_path, strategy="hierarchical"))
    elapsed = time.monotonic() - started
    captured = capsys.readouterr()
    assert code == 1
    assert "cannot reach http://127.0.0.1:" in one_error_line(captured.err)
    assert "0 judged now" in captured.out
    assert elapsed < 10  # one retry, not 5 retries x 7 clusters x 2 targets
    _, responses = stored(judge_db)
    assert responses == []  # nothing half-written: the targets are asked on the next run


def test_a_refused_key_stops_the_run_after_one_request(judge_db, chat_server, tmp_path,
                                                       monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "wrong-key")
    chat_server.responder = lambda request: reply("Incorrect API key provided", status=401)
    code = run.main(argv_for(chat_server.base_url, judge_db, tmp_path, strategy="hierarchical"))
    line = one_error_line(capsys.readouterr().err)
    assert code == 1 and "refused the API key (HTTP 401)" in line and "wrong-key" not in line
    assert chat_server.calls == 1


def test_repeated_server_errors_stop_after_three_requests(judge_db, chat_server, tmp_path,
                                                          monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    chat_server.responder = lambda request: reply("overloaded", status=503)
    code = run.main(argv_for(chat_server.base_url, judge_db, tmp_path, "--max-retries", "1",
                             strategy="hierarchical"))
    line = one_error_line(capsys.readouterr().err)
    assert code == 1 and "3 requests in a row" in line and "HTTP 503" in line
    assert chat_server.calls == 3 * 2  # 3 requests, each tried twice; not 7 x 2 targets


def test_a_run_where_every_request_failed_exits_non_zero(judge_db, chat_server, tmp_path,
                                                         monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    chat_server.responder = lambda request: reply("{'not': json")
    code = run.main(argv_for(chat_server.base_url, judge_db, tmp_path))
    captured = capsys.readouterr()
    assert code == 1 and "responses: parse_error 2" in captured.out
    line = one_error_line(captured.err)
    assert "none of the 2 requests was answered ok (most often, 2 of 2: no JSON object found " \
           "in the response); see `python -m judges.report`" in line


def test_a_malformed_json_body_is_an_api_error_not_a_traceback(judge_db, chat_server, tmp_path,
                                                               monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    broken = reply(raw=b'{"id": "x", "choices": [{"message": ')
    chat_server.script = [broken, broken]
    chat_server.responder = lambda request: reply(answer_from_request(request, "el"))
    code = run.main(argv_for(chat_server.base_url, judge_db, tmp_path, "--max-retries", "0",
                             "--limit", "1"))
    assert code == 1 and "Traceback" not in capsys.readouterr().err
    _, (response,) = stored(judge_db)
    assert response.status == "api_error" and "malformed response body" in response.error
    # the next run asks again (api_error) and, retrying once, gets past a single broken body
    code = run.main(argv_for(chat_server.base_url, judge_db, tmp_path, "--max-retries", "1",
                             "--limit", "1"))
    assert code == 0
    _, (response,) = stored(judge_db)
    assert response.status == "ok"
    assert [r["reason"] for r in response.repairs if r["kind"] == "retry"] == [
        "malformed response body"]


def test_a_llama_cpp_python_server_works_with_the_defaults(judge_db, chat_server, tmp_path,
                                                           monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")

    def answer(request):
        return reply(answer_from_request(request, "el"), delay=0.05)

    chat_server.responder = llama_cpp_python_like(answer)
    code = run.main(argv_for(chat_server.base_url, judge_db, tmp_path))
    assert code == 0, capsys.readouterr().err
    formats = [r["response_format"]["type"] for r in chat_server.requests]
    # the OpenAI form rejected once, then llama-cpp-python's own form (a grammar from the schema)
    assert formats == ["json_schema", "json_object", "json_object"]
    assert all(r["response_format"]["schema"] for r in chat_server.requests[1:])
    assert chat_server.max_in_flight == 1  # a server on this machine: one request at a time
    runs, responses = stored(judge_db)
    assert [r.status for r in responses] == ["ok", "ok"]
    assert "structured_fallback" not in runs[0].params  # constrained, not plain JSON


def test_an_answer_echoing_the_example_is_stored_as_a_parse_error(judge_db, chat_server,
                                                                  tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")

    def echo_the_example(request):  # what a small model does: copy the shown format
        user = request["messages"][-1]["content"]
        return reply(user.rsplit("```json\n", 1)[1].split("\n```")[0].replace(
            "Λανθασμένο | Μερικώς σωστό | Σωστό", "Σωστό"))

    chat_server.responder = echo_the_example
    code = run.main(argv_for(chat_server.base_url, judge_db, tmp_path, "--limit", "1"))
    assert code == 1
    _, (response,) = stored(judge_db)
    assert response.status == "parse_error" and "echoes the example" in response.error


def test_an_answer_cut_off_without_a_finish_reason_is_truncated(judge_db, chat_server, tmp_path,
                                                                monkeypatch, capsys):
    # a proxy or server that drops the end of the body and says nothing of why: the first
    # prediction's object is complete, the document is not
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")

    def cut(request):
        whole = answer_from_request(request, "el")
        return reply(whole[:whole.index('"P2"') + 10], finish_reason=None)

    chat_server.responder = cut
    code = run.main(argv_for(chat_server.base_url, judge_db, tmp_path, "--limit", "1"))
    assert code == 1  # nothing was answered ok
    _, (response,) = stored(judge_db)
    assert response.status == "truncated" and "cut off" in response.error
    with session_scope(judge_db) as s:
        statuses = {v.status for v in s.exec(select(models.JudgeVerdict)).all()}
    assert statuses == {"truncated"}  # P1's complete object is not read as ok


# llama-cpp-python's server (and OpenAI's, vLLM's) refusal of a prompt longer than the context
TOO_LONG = ("This model's maximum context length is 8192 tokens. However, you requested {} "
            "tokens ({} in the messages, 10000 in the completion). Please reduce the length of "
            "the messages or completion.")


def refuse_long_prompts(only=None):
    """Refuses every prompt as too long (or only those holding the text `only`)."""
    def respond(request):
        size = sum(len(m["content"]) for m in request["messages"])
        if only is None or only in request["messages"][-1]["content"]:
            return reply(TOO_LONG.format(size // 2 + 10000, size // 2), status=400)
        return reply(answer_from_request(request, "el"))
    return respond


def test_prompts_longer_than_the_context_are_refused_in_one_line_with_the_ways_out(
        judge_db, chat_server, tmp_path, monkeypatch, capsys):
    """Greek prompts for a small model (the packaged SmolLM2 served with an 8,192-token
    context): every request ended api_error, stored, and the run's last line pointed to a
    report that showed only counts. Now nothing is stored, and one line says why and how."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    chat_server.responder = refuse_long_prompts()
    code = run.main(argv_for(chat_server.base_url, judge_db, tmp_path))
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert code == 2 and chat_server.calls == 2  # each prompt refused once, not retried
    assert line.startswith("error: 2 prompt(s) do not fit judge-test's context of 8,192 tokens "
                           "(the longest: ")
    assert "ways out: an English prompt, --prompt-lang en; or a model or server with a longer " \
           "context" in line
    assert "run: none stored (no answer came)" in captured.out
    assert stored(judge_db) == ([], [])  # nothing answered, nothing stored: asked again later


def test_a_prompt_that_fits_with_no_room_for_the_answer_asks_for_fewer_output_tokens(
        judge_db, chat_server, tmp_path, monkeypatch, capsys):
    """vLLM and OpenAI count the prompt and --max-tokens together."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    chat_server.responder = lambda request: reply(TOO_LONG.format(15000, 5000), status=400)
    assert run.main(argv_for(chat_server.base_url, judge_db, tmp_path, "--prompt-lang",
                             "en")) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == ("error: 2 prompt(s) of up to 5,000 tokens leave no room in judge-test's "
                    "context of 8,192 tokens for an answer of --max-tokens 10,000: give "
                    "--max-tokens 3,191 or less")


def test_prompts_that_fit_are_judged_and_the_others_named(judge_db, chat_server, tmp_path,
                                                         monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    chat_server.responder = refuse_long_prompts(only="Προσθέτει")  # the first target's
    assert run.main(argv_for(chat_server.base_url, judge_db, tmp_path)) == 0
    out = capsys.readouterr().out
    assert "targets: 2 selected, 0 already done, 1 judged now" in out
    assert "responses: ok 1" in out and "not sent: 1 prompt(s) do not fit" in out
    runs, responses = stored(judge_db)
    assert len(runs) == 1 and [r.status for r in responses] == ["ok"]
