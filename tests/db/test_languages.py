"""Language codes at import: ISO 639-1 and 639-3/-2 codes normalised to the two-letter code,
names refused with the code to use, annotators limited to the app's languages."""
from __future__ import annotations

import pytest

from taxonomy.languages import (
    APP_LANGUAGES,
    ENGLISH_NAMES,
    ISO_639_1,
    LanguageCodeError,
    check_app_languages,
    normalise_language,
)


def test_the_table_holds_the_two_letter_codes_once_each():
    assert len(ISO_639_1) == len(set(ISO_639_1)) == 183
    assert all(len(code) == 2 and code.isalpha() and code.islower() for code in ISO_639_1)
    assert set(APP_LANGUAGES) <= set(ISO_639_1)
    assert ENGLISH_NAMES["el"] == "Greek"


@pytest.mark.parametrize("value, code", [
    ("de", "de"), ("DE", "de"), ("deu", "de"), ("ger", "de"), ("zho", "zh"), ("chi", "zh"),
    ("zh-CN", "zh"), ("pt_BR", "pt"), (" nl ", "nl"), ("ell", "el"), ("pol", "pl"),
])
def test_codes_are_normalised(value, code):
    assert normalise_language(value) == code


@pytest.mark.parametrize("value, suggestion", [
    ("german", "'de'"), ("Chinese", "'zh'"), ("Dutch", "'nl'"), ("xx", "ISO 639-1"),
    ("", "ISO 639-1"), ("english-ish", "ISO 639-1"),
])
def test_other_values_are_refused_with_what_to_write(value, suggestion):
    with pytest.raises(LanguageCodeError, match=suggestion):
        normalise_language(value)


def test_annotators_get_languages_of_the_app_only():
    assert check_app_languages(["NL", "zho"]) == ["nl", "zh"]
    with pytest.raises(LanguageCodeError, match="not a language of the labelling app"):
        check_app_languages(["de"])
    with pytest.raises(LanguageCodeError, match="list"):
        check_app_languages("nl")
