"""Which natural language a comment is written in, behind a small swappable interface.

A `LanguageDetector` has a `name` and `confidences(text) -> [(iso639_1, confidence), ...]`, best
first. Two implementations: `LinguaDetector` (default; lingua-language-detector, offline, good on
short text) and `LangdetectDetector` (the study's langdetect, used if a user installs it).
`make_detector("lingua" | "langdetect")` picks one.

`clean_for_langid` strips what is code, not language, before detection: comment markers, tags
such as `@param name`, identifiers (camelCase, snake_case, dotted.names, calls()), URLs, e-mail
addresses, numbers, HTML tags and inline code in backticks.

`judge_language(text, expected, detector)` gives a `LanguageVerdict`: `match`, `mismatch` or
`undetermined` (too few words, or the best two languages closer than `min_margin`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, Sequence

# Languages the default detector chooses among: the study's five plus the languages most often
# met in code comments. A closed set is more accurate on short texts than all 75 (which, for
# example, lets Afrikaans win over Dutch) and loads in a third of the memory. `--langid-languages
# all` lifts it.
DEFAULT_CANDIDATES = ("en", "nl", "zh", "el", "pl", "de", "fr", "es", "it", "pt", "cs", "ru",
                      "uk", "ja", "ko", "sv", "da", "tr", "vi", "id")


class LanguageDetector(Protocol):
    name: str

    def confidences(self, text: str) -> list[tuple[str, float]]:
        """(ISO 639-1 code, confidence in [0, 1]) for the likeliest languages, best first."""


class LinguaDetector:
    def __init__(self, candidates: Sequence[str] | None = DEFAULT_CANDIDATES):
        from lingua import IsoCode639_1, LanguageDetectorBuilder

        if candidates is None:
            builder = LanguageDetectorBuilder.from_all_languages()
        else:
            codes = []
            for code in candidates:
                try:
                    codes.append(getattr(IsoCode639_1, code.upper()))
                except AttributeError:
                    raise ValueError(f"lingua does not know language code {code!r}") from None
            builder = LanguageDetectorBuilder.from_iso_codes_639_1(*codes)
        self._detector = builder.build()
        self.name = "lingua:" + ("all" if candidates is None else ",".join(candidates))

    def confidences(self, text: str) -> list[tuple[str, float]]:
        values = self._detector.compute_language_confidence_values(text)
        return [(v.language.iso_code_639_1.name.lower(), float(v.value)) for v in values[:3]]


class LangdetectDetector:
    """The study's detector (pip install langdetect); seeded, so results repeat."""

    def __init__(self, seed: int = 0):
        from langdetect import DetectorFactory

        DetectorFactory.seed = seed
        self.name = f"langdetect:seed={seed}"

    def confidences(self, text: str) -> list[tuple[str, float]]:
        from langdetect import detect_langs
        from langdetect.lang_detect_exception import LangDetectException

        try:
            found = detect_langs(text)
        except LangDetectException:
            return []
        # langdetect says zh-cn / zh-tw: keep the ISO 639-1 part
        return [(str(x.lang).split("-")[0], float(x.prob)) for x in found]


@lru_cache(maxsize=4)
def make_detector(kind: str = "lingua", candidates: tuple[str, ...] | None = DEFAULT_CANDIDATES
                  ) -> LanguageDetector:
    """A detector by name, built once per process (lingua takes a few seconds to build)."""
    if kind == "lingua":
        return LinguaDetector(candidates)
    if kind == "langdetect":
        try:
            return LangdetectDetector()
        except ImportError:
            raise ValueError("detector 'langdetect' needs `pip install langdetect`") from None
    raise ValueError(f"unknown language detector {kind!r}; choose lingua or langdetect")


_CLEANERS = [
    re.compile(r"`[^`\n]*`"),  # inline code
    re.compile(r"<[^>\n]{1,80}>"),  # HTML / XML tags
    re.compile(r"\b\w+://\S+"),  # URLs
    re.compile(r"\S+@\S+\.\w+"),  # e-mail addresses
    re.compile(r"[@\\](param|arg|throws|exception|tparam)\s+\S+"),  # a tag and its name
    re.compile(r"[@\\]\w+"),  # other tags: @return, @author, \brief
    re.compile(r"\b\w+(?:[.:]{1,2}\w+)+(?:\(\))?"),  # dotted.names, a::b
    re.compile(r"\b\w+\([^)\n]{0,60}\)"),  # calls()
    re.compile(r"\b[a-z]+[A-Z]\w*|\b[A-Z]{2,}[a-z]\w*|\b[A-Z][a-z]+[A-Z]\w*"),  # camelCase
    re.compile(r"\b\w*_\w*"),  # snake_case, CONSTANT_CASE
    re.compile(r"\b\d[\d.,]*\b"),  # numbers
    re.compile(r"[/*#=\-+<>{}\[\]|\\~^$;\"'`]+"),  # markers and code punctuation
]
_SPACE = re.compile(r"\s+")
_CJK = "\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_WORD = re.compile(rf"[{_CJK}]|[^\W\d_{_CJK}]{{2,}}")


def clean_for_langid(text: str) -> str:
    for pattern in _CLEANERS:
        text = pattern.sub(" ", text)
    return _SPACE.sub(" ", text).strip()


def word_count(text: str) -> int:
    """Words of two letters or more, each CJK character counting as one."""
    return len(_WORD.findall(text))


@dataclass(frozen=True)
class LanguageVerdict:
    status: str  # match | mismatch | undetermined
    detected: str | None
    confidence: float
    words: int


def judge_language(text: str, expected: str, detector: LanguageDetector, *,
                   min_words: int = 3, min_margin: float = 0.1) -> LanguageVerdict:
    """Is `text` (a comment, markers and all) in `expected`? Cleans it first."""
    cleaned = clean_for_langid(text)
    words = word_count(cleaned)
    if words < min_words:
        return LanguageVerdict("undetermined", None, 0.0, words)
    ranked = detector.confidences(cleaned)
    if not ranked:
        return LanguageVerdict("undetermined", None, 0.0, words)
    best, confidence = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    if confidence - runner_up < min_margin:
        return LanguageVerdict("undetermined", best, confidence, words)
    return LanguageVerdict("match" if best == expected else "mismatch", best, confidence, words)
