"""The interface message catalogue (annotate/data/messages.yaml): complete and well formed in
every interface language, every key the code asks for exists, a broken catalogue is refused with
one line naming the message and the language, and the pages show in the account's language."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from annotate import i18n, service
from db import get_engine
from taxonomy import LANGUAGES, default_taxonomy
from testing.apptest import signed_in

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "s3cret-pass"  # the accounts of conftest.app_db


def test_the_shipped_catalogue_has_every_message_in_every_language():
    catalogue = i18n.load_catalogue()
    assert len(catalogue) > 50
    for key, texts in catalogue.items():
        assert set(texts) == set(LANGUAGES), key
        # a translation left in English by mistake (short words like "model" may match)
        english = i18n.text(key, "en", **_sample(key))
        if len(english) > 20:
            assert all(i18n.text(key, lang, **_sample(key)) != english
                       for lang in LANGUAGES if lang != "en"), key


def test_the_labelling_pages_and_the_flag_button_have_different_names():
    """Greek named both "Επισήμανση" (issue 42)."""
    for lang in LANGUAGES:
        flag = i18n.text("button.flag", lang).casefold()
        assert flag not in {i18n.text(key, lang).casefold() for key in
                            ("nav.labelling", "nav.label", "app.title")}, lang


def _sample(key: str) -> dict:
    """Values for every placeholder of message `key` (a count of 2)."""
    names = i18n._all_placeholders(i18n.catalogue()[key]["en"])
    return {name: 2 if name == "count" else f"<{name}>" for name in names}


@pytest.mark.parametrize("lang, counts", [
    ("en", {"one": [1], "other": [0, 2, 5, 11, 21]}),
    ("el", {"one": [1], "other": [0, 2, 21]}),
    ("pl", {"one": [1], "few": [2, 3, 4, 22, 104], "many": [0, 5, 11, 12, 14, 21, 25, 112]}),
    ("zh", {"other": [0, 1, 2]}),
])
def test_plural_forms_follow_cldr(lang, counts):
    for form, numbers in counts.items():
        assert [i18n.plural_form(lang, n) for n in numbers] == [form] * len(numbers)


def test_a_count_of_one_reads_in_the_singular():
    """'1 items match', '1 versions' (issue 42): the text's plural form for the count."""
    assert i18n.text("search.found", "en", count=1) == "1 item matches"
    assert i18n.text("search.found", "en", count=3) == "3 items match"
    assert i18n.text("adj.history", "nl", gid=7, count=1).endswith("(1 versie)")
    assert i18n.text("adj.count", "el", count=1) == "1 στοιχείο με διαφωνία"
    assert i18n.text("label.end_next_match", "pl", count=3).startswith("To ostatni z 3 ")
    assert i18n.text("label.end_next_match", "pl", count=1).startswith("To jedyny ")


def _used_keys() -> set[str]:
    """Every literal message key the app's code passes to t(...) or i18n.text(...)."""
    used = set()
    for path in (ROOT / "annotate").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        used |= set(re.findall(r"""\bt\(\s*f?["']([a-z_]+\.[a-z_]+)["']""", source))
        used |= set(re.findall(r"""\btext\(\s*["']([a-z_]+\.[a-z_]+)["']""", source))
    return used


def test_every_key_the_code_uses_is_in_the_catalogue():
    used = _used_keys()
    assert len(used) > 30
    missing = sorted(used - set(i18n.catalogue()))
    assert not missing, f"message keys used but not in messages.yaml: {missing}"


