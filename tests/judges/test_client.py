"""The client against a real local HTTP server speaking the chat-completions protocol."""
from __future__ import annotations

import time

import pytest
from judge_testkit import reply

from judges.api_key import read_api_key
from judges.cache import ResponseCache
from judges.client import (
    EndpointUnusable,
    JudgeClient,
    OpenAIBackend,
    SamplingParams,
    backoff_seconds,
    retry_after_seconds,
)

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
          "additionalProperties": False}


def make_client(server, tmp_path=None, structured="auto", **kw):
    backend = OpenAIBackend("judge-test", SamplingParams(max_tokens=123), base_url=server.base_url,
                            api_key="test-key", timeout_s=kw.pop("timeout_s", 5),
                            max_retries=kw.pop("max_retries", 3), backoff_base_s=0.01,
                            backoff_cap_s=0.05, **kw)
    cache = ResponseCache(tmp_path / "cache.sqlite3") if tmp_path else None
    return JudgeClient(backend, cache, structured)


def test_request_carries_the_sampling_parameters_and_the_schema(chat_server):
    chat_server.script = [reply('{"a": "b"}')]
    result = make_client(chat_server).complete(MESSAGES, SCHEMA)
    assert result.error is None and result.content == '{"a": "b"}'
    assert (result.prompt_tokens, result.completion_tokens, result.finish_reason) == (100, 20, "stop")
    sent = chat_server.requests[0]
    assert sent["temperature"] == 0 and sent["seed"] == 42 and sent["max_tokens"] == 123
    assert sent["messages"] == MESSAGES
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA


def test_429_then_success_waits_at_least_retry_after(chat_server):
    chat_server.script = [reply(status=429, headers={"Retry-After": "1"}), reply("{}")]
    started = time.monotonic()
    result = make_client(chat_server).complete(MESSAGES, None)
    assert time.monotonic() - started >= 1.0
    assert result.error is None and result.attempts == 2 and chat_server.calls == 2
    (retry,) = result.notes
    assert retry["kind"] == "retry" and retry["reason"] == "HTTP 429" and retry["retry_after_s"] == 1.0


def test_500_is_retried_with_backoff_then_gives_up(chat_server):
    chat_server.script = [reply(status=500)] * 3
    result = make_client(chat_server, max_retries=2).complete(MESSAGES, None)
    assert chat_server.calls == 3
    assert result.error.startswith("gave up after 3 attempts; last HTTP 500")
    assert [n["reason"] for n in result.notes] == ["HTTP 500", "HTTP 500"]


def test_a_client_error_is_not_retried(chat_server):
    chat_server.script = [reply("bad model", status=404)]
    result = make_client(chat_server).complete(MESSAGES, None)
    assert chat_server.calls == 1 and result.error.startswith("HTTP 404")


def test_timeout_is_retried(chat_server):
    chat_server.script = [reply("{}", delay=1.5), reply('{"ok": 1}')]
    result = make_client(chat_server, timeout_s=0.5).complete(MESSAGES, None)
    assert result.error is None and result.content == '{"ok": 1}'
    assert result.notes[0]["reason"] == "timeout"


def test_structured_output_rejection_falls_back_to_plain_json_and_is_remembered(chat_server, tmp_path):
    chat_server.script = [reply("response_format json_schema is not supported", status=400),
                          reply('{"a": "b"}'), reply('{"a": "c"}')]
    client = make_client(chat_server, tmp_path)
    first = client.complete(MESSAGES, SCHEMA)
    assert first.content == '{"a": "b"}'
    assert any(n["kind"] == "plain_json_fallback" for n in first.notes)
    assert "response_format" in chat_server.requests[0]
    assert "response_format" not in chat_server.requests[1]
    other = [{"role": "user", "content": "another"}]
    second = client.complete(other, SCHEMA)  # no second rejected attempt
    assert chat_server.calls == 3 and "response_format" not in chat_server.requests[2]
    assert any(n["kind"] == "plain_json_fallback" for n in second.notes)
    # a new client (a re-run) remembers the rejection through the cache: zero HTTP calls
    again = make_client(chat_server, tmp_path).complete(MESSAGES, SCHEMA)
    assert again.cached and again.content == '{"a": "b"}' and chat_server.calls == 3


def test_structured_on_does_not_fall_back(chat_server):
    chat_server.script = [reply("response_format is not supported", status=400)]
    result = make_client(chat_server, structured="on").complete(MESSAGES, SCHEMA)
    assert result.error and result.structured_rejected and chat_server.calls == 1


def test_structured_off_sends_no_schema(chat_server):
    chat_server.script = [reply("{}")]
    make_client(chat_server, structured="off").complete(MESSAGES, SCHEMA)
    assert "response_format" not in chat_server.requests[0]


def test_cache_answers_a_repeat_without_a_call_and_keys_on_parameters(chat_server, tmp_path):
    chat_server.script = [reply('{"x": 1}'), reply('{"x": 2}')]
    client = make_client(chat_server, tmp_path)
    assert client.complete(MESSAGES, None).cached is False
    hit = client.complete(MESSAGES, None)
    assert hit.cached and hit.content == '{"x": 1}' and chat_server.calls == 1
    assert hit.prompt_tokens == 100
    backend = OpenAIBackend("judge-test", SamplingParams(seed=7, max_tokens=123),
                            base_url=chat_server.base_url, api_key="k")
    other = JudgeClient(backend, ResponseCache(tmp_path / "cache.sqlite3"))
    assert other.complete(MESSAGES, None).content == '{"x": 2}' and chat_server.calls == 2


