"""How many tokens a prompt takes at a local endpoint, asked before the prompt is sent (so that a
prompt longer than the model's context is refused, not evaluated and failed)."""
from __future__ import annotations

import json
import urllib.request

CHAT_TEMPLATE_TOKENS = 8  # role markers per message (ChatML: <|im_start|>role\n ... <|im_end|>\n)


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