@pytest.mark.parametrize("entry, expected", [
    ("  greeting:\n    en: Hello\n    zh: 你好\n    nl: Hallo\n    el: Γεια\n",
     "message 'greeting': no pl text"),
    ("  greeting:\n    en: Hello {name}\n    zh: 你好\n    nl: Hallo {name}\n    el: Γεια {name}\n"
     "    pl: Cześć {name}\n", "message 'greeting': zh text has placeholders [], en has ['name']"),
    ("  greeting:\n    en: Hi\n    zh: 你好\n    nl: Hoi\n    el: Γεια\n    pl: Cześć\n    de: Hallo\n",
     "message 'greeting': unknown language 'de'"),
    ("  greeting: Hello\n", "message 'greeting': expected one text per language"),
    ("  found:\n    en: {one: '{count} item', other: '{count} items'}\n    zh: '{count} 个'\n"
     "    nl: '{count} items'\n    el: '{count} στοιχεία'\n"
     "    pl: {one: '{count} element', many: '{count} elementów'}\n",
     "message 'found': pl text needs the plural forms one, few, many, has one, many"),
    ("  found:\n    en: {one: '{count} item', other: '{count} items'}\n    zh: '{count} 个'\n"
     "    nl: '{count} items'\n    el: '{count} στοιχεία'\n"
     "    pl: {one: 'element', few: '{cuont} elementy', many: '{count} elementów'}\n",
     "message 'found': pl text has placeholders ['count', 'cuont'], en has ['count']"),
])
def test_a_broken_catalogue_is_refused_naming_message_and_language(tmp_path, entry, expected):
    path = tmp_path / "messages.yaml"
    path.write_text("version: 1\nmessages:\n" + entry, encoding="utf-8")
    with pytest.raises(i18n.CatalogueError) as refused:
        i18n.load_catalogue(path)
    assert str(refused.value).startswith("messages.yaml: ")
    assert expected in str(refused.value) and "\n" not in str(refused.value)


def _signed_in(username: str) -> AppTest:
    return signed_in(username, PASSWORD)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_labelling_page_shows_in_the_accounts_interface_language(app_db, ids, lang):
    with Session(get_engine(app_db)) as session:
        service.set_interface_language(session, ids["bas"], lang)
        session.commit()
    at = _signed_in("bas")
    catalogue = i18n.catalogue()
    labels = {b.label for b in at.button}
    for key in ("button.prev", "button.next", "button.save", "button.skip", "button.flag",
                "sidebar.sign_out"):
        assert catalogue[key][lang] in labels, (lang, key, labels)
    html = " ".join(e.proto.body for e in at.get("html"))
    for key in ("keys.title", "keys.leave", "label.original", "label.predicted"):
        assert catalogue[key][lang] in html, (lang, key)
    for key, accuracy in (("1", "correct"), ("2", "partial"), ("3", "incorrect")):
        name = default_taxonomy().accuracy_text(accuracy, lang)[0]  # the button's own name
        assert name in labels and f"<kbd>{key}</kbd> {name}" in html, (lang, accuracy)
    assert i18n.text("label.item_of", lang, n=1, total=6) in html
    helps = " ".join(c.help or "" for c in at.checkbox)
    assert catalogue["label.include_if"][lang] in helps
    code = default_taxonomy().code("LG-GR1")
    assert any(c.label == f"LG-GR1 {code.text('name', lang)}" for c in at.checkbox)
    assert at.text_input(key="lbl_codepick").placeholder == catalogue["label.picker"][lang]


@pytest.mark.parametrize("lang", ["zh", "pl"])
def test_the_leads_pages_show_in_the_leads_interface_language(app_db, ids, lang):
    with Session(get_engine(app_db)) as session:
        service.set_interface_language(session, ids["lead"], lang)
        session.commit()
    at = _signed_in("lead")
    say = {key: texts[lang] for key, texts in i18n.catalogue().items()}
    at.switch_page("views/team.py").run()
    assert not at.exception, at.exception
    assert at.header[0].value == say["nav.team"]
    assert {say["team.create"], say["team.save"]} <= {b.label for b in at.button}
    at.switch_page("views/assign.py").run()
    assert at.header[0].value == say["assign.header"]
    assert say["assign.submit"] in {b.label for b in at.button}
    at.switch_page("views/agreement.py").run()
    assert at.header[0].value == say["agree.header"]
    at.switch_page("views/adjudicate.py").run()
    assert not at.exception, at.exception
    assert i18n.text("adj.count", lang, count=0) in [c.value for c in at.caption]
    at.switch_page("views/summary.py").run()
    assert not at.exception, at.exception
    assert [h.value for h in at.header] == [say["nav.summary"]]
    assert say["summary.table1"] in [h.value for h in at.subheader]
    at.switch_page("views/analysis.py").run()
    assert not at.exception, at.exception
    assert [h.value for h in at.header] == [say["analysis.header"]]
