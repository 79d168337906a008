"""A real judge on this machine: llama-cpp-python's server on the packaged SmolLM2 GGUF
(`judges.serve`), driven by judges.run as an experimenter would. One server for the session;
every request costs CPU seconds, so each test sends at most one chat request."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from sqlmodel import select

from db import models
from db.engine import session_scope
from judges import run
from judges.serve import LocalJudgeServer, ServeError, failure_line

N_CTX = 8192  # SmolLM2's context: the English rubric prompt (~4.8k tokens) fits, Greek (~17k) not


@pytest.fixture(scope="session")
def smollm2_server():
    with LocalJudgeServer("smollm2", n_ctx=N_CTX, threads=2) as server:
        yield server


def judge(server, db_url, *extra):
    return run.main(["--model", "smollm2", "--strategy", "rubric", "--lang", "el",
                     "--base-url", server.base_url, "--db", db_url, "--no-cache", "--quiet",
                     "--limit", "1", *extra])


def responses(db_url):
    with session_scope(db_url) as s:
        rows = s.exec(select(models.JudgeResponse)).all()
        verdicts = s.exec(select(models.JudgeVerdict)).all()
        s.expunge_all()
    return rows, verdicts


def test_constrained_output_from_the_real_server_parses(smollm2_server, judge_db, monkeypatch,
                                                        capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    code = judge(smollm2_server, judge_db, "--prompt-lang", "en", "--max-tokens", "400")
    (response,), verdicts = responses(judge_db)
    kinds = [r["kind"] for r in response.repairs]
    # llama-cpp-python rejects OpenAI's json_schema form; the same schema goes as its grammar
    assert "json_object_schema_used" in kinds and "plain_json_fallback" not in kinds
    assert response.prompt_tokens > 4000 and response.status != "api_error"
    if response.status != "truncated":  # grammar-constrained: valid JSON of the schema's shape
        payload = json.loads(response.raw_response)
        assert len(next(iter(payload.values()))) == 5
        assert code == 0 and response.status == "ok"
    assert len(verdicts) == 5


@pytest.mark.parametrize("given", [(), ("--context-tokens", str(N_CTX))],
                         ids=["context-from-the-server", "context-given"])
def test_a_prompt_longer_than_the_context_is_refused_before_sending(smollm2_server, judge_db,
                                                                    monkeypatch, capsys, given):
    """The Greek rubric prompt (~17k SmolLM2 tokens) against an 8,192-token context: counted
    with the server's tokenizer before it is sent (the context as judges.serve's model list
    says it, or as given), refused in one line with the ways out, nothing stored."""
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    started = time.monotonic()
    code = judge(smollm2_server, judge_db, *given)
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"error: 1 prompt(s) do not fit smollm2's context of {N_CTX:,} tokens "
                          "(the longest: ")
    assert "ways out: an English prompt, --prompt-lang en (this prompt: " in err
    if not given:  # the server is judges.serve's: it says which setting gives a longer context
        assert "or a longer context, python -m judges.serve --n-ctx " in err
    assert responses(judge_db) == ([], [])  # nothing sent, nothing stored
    assert elapsed < 30  # a token count, not a 17k-token prompt evaluation


@pytest.mark.slow  # the command loads SmolLM2 into llama.cpp
def test_serve_prints_the_url_and_stops_on_term():
    process = subprocess.Popen([sys.executable, "-m", "judges.serve", "--n-ctx", "256",
                                "--port", "0", "--threads", "1"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), process.stderr.read()
        with urllib.request.urlopen(f"{url}/models", timeout=10) as answer:
            (model,) = json.loads(answer.read())["data"]
        assert model["id"] == "smollm2" and model["max_model_len"] == 256  # its --n-ctx
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()


def test_a_server_that_cannot_start_says_why_in_one_line(tmp_path):
    not_a_model = tmp_path / "broken.gguf"
    not_a_model.write_text("not a GGUF file")
    server = LocalJudgeServer("smollm2", n_ctx=256, threads=1)
    server.path = not_a_model
    with pytest.raises(ServeError) as failure:
        server.start()
    message = str(failure.value)
    assert "\n" not in message and str(not_a_model) in message and "Failed to load" in message


def test_the_failure_line_is_the_exception_not_llama_cpps_teardown_log():
    # shaped like the real log of a server that ran out of memory at start: llama.cpp frees its
    # buffers (and logs it) after Python printed the traceback
    log = ("llama_context: n_ctx = 32768\n"
           "Traceback (most recent call last):\n"
           '  File "llama_cpp/llama.py", line 484, in __init__\n'
           "    self.scores = np.ndarray(\n"
           "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 32.0 GiB\n"
           "~llama_context:        CPU compute buffer size is 514.5020 MiB\n")
    assert failure_line(log) == "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 32.0 GiB"
    assert failure_line("only a log line\n") == "only a log line"
    assert failure_line("") == "?"
