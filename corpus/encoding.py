"""Source files as Unicode text, whatever their encoding on disk (`--encoding auto`).

`decode_source(raw, expected_language)` returns `Decoded(text, encoding, replaced)` or raises
`SourceReadError`:
1. a byte-order mark decides (UTF-8, UTF-16 LE/BE, UTF-32); the mark is not part of the text;
2. valid UTF-8 is UTF-8 (nearly every file);
3. NUL bytes at every other position are UTF-16 without a mark; other NUL bytes mean binary;
4. the expected natural language's own legacy encodings, in order (zh: GB18030, a superset of
   GBK and GB2312, then Big5; el: Windows-1253, ISO 8859-7; pl: Windows-1250, ISO 8859-2; ...):
   the first that decodes the file strictly and whose non-ASCII letters read as that language
   (`plausible`: for GB18030, mostly characters from GB2312's rows or beyond GBK, which a Big5
   or Latin-1 file read as GB18030 is not; for Greek and Cyrillic, letters never glued to Latin ones, as
   "cafι" is; for Polish, Czech and Turkish, letters of their alphabets) is taken. A GBK file
   with a few Chinese words in an English file is no longer read as Windows-1252 or -1251;
5. a file of the language's own encoding with a few broken bytes (a multi-byte character cut
   in two by an editor or a careless conversion: `\xcf\xdf\xb3\r\n`): the same encodings,
   each broken byte sequence replaced by U+FFFD (`replaced` counts them), when there are few
   (`few_broken`) and the rest reads as the language. Such a GBK file was read as Windows-1251
   ("іхКј»Ї acl їв" for "初始化 acl 库") or refused;
6. otherwise charset-normalizer chooses among the encodings that old source code is written in,
   those of the expected language first: the least chaotic decoding wins, and a near tie goes
   to the language's own encodings.

Spans are offsets into the decoded text, which is what the database stores, so they stay exact;
`text.encode(encoding)` gives the file's bytes back (less a BOM), unless bytes were replaced.
"""
from __future__ import annotations

import codecs
import unicodedata
from typing import NamedTuple

from nlce.cli import InputError

BINARY_SNIFF_BYTES = 8192

# encodings plausible for each natural language's legacy files (Python codec names)
LANGUAGE_ENCODINGS: dict[str, tuple[str, ...]] = {
    "zh": ("gb18030", "big5"),
    "ja": ("shift_jis", "euc_jp"),
    "ko": ("euc_kr",),
    "el": ("cp1253", "iso8859_7"),
    "pl": ("cp1250", "iso8859_2"),
    "cs": ("cp1250", "iso8859_2"),
    "ru": ("cp1251", "koi8_r"),
    "uk": ("cp1251", "koi8_u"),
    "tr": ("cp1254",),
}
GENERIC_ENCODINGS = ("cp1252", "gb18030", "big5", "cp1250", "cp1253", "cp1251", "shift_jis",
                     "euc_kr")
NEAR_TIE = 0.02  # chaos difference under which the language's own encoding is preferred

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))


class SourceReadError(InputError):
    """A file that cannot be used as source text; the message says why."""


class Decoded(NamedTuple):
    text: str
    encoding: str  # Python codec name
    replaced: int = 0  # broken byte sequences replaced by U+FFFD (step 5 of the module doc)


