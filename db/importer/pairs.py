"""Importing pairs files (CSV, TSV, JSON lines of reference / prediction / label): targets
without a source file, one generation per row, the row's label as an annotation."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from sqlmodel import Session

from db.formats import FormatError, check_record
from db.formats.pairs import pairs_row_records
from db.importer.bulk import BulkWriter
from db.importer.errors import ImportStats, Problems
from db.importer.records import RecordWriter
from db.importer.sources import Unreadable, counted_rows, read_table, start_table_import

# a field of the records a pairs row becomes -> the column of the file it came from
_COLUMN_OF = {"original_comment": "reference", "raw_output": "prediction",
              "predicted_comment": "prediction", "item": "item_id", "natural_language": "language"}


def import_pairs(session: Session, paths: Iterable[str | Path], *, dataset: str = "pairs",
                 lang: str | None = None, model: str = "model", annotator: str = "expert",
                 writer: RecordWriter | None = None, problems: Problems | None = None
                 ) -> ImportStats:
    """Import pairs files into `dataset`; labels become annotations of `annotator` (created
    with role expert if new). `lang`/`model` apply to rows without a language/model column."""
    writer = writer or RecordWriter(session, problems)
    problems = writer.problems
    started = start_table_import(writer, paths, dataset=dataset, lang=lang, annotator=annotator)
    if started is None:
        return writer.stats
    lang, files = started
    bulk = BulkWriter(writer)
    for path in files:
        for location, row in counted_rows(read_table(path, writer.limits.largest), str(path), problems):
            if isinstance(row, Unreadable):
                problems.add(str(path), location, None, row.message)
                continue
            try:
                if not isinstance(row, dict):
                    raise FormatError(f"a row must be an object, got {type(row).__name__}")
                records = pairs_row_records(row, dataset=dataset, language=lang, model=model,
                                            annotator=annotator)
            except FormatError as error:
                problems.add(str(path), location, error.field, error.message)
                continue
            try:
                records = [check_record(r, writer.limits) for r in records]
            except FormatError as error:  # name the file's column, not the record's field
                problems.add(str(path), location, _COLUMN_OF.get(error.field, error.field),
                             error.message)
                continue
            bulk.add(str(path), location, records)
    bulk.flush()
    return writer.stats
