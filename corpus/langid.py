"""Which natural language a comment is written in, behind a small swappable interface.

A `LanguageDetector` has a `name` and `confidences(text) -> [(iso639_1, confidence), ...]`, best
first. Two implementations: `LinguaDetector` (default; lingua-language-detector, offline, good on
short text) and `LangdetectDetector` (the study's langdetect, used if a user installs it).
`make_detector("lingua" | "langdetect")` picks one.

`clean_for_langid` strips what is code, not language, before detection: comment markers, tags
such as `@param name`, identifiers (camelCase, snake_case, dotted.names, calls()), URLs, e-mail
addresses, numbers, HTML tags and inline code in backticks.

`judge_language(text, expected, detector)` gives a `LanguageVerdict`: `match`, `mismatch` or
`undetermined` (too few words, or the best two languages closer than `min_margin`), and the rule
that decided: the script for Han, kana, Hangul and Greek text (`script_language`), else the
detector, overruled when the expected language's function words show a code-switched comment
(`code_switched`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, Sequence

from nlce.cli import InputError

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
                    raise InputError(f"lingua does not know language code {code!r}") from None
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
            raise InputError("detector 'langdetect' needs `pip install langdetect`") from None
    raise InputError(f"unknown language detector {kind!r}; choose lingua or langdetect")


# Identifiers and code tokens are ASCII in practice; matching them with ASCII classes keeps a
# natural-language run that touches them whole (`获取SYS_CACHE缓存` loses only `SYS_CACHE`:
# with Unicode \w the Han text would be part of the "identifier").
_A = re.ASCII
_CLEANERS = [
    re.compile(r"`[^`\n]*`"),  # inline code
    re.compile(r"<[^>\n]{1,80}>"),  # HTML / XML tags
    re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[!-~]+"),  # URLs (printable ASCII)
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", _A),  # e-mail addresses
    re.compile(r"[@\\](param|arg|throws|exception|tparam)\s+[\w.$\[\]<>]+", _A),  # a tag + name
    re.compile(r"[@\\]\w+", _A),  # other tags: @return, @author, \brief
    re.compile(r"\b\w+(?:[.:]{1,2}\w+)+(?:\(\))?", _A),  # dotted.names, a::b
    re.compile(r"\b\w+\([^)\n]{0,60}\)", _A),  # calls()
    re.compile(r"\b[a-z]+[A-Z]\w*|\b[A-Z]{2,}[a-z]\w*|\b[A-Z][a-z]+[A-Z]\w*", _A),  # camelCase
    re.compile(r"\b\w*_\w*", _A),  # snake_case, CONSTANT_CASE
    re.compile(r"\b[A-Z0-9]{2,}\b", _A),  # ACRONYMS, SQL, ID, UTF8
    re.compile(r"\b\d[\d.,]*\b", _A),  # numbers
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


# Script evidence: characters that only one candidate language writes. When they make up at least
# SCRIPT_SHARE of a comment's words (`word_count`: words of two letters or more, each
# Han/kana/Hangul character one word), the script decides and the detector is not asked: short CJK
# headers such as "sql操作工具类" are otherwise confidently "Italian" or "Turkish", and a Greek
# comment with English terms "English". One Greek word among three is a third: Greek. A lone Greek
# letter (α, π, Σ) is a symbol, not a word; CJK needs two characters at least. Names are not a
# language: when the script's words are fewer than half and the other words hold a sentence's
# grammar (two function words or more of a language of `FUNCTION_WORDS`), the script does not
# decide and the detector reads the whole comment: "Translated default messages for the jQuery
# validation plugin. Locale: ZH (Chinese, 中文 (Zhōngwén), 汉语, 漢語)" names Chinese in English,
# where "导出文件类型 （json、xml、png、csv ...）" lists names in Chinese.
_SCRIPT_CHARS = {
    "ja": re.compile(r"[\u3040-\u30ff]"),  # kana (Japanese also writes Han)
    "ko": re.compile(r"[\uac00-\ud7af]"),  # Hangul
    "zh": re.compile(r"[\u3400-\u9fff\uf900-\ufaff]"),  # Han
    "el": re.compile(r"[\u0370-\u03ff\u1f00-\u1fff]{2,}"),  # Greek words
}
SCRIPT_SHARE = 1 / 3
_SCRIPT_MINIMUM = {"ko": 2, "zh": 2, "el": 1}


def script_language(cleaned: str) -> str | None:
    """The language a comment's script proves (zh, ja, ko, el), or None (Latin, Cyrillic ...:
    several languages share those, so the detector decides)."""
    words = word_count(cleaned)
    if not words:
        return None
    kana = len(_SCRIPT_CHARS["ja"].findall(cleaned))
    han = len(_SCRIPT_CHARS["zh"].findall(cleaned))
    if kana and kana + han >= max(2, SCRIPT_SHARE * words):
        return "ja"
    for language in ("ko", "zh", "el"):
        hits = len(_SCRIPT_CHARS[language].findall(cleaned))
        if hits >= max(_SCRIPT_MINIMUM[language], SCRIPT_SHARE * words):
            if 2 * hits < words and _sentence_language(cleaned) is not None:
                return None  # names in a sentence of another language
            return language
    return None


def _sentence_language(cleaned: str) -> str | None:
    """A language of `FUNCTION_WORDS` whose grammar the comment's words carry (two of its
    function words or more, of two letters or more: one-letter names such as `a` or `w` are
    often variables), or None."""
    words = [w.lower() for w in re.findall(r"[^\W\d_]{2,}", cleaned)]
    for language, own in FUNCTION_WORDS.items():
        if sum(w in own for w in words) >= 2:
            return language
    return None


# Code-switching: developers write their own language's grammar around English technical nouns
# ("Constructor voor dependency injection"), which detectors call English. Function words carry
# the grammar, so a comment counts for the expected language when it holds at least one of that
# language's function words and no fewer than of the detected language's (words both languages
# share, such as "in" or "is", count for neither). Lists for the study's Latin-script languages
# and English; other languages fall back to the detector alone.
FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset("the a an of to in is are was be been for with and or if this that these "
                    "those it its by on from as not when which will should can must into than "
                    "then there here all any each only".split()),
    "nl": frozenset("de het een van en voor met op te dat die deze dit niet om naar bij uit "
                    "wordt worden zijn als ook aan wanneer hier geen wel nog maar dan welke waar "
                    "kan moet zo er ze je mag alle wat hoe wordt zal zullen tot na"
                    .split()),
    "pl": frozenset("się nie że jest są dla przez oraz czy lub jeśli jeżeli gdy który która "
                    "które którego których na od po ze w z do jak tylko tego ten ta te jego jej "
                    "ich tym to oraz aby żeby przy pod nad bez już może ma być zostać".split()),
}


def _function_hits(words: list[str], language: str, other: str) -> int:
    own = FUNCTION_WORDS.get(language, frozenset())
    return sum(1 for w in words if w in own and w not in FUNCTION_WORDS.get(other, frozenset()))


def code_switched(cleaned: str, expected: str, detected: str) -> bool:
    """Is `cleaned`, judged `detected`, the expected language's grammar around foreign terms?"""
    if expected not in FUNCTION_WORDS:
        return False
    words = [w.lower() for w in re.findall(r"[^\W\d_]+", cleaned)]
    mine = _function_hits(words, expected, detected)
    return mine >= 1 and mine >= _function_hits(words, detected, expected)


