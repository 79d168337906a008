"""Judge prompts as pure functions: one target's data in, chat messages out.

Four strategies share one setup (section 8.1 of the study): natural-language instructions plus
JSON blocks holding the taxonomy, the original comment, the code context with the FIM mask and
the predictions; the judge answers, per prediction, with error codes and an accuracy label.

- standard: the three bias-mitigation directives (verbosity, position, consistency) in the
  system message and again in the user message (Figure 13);
- cot: the seven steps of Table 5; a reasoning field before the errors array and a confidence
  and justification per error;
- rubric: each code's inclusion/exclusion criteria as "mark as PRESENT if / ABSENT if"
  decision templates (Figure 14);
- hierarchical: one request per taxonomy cluster holding only that cluster's codes.

A prompt variant from a file (`judges.templates.PromptTemplate`) may stand wherever a strategy
name does: it uses its base strategy's layout and schema with its own wording.

Two layouts: `code` (a comment cut out of a file, shown around FIM_MASK) and `pairs` (a pairs
target: a reference text and predictions, no code; its context text, if any, shown as it is),
whose wording replaces the code-comment texts where the files' `pairs` mapping has one. The
system role names the targets' language (`{language}`), in any language the database holds.

Every word is in the prompt language; `prompt_version` hashes everything a prompt is made of,
so a change of wording (or of the taxonomy) changes the version stored with each verdict.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from db.models import JUDGE_STRATEGIES as STRATEGIES
from judges.i18n import FIM_MASK, language_name, texts
from judges.templates import PromptTemplate
from taxonomy import ACCURACY_LABELS


@dataclass(frozen=True)
class Prediction:
    id: str  # "P1".."Pn": the position in the prompt
    comment: str


LAYOUTS = ("code", "pairs")


@dataclass(frozen=True)
class JudgeInput:
    """Everything the judge sees about one target."""
    original_comment: str  # pairs layout: the reference text
    code_context: str  # the source with FIM_MASK where the comment was (pairs: a context, or "")
    predictions: tuple[Prediction, ...]
    layout: str = "code"  # or "pairs"
    language: str | None = None  # the targets' language (None: the prompt language)

    @property
    def prediction_ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.predictions)


def prediction_ids(n: int) -> tuple[str, ...]:
    return tuple(f"P{i}" for i in range(1, n + 1))


def code_context_with_mask(content: str, start: int, end: int,
                           window_chars: int | None = None) -> str:
    """The source with the comment span replaced by FIM_MASK; optionally only `window_chars`
    characters on each side of it (cut at line boundaries so no line is half shown)."""
    if not 0 <= start <= end <= len(content):
        raise ValueError(f"comment span {start}:{end} lies outside a text of {len(content)} chars")
    before, after = content[:start], content[end:]
    if window_chars is not None:
        if len(before) > window_chars:
            before = before[-window_chars:]
            before = before[before.find("\n") + 1:] if "\n" in before else before
        if len(after) > window_chars:
            after = after[:window_chars]
            after = after[:after.rfind("\n")] if "\n" in after else after
    return f"{before}{FIM_MASK}{after}"


def base_strategy(strategy: "str | PromptTemplate") -> str:
    """The built-in strategy whose layout a request follows (a template's base)."""
    if isinstance(strategy, PromptTemplate):
        return strategy.base
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)} "
                         "or a prompt template file")
    return strategy


def strategy_name(strategy: "str | PromptTemplate") -> str:
    return strategy.name if isinstance(strategy, PromptTemplate) else strategy


def strategy_texts(strategy: "str | PromptTemplate", lang: str, layout: str = "code") -> dict:
    """The wording of a request: the prompt language's texts (a template's where it replaces
    them), with the pairs texts in place of the code-comment ones for the pairs layout."""
    t = strategy.texts(lang) if isinstance(strategy, PromptTemplate) else texts(lang)
    if layout == "pairs":
        return {**t, **t["pairs"]}
    if layout != "code":
        raise ValueError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    return t


