"""Talking to a judge model: an OpenAI-compatible endpoint or a local Hugging Face causal LM,
behind one response cache.

- `OpenAIBackend`: the `openai` client against any chat-completions endpoint (OpenAI,
  OpenRouter, vLLM, Ollama, llama.cpp server). Its own retries are off; ours retry 408/409/429,
  5xx, timeouts and connection errors with exponential backoff and jitter, honouring
  Retry-After. JSON-schema structured output is sent when `structured` is "on", or "auto" until
  the endpoint rejects it with an error naming response_format or json_schema (a 400/422, or the
  500 of llama-cpp-python's server); then plain JSON, recorded. An endpoint that cannot be
  reached, or refuses the key (401/403), raises `EndpointUnusable`: the run stops at once.
- `judges.local_backend.LocalBackend`: a causal LM in this process (chat template, greedy),
  for offline use.
- `judges.cache.ResponseCache`: a SQLite file of answers keyed by a hash of (backend, endpoint,
  model, messages, parameters, response format). A re-run answers from it without a single call.
- `JudgeClient`: backend + cache + the structured-output decision; thread-safe. After
  `MAX_FAILURES_IN_A_ROW` requests in a row end without an answer it raises `EndpointUnusable`
  too, so a dead endpoint is not asked again for every remaining request.

Nothing here reads or writes the project database, and no API key is ever logged or stored.
"""
from __future__ import annotations

import email.utils
import hashlib
import os
import random
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

from judges.cache import ResponseCache, cache_key
from judges.context_fit import NOTE
from judges.tokens import PromptFit, context_exceeded
from nlce.cli import UserError

BASE_URL_ENV = "OPENAI_BASE_URL"
CACHE_ENV = "NLCE_JUDGE_CACHE"
DEFAULT_CACHE = ".judge-cache.sqlite3"
STRUCTURED_MODES = ("auto", "on", "off")
MAX_FAILURES_IN_A_ROW = 3
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0")


class EndpointUnusable(UserError, RuntimeError):
    """The endpoint is down, refuses the key, or keeps failing: no further request can help."""


def normalise_endpoint(base_url: str | None) -> str:
    """The base URL as runs and the cache are keyed on: no user:password, lower-case scheme and
    host, no default port, no trailing slash."""
    parts = urlsplit(base_url or "https://api.openai.com/v1")
    scheme = (parts.scheme or "https").lower()
    default_port = {"http": 80, "https": 443}.get(scheme)
    port = f":{parts.port}" if parts.port and parts.port != default_port else ""
    return urlunsplit((scheme, (parts.hostname or "").lower() + port, parts.path.rstrip("/"),
                       parts.query, ""))


def is_loopback(base_url: str | None) -> bool:
    """A server on this machine (llama.cpp, vLLM, Ollama): one request at a time and a longer
    timeout suit it better than a hosted API's defaults."""
    host = (urlsplit(base_url or "https://api.openai.com/v1").hostname or "").lower()
    return host in LOOPBACK_HOSTS or host.startswith("127.")


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.0
    seed: int = 42
    max_tokens: int = 10_000

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class ChatResult:
    content: str | None = None
    finish_reason: str | None = None
    refusal: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    attempts: int = 0
    error: str | None = None  # set: no answer, stored with the status `failure`
    failure: str = "api_error"  # or, from a batch: batch_error, expired
    notes: list[dict] = field(default_factory=list)  # retries, fallbacks: go to repairs
    structured_rejected: bool = False
    json_object_offered: bool = False  # the rejection names json_object (llama-cpp-python)
    too_long: bool = False  # refused before sending: the prompt does not fit the context
    token_param_rejected: bool = False  # a batch line: max_tokens refused (max_completion_tokens)

    def cache_payload(self) -> dict:
        return {"content": self.content, "finish_reason": self.finish_reason,
                "refusal": self.refusal, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "latency_s": self.latency_s}


def retry_after_seconds(headers: Any) -> float | None:
    """Retry-After (seconds or an HTTP date) or retry-after-ms, if the server sent one."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


def backoff_seconds(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with jitter: uniform in [half, full] of min(cap, base * 2**attempt)."""
    full = min(cap, base * (2 ** attempt))
    return full * (0.5 + 0.5 * rng.random())


