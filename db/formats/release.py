"""The study's public release: one table per natural language (the hub's `Chinese`, `Dutch`,
`English`, `Greek`, `Polish` configs, e.g. `Chinese/train-00000-of-00001.parquet`), columns per
generating model. `release_row_records` turns one row into project records (pure).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import PurePosixPath
from typing import Any, Iterable

from db.formats.records import FormatError
from db.formats.spans import locate_comment
from taxonomy import AccuracyLabel, TaxonomyError
from taxonomy.languages import LanguageCodeError, normalise_language

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


def _languages_in(name: str) -> set[str]:
    stem = name.split(".")[0]
    return {LANGUAGE_NAMES[t] for t in re.split(r"[^a-z]+", stem.lower()) if t in LANGUAGE_NAMES}


def language_from_filename(name: str) -> str:
    """The ISO code a table's path names: 'chinese.parquet', 'zh-test.jsonl',
    'data_Polish.parquet', or else its folder, as in the hub's
    'Chinese/train-00000-of-00001.parquet'. None or several: FormatError."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    found: set[str] = set()
    for part in reversed(parts[-2:]):  # the file, then its folder
        found = _languages_in(part)
        if found:
            break
    if len(found) != 1:
        what = "no" if not found else "more than one (" + ", ".join(sorted(found)) + ")"
        raise FormatError(f"{what} natural language in the path {name!r}; name the file or its "
                          f"folder like 'zh.parquet', 'Dutch/train.parquet', or pass --lang")
    return found.pop()


def check_language(value: str, field: str = "natural_language") -> str:
    """A language code normalised to ISO 639-1, or FormatError saying what to write."""
    try:
        return normalise_language(value)
    except LanguageCodeError as error:
        raise FormatError(str(error), field) from None


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
            except (json.JSONDecodeError, RecursionError) as error:
                reason = error if isinstance(error, ValueError) else "nested too deeply"
                raise FormatError(f"cannot read the list {text!r:.80}: {reason}", field) from None
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
        if raw is None and predicted is None and accuracy is None and not raw_codes:
            continue  # no prediction and no label: the model has nothing for this row
        # a labelled row whose prediction columns are empty: the model wrote nothing, an
        # outcome the study labelled; stored as a generation with empty text (is_empty)
        records.append({"type": "generation", **ref, "model": model, "fim_input": fim or "",
                        "raw_output": raw if raw is not None else (predicted or ""),
                        "predicted_comment": predicted if predicted is not None else (raw or ""),
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