def test_errors_are_not_cached(chat_server, tmp_path):
    chat_server.script = [reply(status=404), reply('{"x": 1}')]
    client = make_client(chat_server, tmp_path)
    assert client.complete(MESSAGES, None).error
    assert client.complete(MESSAGES, None).content == '{"x": 1}'


def test_retry_after_formats_and_backoff_bounds():
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after_seconds({}) is None
    import random
    rng = random.Random(0)
    waits = [backoff_seconds(a, 1.0, 8.0, rng) for a in range(6)]
    assert all(0.5 * min(8, 2 ** a) <= w <= min(8, 2 ** a) for a, w in enumerate(waits))


def test_api_key_from_env_or_secrets_file(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("NLCE_SECRETS_FILE", raising=False)
    assert read_api_key() is None
    secrets = tmp_path / "secrets.env"
    secrets.write_text("# keys\nOPENAI_API_KEY='sk-file'\n")
    assert read_api_key(str(secrets)) == "sk-file"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert read_api_key(str(secrets)) == "sk-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    (tmp_path / "bad.env").write_text("A=1\nB=2\n")
    with pytest.raises(ValueError, match="no OPENAI_API_KEY"):
        read_api_key(str(tmp_path / "bad.env"))


def test_max_completion_tokens_when_the_endpoint_asks_for_it(chat_server):
    chat_server.script = [reply("Unsupported parameter: 'max_tokens' is not supported with this "
                                "model. Use 'max_completion_tokens' instead.", status=400),
                          reply("{}"), reply("{}")]
    client = make_client(chat_server, max_retries=0)  # a parameter switch is not a retry
    result = client.complete(MESSAGES, None)
    assert result.error is None and result.notes == [{"kind": "max_completion_tokens_used"}]
    assert "max_tokens" not in chat_server.requests[1]
    assert chat_server.requests[1]["max_completion_tokens"] == 123
    client.complete([{"role": "user", "content": "next"}], None)  # remembered: one call
    assert chat_server.calls == 3 and chat_server.requests[2]["max_completion_tokens"] == 123


def test_the_learnt_token_parameter_is_kept_for_the_next_run(chat_server, tmp_path):
    chat_server.script = [reply("Unsupported parameter: 'max_tokens' is not supported with this "
                                "model. Use 'max_completion_tokens' instead.", status=400),
                          reply("{}"), reply("{}")]
    assert make_client(chat_server, tmp_path).complete(MESSAGES, None).error is None
    again = make_client(chat_server, tmp_path)  # the next run: the same cache file
    again.complete([{"role": "user", "content": "other"}], None)
    assert chat_server.calls == 3 and "max_tokens" not in chat_server.requests[2]
    assert chat_server.requests[2]["max_completion_tokens"] == 123


@pytest.mark.parametrize("model, parameter", [
    ("o3-mini", "max_completion_tokens"), ("o1", "max_completion_tokens"),
    ("gpt-5-mini-2025-08-07", "max_completion_tokens"), ("openai/o4-mini", "max_completion_tokens"),
    ("gpt-4.1-mini", "max_tokens"), ("qwen3-32b", "max_tokens"), ("smollm2", "max_tokens")])
def test_a_reasoning_model_is_asked_with_max_completion_tokens_at_once(chat_server, model,
                                                                       parameter):
    """OpenAI's reasoning models reject max_tokens: they get max_completion_tokens from the first
    request (the one request body of the live path and the batch path)."""
    chat_server.script = [reply("{}")]
    backend = OpenAIBackend(model, SamplingParams(max_tokens=77), base_url=chat_server.base_url,
                            api_key="k", max_retries=0)
    assert JudgeClient(backend, None).complete(MESSAGES, None).error is None
    assert chat_server.calls == 1 and chat_server.requests[0][parameter] == 77
    assert {"max_tokens", "max_completion_tokens"} - {parameter} & set(chat_server.requests[0]) \
        == set()


def test_a_200_that_is_not_json_says_what_came_back(chat_server):
    page = b"<!DOCTYPE html><html><head><title>Sign in to the proxy</title></head><body>...</body>"
    chat_server.script = [reply(raw=page, content_type="text/html; charset=utf-8")]
    result = make_client(chat_server).complete(MESSAGES, None)
    assert result.content is None
    assert result.error.startswith("not JSON (text/html): <!DOCTYPE html><html><head><title>Sign in")
    assert "no choices" not in result.error


def test_a_json_answer_without_choices_shows_the_body(chat_server):
    chat_server.script = [reply(body={"id": "x", "object": "chat.completion", "choices": [],
                                      "note": "quota exceeded"})]
    result = make_client(chat_server).complete(MESSAGES, None)
    assert result.error.startswith("the answer has no choices: ") and "quota exceeded" in result.error


def test_a_server_that_hangs_up_was_reached(chat_server):
    chat_server.script = [reply(close=True), reply(close=True)]
    with pytest.raises(EndpointUnusable) as info:
        make_client(chat_server).complete(MESSAGES, None)
    assert str(info.value) == f"{chat_server.base_url} closed the connection without answering"
    assert chat_server.calls == 2  # asked once more before giving up


def test_a_hang_up_after_answers_is_retried_and_named(chat_server):
    chat_server.script = [reply("{}"), reply(close=True), reply('{"ok": 1}')]
    client = make_client(chat_server)
    assert client.complete(MESSAGES, None).error is None
    result = client.complete(MESSAGES, None)
    assert result.error is None and result.content == '{"ok": 1}'
    assert result.notes[0]["reason"] == "the server closed the connection without answering"