def response_format_for(schema: dict, form: str = "json_schema") -> dict:
    """The OpenAI form (`json_schema`), or llama-cpp-python's (`json_object` with a `schema`,
    which its server turns into a grammar: it answers the OpenAI form with HTTP 500)."""
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema",
            "json_schema": {"name": "judge_verdicts", "strict": True, "schema": schema}}


# OpenAI's reasoning models (o1, o3, o4-mini, gpt-5, ...) take the output limit only as
# max_completion_tokens ("Unsupported parameter: 'max_tokens'"); other servers take max_tokens
REASONING_MODEL = re.compile(r"^(openai/)?(o\d|gpt-5)", re.IGNORECASE)


def token_parameter(model: str) -> str:
    """The name a request gives the output token limit, for a model named so."""
    return "max_completion_tokens" if REASONING_MODEL.match(model) else "max_tokens"


def asks_for_max_completion_tokens(status: int | None, message: str) -> bool:
    """Whether an error rejects max_tokens for max_completion_tokens (read the same way live and
    in a batch's error file)."""
    return status == 400 and "max_completion_tokens" in message


def mentions_response_format(message: str) -> bool:
    """Whether an error message says the structured-output request was the problem."""
    lowered = message.lower()
    return any(word in lowered for word in ("response_format", "json_schema", "structured output",
                                            "response format"))


