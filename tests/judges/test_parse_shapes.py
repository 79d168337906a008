"""Answers in the shapes judges prompted elsewhere write (the study's judges among them): named
by model, `overall_quality`, `results`, codes as `error_id` objects or PRESENT/ABSENT maps, other
releases' codes. Each parses, or is parse_error with the reason: never `ok` with fewer codes.
The answers below are written for these tests."""
from __future__ import annotations

import json

import pytest

from judges.parse import parse_response
from judges.prompts import offered_codes

MODELS = {"P1": "acme/coder-7b", "P2": "Example/Tiny-Coder-1B", "P3": "foo/bar-3b"}
IDS = tuple(MODELS)


def parse(value, tax, strategy="standard", **kw):
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return parse_response(text, lang=kw.pop("lang", "en"), strategy=strategy, tax=tax,
                          offered=offered_codes(strategy, tax), prediction_ids=IDS,
                          prediction_models=MODELS, **kw)


def codes(parsed, pid):
    return [c.code for c in parsed.verdicts[pid].codes]


def kinds(parsed):
    return [r["kind"] for r in parsed.repairs]


def test_predictions_named_by_model_with_overall_quality(tax):
    parsed = parse({"evaluations": [
        {"model_name": "acme/coder-7b", "errors": ["SE-MD"], "explanation": "too vague",
         "overall_quality": "partially_correct"},
        {"model_name": "example/tiny-coder-1b", "errors": [], "explanation": "fine",
         "overall_quality": "correct"},  # the model's name in another case
        {"model_name": "foo/bar-3b", "errors": ["SE-HA2", "LG-GR1"], "overall_quality": "incorrect"},
    ]}, tax)
    assert parsed.status == "ok"
    got = {pid: (v.status, v.accuracy, codes(parsed, pid)) for pid, v in parsed.verdicts.items()}
    assert got == {"P1": ("ok", "partial", ["SE-MD"]), "P2": ("ok", "correct", []),
                   "P3": ("ok", "incorrect", ["SE-HA2", "LG-GR1"])}
    assert parsed.verdicts["P1"].reasoning == "too vague"  # `explanation`
    assert {"kind": "prediction_named_by_model", "from": "example/tiny-coder-1b",
            "to": "P2"} in parsed.repairs
    assert {"kind": "field_name_normalised", "where": "evaluations[0]", "from": "overall_quality",
            "to": "accuracy"} in parsed.repairs


@pytest.mark.parametrize("key", ["results", "evaluation_results", "model_predictions", "verdicts"])
def test_the_evaluations_under_other_keys(tax, key):
    parsed = parse({key: [{"model_name": m, "errors": ["SE-TS"], "overall_quality": "partial"}
                          for m in MODELS.values()]}, tax)
    assert parsed.status == "ok"
    assert [codes(parsed, pid) for pid in IDS] == [["SE-TS"]] * 3


def test_cot_error_objects_keyed_error_id_keep_their_codes(tax):
    entry = {"model_name": "acme/coder-7b", "reasoning": "lists every step",
             "errors": [{"error_id": "SE-TS", "confidence": 0.8, "justification": "too detailed"},
                        {"error_id": "MS-LT", "confidence": 0.6, "justification": "runs on"}],
             "overall_quality": "partial"}
    parsed = parse({"evaluations": [entry]}, tax, strategy="cot")
    assert parsed.verdicts["P1"].status == "ok"
    assert [c.as_dict() for c in parsed.verdicts["P1"].codes] == [
        {"code": "SE-TS", "confidence": 0.8, "justification": "too detailed"},
        {"code": "MS-LT", "confidence": 0.6, "justification": "runs on"}]


def test_a_presence_map_gives_the_present_codes(tax):
    parsed = parse({"results": [
        {"model_name": "acme/coder-7b", "errors": {"SE-MD": "PRESENT", "LG-GR4": "ABSENT",
                                                   "MS-RE": "ABSENT", "SE-HA": "ABSENT"}},
        {"model_name": "Example/Tiny-Coder-1B", "errors": {"SE-MD": "absent", "SE-TS": "Absent"}},
        {"model_name": "foo/bar-3b", "errors": {"SE-CS2": True, "SE-MD": "ΠΑΡΟΝ", "LG-IS": "no"}},
    ]}, tax, strategy="rubric")
    assert parsed.status == "ok"
    assert codes(parsed, "P1") == ["SE-MD"] and parsed.verdicts["P1"].accuracy is None
    # every code judged ABSENT: a verdict with no codes, not an empty or failed one
    assert parsed.verdicts["P2"].status == "ok" and codes(parsed, "P2") == []
    assert codes(parsed, "P3") == ["SE-CS2", "SE-MD"]
    assert {"kind": "errors_as_presence_map", "prediction": "P1", "present": ["SE-MD"],
            "absent": 3} in parsed.repairs


@pytest.mark.parametrize("errors,reason", [
    ({"SE-MD": "PRESENT", "SE-TS": "MAYBE"}, "P1: errors.SE-TS is \"MAYBE\", not PRESENT or ABSENT"),
    ({"SE-MD": "PRESENT", "LG-GR1": None}, "P1: errors.LG-GR1 is null, not PRESENT or ABSENT"),
    ([{"confidence": 0.9, "justification": "vague"}], "P1: errors[0] names no code"),
    (["SE-MD", {"error_id": ""}], "P1: errors[1] names no code"),
    (["SE-MD", ["SE-TS"]], "P1: errors[1] is a list, not a code"),
    (3, "P1: errors is 3, not a list of codes"),
])
def test_codes_that_cannot_be_read_are_a_parse_error_not_fewer_codes(tax, errors, reason):
    parsed = parse({"evaluations": [
        {"model_name": "acme/coder-7b", "errors": errors, "overall_quality": "partial"},
        {"model_name": "foo/bar-3b", "errors": ["SE-MD"], "overall_quality": "partial"}]}, tax)
    p1 = parsed.verdicts["P1"]
    assert p1.status == "parse_error" and p1.codes == [] and p1.error.startswith(reason)
    assert parsed.verdicts["P3"].status == "ok"  # the other prediction keeps its verdict


