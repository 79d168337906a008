"""The project's JSONL format (`db/FORMAT.md`): one record a line, its kind in a "type" field,
rows referring to each other by natural keys. `check_record` validates one record against
`RECORD_FIELDS` and returns it normalised (pure; no database here).

Every error is a `FormatError` whose `field` names the offending field; the importer adds the
file and line/row.
"""
from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from db.formats.errors import FormatError
from db.formats.text import TextLimits

FORMAT_VERSION = 1


# ------------------------------------------------------------------------------ project records

# Field kinds: str, int, float, bool, json (any JSON value), strlist (list of strings),
# span ([start, end], end exclusive), time (ISO 8601, UTC when it names no zone).
# Suffix "!" = required, "?" = may be null.
# A target is a comment of a file (repo + path + span) or a pairs item of a dataset (item).
_TARGET_REF = {"dataset": "str!", "repo": "str", "path": "str", "span": "span", "item": "str"}
_GENERATION_REF = {**_TARGET_REF, "model": "str!"}
_REF_KINDS = {"target", "generation", "assignment", "annotation", "gold_label", "noise_sample",
              "metric_score", "judge_response", "judge_verdict", "label_plan_item"}

RECORD_FIELDS: dict[str, dict[str, str]] = {
    "dataset": {"name": "str!", "description": "str", "created_at": "time?"},
    "file": {"dataset": "str!", "repo": "str!", "path": "str!", "natural_language": "str!",
             "programming_language": "str", "licence": "str", "external_id": "str?",
             "content": "str!"},
    "target": {**_TARGET_REF, "original_comment": "str", "comment_kind": "str",
               "natural_language": "str", "context": "str?"},
    "generation": {**_GENERATION_REF, "fim_input": "str", "raw_output": "str",
                   "predicted_comment": "str", "backend": "str", "params": "json",
                   "created_at": "time?"},
    "annotator": {"username": "str!", "role": "str", "languages": "strlist",
                  "display_name": "str", "interface_language": "str", "password_hash": "str?",
                  "active": "bool", "created_at": "time?"},
    "assignment": {**_GENERATION_REF, "annotator": "str!", "position": "int",
                   "created_at": "time?"},
    "annotation": {**_GENERATION_REF, "annotator": "str!", "accuracy": "str?",
                   "codes": "strlist", "note": "str", "seconds_spent": "float", "status": "str",
                   "revision": "int", "history": "json", "reply": "json",
                   "created_at": "time?", "updated_at": "time?"},
    "gold_label": {**_GENERATION_REF, "adjudicator": "str!", "accuracy": "str!",
                   "codes": "strlist", "note": "str", "history": "json", "created_at": "time?"},
    "metric_run": {"signature": "str!", "metric": "str!", "model": "str", "layer": "int?",
                   "tokenizer": "str", "context": "str", "noise": "str", "seed": "int?",
                   "params": "json", "library_versions": "json", "created_at": "time?"},
    "noise_sample": {**_TARGET_REF, "kind": "str!", "tokenizer": "str!",
                     "seed": "int!", "text": "str"},
    # the subject is a generation (model given) or a noise sample (noise = {kind, tokenizer, seed})
    "metric_score": {"run": "str!", **_TARGET_REF, "model": "str?",
                     "noise": "json", "precision": "float?", "recall": "float?", "f": "float?",
                     "error": "str?", "details": "json"},
    "judge_run": {"signature": "str!", "model": "str!", "backend": "str", "strategy": "str!",
                  "prompt_language": "str!", "prompt_version": "str!", "params": "json",
                  "prompt_tokens": "int?", "completion_tokens": "int?", "cost_usd": "float?",
                  "created_at": "time?"},
    "judge_response": {"run": "str!", **_TARGET_REF, "cluster": "str",
                       "order": "json", "status": "str!", "raw_response": "str",
                       "repairs": "json", "error": "str?", "prompt_tokens": "int?",
                       "completion_tokens": "int?", "latency_s": "float", "cached": "bool",
                       "created_at": "time?"},
    "judge_verdict": {"run": "str!", **_GENERATION_REF, "status": "str!", "accuracy": "str?",
                      "codes": "json", "position": "int?", "created_at": "time?"},
    # a submission to a Batch API (judges.batch); requests: custom_id -> {"target": a target
    # key, "key", "format"}, so a run moved while it waits collects its batch (nothing resent)
    "judge_batch": {"run": "str!", "submission": "str!", "batch_id": "str?",
                    "input_file_id": "str?", "output_file_id": "str?", "error_file_id": "str?",
                    "status": "str!", "requests": "json", "counts": "json", "error": "str?",
                    "created_at": "time?", "finished_at": "time?"},
    # an active labelling plan (annotate.plan): keyed by its name; its judge run by signature
    "label_plan": {"name": "str!", "dataset": "str!", "run": "str!", "predictor": "str!",
                   "estimand": "str!", "language": "str?", "budget": "float!",
                   "min_probability": "float", "seed": "int", "method": "str",
                   "label_policy": "str", "target_width": "float?", "compare": "json",
                   "created_at": "time?"},
    # one generation of a plan: a pilot item or a planned one, its probability and draw
    "label_plan_item": {"plan": "str!", **_GENERATION_REF, "pilot": "bool",
                        "predictor_value": "float!", "probability": "float!", "drawn": "bool!"},
}
RECORD_TYPES = tuple(RECORD_FIELDS)
"""Record types in dependency order: a record may refer only to kinds listed before it."""