@dataclass(frozen=True)
class LanguageVerdict:
    status: str  # match | mismatch | undetermined
    detected: str | None
    confidence: float
    words: int
    rule: str = "detector"  # detector | script | code_switched | too_few_words | close_call


def judge_language(text: str, expected: str, detector: LanguageDetector, *,
                   min_words: int = 3, min_margin: float = 0.1) -> LanguageVerdict:
    """Is `text` (a comment, markers and all) in `expected`? Cleans it first; then the script
    (`script_language`), else the detector, corrected for code-switching (`code_switched`)."""
    cleaned = clean_for_langid(text)
    words = word_count(cleaned)
    by_script = script_language(cleaned)
    if by_script is not None:
        return LanguageVerdict("match" if by_script == expected else "mismatch", by_script, 1.0,
                               words, "script")
    if words < min_words:
        return LanguageVerdict("undetermined", None, 0.0, words, "too_few_words")
    ranked = detector.confidences(cleaned)
    if not ranked:
        return LanguageVerdict("undetermined", None, 0.0, words, "too_few_words")
    best, confidence = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    if best != expected and code_switched(cleaned, expected, best):
        return LanguageVerdict("match", expected, confidence, words, "code_switched")
    if confidence - runner_up < min_margin:
        return LanguageVerdict("undetermined", best, confidence, words, "close_call")
    return LanguageVerdict("match" if best == expected else "mismatch", best, confidence, words)
