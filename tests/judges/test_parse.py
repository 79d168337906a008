"""The lenient parser: what it repairs it records, what it cannot map it reports."""
from __future__ import annotations

import json

import pytest

from judges.i18n import texts
from judges.parse import (
    CodeFinding,
    ParsedResponse,
    PredictionVerdict,
    extract_json,
    merge_cluster_verdicts,
    parse_response,
)
from judges.prompts import offered_codes

IDS = ("P1", "P2")


def answer(lang="en", tax=None, p1=("correct", []), p2=("partial", ["SE-MD"])):
    f = texts(lang)["output_fields"]
    name = (lambda label: tax.accuracy_text(label, lang)[0]) if tax else (lambda label: label)
    return json.dumps({f["evaluations"]: [
        {f["prediction_id"]: "P1", f["errors"]: p1[1], f["accuracy"]: name(p1[0])},
        {f["prediction_id"]: "P2", f["errors"]: p2[1], f["accuracy"]: name(p2[0])},
    ]}, ensure_ascii=False)


def parse(text, tax, lang="en", strategy="standard", **kw):
    offered = kw.pop("offered", None) or offered_codes(strategy, tax, kw.pop("cluster", ""))
    return parse_response(text, lang=lang, strategy=strategy, tax=tax, offered=offered,
                          prediction_ids=IDS, **kw)


def kinds(parsed: ParsedResponse) -> list[str]:
    return [r["kind"] for r in parsed.repairs]


def test_clean_answer(tax):
    parsed = parse(answer(tax=tax), tax)
    assert parsed.status == "ok" and parsed.repairs == []
    assert parsed.verdicts["P1"].accuracy == "correct" and parsed.verdicts["P1"].codes == []
    assert [c.code for c in parsed.verdicts["P2"].codes] == ["SE-MD"]


@pytest.mark.parametrize("wrap,expected", [
    (lambda s: f"```json\n{s}\n```", ["code_fence_removed"]),
    (lambda s: "\ufeff" + s, ["bom_removed"]),
    (lambda s: f"Here is my evaluation:\n{s}\nHope this helps!",
     ["text_before_json_removed", "text_after_json_removed"]),
    (lambda s: f"{s}\n\nNote: P2 is vague.", ["text_after_json_removed"]),
])
def test_form_repairs_are_recorded(tax, wrap, expected):
    parsed = parse(wrap(answer(tax=tax)), tax)
    assert parsed.status == "ok"
    assert kinds(parsed) == expected
    assert parsed.verdicts["P2"].accuracy == "partial"


def test_translated_field_names_map_back(tax):
    parsed = parse(answer("el", tax), tax, lang="el")
    assert parsed.status == "ok" and parsed.repairs == []
    assert parsed.verdicts["P2"].accuracy == "partial"
    assert [c.code for c in parsed.verdicts["P2"].codes] == ["SE-MD"]


def test_english_field_names_under_a_greek_prompt_are_mapped_and_recorded(tax):
    parsed = parse(answer("en", tax), tax, lang="el")
    assert parsed.status == "ok"
    assert "field_name_from_other_language" in kinds(parsed)
    assert "accuracy_label_normalised" in kinds(parsed)  # English label names, Greek prompt
    assert parsed.verdicts["P1"].accuracy == "correct"


def test_truncated_answer_is_not_used_even_if_a_prefix_parses(tax):
    parsed = parse(answer(tax=tax) + answer(tax=tax)[:40], tax, finish_reason="length")
    assert parsed.status == "truncated"
    assert {v.status for v in parsed.verdicts.values()} == {"truncated"}
    assert "token limit" in parsed.error


@pytest.mark.parametrize("text,status", [
    ("{}", "empty"),
    ('{"evaluations": []}', "empty"),
    ('{"evaluations": [{"prediction_id": "P1", "errors": [], "accuracy": ""}]}', "empty"),
    ('{"evaluations": [{"prediction_id": "P1", "reasoning": "hm", "errors": []}]}', "empty"),
    ('{"evaluations": [{"prediction_id": "P1"', "truncated"),  # cut off: no finish_reason
    ("I cannot evaluate these comments.", "parse_error"),
    ("", "parse_error"),
    ('{"verdict": "fine"}', "parse_error"),
    ("[1, 2]", "parse_error"),
])
def test_statuses(tax, text, status):
    parsed = parse(text, tax)
    assert parsed.status == status, parsed.error
    assert parsed.error


def test_an_answer_cut_off_mid_json_is_truncated_not_ok_for_its_first_prediction(tax):
    # first prediction complete, the rest missing, and no finish_reason (as files written
    # elsewhere keep answers): the P1 object parses on its own, but the document is broken
    whole = answer(tax=tax)
    cut = whole[:whole.index('"P2"') + 12]
    parsed = parse(cut, tax)
    assert parsed.status == "truncated"
    assert {v.status for v in parsed.verdicts.values()} == {"truncated"}
    assert "cut off" in parsed.error and "finish_reason=none" in parsed.error
    assert "json_cut_off" in kinds(parsed)


