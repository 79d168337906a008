"""Token counts for the corpus filters and the generation budget.

The study counted tokens with each target model's own tokenizer. A `TokenCounter` is either
- `HFTokenCounter(id_or_folder)`: a model's tokenizer, resolved offline through
  `models.resolve_model` (a local folder, a cached hub id or a packaged model); or
- `ApproxTokenCounter()`: when no model tokenizer is at hand, an approximation of an
  English/code-centred BPE tokenizer, `approx-bpe:v2`: a run of ASCII letters/digits counts one
  token per started 4 characters, a run of Latin letters with diacritics one per started 3, a run
  in another alphabet (Greek, Cyrillic ...) one per character, CJK characters 3 tokens per 2,
  every other visible character one, and a whitespace run holding a newline or two or more spaces
  one (a single space is free). It leans towards over-counting, which errs on the safe side of a
  context window. Measured against SmolLM2's tokenizer (a 49k BPE like StarCoder's) on
  Pygments' own sources: files x1.30 (median; 5-95%: 1.03-1.39), comments x1.38 (1.06-1.69).
  Models with large multilingual vocabularies (CodeGemma, CodeQwen) need far fewer tokens for
  Greek or Chinese than it counts. It is a stand-in, and reports say so.

`generation_budget(lengths, sigmas=3)` is mean + sigmas * standard deviation (population),
rounded up: the study's expected comment length and its max-new-tokens.
"""
from __future__ import annotations

import math
import os
import re
import unicodedata
from typing import Protocol, Sequence

_CJK = "\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_APPROX_PIECE = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+|\s+|[^\s]")


_CJK_RUN = re.compile(rf"[{_CJK}]+")


def _is_latin(ch: str) -> bool:
    return "LATIN" in unicodedata.name(ch, "")


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class ApproxTokenCounter:
    name = "approx-bpe:v2"
    is_approximation = True

    def count(self, text: str) -> int:
        total = 0
        for piece in _APPROX_PIECE.findall(text):
            if piece.isspace():
                total += 1 if ("\n" in piece or len(piece) > 1) else 0
            elif _CJK_RUN.fullmatch(piece):
                total += math.ceil(len(piece) * 3 / 2)
            elif piece[0].isalnum() or len(piece) > 1:
                if piece.isascii():
                    total += math.ceil(len(piece) / 4)
                elif all(ch.isascii() or _is_latin(ch) for ch in piece):
                    total += math.ceil(len(piece) / 3)
                else:
                    total += len(piece)
            else:
                total += 1
        return total


class HFTokenCounter:
    """A model's own tokenizer (no special tokens added)."""

    is_approximation = False

    def __init__(self, id_or_folder: str, tokenizer=None):
        if tokenizer is None:
            from transformers import AutoTokenizer

            from models import resolve_model

            tokenizer = AutoTokenizer.from_pretrained(os.fspath(resolve_model(id_or_folder)))
        tokenizer.model_max_length = 10**9  # counting only: no "sequence too long" warnings
        self.tokenizer = tokenizer
        self.name = f"hf:{id_or_folder}"

    def count(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])


def make_counters(tokenizers: Sequence[str] | None) -> list[TokenCounter]:
    """Counters for the given tokenizer ids/folders, or the approximation when none is given."""
    if not tokenizers:
        return [ApproxTokenCounter()]
    return [HFTokenCounter(t) for t in tokenizers]


def generation_budget(lengths: Sequence[int], sigmas: float = 3.0) -> int:
    """ceil(mean + sigmas * population std) of comment lengths in tokens; 0 for no comments."""
    if not lengths:
        return 0
    n = len(lengths)
    mean = sum(lengths) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in lengths) / n)
    return math.ceil(mean + sigmas * std)
