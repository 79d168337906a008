"""What a run and a cached answer are keyed on (the endpoint too), redoing parse failures, and
the tokens of a run killed in the middle of a target."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from judge_testkit import ChatServer, answer_from_request, reply
from sqlmodel import select

from db import models
from db.engine import session_scope
from judges import report, run

REPO = Path(__file__).resolve().parents[2]


def argv_for(base_url, db_url, cache, *extra, strategy="standard"):
    return ["--model", "judge-test", "--strategy", strategy, "--lang", "el", "--base-url",
            base_url, "--db", db_url, "--cache", str(cache), "--quiet", *extra]


def runs_of(db_url):
    with session_scope(db_url) as s:
        runs = s.exec(select(models.JudgeRun).order_by(models.JudgeRun.id)).all()
        s.expunge_all()
    return runs


def statuses_of(db_url):
    with session_scope(db_url) as s:
        return [r.status for r in s.exec(select(models.JudgeResponse)
                                         .order_by(models.JudgeResponse.target_id))]


def valid(request):
    return reply(answer_from_request(request, "el"))


def test_runs_and_cached_answers_are_keyed_on_the_endpoint(judge_db, chat_server, tmp_path,
                                                           monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    cache = tmp_path / "cache.sqlite3"
    chat_server.responder = valid
    assert run.main(argv_for(chat_server.base_url, judge_db, cache)) == 0
    assert chat_server.calls == 2
    # the same endpoint spelled differently: the same run, answered from the cache
    port = chat_server.httpd.server_address[1]
    assert run.main(argv_for(f"HTTP://127.0.0.1:{port}/v1/", judge_db, cache)) == 0
    assert chat_server.calls == 2 and len(runs_of(judge_db)) == 1
    # another server under the same model name: its own run, asked afresh
    with ChatServer() as other:
        other.responder = valid
        assert run.main(argv_for(other.base_url, judge_db, cache)) == 0
        assert other.calls == 2
    runs = runs_of(judge_db)
    assert len(runs) == 2 and runs[0].signature != runs[1].signature
    assert [r.params["endpoint"] for r in runs] == [chat_server.base_url, other.base_url]


def test_redo_asks_again_for_parse_failures_past_the_cache(judge_db, chat_server, tmp_path,
                                                           monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    cache = tmp_path / "cache.sqlite3"
    chat_server.script = [reply("{'not': json")]
    chat_server.responder = valid
    assert run.main(argv_for(chat_server.base_url, judge_db, cache, "--concurrency", "1")) == 0
    assert sorted(statuses_of(judge_db)) == ["ok", "parse_error"]
    assert run.main(argv_for(chat_server.base_url, judge_db, cache)) == 0
    assert chat_server.calls == 2  # without --redo a parse failure is a finished answer
    assert run.main(argv_for(chat_server.base_url, judge_db, cache, "--redo", "parse_error")) == 0
    assert chat_server.calls == 3  # only the failed target, and not from the cache
    assert statuses_of(judge_db) == ["ok", "ok"]


def test_tokens_answered_before_a_kill_are_counted_once(judge_db, chat_server, tmp_path,
                                                        monkeypatch):
    """A hierarchical target is 7 requests; the process is killed after 4 were answered. The
    run must have paid for those 4, and the resumed run (answered from the cache for them)
    for the other 3: 7 x 100 prompt tokens, 7 x 20 completion tokens in all."""
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  judge-test: {input_per_mtok: 1000, output_per_mtok: 2000}\n")
    cache = tmp_path / "cache.sqlite3"
    answered = []

    def answer_four_then_hang(request):
        answered.append(1)
        if len(answered) <= 4:
            return valid(request)
        return reply(answer_from_request(request, "el"), delay=30)

    chat_server.responder = answer_four_then_hang
    argv = argv_for(chat_server.base_url, judge_db, cache, "--limit", "1", "--prices",
                    str(prices), strategy="hierarchical")
    env = {**os.environ, "OPENAI_API_KEY": "test-key", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "judges.run", *argv], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while chat_server.calls < 5 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert chat_server.calls == 5, proc.stderr.read() if proc.poll() is not None else ""
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    (killed,) = runs_of(judge_db)
    assert (killed.prompt_tokens, killed.completion_tokens) == (400, 80)
    assert statuses_of(judge_db) == []  # the target itself was not finished

    chat_server.responder = valid
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    assert run.main(argv) == 0
    assert chat_server.calls == 5 + 3  # the 4 answered requests come from the cache
    (resumed,) = runs_of(judge_db)
    assert (resumed.prompt_tokens, resumed.completion_tokens) == (700, 140)
    assert abs(resumed.cost_usd - (700 * 1000 + 140 * 2000) / 1e6) < 1e-9


def test_a_run_without_a_price_is_stored_with_its_first_answer_and_an_unknown_cost(
        judge_db, chat_server, tmp_path):
    """While the judge is still thinking nothing is stored (a run is stored with what comes
    back: an endpoint that never answers leaves no empty run); stored, a run whose model has
    no price reads as unknown, never as a false $0."""
    chat_server.responder = lambda request: reply(answer_from_request(request, "el"), delay=3)
    argv = argv_for(chat_server.base_url, judge_db, tmp_path / "cache.sqlite3", "--limit", "1")
    env = {**os.environ, "OPENAI_API_KEY": "test-key", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "judges.run", *argv], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while chat_server.calls < 1 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert chat_server.calls == 1, proc.stderr.read() if proc.poll() is not None else ""
        assert runs_of(judge_db) == []  # the answer is on its way
        assert proc.wait(timeout=120) == 0
        (stored,) = runs_of(judge_db)
        assert stored.cost_usd is None and stored.prompt_tokens == 100
        with session_scope(judge_db) as s:
            assert report.run_settings(s)["cost_usd"].isna().all()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