def _code(tax, item):
    return item if hasattr(item, "id") else tax.code(item)


def _code_text(code, field: str, lang: str, t: dict | None = None):
    """A code's text as the judge reads it: the prompt texts' judge_code_texts where they
    replace the taxonomy's (annotator-facing) wording, else the taxonomy's."""
    override = ((t or texts(lang))["judge_code_texts"].get(code.id) or {}).get(field)
    return override if override is not None else code.text(field, lang)


def _criteria(code, field: str, lang: str, t: dict | None = None) -> list[str]:
    value = _code_text(code, field, lang, t)
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    return [str(v) for v in value if str(v).strip()]


def request_clusters(strategy: "str | PromptTemplate", tax) -> tuple[str, ...]:
    """The requests one target needs: one per cluster for hierarchical, else one ("")."""
    return tuple(tax.clusters) if base_strategy(strategy) == "hierarchical" else ("",)


def offered_codes(strategy: "str | PromptTemplate", tax, cluster: str = "") -> tuple[str, ...]:
    """The codes a request shows the judge (and so the only codes its answer may use)."""
    strategy = base_strategy(strategy)
    if strategy == "hierarchical":
        if cluster not in tax.clusters:
            raise ValueError(f"unknown cluster {cluster!r}; expected one of {', '.join(tax.clusters)}")
        return tuple(_code(tax, c).id for c in tax.clusters[cluster].codes)
    if cluster:
        raise ValueError(f"strategy {strategy!r} has no clusters (got {cluster!r})")
    return tuple(_code(tax, c).id for c in tax.labelable())


def accuracy_names(tax, lang: str) -> tuple[str, ...]:
    """The accuracy labels as the prompt language names them, in ACCURACY_LABELS order."""
    return tuple(tax.accuracy_text(label, lang)[0] for label in ACCURACY_LABELS)


# ---------------------------------------------------------------- blocks


def _json_block(value) -> str:
    return "```json\n" + json.dumps(value, ensure_ascii=False, indent=2) + "\n```"


def taxonomy_block(tax, codes: Sequence[str], lang: str, t: dict | None = None) -> str:
    t = t or texts(lang)
    keys = t["input_keys"]
    entries = []
    for code_id in codes:
        code = tax.code(code_id)
        entries.append({
            keys["id"]: code.id,
            keys["name"]: _code_text(code, "name", lang, t),
            keys["description"]: _code_text(code, "description", lang, t),
            keys["inclusion"]: _criteria(code, "inclusion", lang, t),
            keys["exclusion"]: _criteria(code, "exclusion", lang, t),
        })
    return _json_block(entries)


def rubric_entry(code, lang: str, t: dict | None = None) -> str:
    """One code as a decision template (Figure 14): PRESENT needs all its conditions, any
    ABSENT condition rules it out (the taxonomy's inclusion/exclusion criteria)."""
    t = t or texts(lang)
    present = (_criteria(code, "inclusion", lang, t)
               or [_code_text(code, "description", lang, t)])
    absent = _criteria(code, "exclusion", lang, t) or [t["none_listed"]]
    lines = [f"### [{code.id}] {_code_text(code, 'name', lang, t)}", t["present_if"]]
    lines += [f"  • {c}" for c in present]
    lines.append(t["absent_if"])
    lines += [f"  • {c}" for c in absent]
    return "\n".join(lines)


def rubric_block(tax, codes: Sequence[str], lang: str, t: dict | None = None) -> str:
    return "\n\n".join(rubric_entry(tax.code(c), lang, t) for c in codes)


def accuracy_block(tax, lang: str) -> str:
    lines = []
    for label in ACCURACY_LABELS:
        name, description = tax.accuracy_text(label, lang)
        lines.append(f"- {name}: {description}")
    return "\n".join(lines)


def _text_key(judge_input: JudgeInput, keys: dict) -> str:
    return keys["text" if judge_input.layout == "pairs" else "comment"]


