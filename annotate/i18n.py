"""The interface texts of the labelling app in every interface language, read from one message
catalogue (annotate/data/messages.yaml) and checked as a whole when loaded: every message needs
every language of `taxonomy.LANGUAGES`, non-empty, with the same {placeholders}. A broken
catalogue is refused with one `CatalogueError` naming the file, the message and the language."""
from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path

import yaml

from taxonomy import LANGUAGES

CATALOGUE_PATH = Path(__file__).resolve().parent / "data" / "messages.yaml"


class CatalogueError(ValueError):
    """A message catalogue that is not complete or not well formed; the message says where."""


def _placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def load_catalogue(path: str | Path = CATALOGUE_PATH) -> dict[str, dict[str, str]]:
    """{message key: {language: text}}, every key in every language, or CatalogueError."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise CatalogueError(f"{path.name}: cannot be read: {error}".splitlines()[0]) from error
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, dict) or not messages:
        raise CatalogueError(f"{path.name}: expected a 'messages' mapping of message keys")
    catalogue: dict[str, dict[str, str]] = {}
    for key, texts in messages.items():
        where = f"{path.name}: message {key!r}"
        if not isinstance(texts, dict):
            raise CatalogueError(f"{where}: expected one text per language")
        unknown = sorted(set(texts) - set(LANGUAGES))
        if unknown:
            raise CatalogueError(f"{where}: unknown language {unknown[0]!r}; expected "
                                 f"{', '.join(LANGUAGES)}")
        for lang in LANGUAGES:
            text = texts.get(lang)
            if not isinstance(text, str) or not text.strip():
                raise CatalogueError(f"{where}: no {lang} text")
            try:
                names = _placeholders(text)
            except ValueError as error:
                raise CatalogueError(f"{where}: {lang} text is not a valid template: "
                                     f"{error}") from error
            expected = _placeholders(texts["en"]) if isinstance(texts.get("en"), str) else names
            if names != expected:
                raise CatalogueError(f"{where}: {lang} text has placeholders "
                                     f"{sorted(names)}, en has {sorted(expected)}")
        catalogue[str(key)] = {lang: texts[lang] for lang in LANGUAGES}
    return catalogue


@lru_cache(maxsize=1)
def catalogue() -> dict[str, dict[str, str]]:
    """The shipped catalogue, loaded and checked once per process."""
    return load_catalogue()


def text(key: str, lang: str, **values: object) -> str:
    """Message `key` in `lang` (English for a language the catalogue lacks), filled in."""
    texts = catalogue()[key]  # a KeyError here is a programming error: the test suite finds it
    template = texts.get(lang) or texts["en"]
    return template.format(**values) if values else template
