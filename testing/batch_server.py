"""A local stand-in for a paid API: an HTTP server (stdlib only) that speaks the OpenAI files and
batches protocol, and chat completions, answering every chat request with one function.

    server = BatchServer(answer)        # answer(request body) -> (HTTP status, response body)
    with server:                        # serves on 127.0.0.1, a free port
        server.base_url                 # http://127.0.0.1:PORT/v1

Routes: POST /v1/files (multipart upload, purpose batch), GET /v1/files/ID and
/v1/files/ID/content, POST /v1/batches, GET /v1/batches and /v1/batches/ID,
POST /v1/batches/ID/cancel, POST /v1/chat/completions (the live path, same answers).

As OpenAI documents the protocol (the API reference and the Batch guide):
- the list of batches is newest first and paginated: `limit` (1-100, default 20), `after` (the
  id of the last batch of the previous page), `has_more`, `first_id`, `last_id`;
- a batch moves one step each time it is retrieved: validating -> in_progress, which answers
  `per_poll` of its requests per retrieval, -> finalizing -> completed, with an output file
  (the 200 answers) and an error file (the others), one JSON line per request:
  {"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"};
- a batch that expires (`expire_after` polls in progress) or is cancelled keeps what it
  answered, and writes each request it did not to the error file with `"response": null` and
  the error code `batch_expired` (or `batch_cancelled`);
- a reasoning model (o1, o3, o4-mini, gpt-5: `REASONING_MODEL`) rejects `max_tokens` with
  HTTP 400 `unsupported_parameter`, asking for `max_completion_tokens`, live or in a batch.
`invalid`: the batch fails validation with that message; `batch_api=False`: a server with chat
completions only. `hits` counts the requests of each route, `chat_requests` the chat requests
answered (live or in a batch), so a test can tell what a run sent.
"""
from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from email.parser import BytesParser
from email.policy import default as email_policy
from http.server import BaseHTTPRequestHandler
from typing import Callable
from urllib.parse import parse_qsl

from testing.local_server import LocalServer

Answer = Callable[[dict], tuple[int, dict]]
# OpenAI's reasoning models by name (an optional "openai/" provider prefix, a dated snapshot)
REASONING_MODEL = re.compile(r"^(openai/)?(o\d|gpt-5)")
UNSUPPORTED_MAX_TOKENS = {"error": {
    "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
               "'max_completion_tokens' instead.", "type": "invalid_request_error",
    "param": "max_tokens", "code": "unsupported_parameter"}}
NOT_ANSWERED = {"expired": ("batch_expired", "This request could not be executed before the "
                                             "completion window expired."),
                "cancelled": ("batch_cancelled", "This request was not executed because the "
                                                 "batch was cancelled.")}