def predictions_block(judge_input: JudgeInput, lang: str, t: dict | None = None) -> str:
    keys = (t or texts(lang))["input_keys"]
    return _json_block([{keys["id"]: p.id, _text_key(judge_input, keys): p.comment}
                        for p in judge_input.predictions])


def example_output(strategy: "str | PromptTemplate", lang: str, ids: Sequence[str],
                   labels: Sequence[str]) -> dict:
    """The answer's shape, with the prompt language's field names, as shown to the judge: one
    entry per prediction (with only P1 shown, models answered for P1 alone)."""
    t = strategy_texts(strategy, lang)
    strategy = base_strategy(strategy)
    f = t["output_fields"]
    label_choice = " | ".join(labels)
    entries = []
    for pid in ids:
        entry = {f["prediction_id"]: pid}
        if strategy == "cot":
            entry[f["reasoning"]] = f"<{t['ph_reasoning']}>"
            entry[f["errors"]] = [{f["code"]: f"<{t['ph_code']}>", f["confidence"]: 0.0,
                                   f["justification"]: f"<{t['ph_justification']}>"}]
        else:
            entry[f["errors"]] = [f"<{t['ph_code']}>"]
        entry[f["accuracy"]] = label_choice
        entries.append(entry)
    return {f["evaluations"]: entries}


def output_schema(strategy: "str | PromptTemplate", lang: str, codes: Sequence[str],
                  ids: Sequence[str], labels: Sequence[str]) -> dict:
    """A JSON schema for structured output (OpenAI `json_schema`, strict), in the prompt
    language's field names; reasoning comes before errors for cot. Arrays are bounded (exactly
    one evaluation per prediction, at most one entry per offered code): without bounds,
    constrained small models repeated entries until the token limit."""
    f = strategy_texts(strategy, lang)["output_fields"]
    strategy = base_strategy(strategy)
    code_schema = {"type": "string", "enum": list(codes)}
    if strategy == "cot":
        error_item = {
            "type": "object",
            "properties": {f["code"]: code_schema,
                           f["confidence"]: {"type": "number"},
                           f["justification"]: {"type": "string"}},
            "required": [f["code"], f["confidence"], f["justification"]],
            "additionalProperties": False,
        }
    else:
        error_item = code_schema
    properties = {f["prediction_id"]: {"type": "string", "enum": list(ids)}}
    if strategy == "cot":
        properties[f["reasoning"]] = {"type": "string"}
    properties[f["errors"]] = {"type": "array", "items": error_item, "maxItems": len(codes)}
    properties[f["accuracy"]] = {"type": "string", "enum": list(labels)}
    entry = {"type": "object", "properties": properties, "required": list(properties),
             "additionalProperties": False}
    return {
        "type": "object",
        "properties": {f["evaluations"]: {"type": "array", "items": entry,
                                          "minItems": len(ids), "maxItems": len(ids)}},
        "required": [f["evaluations"]],
        "additionalProperties": False,
    }


# ---------------------------------------------------------------- messages


def _numbered(lines: Iterable[str]) -> str:
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))


