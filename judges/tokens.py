"""A prompt against the model's context: how many tokens it takes at a local endpoint (asked
before it is sent), how long a context the endpoint says its model has, and what an endpoint's
own refusal of a prompt that is too long says, so that such a prompt is refused in one line
with the ways out instead of failing as an api_error nobody reads.

- `count_prompt_tokens`: llama-cpp-python's /extras/tokenize/count (judges.serve's server);
- `endpoint_context`: `max_model_len` of the model's entry in /v1/models (vLLM's field, which
  judges.serve's server gives too: `judges.llama_app`);
- `context_exceeded`: the counts in a refusal (OpenAI's, vLLM's and llama-cpp-python's
  "maximum context length is N tokens ... requested M tokens (P in the messages ...)", llama.cpp
  server's "exceeds the available context size").
"""
from __future__ import annotations

import json
import re
import urllib.request

CHAT_TEMPLATE_TOKENS = 8  # role markers per message (ChatML: <|im_start|>role\n ... <|im_end|>\n)
_MAXIMUM = re.compile(r"maximum context length is (\d+) tokens", re.IGNORECASE)
_IN_MESSAGES = re.compile(r"\((\d+) in the messages", re.IGNORECASE)
_REQUESTED = re.compile(r"requested (\d+) tokens", re.IGNORECASE)


def count_prompt_tokens(base_url: str, messages: list[dict], timeout_s: float = 60.0) -> int:
    """The messages' tokens as the endpoint's tokenizer counts them (llama-cpp-python's
    /extras/tokenize/count), plus CHAT_TEMPLATE_TOKENS per message and for the answer's header;
    ValueError (one line) when the endpoint cannot count."""
    root = (base_url or "").rstrip("/").removesuffix("/v1")
    text = "\n".join(str(m.get("content") or "") for m in messages)
    request = urllib.request.Request(
        f"{root}/extras/tokenize/count", method="POST",
        data=json.dumps({"input": text}).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            count = int(json.loads(answer.read())["count"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot count tokens at {root}/extras/tokenize/count "
                         f"(llama-cpp-python's): {str(exc)[:120]}") from None
    return count + CHAT_TEMPLATE_TOKENS * (len(messages) + 1)


def endpoint_context(models: list, model: str) -> tuple[int | None, str | None]:
    """(the context the endpoint's model list gives `model`: `max_model_len`, its `owned_by`);
    `models`: the entries of GET /v1/models (objects or dicts)."""
    for entry in models:
        fields = entry if isinstance(entry, dict) else {
            "id": getattr(entry, "id", None), "owned_by": getattr(entry, "owned_by", None),
            **(getattr(entry, "model_extra", None) or {})}
        if fields.get("id") == model and isinstance(fields.get("max_model_len"), int):
            return fields["max_model_len"], fields.get("owned_by")
    return None, None


def context_exceeded(message: str) -> tuple[int | None, int | None] | None:
    """(the prompt's tokens, the model's context), each None where the message does not say,
    when an endpoint's error says the prompt does not fit the context; else None."""
    maximum = _MAXIMUM.search(message)
    if maximum is None:
        if "exceeds the available context size" in message or "context_length_exceeded" in message:
            return None, None
        return None
    prompt = _IN_MESSAGES.search(message) or _REQUESTED.search(message)
    return (int(prompt.group(1)) if prompt else None), int(maximum.group(1))


class PromptFit:
    """Whether a prompt fits the model's context, asked before it is sent. The context: the
    one given (`--context-tokens`), else the one the endpoint's model list gives (asked once,
    of a server on this machine only: hosted APIs say none); the count: the endpoint's
    tokenizer (llama-cpp-python's). A context given with an endpoint that cannot count is an
    error (ValueError); one the endpoint gave is then left to the endpoint's own refusal."""

    def __init__(self, base_url: str | None, model: str, context_tokens: int | None,
                 list_models=None, timeout_s: float = 60.0):
        self.base_url, self.model, self.timeout_s = base_url, model, timeout_s
        self.given = context_tokens
        self._list_models = list_models  # () -> the entries of /v1/models; None: never asked
        self._context: int | None = context_tokens
        self.owned_by: str | None = None  # the listing's owner of the model, where listed
        self._asked = context_tokens is not None or list_models is None
        self._counting = True

    @property
    def context(self) -> int | None:
        if not self._asked:
            self._asked = True
            try:
                self._context, self.owned_by = endpoint_context(self._list_models(), self.model)
            except Exception:  # noqa: BLE001 - no list, no context: nothing is counted
                self._context = None
        return self._context

    def count(self, messages: list[dict]) -> int | None:
        """The prompt's tokens, where the endpoint can count them (and a context is known)."""
        if not self._counting or self.context is None:
            return None
        try:
            return count_prompt_tokens(self.base_url, messages, self.timeout_s)
        except ValueError:
            if self.given is not None:
                raise
            self._counting = False  # the context came from the endpoint, which will say
            return None

    def refusal(self, messages: list[dict]) -> tuple[int, int] | None:
        """(the prompt's tokens, the context) when the prompt does not fit; None when it fits
        or cannot be counted."""
        needed = self.count(messages)
        return (needed, self.context) if needed is not None and needed >= self.context else None
