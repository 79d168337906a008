"""The comment tokenizer every lexical metric shares (BLEU, ROUGE-L, METEOR, chrF, lexical noise).

One tokenizer per language family, sacrebleu-style, each with a signature name that goes into
every score's signature:

- ``comment-intl-v1``: space-delimited scripts (en, nl, pl, el, de, ru, ...). Words are runs of
  Unicode letters/digits, so Greek and Polish survive (rouge-score's default keeps only
  ``[a-z0-9]``). Han characters embedded in such text are split one per character.
- ``comment-cjk-v1``: Chinese and Japanese. Every Han, kana and full-width character is a token of
  its own (no word segmenter: it would be one more model to trust); embedded Latin words and
  identifiers stay whole.

Both keep code identifiers whole inside any language: ``snake_case``, ``camelCase``, dotted
names and calls (``os.path.join()``, ``a.b()``). Text is NFC-normalised (a Greek or Polish letter
typed as base + combining accent equals the precomposed one) and lower-cased with ``str.lower``
(Greek final sigma handled); accents are kept (Greek ``πού`` and ``που`` differ). Punctuation and
symbols are dropped: a metric compares words, not commas.

Any valid ISO 639 code is accepted (`taxonomy.languages`, the project's one check; a name such as
``german`` is refused with the code to use). Languages written without spaces that need a real
word segmenter (th, lo, km, my, bo) are refused with :class:`UnsupportedLanguageError` rather
than scored as one giant token.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from nlce.cli import InputError

# Han (CJK unified ideographs + extensions A, compatibility), kana, full-width forms, CJK symbols.
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff"
_HAN_RE = re.compile(f"[{_HAN}]")
_CJK_RE = re.compile(f"[{_HAN}{_KANA}]")
# A word: letters/digits/underscore (Unicode), optionally dotted (a.b.c) and called (f()).
_NAME = r"[^\W\d]\w*"
_WORD_RE = re.compile(rf"{_NAME}(?:\.{_NAME})*(?:\(\))?|\d+(?:[.,]\d+)*\w*")

SCRIPTIO_CONTINUA = {"th": "Thai", "lo": "Lao", "km": "Khmer", "my": "Burmese", "bo": "Tibetan"}
CJK_LANGUAGES = frozenset({"zh", "ja"})


class UnsupportedLanguageError(InputError):
    """The language code is malformed or its script needs a word segmenter we do not have."""


def normalise(text: str) -> str:
    """NFC + lower case: the one normalisation every lexical metric applies."""
    return unicodedata.normalize("NFC", text).lower()


@dataclass(frozen=True)
class CommentTokenizer:
    """Splits a comment into words; ``name`` is its signature. Also a rouge-score tokenizer."""

    name: str
    split_chars: re.Pattern  # characters that are tokens on their own
    lowercase: bool = True

    def __call__(self, text: str) -> list[str]:
        return self.tokenize(text)

    def tokenize(self, text: str) -> list[str]:
        if not isinstance(text, str):
            raise TypeError(f"expected a string to tokenize, got {type(text).__name__}")
        text = normalise(text) if self.lowercase else unicodedata.normalize("NFC", text)
        # Surround per-character scripts with spaces so they never glue onto a Latin word.
        text = self.split_chars.sub(lambda m: f" {m.group(0)} ", text)
        tokens = []
        for chunk in text.split():
            if len(chunk) == 1 and self.split_chars.match(chunk):
                tokens.append(chunk)
            else:
                tokens.extend(_WORD_RE.findall(chunk))
        return tokens

    @property
    def signature(self) -> str:
        return self.name if self.lowercase else f"{self.name}+case"


INTL = CommentTokenizer("comment-intl-v1", _HAN_RE)
CJK = CommentTokenizer("comment-cjk-v1", _CJK_RE)


def check_language(lang: str) -> str:
    """The ISO 639-1 code, or a clear error for a code that is not one or that we cannot
    tokenize."""
    from taxonomy.languages import LanguageCodeError, normalise_language

    try:
        code = normalise_language(lang)
    except LanguageCodeError as exc:
        raise UnsupportedLanguageError(str(exc)) from None
    if code in SCRIPTIO_CONTINUA:
        raise UnsupportedLanguageError(
            f"language {lang!r} ({SCRIPTIO_CONTINUA[code]}) is written without spaces and needs a "
            "word segmenter; the comment tokenizer supports space-delimited scripts and CJK")
    return code


@lru_cache(maxsize=None)
def tokenizer_for(lang: str) -> CommentTokenizer:
    """The comment tokenizer of a language's family."""
    return CJK if check_language(lang) in CJK_LANGUAGES else INTL


def tokenize(text: str, lang: str) -> list[str]:
    """Tokens of ``text`` in language ``lang`` (see module docstring)."""
    return tokenizer_for(lang).tokenize(text)


def family_signature() -> str:
    """How the per-language choice appears in a run signature."""
    return f"{INTL.signature}+zh,ja:{CJK.signature}"