def test_other_releases_codes_map_through_the_taxonomy_and_are_recorded(tax):
    parsed = parse({"evaluations": [
        {"model_name": "acme/coder-7b", "errors": ["ST-IF1", "LG-GR6", "E", "LG-GR5"],
         "overall_quality": "incorrect"}]}, tax)
    # without a variant, only ids this taxonomy lacks are mapped; LG-GR5 is cohesion here
    assert codes(parsed, "P1") == ["ST-IF", "LG-GR4", "EX", "LG-GR5"]
    mapped = [(r["from"], r["to"]) for r in parsed.repairs if r["kind"] == "code_variant_mapped"]
    assert mapped == [("ST-IF1", "ST-IF"), ("LG-GR6", "LG-GR4"), ("E", "EX")]
    # a judge prompted with the variant: its LG-GR5 (capitalisation) is LG-GR4 here
    study = parse({"evaluations": [{"model_name": "acme/coder-7b", "errors": ["LG-GR5", "LG-GR4"],
                                    "overall_quality": "partial"}]}, tax, code_variant="variant-gr6")
    assert codes(study, "P1") == ["LG-GR4"]
    assert "duplicate_code" in kinds(study)


def test_a_group_is_a_group_not_an_unknown_code(tax):
    parsed = parse({"evaluations": [{"model_name": "acme/coder-7b", "errors": ["MS-RE", "SE-MD"],
                                     "overall_quality": "partial"}]}, tax)
    assert codes(parsed, "P1") == ["SE-MD"]
    (group,) = [r for r in parsed.repairs if r["kind"] == "code_not_assignable"]
    assert group["value"] == "MS-RE" and group["reason"].endswith("a group; assign one of its leaves")
    assert "unknown_code" not in kinds(parsed)


def test_json_after_prose_and_a_fence(tax):
    body = json.dumps({"evaluations": [{"model_name": m, "errors": [], "overall_quality": "correct"}
                                       for m in MODELS.values()]}, indent=2)
    text = f"I'll evaluate each model's prediction against the taxonomy.\n\n```json\n{body}\n```\n"
    parsed = parse(text, tax)
    assert parsed.status == "ok" and {v.accuracy for v in parsed.verdicts.values()} == {"correct"}
    assert "text_before_json_removed" in kinds(parsed)


def test_a_model_name_two_predictions_share_names_neither(tax):
    models = {"P1": "same/model", "P2": "same/model", "P3": "foo/bar-3b"}
    parsed = parse_response(json.dumps({"evaluations": [
        {"model_name": "same/model", "errors": [], "overall_quality": "correct"},
        {"model_name": "foo/bar-3b", "errors": [], "overall_quality": "correct"}]}),
        lang="en", strategy="standard", tax=tax, offered=offered_codes("standard", tax),
        prediction_ids=IDS, prediction_models=models)
    assert parsed.verdicts["P1"].status == parsed.verdicts["P2"].status == "empty"
    assert parsed.verdicts["P3"].status == "ok"
    assert {"kind": "ambiguous_model_name", "value": "same/model",
            "predictions": ["P1", "P2"]} in parsed.repairs


def test_a_blank_reasoning_does_not_hide_the_explanation(tax):
    parsed = parse({"evaluations": [{"model_name": "acme/coder-7b", "reasoning": "",
                                     "explanation": "names the wrong parameter",
                                     "errors": ["SE-HA1"], "overall_quality": "incorrect"}]}, tax)
    assert parsed.verdicts["P1"].reasoning == "names the wrong parameter"


def test_errors_given_as_copies_of_the_taxonomy_entries(tax):
    parsed = parse({"results": [{"model_name": "acme/coder-7b", "errors": [
        {"id": "ST-IF1", "name": "Style inconsistency", "description": "javadoc misses @return"},
        {"id": "SE-MD", "name": "Missing details"}]}]}, tax, strategy="rubric")
    assert codes(parsed, "P1") == ["ST-IF", "SE-MD"]
    assert [r["value"] for r in parsed.repairs if r["kind"] == "error_as_taxonomy_entry"] == [
        "ST-IF1", "SE-MD"]


def test_codes_only_answers_when_no_label_was_asked_for(tax):
    answer = {"evaluations": [
        {"model_name": "acme/coder-7b", "errors": [], "explanation": "nothing wrong"},
        {"model_name": "foo/bar-3b", "errors": ["SE-MD"], "explanation": "too vague"}]}
    asked = parse(answer, tax)  # a label was asked for: an answer without one is empty
    assert asked.verdicts["P1"].status == "empty" and "missing_accuracy" in kinds(asked)
    codes_only = parse(answer, tax, accuracy_asked=False)
    assert codes_only.verdicts["P1"].status == "ok" and codes(codes_only, "P1") == []
    assert codes(codes_only, "P3") == ["SE-MD"] and "missing_accuracy" not in kinds(codes_only)
    assert codes_only.verdicts["P2"].status == "empty"  # not judged at all
