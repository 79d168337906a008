"""The data formats of the project, as pure functions over plain data (no database here).

- The project's JSONL format (`db/FORMAT.md`): one record a line, its kind in a "type" field,
  rows referring to each other by natural keys. `check_record` validates one record against
  `RECORD_FIELDS` and returns it normalised.
- The study's public release (one table per language, columns per generating model):
  `release_row_records` turns one row into project records.

Every error is a `FormatError` whose `field` names the offending field; the importer adds the
file and line/row.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import PurePosixPath
from typing import Any, Iterable

from taxonomy import AccuracyLabel, TaxonomyError

FORMAT_VERSION = 1


class FormatError(ValueError):
    """A record or row that does not fit its format; `field` names the field when known."""

    def __init__(self, message: str, field: str | None = None):
        self.field, self.message = field, message
        super().__init__(f"field {field!r}: {message}" if field else message)


# ------------------------------------------------------------------------------ project records

# Field kinds: str, int, float, bool, json (any JSON value), strlist (list of strings),
# span ([start, end], end exclusive). Suffix "!" = required, "?" = may be null.
_TARGET_REF = {"dataset": "str!", "repo": "str!", "path": "str!", "span": "span"}
_GENERATION_REF = {**_TARGET_REF, "span": "span!", "model": "str!"}

RECORD_FIELDS: dict[str, dict[str, str]] = {
    "dataset": {"name": "str!", "description": "str"},
    "file": {"dataset": "str!", "repo": "str!", "path": "str!", "natural_language": "str!",
             "programming_language": "str", "licence": "str", "external_id": "str?",
             "content": "str!"},
    "target": {**_TARGET_REF, "original_comment": "str", "comment_kind": "str"},
    "generation": {**_GENERATION_REF, "fim_input": "str", "raw_output": "str",
                   "predicted_comment": "str", "backend": "str", "params": "json"},
    "annotator": {"username": "str!", "role": "str", "languages": "strlist",
                  "display_name": "str", "interface_language": "str", "password_hash": "str?",
                  "active": "bool"},
    "assignment": {**_GENERATION_REF, "annotator": "str!", "position": "int"},
    "annotation": {**_GENERATION_REF, "annotator": "str!", "accuracy": "str?",
                   "codes": "strlist", "note": "str", "seconds_spent": "float", "status": "str",
                   "revision": "int", "history": "json"},
    "gold_label": {**_GENERATION_REF, "adjudicator": "str!", "accuracy": "str!",
                   "codes": "strlist", "note": "str"},
    "metric_run": {"signature": "str!", "metric": "str!", "model": "str", "layer": "int?",
                   "tokenizer": "str", "context": "str", "noise": "str", "seed": "int?",
                   "params": "json", "library_versions": "json"},
    "noise_sample": {**_TARGET_REF, "span": "span!", "kind": "str!", "tokenizer": "str!",
                     "seed": "int!", "text": "str"},
    # the subject is a generation (model given) or a noise sample (noise = {kind, tokenizer, seed})
    "metric_score": {"run": "str!", **_TARGET_REF, "span": "span!", "model": "str?",
                     "noise": "json", "precision": "float?", "recall": "float?", "f": "float?",
                     "error": "str?", "details": "json"},
    "judge_run": {"signature": "str!", "model": "str!", "backend": "str", "strategy": "str!",
                  "prompt_language": "str!", "prompt_version": "str!", "params": "json",
                  "prompt_tokens": "int", "completion_tokens": "int", "cost_usd": "float?"},
    "judge_response": {"run": "str!", **_TARGET_REF, "span": "span!", "cluster": "str",
                       "order": "json", "status": "str!", "raw_response": "str",
                       "repairs": "json", "error": "str?", "prompt_tokens": "int",
                       "completion_tokens": "int", "latency_s": "float", "cached": "bool"},
    "judge_verdict": {"run": "str!", **_GENERATION_REF, "status": "str!", "accuracy": "str?",
                      "codes": "json", "position": "int?"},
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
    if base == "span":
        if (not isinstance(value, (list, tuple)) or len(value) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
                or not 0 <= value[0] <= value[1]):
            raise FormatError(f"expected [start, end] with 0 <= start <= end, got {value!r:.60}",
                              field)
        return [int(value[0]), int(value[1])]
    return value  # json: anything JSON can hold


def check_record(record: Any) -> dict:
    """The record validated and normalised (unknown fields rejected, kinds checked)."""
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
    if kind == "target" and "span" not in out and not out.get("original_comment"):
        raise FormatError("a target needs a span or an original_comment to locate", "span")
    if kind == "metric_score":
        has_model, has_noise = out.get("model") is not None, out.get("noise") is not None
        if has_model == has_noise:
            raise FormatError("a metric score needs exactly one subject: 'model' (a generation) "
                              "or 'noise' ({kind, tokenizer, seed})", "model")
        if has_noise and not (isinstance(out["noise"], dict)
                              and {"kind", "tokenizer", "seed"} <= set(out["noise"])):
            raise FormatError("expected {\"kind\", \"tokenizer\", \"seed\"}", "noise")
    return out


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ------------------------------------------------------------------------------ spans

def locate_comment(content: str, comment: str, hints: Iterable[str] = ()) -> tuple[int, int]:
    """The [start, end) span of `comment` in `content`.

    Exactly one occurrence: its span. None: FormatError. Several: the FIM inputs in `hints`
    decide; an occurrence is kept when the text just before it and just after it both appear in
    a hint (the FIM prefix and suffix). Still several or none: FormatError (ambiguous).
    """
    if not comment:
        raise FormatError("is empty; nothing to locate", "original_comment")
    starts, at = [], content.find(comment)
    while at != -1:
        starts.append(at)
        at = content.find(comment, at + 1)
    if not starts:
        raise FormatError("not found in the file's content (it must occur verbatim)",
                          "original_comment")
    if len(starts) == 1:
        return starts[0], starts[0] + len(comment)
    hints = [h for h in hints if h]
    window = 200

    def fits(start: int) -> bool:
        before = content[max(0, start - window):start]
        after = content[start + len(comment):start + len(comment) + window]
        return any(before in hint and after in hint for hint in hints)

    kept = [s for s in starts if fits(s)] if hints else []
    if len(kept) == 1:
        return kept[0], kept[0] + len(comment)
    raise FormatError(f"ambiguous: occurs {len(starts)} times in the content (at characters "
                      f"{', '.join(map(str, starts[:5]))}) and the FIM inputs do not single out "
                      f"one", "original_comment")


# ------------------------------------------------------------------------------ public release

RELEASE_BASE_COLUMNS = ("file_id", "content", "repo", "path", "original_comment")
RELEASE_MODEL_PREFIXES = ("masked_data_", "predicted_comment_", "predict_", "expert_accuracy_",
                          "error_codes_")  # "predicted_comment_" before "predict_": longest first
STUDY_MODELS = ("google/codegemma-7b", "meta-llama/CodeLlama-7b-hf", "Qwen/CodeQwen1.5-7B",
                "ibm-granite/granite-8b-code-base", "bigcode/starcoder2-7b")
LANGUAGE_NAMES = {"en": "en", "english": "en", "eng": "en",
                  "zh": "zh", "chinese": "zh", "zho": "zh", "chi": "zh", "cn": "zh",
                  "nl": "nl", "dutch": "nl", "nld": "nl", "dut": "nl",
                  "el": "el", "greek": "el", "ell": "el", "gre": "el", "gr": "el",
                  "pl": "pl", "polish": "pl", "pol": "pl"}
PROGRAMMING_LANGUAGES = {".py": "python", ".java": "java", ".js": "javascript", ".mjs": "javascript",
                         ".jsx": "javascript", ".ts": "typescript", ".tsx": "typescript",
                         ".go": "go", ".c": "c", ".h": "c", ".cpp": "cpp", ".cc": "cpp",
                         ".hpp": "cpp", ".cs": "csharp", ".rb": "ruby", ".php": "php",
                         ".rs": "rust", ".kt": "kotlin", ".swift": "swift", ".scala": "scala"}


def language_from_filename(name: str) -> str:
    """'chinese.parquet', 'zh-test.jsonl', 'data_Polish.parquet' -> the ISO code, else error."""
    stem = PurePosixPath(name.replace("\\", "/")).name.split(".")[0]
    found = {LANGUAGE_NAMES[t] for t in re.split(r"[^a-z]+", stem.lower()) if t in LANGUAGE_NAMES}
    if len(found) != 1:
        what = "no" if not found else "more than one (" + ", ".join(sorted(found)) + ")"
        raise FormatError(f"{what} natural language in the file name {name!r}; name it like "
                          f"'zh.parquet' or 'dutch.jsonl', or pass --lang")
    return found.pop()


def programming_language_of(path: str) -> str:
    return PROGRAMMING_LANGUAGES.get(PurePosixPath(path or "").suffix.lower(), "")


def release_models(columns: Iterable[str]) -> list[str]:
    """Model names from the per-model columns, in first-seen order."""
    models: list[str] = []
    for column in columns:
        for prefix in RELEASE_MODEL_PREFIXES:
            if column.startswith(prefix) and len(column) > len(prefix):
                model = column[len(prefix):]
                if model not in models:
                    models.append(model)
                break
    return models


def is_missing(value: Any) -> bool:
    """None, NaN and empty strings count as 'no value' in release tables."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip() == ""


