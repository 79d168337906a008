"""A researcher's own pairs: one reference, one prediction and (optionally) a label a row, in
CSV, TSV or JSON lines, with no source file behind them (db/FORMAT.md, section 4).

Columns (header names, any case): `reference`, `prediction` (required; an empty prediction is a
generation where the model wrote nothing); `label` (an accuracy label: correct, partial,
incorrect, in any spelling the taxonomy accepts; empty: no label); `codes` (error codes, comma
separated); `item_id`, `language`, `model`, `context` (optional). Rows with the same item are
predictions of several models for one reference.

`column_meanings`, `require_columns` and `cell_text` read any such table's header and cells (a
judge labels file too: `judges.labels`).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from db.formats.records import FormatError, sha256_text
from db.formats.release import check_language, is_missing, parse_error_codes
from taxonomy import AccuracyLabel, TaxonomyError

PAIRS_COLUMNS = ("reference", "prediction", "label", "codes", "item_id", "language", "model",
                 "context")
REQUIRED = ("reference", "prediction")
ALIASES = {"id": "item_id", "item": "item_id", "lang": "language", "natural_language": "language",
           "system": "model", "hypothesis": "prediction", "accuracy": "label"}


def column_meanings(names: Iterable, known: Sequence[str], aliases: Mapping[str, str], *,
                    hint: str = "", unique: bool = False) -> dict:
    """Column name in the file -> its meaning (the name stripped, in lower case, an alias
    resolved); an unknown column, or with `unique` a second column of one meaning, is a
    FormatError naming it. `hint` ends the unknown column's message."""
    meaning = {}
    for name in names:
        key = str(name).strip().lower()
        key = aliases.get(key, key)
        if key not in known:
            raise FormatError(f"unknown column; expected some of {', '.join(known)}{hint}",
                              str(name))
        if unique and key in meaning.values():
            raise FormatError(f"a second {key} column", str(name))
        meaning[name] = key
    return meaning


def require_columns(meaning: Mapping, required: Iterable[str], kind: str) -> None:
    """A FormatError naming the first of `required` that no column means."""
    for need in required:
        if need not in meaning.values():
            raise FormatError(f"missing column (required in a {kind} file)", need)


def cell_text(row: Mapping, name) -> str | None:
    """A cell's text, None where the row has none (a number, as a JSON line may give an id,
    is its text); a value of another kind is a FormatError naming the column."""
    value = row.get(name)
    if value is None or (not isinstance(value, str) and is_missing(value)):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else str(value)
    if not isinstance(value, str):
        raise FormatError(f"expected text, got {type(value).__name__}", name)
    return value


def pairs_columns(names) -> dict[str, str]:
    """Column name in the file -> its meaning; unknown or missing columns: FormatError."""
    meaning = column_meanings(names, PAIRS_COLUMNS, ALIASES)
    require_columns(meaning, REQUIRED, "pairs")
    return meaning


def item_key(reference: str, language: str, context: str | None) -> str:
    """An item id where the file gives none: the same reference (language, context) is the
    same item, whichever model's row it is on; stable, so re-importing finds it again."""
    return "sha256:" + sha256_text(f"{language}\0{context or ''}\0{reference}")[:16]


def pairs_row_records(raw: dict[str, Any], *, dataset: str, language: str | None,
                      model: str, annotator: str) -> list[dict]:
    """Project records (pairs target, generation, annotation) for one pairs row."""
    meaning = pairs_columns(raw)
    row = {meaning[k]: v for k, v in raw.items()}
    reference = cell_text(row, "reference")
    if reference is None or not reference.strip():
        raise FormatError("missing or empty", "reference")
    prediction = cell_text(row, "prediction") or ""
    lang_text = cell_text(row, "language") or language
    if not lang_text:
        raise FormatError("no language: add a 'language' column or pass --lang", "language")
    lang = check_language(lang_text, "language" if cell_text(row, "language") else "--lang")
    context = cell_text(row, "context")
    item = cell_text(row, "item_id") or item_key(reference, lang, context)
    model_name = (cell_text(row, "model") or model).strip()
    ref = {"dataset": dataset, "item": item}
    records = [
        {"type": "target", **ref, "original_comment": reference, "natural_language": lang,
         **({"context": context} if context is not None else {})},
        {"type": "generation", **ref, "model": model_name, "raw_output": prediction,
         "predicted_comment": prediction, "backend": "pairs"},
    ]
    label = cell_text(row, "label")
    codes = parse_error_codes(row.get("codes"), "codes")
    if label is None or not label.strip():
        if codes:
            raise FormatError("error codes without a label", "codes")
        return records
    try:
        accuracy = AccuracyLabel.parse(label.strip()).value
    except TaxonomyError as error:
        raise FormatError(str(error), "label") from None
    records.append({"type": "annotation", **ref, "model": model_name, "annotator": annotator,
                    "accuracy": accuracy, "codes": codes, "status": "done"})
    return records
