"""Noise controls (study 6.1): random token strings scored exactly like predictions.

- ``uniform``: tokens drawn uniformly from the scoring tokenizer's vocabulary, as many as the
  reference has under that tokenizer.
- ``targeted``: the same number of tokens drawn (with replacement) from the surrounding context:
  the source file without the comment. A pairs target (no source file) draws from the other
  references of its dataset and language (the pool a translation-style test set offers), so its
  noise is in the reference's language; its context text, which may be in another language
  (a translation's source sentence), is not used.

The *scoring tokenizer* is the tokenizer of the metric's model for neural metrics (its whole
vocabulary minus special tokens; the ids are decoded to text). For lexical metrics it is the
shared comment tokenizer (metrics.tokenize), whose vocabulary is open: it is defined as the
distinct comment-tokenizer tokens of all source files of the same dataset and language (for a
pairs dataset: its references in that language, never their context texts), sorted
(``lexical_vocabulary``); noise tokens are joined by spaces. A neural metric's uniform noise
draws from its model's whole vocabulary, which for a multilingual model holds every language's
pieces (as in the study).

Every sample is a pure function of (kind, reference, context, tokenizer, seed, target id): the
random generator is seeded from ``"{seed}:{target_id}:{kind}"`` (Python's string seeding is
SHA-512 based and stable across runs and platforms), so the order of scoring never matters.
Samples are stored in ``NoiseSample`` and scored like generations.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import db.models
from metrics.core import MetricInputError, require_text
from metrics.tokenize import tokenizer_for

NOISE_KINDS = tuple(kind for kind in db.models.NOISE_KINDS if kind != "none")  # what makes text
# The comment tokenizer of the target's language family, vocabulary = its dataset's files.
LEXICAL_NOISE_TOKENIZER = "comment-v1@dataset-vocab"


@dataclass(frozen=True)
class NoiseTokenizer:
    """What noise needs from a tokenizer: split, join, and a vocabulary to draw from."""

    name: str  # stored in NoiseSample.tokenizer
    split: Callable[[str], Sequence]  # text -> tokens (ids or strings)
    join: Callable[[Sequence], str]  # tokens -> text
    vocabulary: Sequence  # what uniform noise draws from


def hf_noise_tokenizer(tokenizer, model_name: str) -> NoiseTokenizer:
    """Noise in a Hugging Face tokenizer's token space (ids, decoded to text)."""
    special = set(tokenizer.all_special_ids)
    vocab = [i for i in range(len(tokenizer)) if i not in special]

    def split(text: str):
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    def join(ids) -> str:
        return tokenizer.decode(list(ids), skip_special_tokens=True)

    return NoiseTokenizer(f"hf:{model_name}", split, join, vocab)


def lexical_vocabulary(texts: Sequence[str], lang: str) -> list[str]:
    """The comment tokenizer's vocabulary over ``texts`` (e.g. a dataset's files), sorted."""
    tok = tokenizer_for(lang)
    return sorted({t for text in texts for t in tok.tokenize(text)})


def lexical_noise_tokenizer(lang: str, vocabulary: Sequence[str]) -> NoiseTokenizer:
    tok = tokenizer_for(lang)
    return NoiseTokenizer(LEXICAL_NOISE_TOKENIZER, tok.tokenize, " ".join,
                          list(vocabulary))


def context_without_comment(file_content: str, span: tuple[int, int]) -> str:
    s, e = span
    return file_content[:s] + file_content[e:]


def make_noise(kind: str, reference: str, tokenizer: NoiseTokenizer, seed: int, target_id: int,
               context: Optional[str] = None) -> str:
    """One noise text standing in for ``reference`` (see module docstring)."""
    if kind not in NOISE_KINDS:
        raise ValueError(f"unknown noise kind {kind!r}; choose one of {', '.join(NOISE_KINDS)}")
    require_text(reference, "reference")
    n = len(tokenizer.split(reference))
    if n == 0:
        raise MetricInputError(f"reference has no tokens under {tokenizer.name}")
    rng = random.Random(f"{seed}:{target_id}:{kind}")
    if kind == "uniform":
        if not tokenizer.vocabulary:
            raise MetricInputError(f"{tokenizer.name} has an empty vocabulary to draw from")
        tokens = [tokenizer.vocabulary[rng.randrange(len(tokenizer.vocabulary))]
                  for _ in range(n)]
    else:
        pool = list(tokenizer.split(context or ""))
        if not pool:
            raise MetricInputError("targeted noise needs surrounding context, and the file has "
                                   "none outside the comment (use --noise uniform for such "
                                   "targets)")
        tokens = rng.choices(pool, k=n)
    text = tokenizer.join(tokens)
    if not text.strip():  # e.g. only whitespace pieces were drawn: draw again, deterministically
        return make_noise(kind, reference, tokenizer, seed + 1_000_003, target_id, context)
    return text