class OpenAIBackend:
    name = "openai"
    supports_structured = True

    def __init__(self, model: str, params: SamplingParams, *, base_url: str | None = None,
                 api_key: str | None = None, timeout_s: float = 120.0, max_retries: int = 5,
                 backoff_base_s: float = 1.0, backoff_cap_s: float = 60.0,
                 max_retry_after_s: float = 300.0, sleep: Callable[[float], None] = time.sleep,
                 context_tokens: int | None = None):
        import openai

        self._openai = openai
        self.model, self.params = model, params
        self.base_url = base_url or os.environ.get(BASE_URL_ENV) or None
        self.max_retries, self.sleep, self.timeout_s = max_retries, sleep, timeout_s
        self.backoff_base_s, self.backoff_cap_s = backoff_base_s, backoff_cap_s
        self.max_retry_after_s = max_retry_after_s
        self._rng = random.Random()
        self._token_param = token_parameter(model)  # or as the endpoint asks (use_token_param)
        self.calls = 0  # HTTP requests made, retries included
        self._calls_lock = threading.Lock()
        # a local endpoint (vLLM, Ollama, test server) may need no key; the client needs one
        self._client = openai.OpenAI(api_key=api_key or "not-needed", base_url=self.base_url,
                                     timeout=timeout_s, max_retries=0)

        self._answered = False  # any HTTP answer seen: a later connection error is a blip
        # the model's context (given, or as a server on this machine lists it): a longer prompt
        # is not sent
        self.fit = PromptFit(self.base_url, model, context_tokens,
                             self._listed_models if is_loopback(self.base_url) else None, timeout_s)

    def prompt_tokens(self, messages: list[dict]) -> int | None:
        """The prompt's tokens where the endpoint counts them and a context is known."""
        try:
            return self.fit.count(messages)
        except ValueError:
            return None

    def _listed_models(self) -> list:
        """The entries of the endpoint's GET /v1/models (asked once, briefly)."""
        return self._client.with_options(timeout=5.0, max_retries=0).models.list().data

    @property
    def endpoint(self) -> str:
        """The normalised base URL, without any user:password part (stored with the run)."""
        return normalise_endpoint(self.base_url)

    @property
    def api(self):
        """The `openai` client (files and batches: judges.batch)."""
        return self._client

    def use_token_param(self, name: str) -> None:
        """Send the output token limit under `name` from now on (the endpoint asked for it)."""
        self._token_param = name

    def request_body(self, messages: list[dict], response_format: dict | None) -> dict[str, Any]:
        """The chat-completions request (live, or one line of a batch): the one place where a
        request is built, with the rules learnt from the endpoint."""
        body: dict[str, Any] = dict(model=self.model, messages=messages,
                                    temperature=self.params.temperature, seed=self.params.seed)
        body[self._token_param] = self.params.max_tokens
        if response_format is not None:
            body["response_format"] = response_format
        return body

    def call(self, messages: list[dict], response_format: dict | None) -> ChatResult:
        openai = self._openai
        notes: list[dict] = []
        try:
            refusal = self.fit.refusal(messages)
        except ValueError as exc:
            raise EndpointUnusable(f"--context-tokens: {exc}") from None
        if refusal is not None:
            return too_long(*refusal)
        kwargs = self.request_body(messages, response_format)
        started = time.monotonic()
        attempt = 0  # failed attempts so far; a parameter switch is not one
        while True:
            with self._calls_lock:
                self.calls += 1
            try:
                raw = self._client.chat.completions.with_raw_response.create(**kwargs)
                response, content_type = raw.parse(), raw.headers.get("content-type")
            except (openai.APIConnectionError, openai.APIStatusError, ValueError) as exc:
                # timeouts included; ValueError: a 200 whose body is not JSON
                status = getattr(exc, "status_code", None)
                if status is not None or isinstance(exc, (ValueError, openai.APITimeoutError)):
                    self._answered = True
                if status in (401, 403):
                    # the server's message is left out: it may quote part of the key
                    raise EndpointUnusable(f"{self.endpoint} refused the API key (HTTP {status})"
                                           ) from None
                retryable = status is None or status in (408, 409, 429) or status >= 500
                if "max_tokens" in kwargs and asks_for_max_completion_tokens(status, str(exc)):
                    # newer OpenAI models take the same limit under another name
                    self.use_token_param("max_completion_tokens")
                    kwargs[self._token_param] = kwargs.pop("max_tokens")
                    notes.append({"kind": "max_completion_tokens_used"})
                    continue
                exceeded = context_exceeded(str(exc)) if status == 400 else None
                if exceeded is not None:  # the endpoint counted: the prompt does not fit
                    return too_long(*exceeded, by="the endpoint", attempts=attempt + 1,
                                    notes=notes)
                if (response_format is not None and status is not None
                        and (status in (400, 422) or status >= 500)
                        and mentions_response_format(str(exc))):
                    return ChatResult(error=f"HTTP {status}: structured output rejected",
                                      attempts=attempt + 1, notes=notes, structured_rejected=True,
                                      json_object_offered="json_object" in str(exc).lower(),
                                      latency_s=time.monotonic() - started)
                kind = "timeout" if isinstance(exc, openai.APITimeoutError) else (
                    "malformed response body" if isinstance(exc, ValueError) else (
                        f"HTTP {status}" if status else "connection error"))
                hung_up = kind == "connection error" and _hung_up(exc)
                if hung_up:  # reached, but it closed the connection: not "cannot reach"
                    kind = "the server closed the connection without answering"
                if (status is None and not isinstance(exc, (ValueError, openai.APITimeoutError))
                        and not self._answered and attempt >= min(1, self.max_retries)):
                    # never answered in this run, still unreachable (or hanging up) after a retry
                    raise EndpointUnusable(f"{self.endpoint} closed the connection without "
                                           "answering" if hung_up else
                                           f"cannot reach {self.endpoint}: {one_line(exc, 160)}"
                                           ) from None
                if not retryable or attempt == self.max_retries:
                    detail = f"{kind}: {one_line(exc)}"
                    if retryable:
                        detail = f"gave up after {attempt + 1} attempts; last {detail}"
                    return ChatResult(error=detail, attempts=attempt + 1, notes=notes,
                                      latency_s=time.monotonic() - started)
                response_obj = getattr(exc, "response", None)
                hinted = retry_after_seconds(getattr(response_obj, "headers", None))
                wait = backoff_seconds(attempt, self.backoff_base_s, self.backoff_cap_s, self._rng)
                if hinted is not None:
                    wait = max(wait, min(hinted, self.max_retry_after_s))
                notes.append({"kind": "retry", "attempt": attempt + 1, "reason": kind,
                              "retry_after_s": hinted, "waited_s": round(wait, 3)})
                self.sleep(wait)
                attempt += 1
                continue
            except openai.APIError as exc:  # a body the client could not read
                return ChatResult(error=f"invalid response: {one_line(exc)}", attempts=attempt + 1,
                                  notes=notes, latency_s=time.monotonic() - started)
            self._answered = True
            return chat_result(response, attempt + 1, notes, time.monotonic() - started,
                               content_type)


