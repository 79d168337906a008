"""The interface texts of the labelling app in every interface language, read from one message
catalogue (annotate/data/messages.yaml) and checked as a whole when loaded: every message needs
every language of `taxonomy.LANGUAGES`, non-empty, with the same {placeholders}. A text that
counts something may come in plural forms, chosen by its `{count}` as Unicode CLDR does for the
language ("1 item matches", "2 items match"; Polish "few" and "many"). A broken catalogue is
refused with one `CatalogueError` naming the file, the message and the language."""
from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path

import yaml

from taxonomy import LANGUAGES

CATALOGUE_PATH = Path(__file__).resolve().parent / "data" / "messages.yaml"


class CatalogueError(ValueError):
    """A message catalogue that is not complete or not well formed; the message says where."""


# CLDR's plural categories of whole numbers, per interface language (a text in plural forms has
# exactly these; a plain text serves every number)
PLURAL_FORMS = {"en": ("one", "other"), "nl": ("one", "other"), "el": ("one", "other"),
                "pl": ("one", "few", "many"), "zh": ("other",)}


def plural_form(lang: str, count: int) -> str:
    """The plural category of the whole number `count` in `lang` (CLDR's rules)."""
    n = abs(int(count))
    if lang == "zh":
        return "other"
    if lang == "pl":
        if n == 1:
            return "one"
        return "few" if n % 10 in (2, 3, 4) and n % 100 not in (12, 13, 14) else "many"
    return "one" if n == 1 else "other"


Text = str | dict[str, str]  # one text, or one per plural form


def _placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def _all_placeholders(text: Text) -> set[str]:
    return set().union(*map(_placeholders, text.values())) if isinstance(text, dict) \
        else _placeholders(text)


def _check_text(text: object, lang: str, where: str) -> None:
    """One language's text: a non-empty string, or one for each plural form of `lang`."""
    if isinstance(text, dict):
        forms = PLURAL_FORMS[lang]
        if tuple(sorted(text)) != tuple(sorted(forms)):
            raise CatalogueError(f"{where}: {lang} text needs the plural forms "
                                 f"{', '.join(forms)}, has {', '.join(map(str, text)) or 'none'}")
        for form, variant in text.items():
            _check_text(variant, lang, f"{where} ({form})")
        if "count" not in _all_placeholders(text):
            raise CatalogueError(f"{where}: {lang} plural forms need a {{count}} placeholder")
        return
    if not isinstance(text, str) or not text.strip():
        raise CatalogueError(f"{where}: no {lang} text")
    try:
        _placeholders(text)
    except ValueError as error:
        raise CatalogueError(f"{where}: {lang} text is not a valid template: {error}") from error


def load_catalogue(path: str | Path = CATALOGUE_PATH) -> dict[str, dict[str, Text]]:
    """{message key: {language: text or plural forms}}, every key in every language, or
    CatalogueError."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise CatalogueError(f"{path.name}: cannot be read: {error}".splitlines()[0]) from error
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, dict) or not messages:
        raise CatalogueError(f"{path.name}: expected a 'messages' mapping of message keys")
    catalogue: dict[str, dict[str, Text]] = {}
    for key, texts in messages.items():
        where = f"{path.name}: message {key!r}"
        if not isinstance(texts, dict):
            raise CatalogueError(f"{where}: expected one text per language")
        unknown = sorted(set(texts) - set(LANGUAGES))
        if unknown:
            raise CatalogueError(f"{where}: unknown language {unknown[0]!r}; expected "
                                 f"{', '.join(LANGUAGES)}")
        for lang in LANGUAGES:
            _check_text(texts.get(lang), lang, where)
        expected = _all_placeholders(texts["en"])
        for lang in LANGUAGES:
            text = texts[lang]
            names = _all_placeholders(text)
            # a plural form may leave the number out ("the only item"), the forms together not
            odd = [v for v in (text.values() if isinstance(text, dict) else [text])
                   if not _placeholders(v) <= expected]
            if names != expected or odd:
                raise CatalogueError(f"{where}: {lang} text has placeholders "
                                     f"{sorted(names)}, en has {sorted(expected)}")
        catalogue[str(key)] = {lang: texts[lang] for lang in LANGUAGES}
    return catalogue


@lru_cache(maxsize=1)
def catalogue() -> dict[str, dict[str, Text]]:
    """The shipped catalogue, loaded and checked once per process."""
    return load_catalogue()


def text(key: str, lang: str, **values: object) -> str:
    """Message `key` in `lang` (English for a language the catalogue lacks), filled in; a text in
    plural forms takes the one for `count`."""
    texts = catalogue()[key]  # a KeyError here is a programming error: the test suite finds it
    if lang not in texts:
        lang = "en"
    template = texts[lang]
    if isinstance(template, dict):  # plural forms: the one for {count}
        template = template[plural_form(lang, values["count"])]
    return template.format(**values) if values else template
