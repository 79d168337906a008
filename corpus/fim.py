"""The study's FIM prompts (4.3): the file around the masked comment in a model family's layout
(`models.fim`), with the language prime.

The prime: the first 3 "words" of the reference comment are appended to the prefix so the model
writes in the target language. A word here is a whitespace-delimited run holding a letter or
digit, each CJK character counting as one word; comment markers (`//`, `/**`, `*`, `#`, quotes)
are not words but are kept in the prime. So for `/** Berekent de som van ... */` the prime is
`/** Berekent de som`. The study counted model tokens instead; `prime_end(..., tokenizer=tok)`
does that (first 3 tokenizer tokens that hold a letter or digit), at the price of primes that
differ between models. The default keeps the same prime for every model, so their outputs
compare.
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


def prime_end(comment: str, n_words: int = 3, *, closer: str = "", tokenizer=None) -> int:
    """Where the prime ends in `comment` (a character offset): after its n-th word (or token).

    The prime never reaches into the closing marker (`*/`, quotes)."""
    limit = len(comment) - len(closer) if closer and comment.endswith(closer) else len(comment)
    body = comment[:limit]
    if n_words <= 0:
        return 0
    if tokenizer is not None:
        encoded = tokenizer(body, add_special_tokens=False, return_offsets_mapping=True)
        count = 0
        for start, end in encoded["offset_mapping"]:
            if any(ch.isalnum() for ch in body[start:end]):
                count += 1
                if count == n_words:
                    return end
        return limit
    count = 0
    for match in _PRIME_WORD.finditer(body):
        count += 1
        if count == n_words:
            return match.end()
    return limit


@dataclass(frozen=True)
class FimInput:
    prompt: str  # exactly what the model is given
    prefix: str  # the code before the comment, plus the prime
    suffix: str
    prime: str  # the first words of the reference comment, also the start of the prediction
    family: str


def build_fim_prompt(content: str, span_start: int, span_end: int, family: FimFamily, *,
                     closer: str = "", n_words: int = 3, tokenizer=None) -> FimInput:
    """The FIM input for the comment at content[span_start:span_end]."""
    if not 0 <= span_start <= span_end <= len(content):
        raise ValueError(f"span {span_start}:{span_end} outside a text of {len(content)} chars")
    comment = content[span_start:span_end]
    cut = prime_end(comment, n_words, closer=closer, tokenizer=tokenizer)
    prime = comment[:cut]
    prefix = content[:span_start] + prime
    suffix = content[span_end:]
    return FimInput(family.render(prefix, suffix), prefix, suffix, prime, family.name)

