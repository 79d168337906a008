"""Context variants (study 7.1, Figure 4) and the token bookkeeping behind them.

A neural metric reads a comment *with* some context but scores only the comment's own tokens:

- ``none``: the comment alone (stripped, as bert-score does).
- ``minimal``: a short prefix in the target language (``MINIMAL_PREFIX``), then the comment. The
  study primed with the first ground-truth tokens; a fixed prefix gives reference and prediction
  the same context and leaks nothing of the reference into the prediction's input.
- ``full``: the whole source file with the comment in place of the original one.

:func:`build_segment` turns a comment + variant into a :class:`Segment` (text + the character span
of the comment). :func:`encode_segment` tokenises it with offsets, picks exactly the tokens whose
characters overlap the comment (a token straddling the boundary counts as the comment's), and if
the text is longer than the model allows, keeps a window around the comment: the comment whole,
context split evenly left/right (the unused share of one side goes to the other). What was cut is
returned in ``details`` and stored with the score.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Optional

from db.models import CONTEXT_VARIANTS
from metrics.core import MetricInputError


class _Variant(str, Enum):
    @classmethod
    def parse(cls, value) -> "ContextVariant":
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            raise ValueError(f"unknown context variant {value!r}; choose one of "
                             f"{', '.join(v.value for v in cls)}") from None


# The names come from db.models (one list, also the database's CHECK constraint): NONE, MINIMAL,
# FULL.
ContextVariant = _Variant("ContextVariant", [(name.upper(), name) for name in CONTEXT_VARIANTS])


MINIMAL_PREFIX = {
    "en": "Code comment in English:\n",
    "nl": "Codecommentaar in het Nederlands:\n",
    "zh": "中文代码注释：\n",
    "el": "Σχόλιο κώδικα στα ελληνικά:\n",
    "pl": "Komentarz do kodu po polsku:\n",
}


@dataclass(frozen=True)
class Segment:
    """A model input text and the [start, end) character span of the comment inside it."""

    text: str
    start: int
    end: int

    @property
    def comment(self) -> str:
        return self.text[self.start:self.end]


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def build_segment(comment: str, variant: ContextVariant | str, lang: str = "en",
                  file_content: Optional[str] = None,
                  span: Optional[tuple[int, int]] = None) -> Segment:
    """The input for ``comment`` under a context variant.

    ``file_content`` and ``span`` (the original comment's [start, end) in the file) are needed for
    ``full``: the comment replaces ``file_content[start:end]``.
    """
    variant = ContextVariant.parse(variant)
    if not isinstance(comment, str) or not comment.strip():
        raise MetricInputError("empty comment: nothing to score")
    if variant is ContextVariant.NONE:
        text = comment.strip()
        return Segment(text, 0, len(text))
    if variant is ContextVariant.MINIMAL:
        prefix = MINIMAL_PREFIX.get(lang, MINIMAL_PREFIX["en"])
        text = prefix + comment.strip()
        return Segment(text, len(prefix), len(text))
    if file_content is None or span is None:
        raise MetricInputError("full context needs the source file and the comment's span")
    s, e = span
    if not (0 <= s <= e <= len(file_content)):
        raise MetricInputError(f"comment span {span} lies outside the file "
                               f"({len(file_content)} characters)")
    text = file_content[:s] + comment + file_content[e:]
    start, end = _strip_span(text, s, s + len(comment))
    return Segment(text, start, end)


@dataclass(frozen=True)
class EncodedSegment:
    """Token ids with the tokenizer's special tokens, and where the comment's tokens are."""

    input_ids: tuple[int, ...]
    scored: tuple[int, ...]  # positions in input_ids of the comment's tokens
    special: tuple[int, ...]  # positions of special tokens (CLS/SEP/BOS/EOS)
    details: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class SpecialTokens:
    prefix: tuple[int, ...]
    suffix: tuple[int, ...]


def special_tokens(tokenizer) -> SpecialTokens:
    """The ids a tokenizer wraps every text in (e.g. <s> ... </s>, [CLS] ... [SEP])."""
    return _special_tokens(tokenizer)


@lru_cache(maxsize=32)
def _special_tokens(tokenizer) -> SpecialTokens:
    probe = "a"
    plain = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    full = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
    for k in range(len(full) - len(plain) + 1):
        if full[k:k + len(plain)] == plain:
            return SpecialTokens(tuple(full[:k]), tuple(full[k + len(plain):]))
    raise ValueError(f"cannot locate the text between {type(tokenizer).__name__}'s special tokens")


def model_max_tokens(tokenizer, model_config=None) -> int:
    """The longest input (special tokens included) the model accepts."""
    limits = []
    for value in (getattr(tokenizer, "model_max_length", None),
                  getattr(model_config, "max_position_embeddings", None),
                  getattr(model_config, "n_positions", None)):
        if isinstance(value, int) and 0 < value < 1_000_000:
            limits.append(value)
    return min(limits) if limits else 512


def encode_segment(tokenizer, segment: Segment, max_tokens: int,
                   add_special: bool = True) -> EncodedSegment:
    """Tokenise ``segment``, locate the comment's tokens, window to ``max_tokens``."""
    enc = tokenizer(segment.text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), list(enc["offset_mapping"])
    s, e = segment.start, segment.end
    inside = [i for i, (a, b) in enumerate(offsets) if b > a and b > s and a < e]
    if not inside:
        raise MetricInputError(f"the comment {segment.comment[:40]!r} has no tokens under "
                               f"{type(tokenizer).__name__}")
    i0, i1 = inside[0], inside[-1] + 1
    specials = special_tokens(tokenizer) if add_special else SpecialTokens((), ())
    budget = max_tokens - len(specials.prefix) - len(specials.suffix)
    details: dict = {}
    if i1 - i0 > budget:
        details["comment_tokens_cut"] = (i1 - i0) - budget
        i1 = i0 + budget
    room = budget - (i1 - i0)
    left_avail, right_avail = i0, len(ids) - i1
    left = min(left_avail, max(room // 2, room - right_avail))
    right = min(right_avail, room - left)
    lo, hi = i0 - left, i1 + right
    if lo > 0:
        details["context_cut_left"] = {"tokens": lo, "chars": offsets[lo][0]}
    if hi < len(ids):
        details["context_cut_right"] = {"tokens": len(ids) - hi,
                                        "chars": len(segment.text) - offsets[hi - 1][1]}
    window = ids[lo:hi]
    p = len(specials.prefix)
    input_ids = specials.prefix + tuple(window) + specials.suffix
    scored = tuple(range(p + i0 - lo, p + i1 - lo))
    special = tuple(range(p)) + tuple(range(p + len(window), len(input_ids)))
    (a0, _), (_, b1) = offsets[i0], offsets[i1 - 1]
    if segment.text[a0:s].strip() or segment.text[e:b1].strip():
        details["boundary_tokens"] = True  # a token shared by comment and context counts as comment
    return EncodedSegment(input_ids, scored, special, details)
