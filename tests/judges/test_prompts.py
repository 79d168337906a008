"""Prompt builders: every strategy x language renders in that language, shows the codes it
should (a hierarchical cluster: only its own), and a schema-valid answer parses back exactly."""
from __future__ import annotations

import json
import re

import pytest

from judges import i18n
from judges.i18n import FIM_MASK, PROMPT_LANGUAGES, texts
from judges.order import presentation_order
from judges.parse import parse_response
from judges.prompts import (
    STRATEGIES,
    JudgeInput,
    Prediction,
    accuracy_names,
    build_messages,
    code_context_with_mask,
    offered_codes,
    output_schema,
    prompt_version,
    request_clusters,
    rubric_entry,
)
from judges.templates import load_template
from taxonomy import ACCURACY_LABELS

INPUT = JudgeInput(
    original_comment="# Προσθέτει δύο αριθμούς",
    code_context=f"def add(a, b):\n    {FIM_MASK}\n    return a + b\n",
    predictions=tuple(Prediction(f"P{i}", f"# prediction {i}") for i in range(1, 6)),
)
CASES = [(s, lang) for s in STRATEGIES for lang in PROMPT_LANGUAGES]


def has_code(text: str, code: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(code)}(?![\w-])", text) is not None


def requests(strategy, lang, tax):
    for cluster in request_clusters(strategy, tax):
        yield cluster, build_messages(strategy, INPUT, lang, tax, cluster)


@pytest.mark.parametrize("strategy,lang", CASES)
def test_renders_in_the_prompt_language_with_the_right_codes(strategy, lang, tax):
    t = texts(lang)
    all_codes = [c.id for c in tax.labelable()]
    for cluster, messages in requests(strategy, lang, tax):
        assert [m["role"] for m in messages] == ["system", "user"]
        system, user = messages[0]["content"], messages[1]["content"]
        # the three bias directives, in the system message and again in the user message
        for directive in t["bias"]:
            assert directive in system and directive in user
        # the data, the mask and every prediction id
        assert INPUT.original_comment in user and FIM_MASK in user
        for p in INPUT.predictions:
            assert f'"{p.id}"' in user and p.comment in user
        # output field names in this language (and, for a translation, not the English ones)
        for canonical, name in t["output_fields"].items():
            if canonical in ("reasoning", "code", "confidence", "justification") and strategy != "cot":
                continue
            assert f'"{name}"' in user, (canonical, name)
        if lang != "en":
            assert texts("en")["system_role"] not in system
            assert '"evaluations"' not in user and '"accuracy"' not in user
        for name in accuracy_names(tax, lang):
            assert name in user
        shown = set(offered_codes(strategy, tax, cluster))
        id_key = t["input_keys"]["id"]
        for code in all_codes:  # criteria may mention other codes; entries are what counts
            entry = f"### [{code}] " if strategy == "rubric" else f'"{id_key}": "{code}"'
            assert (entry in user) == (code in shown), (cluster, code)
        assert all(has_code(user, code) for code in shown)
        if strategy == "hierarchical":
            assert shown == set(tax.clusters[cluster].codes)
            assert t["cluster_focus"] in user
        else:
            assert shown == set(all_codes)
        if strategy == "cot":
            for step in t["cot_steps"][:5]:
                assert step.format(mask=FIM_MASK) in user
        if strategy == "rubric":
            assert t["present_if"] in user and t["absent_if"] in user


def test_hierarchical_makes_one_request_per_cluster_covering_every_code_once(tax):
    clusters = request_clusters("hierarchical", tax)
    assert len(clusters) == len(tax.clusters) == 7
    seen = [c for cluster in clusters for c in offered_codes("hierarchical", tax, cluster)]
    assert sorted(seen) == sorted(c.id for c in tax.labelable())


def test_rubric_entry_turns_criteria_into_a_decision_template(tax):
    code = tax.code("SE-MD")
    entry = rubric_entry(code, "en")
    lines = entry.splitlines()
    assert lines[0] == f"### [SE-MD] {code.text('name', 'en')}"
    assert lines[1] == texts("en")["present_if"]
    absent = lines.index(texts("en")["absent_if"])
    assert lines[2:absent] == [f"  • {c}" for c in code.text("inclusion", "en")]
    expected_absent = list(code.text("exclusion", "en")) or [texts("en")["none_listed"]]
    assert lines[absent + 1:] == [f"  • {c}" for c in expected_absent]
    greek = rubric_entry(code, "el")
    assert texts("el")["present_if"] in greek and code.text("name", "el") in greek


def test_cot_schema_puts_reasoning_before_errors(tax):
    schema = output_schema("cot", "el", ["SE-MD"], ["P1"], accuracy_names(tax, "el"))
    f = texts("el")["output_fields"]
    entry = schema["properties"][f["evaluations"]]["items"]
    keys = list(entry["properties"])
    assert keys.index(f["reasoning"]) < keys.index(f["errors"])
    error = entry["properties"][f["errors"]]["items"]
    assert set(error["properties"]) == {f["code"], f["confidence"], f["justification"]}


