"""Helpers for the judges' tests: a local HTTP server speaking the OpenAI chat-completions
protocol that replays scripted answers, and valid answers built from a request."""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Callable

from judges.i18n import PROMPT_LANGUAGES, texts
from testing.local_server import LocalServer

# ---------------------------------------------------------------- scripted chat server


def completion_body(content: str | None, finish_reason: str = "stop", refusal: str | None = None,
                    prompt_tokens: int = 100, completion_tokens: int = 20) -> dict:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "judge-test",
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": content, "refusal": refusal}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def reply(content: str | None = None, *, status: int = 200, finish_reason: str = "stop",
          refusal: str | None = None, headers: dict | None = None, delay: float = 0.0,
          body: dict | None = None, raw: bytes | None = None,
          content_type: str = "application/json", close: bool = False) -> dict:
    """One scripted HTTP answer; `raw` is sent as the body byte for byte (e.g. broken JSON, an
    HTML page with `content_type="text/html"`); `close`: the server reads the request and
    closes the connection without answering."""
    if body is None:
        body = (completion_body(content, finish_reason, refusal) if status == 200
                else {"error": {"message": content or f"HTTP {status}", "type": "test"}})
    return {"status": status, "body": body, "headers": headers or {}, "delay": delay, "raw": raw,
            "content_type": content_type, "close": close}


def llama_cpp_python_like(answer: Callable[[dict], dict]) -> Callable[[dict], dict]:
    """A responder that behaves like llama-cpp-python's server: a request with a json_schema
    response_format gets HTTP 500 (not 400) naming it; any other request gets `answer`."""
    def respond(request: dict) -> dict:
        if (request.get("response_format") or {}).get("type") == "json_schema":
            return reply("response_format type must be one of 'text' or 'json_object', but got: "
                         "json_schema", status=500)
        return answer(request)
    return respond


def dead_url() -> str:
    """The base URL of a port on this machine where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class ChatServer(LocalServer):
    """Answers POST .../chat/completions from a script: a list consumed in order, then (if set)
    a responder function of the request body. Every request body is recorded. Serves for the
    block of `with ChatServer() as server:`."""

    def __init__(self):
        self.script: list[dict] = []
        self.responder: Callable[[dict], dict] | None = None
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.in_flight = self.max_in_flight = 0  # concurrent requests, now and at most
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append(request)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    if server.script:
                        answer = server.script.pop(0)
                    elif server.responder is not None:
                        answer = server.responder(request)
                    else:
                        answer = reply("script exhausted", status=500)
                try:
                    self._answer(answer)
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def _answer(self, answer):
                if answer["delay"]:
                    time.sleep(answer["delay"])
                if answer.get("close"):  # hang up without a status line
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                payload = answer.get("raw") or json.dumps(answer["body"]).encode()
                try:
                    self.send_response(answer["status"])
                    self.send_header("Content-Type", answer.get("content_type", "application/json"))
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in answer["headers"].items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        super().__init__(Handler)

    @property
    def calls(self) -> int:
        return len(self.requests)


# ---------------------------------------------------------------- answers built from a request


def answer_from_request(request: dict, lang: str, accuracy_index: int = 2,
                        code: str | None = None) -> str:
    """A valid answer in `lang` for every prediction id the request's schema allows (or P1..P5),
    with the schema's first offered code if `code` is None and the request offers codes."""
    from taxonomy import ACCURACY_LABELS, default_taxonomy

    tax = default_taxonomy()
    f = texts(lang)["output_fields"]
    label = tax.accuracy_text(ACCURACY_LABELS[accuracy_index], lang)[0]
    user = request["messages"][-1]["content"]
    ids = [f"P{i}" for i in range(1, 10) if f'"P{i}"' in user]
    cot = f'"{f["reasoning"]}"' in user
    entries = []
    for pid in ids:
        errors = [] if code is None else ([{f["code"]: code, f["confidence"]: 0.9,
                                            f["justification"]: "test"}] if cot else [code])
        entry = {f["prediction_id"]: pid}
        if cot:
            entry[f["reasoning"]] = "test reasoning"
        entry[f["errors"]] = errors
        entry[f["accuracy"]] = label
        entries.append(entry)
    return json.dumps({f["evaluations"]: entries}, ensure_ascii=False)


def labelled_answer(request: dict) -> dict:
    """English fields: every prediction correct. Greek fields: seed 7 -> every one partial;
    seed 44 -> P1 partial, the rest correct; otherwise every one correct."""
    from taxonomy import default_taxonomy

    user = request["messages"][-1]["content"]
    lang = next(lg for lg in PROMPT_LANGUAGES
                if f'"{texts(lg)["output_fields"]["evaluations"]}"' in user)
    f = texts(lang)["output_fields"]
    ids = [f"P{i}" for i in range(1, 10) if f'"P{i}"' in user]
    seed = request.get("seed")

    def label(pid):
        partial = lang != "en" and (seed == 7 or (seed == 44 and pid == "P1"))
        return default_taxonomy().accuracy_text("partial" if partial else "correct", lang)[0]

    entries = [{f["prediction_id"]: pid, f["errors"]: [], f["accuracy"]: label(pid)}
               for pid in ids]
    return reply(json.dumps({f["evaluations"]: entries}, ensure_ascii=False))
