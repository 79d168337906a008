"""The study's summary tables from resolved labels: Table 1 (error codes per language) and
Table 2 (accuracy per language and model), CSV for their download, and the whole database as
project records for the lead's export."""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Sequence

from sqlmodel import Session

from agreement.labels import SUMMARY_POLICY
from annotate.service.accounts import Operator, require_role
from annotate.service.review import ResolvedLabel
from nlce.outputs import csv_text
from taxonomy import ACCURACY_LABELS, LANGUAGES, default_taxonomy


def error_table(resolved: Sequence[ResolvedLabel], languages: Sequence[str] = LANGUAGES
                ) -> list[dict]:
    """Table 1: how many items carry each code, per language, parents counting their
    sub-codes once per item (as in the study)."""
    taxonomy = default_taxonomy()
    counts: dict[str, Counter] = defaultdict(Counter)
    for label in resolved:
        for code in taxonomy.counted_codes(label.codes):
            counts[code][label.language] += 1
    rows = []
    for code in taxonomy.codes.values():
        c = counts.get(code.id, Counter())
        rows.append({"code": code.id, "level": code.level, "name": code.text("name", "en"),
                     "total": sum(c[l] for l in languages), **{l: c[l] for l in languages}})
    for extra in sorted(set(counts) - set(taxonomy.codes)):
        c = counts[extra]
        rows.append({"code": extra, "level": "unknown", "name": "(not in this taxonomy)",
                     "total": sum(c[l] for l in languages), **{l: c[l] for l in languages}})
    return rows


def accuracy_table(resolved: Sequence[ResolvedLabel]) -> list[dict]:
    """Table 2: accuracy counts per language (rows) and model (columns, per label)."""
    models = sorted({r.model for r in resolved})
    counts = Counter((r.language, r.model, r.accuracy) for r in resolved)
    rows = []
    for lang in sorted({r.language for r in resolved}):
        row: dict = {"language": lang}
        for model in models:
            for label in reversed(ACCURACY_LABELS):  # correct, partial, incorrect as in Table 2
                row[f"{model} {label}"] = counts[(lang, model, label)]
        rows.append(row)
    return rows


def quality_rows(resolved: Sequence[ResolvedLabel]) -> list[dict]:
    """Table 2 with its uncertainty (quality.csv's rows, `agreement.quality_tables`): per
    language x model cell, language, model and over all, the mean score (correct 1, partial
    0.5, incorrect 0) and the share correct with their 95% intervals."""
    import pandas as pd

    from agreement.quality import label_scores
    from agreement.quality_tables import quality_table, slices_for

    if not resolved:
        return []
    frame = pd.DataFrame([(r.language, r.model, r.accuracy) for r in resolved],
                         columns=["language", "model", "label"])
    frame["score"] = label_scores(frame.label.to_numpy())
    table = quality_table(frame, SUMMARY_POLICY, slices_for(frame.language.nunique()))
    shown = ["slice", "slice_value", "n", "mean_score", "mean_score_low", "mean_score_high",
             "share_correct", "share_correct_low", "share_correct_high", "method"]
    return table[shown].round(3).to_dict("records")


def rows_to_csv(rows: Sequence[dict]) -> str:
    """The download of a table: CSV whose header and cells a spreadsheet shows as text (a model
    named `=HYPERLINK(...)` heads a column of Table 2), `nlce.outputs.csv_text`."""
    return csv_text(rows)


def export_jsonl(session: Session, *, acting: int | Operator) -> str:
    """The whole database as project records (`db/FORMAT.md`), one JSON object a line, without
    password hashes: what `python -m db export` writes, for the lead to download from the app
    (and `db import` reads back). A lead action."""
    import json

    from db.exporter import export_records

    require_role(session, acting, "export")
    return "".join(json.dumps(record, ensure_ascii=False) + "\n"
                   for record in export_records(session))