def instance_from_schema(schema: dict, codes: list[str], labels: list[str]) -> dict:
    """A schema-valid answer judging every prediction differently, built only from the schema."""
    (evaluations_key, array), = schema["properties"].items()
    entry = array["items"]
    props = list(entry["properties"].items())
    out = []
    pid_key = props[0][0]
    for i, pid in enumerate(entry["properties"][pid_key]["enum"]):
        item = {}
        for key, spec in props:
            if key == pid_key:
                item[key] = pid
            elif spec["type"] == "string" and "enum" in spec:
                item[key] = labels[i % len(labels)]
            elif spec["type"] == "string":
                item[key] = f"reasoning for {pid}"
            else:  # the errors array
                code = codes[i % len(codes)]
                sub = spec["items"]
                if sub.get("type") == "object":
                    ck, conf, just = list(sub["properties"])
                    item[key] = [{ck: code, conf: 0.25 * (i % 4), just: f"why {code}"}]
                else:
                    item[key] = [code]
        out.append(item)
    return {evaluations_key: out}


@pytest.mark.parametrize("strategy,lang", CASES)
def test_a_schema_valid_answer_round_trips_through_the_parser(strategy, lang, tax):
    ids = list(INPUT.prediction_ids)
    labels = list(accuracy_names(tax, lang))
    for cluster in request_clusters(strategy, tax):
        codes = list(offered_codes(strategy, tax, cluster))
        schema = output_schema(strategy, lang, codes, ids, labels)
        answer = instance_from_schema(schema, codes, labels)
        parsed = parse_response(json.dumps(answer, ensure_ascii=False), lang=lang,
                                strategy=strategy, tax=tax, offered=codes, prediction_ids=ids)
        assert parsed.status == "ok" and parsed.repairs == [], parsed.repairs
        for i, pid in enumerate(ids):
            verdict = parsed.verdicts[pid]
            assert verdict.status == "ok"
            assert verdict.accuracy == ACCURACY_LABELS[i % 3]
            assert [c.code for c in verdict.codes] == [codes[i % len(codes)]]
            if strategy == "cot":
                assert verdict.codes[0].confidence == 0.25 * (i % 4)
                assert verdict.reasoning == f"reasoning for {pid}"


def test_prompt_version_is_stable_and_changes_with_the_wording(tax, tmp_path):
    v = prompt_version("standard", "el", tax)
    assert v.startswith("standard-el-") and v == prompt_version("standard", "el", tax)
    others = {prompt_version(s, lang, tax) for s, lang in CASES}
    assert len(others) == len(CASES)  # every strategy x language has its own version
    same = tmp_path / "same.yaml"
    same.write_text("name: same\nbase: standard\n", encoding="utf-8")
    changed = tmp_path / "changed.yaml"
    changed.write_text("name: same\nbase: standard\ntexts:\n  el:\n    json_only: '"
                       + texts("el")["json_only"] + " '\n", encoding="utf-8")
    unchanged_hash = prompt_version(load_template(same), "el", tax).rsplit("-", 1)[1]
    assert unchanged_hash == v.rsplit("-", 1)[1]  # same wording, same prompts
    assert prompt_version(load_template(changed), "el", tax).rsplit("-", 1)[1] != unchanged_hash


def test_field_names_do_not_collide_across_languages():
    for key, by_lang in i18n.field_aliases().items():
        assert len(set(by_lang.values())) == 1, (key, by_lang)


def test_unknown_inputs_are_clear_errors(tax):
    with pytest.raises(ValueError, match="unknown prompt language 'de'"):
        build_messages("standard", INPUT, "de", tax)
    with pytest.raises(ValueError, match="unknown strategy 'fancy'"):
        build_messages("fancy", INPUT, "en", tax)
    with pytest.raises(ValueError, match="unknown cluster 'nope'"):
        offered_codes("hierarchical", tax, "nope")


def test_code_context_masks_the_span_and_windows_at_line_boundaries():
    content = "line1\nline2\n# the comment\nline4\nline5\n"
    start = content.index("#")
    end = content.index("\n", start)
    assert code_context_with_mask(content, start, end) == (
        f"line1\nline2\n{FIM_MASK}\nline4\nline5\n")
    assert code_context_with_mask(content, start, end, window_chars=8) == f"line2\n{FIM_MASK}\nline4"
    with pytest.raises(ValueError, match="outside"):
        code_context_with_mask(content, 5, 999)


def test_order_policies_are_deterministic_per_target():
    items = list(range(5))
    assert presentation_order(items, "fixed", 42, 7) == items
    assert presentation_order(items, "rotate", 42, 0) == [2, 3, 4, 0, 1]
    shuffled = presentation_order(items, "shuffle", 42, 7)
    assert sorted(shuffled) == items and shuffled == presentation_order(items, "shuffle", 42, 7)
    assert len({tuple(presentation_order(items, "shuffle", 42, t)) for t in range(20)}) > 5
    with pytest.raises(ValueError, match="unknown order policy"):
        presentation_order(items, "random", 42, 1)