def test_an_answer_cut_off_mid_list_says_it_was_cut_off(tax):
    # a runaway list of codes ended by the token limit, kept without a finish_reason (the
    # study's Molmo answer): not "no JSON object found"
    runaway = ('{\n  "evaluations": [\n    {\n      "model_name": "m1",\n      "errors": ["LG-GR1", '
               + ", ".join(f'"LG-GR{i}"' for i in range(2, 400)) + ', "LG')
    parsed = parse(runaway, tax, prediction_models={"P1": "m1", "P2": "m2"})
    assert parsed.status == "truncated"
    assert "cut off" in parsed.error and "no JSON object" not in parsed.error


def test_prose_with_a_stray_brace_is_not_taken_for_a_cut_off_answer(tax):
    parsed = parse("I cannot judge {these} comments {", tax)
    assert parsed.status == "parse_error" and "no JSON object found" in parsed.error


@pytest.mark.parametrize("entry", [
    '{"prediction_id": "P1", "errors": [], "accuracy": "correct", "accuracy": "incorrect"}',
    '{"prediction_id": "P1", "errors": ["SE-MD"], "errors": [], "accuracy": "partial"}',
])
def test_a_key_repeated_with_different_values_is_a_parse_error_naming_it(tax, entry):
    text = ('{"evaluations": [' + entry + ', {"prediction_id": "P2", "errors": [], '
            '"accuracy": "correct"}]}')
    parsed = parse(text, tax)
    p1 = parsed.verdicts["P1"]
    assert p1.status == "parse_error" and p1.accuracy is None
    key = "accuracy" if entry.count("accuracy") == 2 else "errors"
    assert f'"{key}" given 2 times with different values' in p1.error
    assert parsed.verdicts["P2"].status == "ok" and parsed.status == "ok"
    (dup,) = [r for r in parsed.repairs if r["kind"] == "duplicate_key"]
    assert dup["key"] == key and dup["where"] == "$.evaluations[0]" and dup["kept"] is None


def test_a_key_repeated_with_the_same_value_is_recorded_and_read(tax):
    text = ('{"evaluations": [{"prediction_id": "P1", "errors": [], "accuracy": "correct", '
            '"accuracy": "correct"}]}')
    parsed = parse(text, tax)
    assert parsed.verdicts["P1"].status == "ok" and parsed.verdicts["P1"].accuracy == "correct"
    (dup,) = [r for r in parsed.repairs if r["kind"] == "duplicate_key"]
    assert dup["values"] == ["correct", "correct"] and dup["kept"]


def test_the_evaluations_given_twice_differently_fail_the_whole_answer(tax):
    one = '[{"prediction_id": "P1", "errors": [], "accuracy": "correct"}]'
    two = '[{"prediction_id": "P1", "errors": [], "accuracy": "incorrect"}]'
    parsed = parse(f'{{"evaluations": {one}, "evaluations": {two}}}', tax)
    assert parsed.status == "parse_error" and '"evaluations" given 2 times' in parsed.error
    assert {v.status for v in parsed.verdicts.values()} == {"parse_error"}


def test_refusal_from_the_protocol(tax):
    assert parse(None, tax, refusal="I can't help with that.").status == "refused"
    assert parse("", tax, finish_reason="content_filter").status == "refused"


def test_unknown_codes_are_reported_not_guessed(tax):
    text = answer(tax=tax, p2=("partial", ["SE-MD", "SE-ZZ9", "se_ha2", "SE-HA"]))
    parsed = parse(text, tax)
    assert parsed.status == "ok"
    assert [c.code for c in parsed.verdicts["P2"].codes] == ["SE-MD", "SE-HA2"]
    reported = {(r["kind"], r.get("value", r.get("from"))) for r in parsed.repairs}
    assert ("unknown_code", "SE-ZZ9") in reported
    assert ("code_normalised", "se_ha2") in reported
    assert ("code_not_assignable", "SE-HA") in reported  # a group is too coarse to assign


def test_codes_outside_a_cluster_are_dropped_and_recorded(tax):
    cluster = tax.cluster_of("SE-MD")
    other = next(c.id for c in tax.labelable() if c.cluster != cluster)
    text = answer(tax=tax, p2=("partial", ["SE-MD", other]))
    parsed = parse(text, tax, strategy="hierarchical", cluster=cluster)
    assert [c.code for c in parsed.verdicts["P2"].codes] == ["SE-MD"]
    assert {"kind": "code_not_offered", "prediction": "P2", "value": other} in parsed.repairs


