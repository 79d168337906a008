"""Importing the project's own formats (JSONL records, a parquet export) record by record."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

from sqlmodel import Session
from tqdm import tqdm

from db.annotations import AnnotationError
from db.formats import FormatError, check_record
from db.importer.accounts import ACCOUNTS_NONE
from db.importer.errors import ImportStats, Problems, Reject
from db.importer.records import RecordWriter
from db.importer.sources import Located, Unreadable, read_jsonl, read_parquet_export


def write_all(writer: RecordWriter, source: str, items: Iterable[Located],
              convert: Callable[[Any], list] | None = None, total: int | None = None) -> None:
    """Write each item's records; a refused item is a problem at its location. When problems
    are collected, each item is written inside a savepoint so a refused one leaves no trace."""
    collect = writer.problems.collect
    for location, item in tqdm(items, desc=Path(source).name, unit="rec", total=total,
                               disable=None, leave=False):
        if isinstance(item, Unreadable):
            writer.problems.add(source, location, None, item.message)
            continue
        try:
            records = [check_record(r, writer.limits)
                       for r in (convert(item) if convert else [item])]
            if collect:
                with writer.session.begin_nested():
                    for record in records:
                        writer.write(record)
            else:
                for record in records:
                    writer.write(record)
        except (FormatError, Reject) as error:
            if collect:
                writer.forget()
            writer.problems.add(source, location, error.field, error.message)
        except AnnotationError as error:
            if collect:
                writer.forget()
            writer.problems.add(source, location, None, str(error))


def import_jsonl(session: Session, paths: Iterable[str | Path],
                 writer: RecordWriter | None = None, problems: Problems | None = None,
                 accounts: str = ACCOUNTS_NONE, privileges: bool = False) -> ImportStats:
    """Import project JSONL files (see db/FORMAT.md) into the session's transaction.
    `accounts`: what annotator records may do (`db.importer.records.ACCOUNT_POLICIES`);
    `privileges`: also create leads and change who is active (`--account-privileges`)."""
    writer = writer or RecordWriter(session, problems, accounts=accounts, privileges=privileges)
    for path in map(Path, paths):
        write_all(writer, str(path), read_jsonl(path))
    writer.finish()
    return writer.stats


def import_parquet_export(session: Session, folder: str | Path,
                          writer: RecordWriter | None = None, problems: Problems | None = None,
                          accounts: str = ACCOUNTS_NONE, privileges: bool = False
                          ) -> ImportStats:
    """Import a folder written by `export --format parquet` (`accounts`, `privileges`: as for
    `import_jsonl`)."""
    writer = writer or RecordWriter(session, problems, accounts=accounts, privileges=privileges)
    for source, located in read_parquet_export(Path(folder)):
        write_all(writer, source, [located])
    writer.finish()
    return writer.stats
