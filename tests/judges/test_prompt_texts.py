"""The judge's wording as data (judges/data/prompts.<lang>.yaml), what it tells the judge, the
output schema's bounds, and prompt variants from a template file."""
from __future__ import annotations

import json
import string

import pytest

from judges.i18n import DATA_DIR, KEYS, PROMPT_LANGUAGES, PromptTextError, read_text_file, texts
from judges.prompts import (
    JudgeInput,
    Prediction,
    accuracy_names,
    build_messages,
    offered_codes,
    output_schema,
    prompt_version,
    request_clusters,
)
from judges.templates import load_template

INPUT = JudgeInput("# adds", "def f():\n    <FIM_MASK>\n", tuple(
    Prediction(f"P{i}", f"# prediction {i}") for i in range(1, 6)))


def _names(value) -> set[str]:
    values = value if isinstance(value, list) else [value]
    return {n for v in values if isinstance(v, str)
            for _, n, _, _ in string.Formatter().parse(v) if n}


def test_every_language_has_every_key_with_the_same_placeholders():
    english = texts("en")
    for lang in PROMPT_LANGUAGES:
        table = texts(lang)
        assert list(table) == list(KEYS), lang  # same keys, same order as the schema
        for key, value in table.items():
            if isinstance(value, (str, list)):
                assert _names(value) == _names(english[key]), (lang, key)
                if isinstance(value, list):
                    assert len(value) == len(english[key]), (lang, key)
        assert set(table["judge_code_texts"]) == set(english["judge_code_texts"]), lang


@pytest.mark.parametrize("broken,message", [
    ("rules: 'Rules:'\n", "missing key(s) output_fields"),
    ("{}\n", "missing key(s)"),
    ("- a list\n", "must be a mapping"),
    ("rules: [\n", "not valid YAML at line 2"),
])
def test_a_broken_text_file_is_an_error_naming_the_file(tmp_path, broken, message):
    path = tmp_path / "prompts.xx.yaml"
    path.write_text(broken, encoding="utf-8")
    with pytest.raises(PromptTextError, match="prompts.xx.yaml") as info:
        read_text_file(path)
    assert message in str(info.value)


def test_a_wrong_value_is_an_error_naming_the_key(tmp_path):
    source = (DATA_DIR / "prompts.nl.yaml").read_text(encoding="utf-8")
    path = tmp_path / "prompts.nl.yaml"
    path.write_text(source.replace("plaats van {mask}'", "plaats van {masker}'"), encoding="utf-8")
    with pytest.raises(PromptTextError, match=r"prompts.nl.yaml: h_context: unknown placeholder"):
        read_text_file(path)
    path.write_text(source.replace("rules: 'Regels:'", "rules: ''"), encoding="utf-8")
    with pytest.raises(PromptTextError, match=r"prompts.nl.yaml: rules: must be a non-empty"):
        read_text_file(path)


@pytest.mark.parametrize("lang", PROMPT_LANGUAGES)
def test_misc_does_not_ask_the_judge_for_a_note(lang, tax):
    misc = tax.code("MISC")
    annotator_wording = [misc.text("description", lang), *misc.text("inclusion", lang)[1:]]
    for strategy in ("standard", "rubric", "hierarchical"):
        cluster = request_clusters(strategy, tax)[-1] if strategy == "hierarchical" else ""
        if "MISC" not in offered_codes(strategy, tax, cluster):
            cluster = next(c for c in request_clusters(strategy, tax)
                           if "MISC" in offered_codes(strategy, tax, c))
        user = build_messages(strategy, INPUT, lang, tax, cluster)[1]["content"]
        assert "MISC" in user
        for text in annotator_wording:
            assert text not in user, (strategy, text)
        judge_wording = texts(lang)["judge_code_texts"]["MISC"]
        assert judge_wording["inclusion"][0] in user
        if strategy != "rubric":  # the rubric shows criteria, the taxonomy block also this
            assert judge_wording["description"] in user


@pytest.mark.parametrize("lang", PROMPT_LANGUAGES)
def test_the_rubric_names_no_taxonomy_and_says_all_conditions_must_hold(lang, tax):
    system, user = (m["content"] for m in build_messages("rubric", INPUT, lang, tax))
    t = texts(lang)
    taxonomy_word = {"en": "taxonom", "nl": "taxonomie", "el": "ταξινομ", "pl": "taksonom",
                     "zh": "分类体系"}[lang]
    assert taxonomy_word not in (system + user).casefold()
    assert t["present_if"] in user and t["absent_if"] in user
    english = texts("en")
    assert "all" in english["present_if"] and "any" in english["absent_if"]