def test_a_label_off_the_scale_is_an_error_for_that_prediction_only(tax):
    parsed = parse(answer(p1=("excellent", [])), tax)
    assert parsed.status == "ok"
    assert parsed.verdicts["P1"].status == "parse_error" and "excellent" in parsed.verdicts["P1"].error
    assert parsed.verdicts["P2"].status == "ok"


def test_missing_and_misspelled_prediction_ids(tax):
    text = json.dumps({"evaluations": [{"prediction_id": "p1", "errors": [], "accuracy": "CORRECT"},
                                       {"prediction_id": "P9", "errors": [], "accuracy": "correct"}]})
    parsed = parse(text, tax)
    assert parsed.verdicts["P1"].status == "ok"
    assert parsed.verdicts["P2"].status == "empty"
    assert {"prediction_id_normalised", "unknown_prediction_id", "missing_prediction",
            "accuracy_label_normalised"} <= set(kinds(parsed))


def test_cot_confidence_and_justification(tax):
    text = json.dumps({"evaluations": [
        {"prediction_id": "P1", "reasoning": "r", "errors": [
            {"code": "SE-MD", "confidence": 0.7, "justification": "too generic"},
            {"code": "LG-GR1", "confidence": 7, "justification": "plural"}],
         "accuracy": "partial"}]})
    parsed = parse(text, tax, strategy="cot")
    codes = parsed.verdicts["P1"].codes
    assert codes[0] == CodeFinding("SE-MD", 0.7, "too generic")
    assert codes[1] == CodeFinding("LG-GR1", None, "plural")
    assert "confidence_out_of_range" in kinds(parsed)
    assert parsed.verdicts["P1"].reasoning == "r"


def test_extract_json_finds_an_object_inside_prose():
    repairs: list[dict] = []
    assert extract_json('Sure! {"a": {"b": [1, 2]}} done', repairs) == {"a": {"b": [1, 2]}}
    with pytest.raises(ValueError):
        extract_json("no json here {", [])


def test_merge_takes_the_worst_label_and_the_union_of_codes():
    def response(label, codes, status="ok"):
        return ParsedResponse(status, {"P1": PredictionVerdict(
            "P1", status, label if status == "ok" else None,
            [CodeFinding(c) for c in codes] if status == "ok" else [],
            error=None if status == "ok" else "bad")})
    merged = merge_cluster_verdicts({"semantic_accuracy": response("partial", ["SE-MD"]),
                                     "linguistic_grammar": response("correct", ["LG-GR1"]),
                                     "meta": response("incorrect", [])}, "P1")
    assert merged.status == "ok" and merged.accuracy == "incorrect"
    assert [c.code for c in merged.codes] == ["SE-MD", "LG-GR1"]
    semantic = merge_cluster_verdicts({"semantic_accuracy": response("partial", []),
                                       "meta": response("incorrect", [])}, "P1", "semantic")
    assert semantic.accuracy == "partial"
    failed = merge_cluster_verdicts({"semantic_accuracy": response("partial", ["SE-MD"]),
                                     "meta": response(None, [], "truncated")}, "P1")
    assert failed.status == "truncated" and failed.accuracy is None
    assert [c.code for c in failed.codes] == ["SE-MD"] and "meta" in failed.error


# ---------------------------------------------------------------- invalid content is not empty


@pytest.mark.parametrize("lang", ["en", "zh", "nl", "el", "pl"])
def test_evaluations_that_name_no_known_prediction_are_a_parse_error(lang, tax):
    f = texts(lang)["output_fields"]
    label = tax.accuracy_text("correct", lang)[0]
    text = json.dumps({f["evaluations"]: [{f["prediction_id"]: "P7", f["errors"]: [],
                                           f["accuracy"]: label},
                                          {"something": "else"}]}, ensure_ascii=False)
    parsed = parse(text, tax, lang)
    assert parsed.status == "parse_error" and "name no prediction" in parsed.error
    assert {v.status for v in parsed.verdicts.values()} == {"parse_error"}


def test_only_unknown_codes_and_no_label_is_a_parse_error_not_empty(tax):
    f = texts("en")["output_fields"]
    text = json.dumps({f["evaluations"]: [{f["prediction_id"]: pid, f["errors"]: ["XX-NOPE"]}
                                          for pid in IDS]})
    parsed = parse(text, tax)
    assert parsed.status == "parse_error"
    assert "no usable error code" in parsed.verdicts["P1"].error
    # an evaluation with nothing in it is still empty
    blank = json.dumps({f["evaluations"]: [{f["prediction_id"]: pid, f["errors"]: []}
                                           for pid in IDS]})
    assert parse(blank, tax).status == "empty"