def parse_error_codes(value: Any, field: str) -> list[str]:
    """'MS-LT, SE-HA1', ['MS-LT', 'SE-HA1'], 'None', None, [] -> list of raw code strings."""
    if is_missing(value):
        return []
    if hasattr(value, "tolist") and not isinstance(value, str):  # numpy array from parquet
        value = value.tolist()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):  # a list written as JSON / Python text
            try:
                value = json.loads(text.replace("'", '"'))
            except json.JSONDecodeError as error:
                raise FormatError(f"cannot read the list {text!r:.80}: {error}", field) from None
        else:
            value = [part for part in re.split(r"[,;|]", text)]
    if not isinstance(value, (list, tuple)):
        raise FormatError(f"expected a comma-separated string, a list or 'None', got {value!r:.60}",
                          field)
    codes = []
    for item in value:
        if not isinstance(item, str):
            raise FormatError(f"expected code strings, got {item!r:.40}", field)
        item = item.strip().strip("'\"")
        if item and item.lower() not in ("none", "null", "nan", "-"):
            codes.append(item)
    return codes


def _release_str(row: dict, column: str, *, required: bool) -> str | None:
    value = row.get(column)
    if is_missing(value) and not (isinstance(value, str) and column == "content" and value):
        if required:
            raise FormatError("missing or empty", column)
        return None
    if not isinstance(value, str):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(int(value)) if float(value).is_integer() else str(value)
        raise FormatError(f"expected text, got {type(value).__name__}", column)
    return value