def test_the_schema_asks_for_one_entry_per_prediction_and_bounds_every_array(tax):
    ids = [p.id for p in INPUT.predictions]
    for strategy in ("standard", "cot"):
        codes = list(offered_codes(strategy, tax))
        schema = output_schema(strategy, "pl", codes, ids, accuracy_names(tax, "pl"))
        f = texts("pl")["output_fields"]
        evaluations = schema["properties"][f["evaluations"]]
        assert evaluations["minItems"] == evaluations["maxItems"] == 5
        errors = evaluations["items"]["properties"][f["errors"]]
        assert errors["maxItems"] == len(codes)


@pytest.mark.parametrize("lang", PROMPT_LANGUAGES)
def test_the_example_answer_shows_every_prediction(lang, tax):
    user = build_messages("cot", INPUT, lang, tax)[1]["content"]
    example = json.loads(user.rsplit("```json\n", 1)[1].split("\n```")[0])
    (entries,) = example.values()
    pid = texts(lang)["output_fields"]["prediction_id"]
    assert [e[pid] for e in entries] == ["P1", "P2", "P3", "P4", "P5"]


def test_a_template_file_makes_a_versioned_variant(tmp_path, tax):
    path = tmp_path / "strict.yaml"
    path.write_text("name: rubric-strict\nbase: rubric\ntexts:\n  en:\n    json_only: "
                    "Answer with JSON only. No prose.\n", encoding="utf-8")
    template = load_template(path)
    assert (template.name, template.base, len(template.sha256)) == ("rubric-strict", "rubric", 64)
    system = build_messages(template, INPUT, "en", tax)[0]["content"]
    assert "Answer with JSON only. No prose." in system
    assert texts("en")["json_only"] not in system
    version = prompt_version(template, "en", tax)
    assert version.startswith("rubric-strict-en-") and version != prompt_version("rubric", "en", tax)
    # languages the file does not cover keep the built-in wording, under the variant's name
    assert build_messages(template, INPUT, "el", tax) == build_messages("rubric", INPUT, "el", tax)


@pytest.mark.parametrize("content,message", [
    ("name: standard\nbase: rubric\n", "'standard' is a built-in strategy"),
    ("name: x\nbase: fancy\n", "base: must be one of"),
    ("name: x\nbase: cot\ntexts:\n  de: {rules: Regeln}\n", "unknown language 'de'"),
    ("name: x\nbase: cot\ntexts:\n  el: {rulez: x}\n", "texts.el: unknown key(s) rulez"),
    ("name: x\nbase: cot\ntexts:\n  el: {h_context: 'at {where}'}\n", "unknown placeholder"),
])
def test_a_bad_template_is_an_error_naming_file_and_key(tmp_path, content, message):
    path = tmp_path / "variant.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(PromptTextError, match="variant.yaml") as info:
        load_template(path)
    assert message in str(info.value)


def test_the_pairs_texts_mention_no_code_and_name_the_language():
    english = texts("en")["pairs"]
    for lang in PROMPT_LANGUAGES:
        pairs = texts(lang)["pairs"]
        assert list(pairs) == list(english), lang
        for key, value in pairs.items():
            assert _names(value) == _names(english[key]), (lang, key)
            assert "mask" not in _names(value), (lang, key)
        assert _names(pairs["system_role"]) == {"language"} == _names(texts(lang)["system_role"])
        assert set(PROMPT_LANGUAGES) <= set(texts(lang)["language_names"]), lang


@pytest.mark.parametrize("lang", PROMPT_LANGUAGES)
def test_a_pairs_prompt_shows_a_reference_and_predictions_without_code(lang, tax):
    pairs = JudgeInput("Der Hund schläft.", "", INPUT.predictions, layout="pairs", language="de")
    for strategy in ("standard", "cot", "rubric"):
        system, user = (m["content"] for m in build_messages(strategy, pairs, lang, tax))
        t = texts(lang)
        assert t["language_names"]["de"] in system and "<FIM_MASK>" not in system + user
        assert f"## {t['pairs']['h_original']}" in user and f"## {t['h_original']}" not in user
        assert f'"{t["input_keys"]["text"]}": "Der Hund schläft."' in user
        assert f"## {t['pairs']['h_context']}" not in user  # no context given: no empty block
    with_context = JudgeInput("Der Hund schläft.", "Im Garten.", INPUT.predictions,
                              layout="pairs", language="de")
    user = build_messages("standard", with_context, lang, tax)[1]["content"]
    assert f"## {texts(lang)['pairs']['h_context']}\n\n```\nIm Garten.\n```" in user


def test_the_code_prompts_version_stays_the_same_for_the_prompt_languages_own_targets(tax):
    # {language} renders each file's own language as its sentence always said it
    english = build_messages("rubric", INPUT, "en", tax)[0]["content"]
    assert "source-code comments written in English." in english
    assert prompt_version("standard", "el", tax, "el") == prompt_version("standard", "el", tax)
    assert prompt_version("standard", "en", tax, "el") != prompt_version("standard", "en", tax)
    assert prompt_version("cot", "en", tax, "de", ["pairs"]).startswith("cot-pairs-en-")