def _check_value(kind: str, value: Any, field: str) -> Any:
    base = kind.rstrip("!?")
    if value is None:
        if kind.endswith("?") or base == "json":
            return None
        raise FormatError("must not be null", field)
    if base == "str":
        if not isinstance(value, str):
            raise FormatError(f"expected a string, got {type(value).__name__} {value!r:.60}",
                              field)
        return value
    if base == "int":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                (isinstance(value, float) and not value.is_integer()):
            raise FormatError(f"expected an integer, got {value!r:.60}", field)
        return int(value)
    if base == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FormatError(f"expected a number, got {value!r:.60}", field)
        return float(value)
    if base == "bool":
        if not isinstance(value, bool):
            raise FormatError(f"expected true or false, got {value!r:.60}", field)
        return value
    if base == "strlist":
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise FormatError(f"expected a list of strings, got {value!r:.60}", field)
        return list(value)
    if base == "time":
        try:
            datetime.fromisoformat(value)
        except (TypeError, ValueError):
            raise FormatError(f"expected an ISO 8601 time, got {value!r:.60}", field) from None
        return value
    if base == "span":
        if (not isinstance(value, (list, tuple)) or len(value) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
                or not 0 <= value[0] <= value[1]):
            raise FormatError(f"expected [start, end] with 0 <= start <= end, got {value!r:.60}",
                              field)
        return [int(value[0]), int(value[1])]
    return value  # json: anything JSON can hold


def check_record(record: Any, limits: TextLimits | None = None) -> dict:
    """The record validated and normalised (unknown fields rejected, kinds checked, every text
    checked against `limits`, a `db.formats.text.TextLimits`; by default from the environment)."""
    limits = limits or TextLimits.from_env()
    if not isinstance(record, dict):
        raise FormatError(f"a record must be a JSON object, got {type(record).__name__}")
    kind = record.get("type")
    if kind not in RECORD_FIELDS:
        raise FormatError(f"unknown record type {kind!r}; expected one of "
                          f"{', '.join(RECORD_TYPES)}", "type")
    spec = RECORD_FIELDS[kind]
    unknown = sorted(set(record) - set(spec) - {"type"})
    if unknown:
        raise FormatError(f"unknown field(s) for a {kind} record: {', '.join(unknown)}",
                          unknown[0])
    out = {"type": kind}
    for field, field_kind in spec.items():
        if field not in record:
            if field_kind.endswith("!"):
                raise FormatError(f"missing (required in a {kind} record)", field)
            continue
        out[field] = _check_value(field_kind, record[field], field)
        _check_text(limits, field_kind, out[field], field)
    if kind in ("annotation", "gold_label") and isinstance(out.get("history"), list):
        for i, past in enumerate(out["history"]):  # earlier notes: the same limit as a note
            if isinstance(past, dict) and isinstance(past.get("note"), str):
                limits.check(past["note"], f"history[{i}].note")
    if kind in _REF_KINDS:
        _check_target_ref(kind, out)
    if kind == "metric_score":
        has_model, has_noise = out.get("model") is not None, out.get("noise") is not None
        if has_model == has_noise:
            raise FormatError("a metric score needs exactly one subject: 'model' (a generation) "
                              "or 'noise' ({kind, tokenizer, seed})", "model")
        if has_noise and not (isinstance(out["noise"], dict)
                              and {"kind", "tokenizer", "seed"} <= set(out["noise"])):
            raise FormatError("expected {\"kind\", \"tokenizer\", \"seed\"}", "noise")
    return out


def _check_text(limits, field_kind: str, value: Any, field: str) -> None:
    base = field_kind.rstrip("!?")
    if base == "str" and value is not None:
        limits.check(value, field)
    elif base == "strlist":
        for i, item in enumerate(value):
            limits.check(item, f"{field}[{i}]")
    elif base == "json":
        limits.check_json(value, field)


def _check_target_ref(kind: str, out: dict) -> None:
    """A file target's key (repo, path, span) or a pairs item's (item), never both."""
    if out.get("item") is not None:
        extra = [f for f in ("repo", "path", "span") if f in out]
        if extra:
            raise FormatError(f"a pairs item ('item') has no {extra[0]}", extra[0])
        if kind == "target":
            for name in ("natural_language", "original_comment"):
                if name not in out:
                    raise FormatError("missing (required in a pairs target)", name)
        return
    for name in ("repo", "path"):
        if name not in out:
            raise FormatError(f"missing (required in a {kind} record: the file's repo and path, "
                              f"or 'item' for a pairs item)", name)
    if kind == "target":
        if "span" not in out and not out.get("original_comment"):
            raise FormatError("a target needs a span or an original_comment to locate", "span")
        for name in ("natural_language", "context"):
            if out.get(name) is not None:
                raise FormatError("only a pairs target ('item') has its own " + name, name)
    elif "span" not in out:
        raise FormatError(f"missing (required in a {kind} record)", "span")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