def too_long(prompt_tokens: int | None, context: int | None, by: str = "counted before sending",
             **kw) -> ChatResult:
    """A prompt refused for the model's context: an api_error that says so, and what it took
    (the note `prompt_exceeds_context`); it says nothing of the endpoint."""
    size = f"of {prompt_tokens} tokens " if prompt_tokens is not None else ""
    limit = f" of {context} tokens" if context is not None else ""
    how = "not sent" if by == "counted before sending" else "refused by the endpoint"
    note = {"kind": NOTE, "prompt_tokens": prompt_tokens,
            "model_context": context, "by": by}
    return ChatResult(error=f"prompt {size}does not fit the model's context{limit}: {how}",
                      too_long=True, **{**kw, "notes": [*kw.get("notes", []), note]})


def one_line(exc: BaseException | str, limit: int = 300) -> str:
    """An error (or a text) on one line of at most `limit` characters, for a verdict's message."""
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "…"


def _hung_up(exc: BaseException) -> bool:
    """The connection was made and then closed without an answer (not refused or unresolved)."""
    names, seen = set(), exc
    while seen is not None:
        names.add(type(seen).__name__)
        seen = seen.__cause__ or seen.__context__
    return not names & {"ConnectError", "ConnectTimeout"} and bool(
        names & {"RemoteProtocolError", "ReadError", "WriteError", "ConnectionResetError"})


def chat_result(response: Any, attempts: int, notes: list[dict], latency: float,
                content_type: str | None = None) -> ChatResult:
    """What a chat completion says, read the same way for the live path and the Batch API's
    output file (judges.batch)."""
    if isinstance(response, str):  # the client hands back the text of a body that is not JSON
        kind = (content_type or "no content type").split(";")[0].strip()
        return ChatResult(error=f"not JSON ({kind}): {one_line(response.strip(), 80)}",
                          attempts=attempts, notes=notes, latency_s=latency)
    choices = getattr(response, "choices", None) or []
    usage = getattr(response, "usage", None)
    tokens = dict(prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                  completion_tokens=getattr(usage, "completion_tokens", 0) or 0)
    if not choices:
        body = response.model_dump_json(exclude_none=True) if hasattr(
            response, "model_dump_json") else str(response)
        return ChatResult(error=f"the answer has no choices: {one_line(body, 80)}",
                          attempts=attempts, notes=notes, latency_s=latency, **tokens)
    choice = choices[0]
    message = choice.message
    return ChatResult(content=message.content, finish_reason=choice.finish_reason,
                      refusal=getattr(message, "refusal", None), attempts=attempts, notes=notes,
                      latency_s=latency, **tokens)


