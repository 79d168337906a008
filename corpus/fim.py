"""The study's FIM prompts (4.3): the file around the masked comment in a model family's layout
(`models.fim`), with the language prime.

The prime: the start of the reference comment, appended to the prefix so the model writes in the
target language. The study took "the first 3 tokens of the ground truth" in each model's own
tokenizer; `prime_end(..., tokenizer=counter)` does that with any `corpus.tokens` counter that
gives token spans (a Hugging Face tokenizer, a packaged vocabulary): the first 3 tokens that hold
a letter or digit, so comment markers (`//`, `/**`, `*`, `#`, quotes) are kept in the prime but
not counted. Without a tokenizer it counts words instead: a whitespace-delimited run holding a
letter or digit, each CJK character one word (`/** Berekent de som van ... */` -> `/** Berekent
de som`); the same prime for every model.

A prime must leave a middle to generate: `leaves_middle` is true when at least one word of the
comment starts after the prime. A comment of three words or fewer, primed by words, is handed to
the model whole; primed by tokens it may be cut inside its last word (`// πλήθος α|λόγων` in
Gemma's tokens), which leaves the model a word to finish, not a comment to write. Such targets
are refused (`corpus.select`'s `prime_covers` filter at extraction, `corpus.generate` at
generation).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from models.fim import (  # noqa: F401
    BUILTIN_FAMILIES,
    NO_INFILLING,
    FimFamily,
    UnknownFamilyError,
    families,
    family_for_model,
    get_family,
    load_families_file,
    register_family,
)

_CJK = "\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_PRIME_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]*[^\W_{_CJK}][^\s{_CJK}]*")


def word_count(comment: str) -> int:
    """The comment's words as the prime counts them (markers hold no letter: not words)."""
    return len(_PRIME_WORD.findall(comment))


def _body_end(comment: str, closer: str) -> int:
    """Where the comment's text ends: before its closing marker (`*/`, quotes)."""
    return len(comment) - len(closer) if closer and comment.endswith(closer) else len(comment)


def prime_end(comment: str, n_units: int = 3, *, closer: str = "", tokenizer=None) -> int:
    """Where the prime ends in `comment` (a character offset): after its n-th word, or its n-th
    token holding a letter or digit when `tokenizer` (a `corpus.tokens` counter with `spans`)
    is given. The whole comment when it is shorter; never inside the closing marker."""
    limit = _body_end(comment, closer)
    body = comment[:limit]
    if n_units <= 0:
        return 0
    if tokenizer is not None:
        spans = tokenizer.spans(body)
        if spans is None:
            raise ValueError(f"{tokenizer.name} gives no token offsets to prime with")
        count = 0
        for start, end in spans:
            if any(ch.isalnum() for ch in body[start:end]):
                count += 1
                if count == n_units:
                    return end
        return limit
    count = 0
    for match in _PRIME_WORD.finditer(body):
        count += 1
        if count == n_units:
            return match.end()
    return limit


def prime_description(tokenizer, n_units: int) -> str:
    """What a prime is, as reports and generations' summaries say it: `first 3 tokens of
    hf:NAME`, or `first 3 words` without a tokenizer."""
    return f"first {n_units} tokens of {tokenizer.name}" if tokenizer is not None \
        else f"first {n_units} words"


def leaves_middle(comment: str, end: int, *, closer: str = "") -> bool:
    """Does a prime ending at `end` leave a word of the comment to generate (one that starts at
    or after `end`)? A word the prime cut in two does not count: finishing it is no comment."""
    body = comment[:_body_end(comment, closer)]
    return any(match.start() >= end for match in _PRIME_WORD.finditer(body))


@dataclass(frozen=True)
class FimInput:
    prompt: str  # exactly what the model is given
    prefix: str  # the code before the comment, plus the prime
    suffix: str
    prime: str  # the start of the reference comment, also the start of the prediction
    family: str
    leaves_middle: bool = True  # a word of the comment is left to generate (`leaves_middle`)


def build_fim_prompt(content: str, span_start: int, span_end: int, family: FimFamily, *,
                     closer: str = "", n_units: int = 3, tokenizer=None) -> FimInput:
    """The FIM input for the comment at content[span_start:span_end], primed with its first
    `n_units` words, or tokens of `tokenizer` (`prime_end`)."""
    if not 0 <= span_start <= span_end <= len(content):
        raise ValueError(f"span {span_start}:{span_end} outside a text of {len(content)} chars")
    comment = content[span_start:span_end]
    cut = prime_end(comment, n_units, closer=closer, tokenizer=tokenizer)
    prime = comment[:cut]
    prefix = content[:span_start] + prime
    suffix = content[span_end:]
    return FimInput(family.render(prefix, suffix), prefix, suffix, prime, family.name,
                    leaves_middle(comment, cut, closer=closer))