class BatchServer(LocalServer):
    def __init__(self, answer: Answer, per_poll: int = 2, expire_after: int | None = None,
                 invalid: str | None = None, batch_api: bool = True):
        self.answer, self.per_poll, self.expire_after, self.invalid = (
            answer, per_poll, expire_after, invalid)
        self.batch_api = batch_api  # False: chat completions only (404 elsewhere, as vLLM)
        self.files: dict[str, dict] = {}  # id -> {"meta": FileObject, "content": bytes}
        self.batches: dict[str, dict] = {}  # id -> Batch object + private state, oldest first
        self.hits: Counter = Counter()
        self.chat_requests = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server._route(self, "GET")

            def do_POST(self):
                server._route(self, "POST")

        super().__init__(Handler)

    # ------------------------------------------------------------ routing

    def _route(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path, _, query = handler.path.partition("?")
        path = path.rstrip("/")
        handler.query = dict(parse_qsl(query))
        body = handler.rfile.read(int(handler.headers.get("Content-Length", 0) or 0))
        routes = [("POST", r"/v1/files", self._upload), ("GET", r"/v1/files/([^/]+)/content",
                                                          self._content),
                  ("GET", r"/v1/files/([^/]+)", self._file), ("POST", r"/v1/batches", self._create),
                  ("GET", r"/v1/batches", self._list), ("GET", r"/v1/batches/([^/]+)", self._retrieve),
                  ("POST", r"/v1/batches/([^/]+)/cancel", self._cancel),
                  ("POST", r"/v1/chat/completions", self._chat)]
        if not self.batch_api:
            routes = routes[-1:]
        for verb, pattern, action in routes:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                with self.lock:
                    self.hits[f"{method} {pattern}"] += 1
                    status, payload, kind = action(handler, body, *match.groups())
                break
        else:
            status, payload, kind = 404, {"error": {"message": f"no route {method} {path}"}}, None
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", kind or "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _new_file(self, name: str, content: bytes, purpose: str) -> dict:
        file_id = f"file-{len(self.files) + 1}"
        meta = {"id": file_id, "object": "file", "bytes": len(content),
                "created_at": int(time.time()), "filename": name, "purpose": purpose,
                "status": "processed"}
        self.files[file_id] = {"meta": meta, "content": content}
        return meta

    def _upload(self, handler, body):
        message = BytesParser(policy=email_policy).parsebytes(
            b"Content-Type: " + handler.headers["Content-Type"].encode() + b"\r\n\r\n" + body)
        fields = {part.get_param("name", header="content-disposition"): part
                  for part in message.iter_parts()}
        if "file" not in fields:
            return 400, {"error": {"message": "no file in the upload"}}, None
        purpose = fields["purpose"].get_content().strip() if "purpose" in fields else ""
        content = fields["file"].get_payload(decode=True)
        return 200, self._new_file(fields["file"].get_filename() or "upload", content, purpose), None

    def _content(self, handler, body, file_id):
        if file_id not in self.files:
            return 404, {"error": {"message": f"no file {file_id}"}}, None
        return 200, self.files[file_id]["content"], "application/octet-stream"

    def _file(self, handler, body, file_id):
        if file_id not in self.files:
            return 404, {"error": {"message": f"no file {file_id}"}}, None
        return 200, self.files[file_id]["meta"], None

    def _create(self, handler, body):
        request = json.loads(body or b"{}")
        file = self.files.get(request.get("input_file_id"))
        if file is None:
            return 400, {"error": {"message": "input_file_id names no uploaded file"}}, None
        lines = [json.loads(line) for line in file["content"].decode().splitlines() if line.strip()]
        batch_id = f"batch_{len(self.batches) + 1}"
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": request.get("endpoint"),
            "errors": None, "input_file_id": file["meta"]["id"],
            "completion_window": request.get("completion_window"), "status": "validating",
            "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": request.get("metadata"), "_lines": lines, "_results": [], "_polls": 0}
        return 200, self._public(batch_id), None

    def _public(self, batch_id: str) -> dict:
        return {k: v for k, v in self.batches[batch_id].items() if not k.startswith("_")}

    def _list(self, handler, body):
        newest_first = list(reversed(self.batches))
        limit = min(100, max(1, int(handler.query.get("limit", 20))))
        after = handler.query.get("after")
        start = newest_first.index(after) + 1 if after in newest_first else 0
        page = [self._public(b) for b in newest_first[start:start + limit]]
        return 200, {"object": "list", "data": page,
                     "has_more": start + limit < len(newest_first),
                     "first_id": page[0]["id"] if page else None,
                     "last_id": page[-1]["id"] if page else None}, None

    def _cancel(self, handler, body, batch_id):
        if batch_id not in self.batches:
            return 404, {"error": {"message": f"no batch {batch_id}"}}, None
        self.batches[batch_id]["status"] = "cancelling"
        return 200, self._public(batch_id), None

    def _retrieve(self, handler, body, batch_id):
        batch = self.batches.get(batch_id)
        if batch is None:
            return 404, {"error": {"message": f"no batch {batch_id}"}}, None
        self._advance(batch)
        return 200, self._public(batch_id), None

    def _advance(self, batch: dict) -> None:
        """One step of the batch's life per retrieval."""
        status = batch["status"]
        if status == "validating":
            if self.invalid:
                batch.update(status="failed", errors={"object": "list", "data": [
                    {"code": "invalid_request", "message": self.invalid, "line": 1}]})
            else:
                batch["status"] = "in_progress"
        elif status == "in_progress":
            batch["_polls"] += 1
            done = len(batch["_results"])
            for line in batch["_lines"][done:done + self.per_poll]:
                batch["_results"].append(self._answer_line(line))
            counts = batch["request_counts"]
            counts["completed"] = sum(1 for r in batch["_results"] if r["response"]
                                      and r["response"]["status_code"] == 200)
            counts["failed"] = len(batch["_results"]) - counts["completed"]
            if len(batch["_results"]) == len(batch["_lines"]):
                batch["status"] = "finalizing"
            elif self.expire_after is not None and batch["_polls"] >= self.expire_after:
                self._finish(batch, "expired")
        elif status == "finalizing":
            self._finish(batch, "completed")
        elif status == "cancelling":
            self._finish(batch, "cancelled")

    def _finish(self, batch: dict, status: str) -> None:
        ok = [r for r in batch["_results"] if r["response"] and r["response"]["status_code"] == 200]
        failed = [r for r in batch["_results"] if r not in ok]
        if status in NOT_ANSWERED:  # each request it never ran: a line of the error file
            code, message = NOT_ANSWERED[status]
            answered = {r["custom_id"] for r in batch["_results"]}
            failed += [{"id": f"batch_req_{batch['id']}_{n}", "custom_id": line.get("custom_id"),
                        "response": None, "error": {"code": code, "message": message}}
                       for n, line in enumerate(batch["_lines"])
                       if line.get("custom_id") not in answered]
        for key, rows in (("output_file_id", ok), ("error_file_id", failed)):
            if rows:
                content = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[key] = self._new_file(f"{batch['id']}_{key}.jsonl", content,
                                            "batch_output")["id"]
        batch["status"] = status

    def _answer_line(self, line: dict) -> dict:
        n = sum(len(b["_results"]) for b in self.batches.values()) + 1
        if line.get("url") != "/v1/chat/completions" or line.get("method") != "POST":
            return {"id": f"batch_req_{n}", "custom_id": line.get("custom_id"), "response": None,
                    "error": {"code": "invalid_url", "message": f"unsupported {line.get('url')}"}}
        status, body = self._answer_chat(line["body"])
        return {"id": f"batch_req_{n}", "custom_id": line["custom_id"], "error": None,
                "response": {"status_code": status, "request_id": f"req_{n}", "body": body}}

    def _answer_chat(self, request: dict) -> tuple[int, dict]:
        if REASONING_MODEL.match(str(request.get("model", ""))) and "max_tokens" in request:
            return 400, UNSUPPORTED_MAX_TOKENS  # rejected before any model work: not counted
        self.chat_requests += 1
        return self.answer(request)

    def _chat(self, handler, body):
        status, payload = self._answer_chat(json.loads(body or b"{}"))
        return status, payload, None