@pytest.mark.parametrize("lang", ["en", "zh", "nl", "el", "pl"])
def test_an_echoed_placeholder_of_the_example_is_not_ok(lang, tax):
    t = texts(lang)
    f = t["output_fields"]
    label = tax.accuracy_text("partial", lang)[0]
    echoed = [{f["prediction_id"]: pid, f["reasoning"]: f"<{t['ph_reasoning']}>",
               f["errors"]: [{f["code"]: f"<{t['ph_code']}>", f["confidence"]: 0.0,
                              f["justification"]: f"<{t['ph_justification']}>"}],
               f["accuracy"]: label} for pid in IDS]
    parsed = parse(json.dumps({f["evaluations"]: echoed}, ensure_ascii=False), tax, lang, "cot")
    assert parsed.status == "parse_error" and "echoes the example" in parsed.error
    assert "placeholder_echoed" in kinds(parsed)


# ---------------------------------------------------------------- broken structure, two answers

P1_ENTRY = '{"prediction_id": "P1", "errors": [], "accuracy": "correct"}'
P2_ENTRY = '{"prediction_id": "P2", "errors": ["SE-MD"], "accuracy": "partial"}'


@pytest.mark.parametrize("text", [
    '{"evaluations": [' + P1_ENTRY + " " + P2_ENTRY + "]}",  # a comma missing between entries
    '{"evaluations": [' + P1_ENTRY + ', "P2": ' + P2_ENTRY + "]}",  # a key inside the list
    '{"evaluations": [' + P1_ENTRY + ', "P2": ' + P2_ENTRY[:30],  # ... and cut off
    '{"evaluations": [' + P1_ENTRY + " " + P2_ENTRY[:30],  # a missing comma, cut off
], ids=["missing-comma", "key-in-list", "key-in-list-cut", "missing-comma-cut"])
def test_a_broken_structure_is_a_parse_failure_for_the_predictions_it_lost(tax, text):
    """The old parser read the P1 object alone as a single evaluation: P1 ok, P2 `empty`, and a
    parse failure rate of 0. What the broken part held is lost, not absent."""
    parsed = parse(text, tax)
    assert parsed.verdicts["P1"].status == "ok" and parsed.verdicts["P1"].accuracy == "correct"
    lost = parsed.verdicts["P2"]
    assert lost.status == "parse_error"
    assert lost.error.startswith("P2: not read: the answer's JSON breaks (Expecting ',' "
                                 "delimiter at line 1 column ")
    assert {"kind": "prediction_lost", "prediction": "P2"} in parsed.repairs
    (broken,) = [r for r in parsed.repairs if r["kind"] == "json_structure_broken"]
    assert broken["at"] == 0 and broken["read"] == [17, 17 + len(P1_ENTRY)]
    assert "missing_prediction" not in kinds(parsed)


def test_json_with_line_comments_is_read_whole(tax):
    """As a real judge wrote it (Llama 3.3 70B in the study's rubric experiments): `//` after
    entries; the old parser read the first entry alone."""
    text = ('```json\n{\n  "evaluations": [\n    ' + P1_ENTRY + ',  // fine\n    '
            + P2_ENTRY.replace('"partial"', '"partial // not a comment"')
            + '  // Missing details\n  ]\n}\n```\nThis evaluation highlights ...')
    parsed = parse(text, tax)
    assert parsed.status == "ok" and "json_comments_removed" in kinds(parsed)
    assert parsed.verdicts["P2"].status == "parse_error"  # the text in its string is kept whole
    assert "partial // not a comment" in parsed.verdicts["P2"].error
    fixed = parse(text.replace(" // not a comment", ""), tax)
    assert [(v.status, v.accuracy) for v in fixed.verdicts.values()] == [
        ("ok", "correct"), ("ok", "partial")]


def test_two_answers_that_differ_are_a_parse_error(tax):
    first = answer(tax=tax, p2=("partial", ["SE-MD"]))
    revised = answer(tax=tax, p2=("incorrect", ["SE-HA2"]))
    parsed = parse(f"{first}\n\nWait, I revise P2:\n\n{revised}", tax)
    assert parsed.status == "parse_error"
    assert {v.status for v in parsed.verdicts.values()} == {"parse_error"}
    assert parsed.error == (f"the answer holds 2 JSON answers that differ (at characters 0 and "
                            f"{len(first) + 22}): which one the judge meant is unknown")
    assert {"kind": "json_answers_differ", "at": [0, len(first) + 22]} in parsed.repairs


def test_an_answer_given_twice_alike_is_read_and_recorded(tax):
    once = answer(tax=tax)
    parsed = parse(f"{once}\nTo repeat:\n```json\n{once}\n```", tax)
    assert parsed.status == "ok" and {"kind": "json_repeated", "copies": 2} in parsed.repairs
    assert parsed.verdicts["P2"].accuracy == "partial"
    aside = parse(f'{once}\nThe codes I used: {{"SE-MD": "missing details"}}', tax)
    assert aside.status == "ok" and "json_answers_differ" not in kinds(aside)  # not an answer