class JudgeClient:
    """Backend + cache + structured-output policy; `complete` is safe to call from threads.

    `on_billed(result)` is called for every answer the endpoint produced (not the cache's) as
    soon as it arrives, so that tokens paid for are counted even if the run is killed before
    its target is stored (a resumed run then finds them in the cache, free)."""

    def __init__(self, backend, cache: ResponseCache | None, structured: str = "auto",
                 max_failures_in_a_row: int = MAX_FAILURES_IN_A_ROW):
        if structured not in STRUCTURED_MODES:
            raise ValueError(f"unknown structured mode {structured!r}; expected auto, on or off")
        self.backend, self.cache, self.structured = backend, cache, structured
        self.endpoint = backend.endpoint
        self._rejected_key = "structured-rejected:" + hashlib.sha256(
            f"{backend.name}|{self.endpoint}|{backend.model}".encode()).hexdigest()
        known = (cache.get(self._rejected_key) or {}) if cache else {}
        self._rejected = bool(known.get("rejected"))
        if known.get("token_param") and hasattr(backend, "use_token_param"):
            backend.use_token_param(known["token_param"])  # learnt by an earlier run
        # the schema form the endpoint takes: OpenAI's, until it rejects it for llama-cpp's
        self._schema_form = known.get("form", "json_schema")
        self.on_billed: Callable[[ChatResult], None] | None = None
        self.max_failures_in_a_row = max_failures_in_a_row
        self._failures_in_a_row = 0
        self._lock = threading.Lock()
        self.stopped: str | None = None  # why no further request is made

    @property
    def structured_in_use(self) -> bool:
        if not self.backend.supports_structured or self.structured == "off":
            return False
        return self.structured == "on" or not self._rejected

    def _stop(self, reason: str) -> EndpointUnusable:
        with self._lock:
            self.stopped = self.stopped or reason
        return EndpointUnusable(self.stopped)

    def request_key(self, messages: list[dict], response_format: dict | None) -> str:
        """The request's identity: its key in the cache (and in a batch)."""
        return cache_key(self.backend.name, self.backend.model, messages,
                         self.backend.params.as_dict(), response_format, self.endpoint)

    def request_format(self, schema: dict | None) -> tuple[dict | None, list[dict]]:
        """(the response_format sent for `schema` as things stand, the notes that go with it)."""
        notes: list[dict] = []
        if (schema is not None and self.structured == "auto" and self.backend.supports_structured
                and self._rejected):
            notes.append({"kind": "plain_json_fallback", "reason": "endpoint rejected structured output"})
        use_schema = schema is not None and self.structured_in_use
        return (response_format_for(schema, self._schema_form) if use_schema else None), notes

    def note_rejected(self, json_object_offered: bool = False) -> str | None:
        """The endpoint rejected the schema: the form from now on (cached), "json_object" where the
        rejection names it (llama-cpp-python), else "plain" (auto); None: no other form to try."""
        if json_object_offered and self._schema_form == "json_schema":
            self._schema_form, remembered = "json_object", {"form": "json_object"}
        elif self.structured == "auto":
            self._rejected, remembered = True, {"rejected": True}
        else:
            return None
        self._remember(remembered)
        return remembered.get("form", "plain")

    def note_max_completion_tokens(self) -> None:
        """The endpoint rejected max_tokens for max_completion_tokens: every later request (live
        or in a batch, in this run or the next: cached) says max_completion_tokens."""
        self.backend.use_token_param("max_completion_tokens")
        self._remember({"token_param": "max_completion_tokens"})

    def _remember(self, values: dict) -> None:
        """Keep what the endpoint taught about requests (in the cache, for later runs)."""
        if self.cache is not None:
            self.cache.put(self._rejected_key, {**(self.cache.get(self._rejected_key) or {}),
                                                **values})

    def cached(self, key: str, notes: list[dict]) -> ChatResult | None:
        """The cache's answer to the request with this key, if it has one."""
        hit = self.cache.get(key) if self.cache is not None else None
        return ChatResult(**hit, cached=True, notes=list(notes)) if hit is not None else None

    def _request(self, messages: list[dict], response_format: dict | None,
                 notes: list[dict], refresh: bool) -> ChatResult:
        key = self.request_key(messages, response_format)
        hit = None if refresh else self.cached(key, notes)
        if hit is not None:
            return hit
        if self.stopped:
            raise EndpointUnusable(self.stopped)
        try:
            result = self.backend.call(messages, response_format)
        except EndpointUnusable as exc:
            raise self._stop(str(exc)) from None
        result.notes[:0] = notes
        if any(n.get("kind") == "max_completion_tokens_used" for n in result.notes):
            self.note_max_completion_tokens()
        if (result.prompt_tokens or result.completion_tokens) and self.on_billed is not None:
            self.on_billed(result)
        if result.error is None and self.cache is not None:
            self.cache.put(key, result.cache_payload())
        return result

    def complete(self, messages: list[dict], schema: dict | None,
                 refresh: bool = False) -> ChatResult:
        """One answer; `refresh` asks the endpoint even if the cache knows the request."""
        response_format, notes = self.request_format(schema)
        result = self._request(messages, response_format, notes, refresh)
        while result.structured_rejected:  # the json_object form, then plain JSON
            form = self.note_rejected(result.json_object_offered)
            if form is None:
                break
            note = {"kind": "json_object_schema_used", "reason": "endpoint rejected the "
                    "json_schema form"} if form == "json_object" else {
                "kind": "plain_json_fallback", "reason": "endpoint rejected structured output"}
            result = self._request(messages, response_format_for(schema, "json_object")
                                   if form == "json_object" else None, result.notes + [note],
                                   refresh)
        self._count_failure(result)
        return result

    def _count_failure(self, result: ChatResult) -> None:
        if result.cached or result.too_long:  # a prompt too long says nothing of the endpoint
            return
        with self._lock:
            self._failures_in_a_row = self._failures_in_a_row + 1 if result.error else 0
            failures = self._failures_in_a_row
        if failures >= self.max_failures_in_a_row:
            raise self._stop(f"{failures} requests in a row to {self.endpoint} got no answer; "
                             f"last: {result.error}")