def _bullets(lines: Iterable[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def build_messages(strategy: "str | PromptTemplate", judge_input: JudgeInput, lang: str, tax,
                   cluster: str = "") -> list[dict]:
    """The chat messages (system, user) of one request, entirely in `lang` (the targets'
    language, `judge_input.language`, named in it), in the input's layout."""
    t = strategy_texts(strategy, lang, judge_input.layout)
    variant, strategy = strategy, base_strategy(strategy)
    f = t["output_fields"]
    codes = offered_codes(strategy, tax, cluster)
    labels = accuracy_names(tax, lang)
    target = judge_input.language or lang
    fmt = {"mask": FIM_MASK, "language": language_name(target, lang, t),
           "language_en": language_name(target, "en"), **f}  # (code-mixed English segments)

    system = "\n\n".join([
        t["system_role"].format(**fmt),
        t["rules"] + "\n" + _bullets(t["bias"]),
        t["json_only"],
    ])

    parts: list[str] = []
    if strategy == "rubric":
        parts.append(f"## {t['h_rubric']}\n\n{rubric_block(tax, codes, lang, t)}")
    elif strategy == "hierarchical":
        c = tax.clusters[cluster]
        parts.append(f"## {t['h_cluster']}: {c.text('name', lang)}\n\n"
                     f"{c.text('description', lang)}".rstrip())
        parts.append(f"## {t['h_taxonomy']}\n\n{taxonomy_block(tax, codes, lang, t)}")
        parts.append(t["cluster_focus"])
    else:
        parts.append(f"## {t['h_taxonomy']}\n\n{taxonomy_block(tax, codes, lang, t)}")
    parts.append(f"## {t['h_accuracy']}\n\n{accuracy_block(tax, lang)}")
    original = _json_block({_text_key(judge_input, t["input_keys"]): judge_input.original_comment})
    parts.append(f"## {t['h_original']}\n\n{original}")
    if judge_input.layout == "code" or judge_input.code_context.strip():  # pairs: if it has one
        parts.append(f"## {t['h_context'].format(**fmt)}\n\n```\n{judge_input.code_context}\n```")
    parts.append(f"## {t['h_predictions']}\n\n{predictions_block(judge_input, lang, t)}")

    steps = t[{"cot": "cot_steps", "rubric": "rubric_steps"}.get(strategy, "standard_steps")]
    instructions = t["steps_intro"] + "\n" + _numbered(s.format(**fmt) for s in steps)
    if strategy == "rubric":
        instructions += "\n\n" + t["rubric_instruction"].format(**fmt)
    parts.append(instructions)
    parts.append(t["remember"] + "\n" + _bullets(t["bias"]))

    ids = judge_input.prediction_ids
    example = example_output(variant, lang, ids or ("P1",), labels)  # same in either layout
    parts.append(
        f"## {t['h_output']}\n\n"
        + t["output_instruction"].format(**{**fmt, "ids": ", ".join(ids), "labels": ", ".join(labels)})
        + "\n\n" + _json_block(example)
    )
    return [{"role": "system", "content": system},
            {"role": "user", "content": "\n\n".join(parts)}]


# ---------------------------------------------------------------- versions

_PROBE = JudgeInput(
    original_comment="<original>",
    code_context=f"<before>{FIM_MASK}<after>",
    predictions=tuple(Prediction(pid, f"<{pid}>") for pid in prediction_ids(5)),
)
_PROBES = {"code": _PROBE, "pairs": replace(_PROBE, code_context="<context>", layout="pairs")}


def prompt_version(strategy: "str | PromptTemplate", lang: str, tax, target_lang: str | None = None,
                   layouts: Sequence[str] = ("code",)) -> str:
    """`<strategy>-<lang>-<12 hex>` (`<strategy>-pairs-<lang>-...` for pairs targets,
    `-mixed-` for both): a hash of every request this strategy (or template) renders in these
    layouts for a fixed probe input in the targets' language (all wording, layout, taxonomy
    texts) plus the taxonomy version."""
    digest = hashlib.sha256()
    digest.update(f"taxonomy={tax.version}\n".encode())
    for layout in sorted(set(layouts)):
        probe = replace(_PROBES[layout], language=target_lang)
        for cluster in request_clusters(strategy, tax):
            messages = build_messages(strategy, probe, lang, tax, cluster)
            digest.update(json.dumps(messages, ensure_ascii=False, sort_keys=True).encode())
            schema = output_schema(strategy, lang, offered_codes(strategy, tax, cluster),
                                   probe.prediction_ids, accuracy_names(tax, lang))
            digest.update(json.dumps(schema, ensure_ascii=False, sort_keys=True).encode())
    kind = {("code",): "", ("pairs",): "pairs-"}.get(tuple(sorted(set(layouts))), "mixed-")
    return f"{strategy_name(strategy)}-{kind}{lang}-{digest.hexdigest()[:12]}"