def release_row_records(row: dict, *, language: str, dataset: str, models: Iterable[str],
                        expert: str = "expert", map_codes=None, place_file=None) -> list[dict]:
    """Project records (file, target, generations, expert annotations) for one release row.

    `map_codes(raw_codes) -> canonical codes` maps/validates error codes (raising ValueError);
    its failures are reported on the error_codes column. `place_file(file_id, repo, path,
    content) -> path` may give a different file the same repo and path another path.
    """
    file_id = _release_str(row, "file_id", required=True)
    content = _release_str(row, "content", required=True)
    repo = _release_str(row, "repo", required=False) or ""
    path = _release_str(row, "path", required=False) or file_id
    if place_file is not None:
        path = place_file(file_id, repo, path, content)
    comment = _release_str(row, "original_comment", required=True)
    models = list(models)
    hints = [row.get(f"masked_data_{m}") for m in models]
    start, end = locate_comment(content, comment, [h for h in hints if isinstance(h, str)])
    ref = {"dataset": dataset, "repo": repo, "path": path, "span": [start, end]}
    records: list[dict] = [
        {"type": "file", "dataset": dataset, "repo": repo, "path": path,
         "natural_language": language, "programming_language": programming_language_of(path),
         "external_id": file_id, "content": content},
        {"type": "target", **ref, "original_comment": comment},
    ]
    for model in models:
        raw = _release_str(row, f"predict_{model}", required=False)
        predicted = _release_str(row, f"predicted_comment_{model}", required=False)
        fim = _release_str(row, f"masked_data_{model}", required=False)
        accuracy = _release_str(row, f"expert_accuracy_{model}", required=False)
        codes_field = f"error_codes_{model}"
        raw_codes = parse_error_codes(row.get(codes_field), codes_field)
        if raw is None and predicted is None:
            if accuracy is not None or raw_codes:
                raise FormatError(f"a label for model {model!r} but no prediction "
                                  f"(predict_{model} and predicted_comment_{model} are empty)",
                                  f"expert_accuracy_{model}")
            continue  # this model has no prediction for this row
        records.append({"type": "generation", **ref, "model": model, "fim_input": fim or "",
                        "raw_output": raw if raw is not None else predicted,
                        "predicted_comment": predicted if predicted is not None else raw,
                        "backend": "release"})
        if accuracy is None:
            if raw_codes:
                raise FormatError(f"error codes without an expert accuracy for model {model!r}",
                                  codes_field)
            continue
        try:
            accuracy = AccuracyLabel.parse(accuracy).value
        except TaxonomyError as error:
            raise FormatError(str(error), f"expert_accuracy_{model}") from None
        if map_codes is not None:
            try:
                raw_codes = list(map_codes(raw_codes))
            except ValueError as error:
                raise FormatError(str(error), codes_field) from None
        records.append({"type": "annotation", **ref, "model": model, "annotator": expert,
                        "accuracy": accuracy, "codes": raw_codes, "status": "done"})
    return records
