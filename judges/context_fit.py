"""Prompts that do not fit the model's context. Such a prompt is refused (counted before it is
sent, by `judges.tokens.PromptFit` or the local model's tokenizer, or refused by the endpoint,
which counted it) as an api_error noting `prompt_exceeds_context`; a target none of whose
requests was sent is not stored (nothing was answered: the next run asks again), and the run
says in one line why and what would make the prompts fit (`ways_out`)."""
from __future__ import annotations

from judges.llama_app import OWNED_BY

NOTE = "prompt_exceeds_context"
CODE_WORTH_CUTTING = 2000  # characters of code in the prompt: fewer save too little to say


def refused_for_context(outcome) -> dict | None:
    """The note of a target's longest refused prompt when none of its requests was sent (each
    refused for the context); None when any was answered (or failed otherwise)."""
    notes = []
    for response in outcome.responses:
        note = next((n for n in response.repairs if n.get("kind") == NOTE), None)
        if note is None or response.status != "api_error":
            return None
        notes.append(note)
    return max(notes, key=lambda n: n.get("prompt_tokens") or 0) if notes else None


def _tokens(n: int | None) -> str:
    return f"{n:,} tokens" if n is not None else "its tokens"


def ways_out(note: dict, refused: int, *, model: str, max_tokens: int, prompt_lang: str,
             context_chars: int | None, code_chars: int, owned_by: str | None,
             english_tokens: int | None) -> str:
    """One line: how many prompts did not fit, the longest against the context, and what
    would make them fit (only the ways that apply to this run)."""
    prompt, context = note.get("prompt_tokens"), note.get("model_context")
    limit = f"{model}'s context of {context:,} tokens" if context else f"{model}'s context"
    if prompt is not None and context is not None and prompt < context:
        # the prompt fits; the prompt and the answer's budget do not (vLLM, OpenAI count both)
        return (f"{refused} prompt(s) of up to {_tokens(prompt)} leave no room in {limit} for "
                f"an answer of --max-tokens {max_tokens:,}: give --max-tokens "
                f"{context - prompt - 1:,} or less")
    ways = []
    if prompt_lang != "en":
        shorter = f" (this prompt: {english_tokens:,} tokens)" if english_tokens else ""
        ways.append(f"an English prompt, --prompt-lang en{shorter}")
    if code_chars >= CODE_WORTH_CUTTING:  # the prompt shows this much code around the comment
        ways.append(f"less code around the comment, --context-chars below "
                    f"{context_chars or code_chars // 2:,} ({code_chars:,} characters now)")
    if prompt is not None and owned_by == OWNED_BY:
        room = -(-(prompt + min(max_tokens, 2048)) // 1024) * 1024  # the prompt and an answer
        ways.append(f"a longer context, python -m judges.serve --n-ctx {room}")
    else:
        ways.append("a model or server with a longer context")
    return (f"{refused} prompt(s) do not fit {limit} (the longest: {_tokens(prompt)}); "
            f"ways out: {'; or '.join(ways)}")