def few_broken(replaced: int, text: str) -> bool:
    """A handful of broken byte sequences: at most 8, or 1 in 100 of the non-ASCII characters
    in a larger file. More means the encoding is wrong, not a few bytes."""
    return 0 < replaced <= max(8, sum(not ch.isascii() for ch in text) // 100)


def _utf16_without_bom(raw: bytes) -> str | None:
    """'utf-16-le' / 'utf-16-be' when NULs sit at (nearly) every odd / even byte: ASCII-heavy
    text such as source code in UTF-16; None otherwise."""
    sample = raw[:BINARY_SNIFF_BYTES]
    if len(sample) < 4 or len(sample) % 2:
        return None
    even_nuls = sample[0::2].count(0)
    odd_nuls = sample[1::2].count(0)
    half = len(sample) // 2
    if odd_nuls >= 0.6 * half and even_nuls <= 0.05 * half:
        return "utf-16-le"
    if even_nuls >= 0.6 * half and odd_nuls <= 0.05 * half:
        return "utf-16-be"
    return None


def _strict(raw: bytes, encoding: str) -> str:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as error:
        raise SourceReadError(f"not {encoding} text (invalid byte at offset {error.start})"
                              ) from None


_PLAUSIBLE_SHARE = 0.8  # of a decoding's non-ASCII letters that must read as the language
_ALPHABETS = {"pl": "ąćęłńóśźż", "cs": "áčďéěíňóřšťúůýž", "tr": "çğıöşüâîû"}
_SCRIPTS = {"el": "GREEK", "ru": "CYRILLIC", "uk": "CYRILLIC"}


def _gb_common(ch: str) -> bool:
    """A character GB18030 writes in its EUC rows (both bytes >= 0xA1: GB2312's characters and
    symbols) or in four bytes (beyond GBK). Text in another encoding read as GB18030 lands in
    GBK's extension rows instead (a trail byte under 0xA1: "é" + an ASCII letter, Big5 pairs)."""
    data = ch.encode("gb18030")
    return len(data) == 4 or (len(data) == 2 and data[0] >= 0xA1 and data[1] >= 0xA1)


def plausible(text: str, encoding: str, language: str) -> bool:
    """Do the non-ASCII letters of `text` (decoded with `encoding`, one of `language`'s legacy
    encodings) read as `language`? At least `_PLAUSIBLE_SHARE` of them must. A decoding with C1
    control characters (U+0080-U+009F) never does; in alphabetic scripts a symbol inside a word
    ("zaż±d": ISO 8859-2 "ą" read as Windows-1250) counts against it."""
    if any("\x80" <= ch <= "\x9f" for ch in text):
        return False
    cjk = language in ("zh", "ja", "ko")
    if not cjk and language not in _SCRIPTS and language not in _ALPHABETS:
        return False  # no way to tell: leave it to the detector
    good = total = 0
    for token in text.split():
        glued = any(ch.isascii() and ch.isalpha() for ch in token)
        for i, ch in enumerate(token):
            if ch.isascii():
                continue
            if not ch.isalpha():
                inside = 0 < i < len(token) - 1 and token[i - 1].isalpha() \
                    and token[i + 1].isalpha()
                total += inside and not cjk  # a symbol inside a word: a wrong code page
                continue
            total += 1
            if encoding == "gb18030":
                good += _gb_common(ch)
            elif cjk:  # and in a run of two or more: a Latin-1 "å" read as Big5 stands alone
                run = (i and not token[i - 1].isascii()) or (
                    i + 1 < len(token) and not token[i + 1].isascii())
                good += bool(run) and unicodedata.name(ch, "").startswith(
                    ("CJK", "HIRAGANA", "KATAKANA", "HANGUL"))
            elif language in _SCRIPTS:
                good += not glued and unicodedata.name(ch, "").startswith(_SCRIPTS[language])
            else:
                good += ch.lower() in _ALPHABETS[language]
    return total > 0 and good >= _PLAUSIBLE_SHARE * total


def _language_codec(raw: bytes, expected_language: str | None, repair: bool = False
                    ) -> Decoded | None:
    """The first of the expected language's legacy encodings that decodes `raw` strictly (with
    `repair`: with a few broken byte sequences replaced) into text that reads as that language;
    None when none does."""
    for name in LANGUAGE_ENCODINGS.get(expected_language or "", ()):
        try:
            text = raw.decode(name, "replace" if repair else "strict")
        except UnicodeDecodeError:
            continue
        replaced = text.count("\ufffd") - (raw.decode(name, "ignore").count("\ufffd")
                                            if repair else 0)
        if repair and not few_broken(replaced, text):
            continue
        if plausible(text, name, expected_language):
            return Decoded(text, name, replaced)
    return None


def _detect_legacy(raw: bytes, expected_language: str | None) -> Decoded:
    from charset_normalizer import from_bytes

    preferred_decoding = (_language_codec(raw, expected_language)
                          or _language_codec(raw, expected_language, repair=True))
    if preferred_decoding is not None:
        return preferred_decoding

    preferred = LANGUAGE_ENCODINGS.get(expected_language or "", ("cp1252",))
    candidates = list(dict.fromkeys(preferred + GENERIC_ENCODINGS))
    matches = [m for m in from_bytes(raw, cp_isolation=candidates) if m.encoding]
    if not matches:
        raise SourceReadError("encoding not recognised (not UTF-8, and no legacy encoding "
                              "decodes it; pass --encoding NAME)")
    least = min(m.chaos for m in matches)
    rank = {name: i for i, name in enumerate(candidates)}
    # a match stands for every encoding that decodes the bytes to the same text
    close = [(rank.get(name, len(rank)), m.chaos, name) for m in matches
             if m.chaos - least <= NEAR_TIE for name in (m.could_be_from_charset or [m.encoding])]
    _, _, best = min(close)
    return Decoded(_strict(raw, best), best)


def decode_source(raw: bytes, expected_language: str | None = None, encoding: str = "auto"
                  ) -> Decoded:
    """(text, encoding name, bytes replaced) of a file's bytes; `encoding` other than "auto" is
    used as given."""
    if encoding != "auto":
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise InputError(f"unknown encoding {encoding!r} (--encoding)") from None
        return Decoded(_strict(raw, encoding), encoding)
    for bom, name in _BOMS:
        if raw.startswith(bom):
            return Decoded(_strict(raw, name), name)
    if b"\x00" in raw[:BINARY_SNIFF_BYTES]:
        utf16 = _utf16_without_bom(raw)
        if utf16 is None:
            raise SourceReadError("binary file (NUL bytes)")
        return Decoded(_strict(raw, utf16), utf16)
    try:
        return Decoded(raw.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    return _detect_legacy(raw, expected_language)
