"""Importing the study's public release: every per-language table (or a folder of them, as
downloaded from the hub: `Chinese/train-00000-of-00001.parquet`, ...) in one transaction.

Each row becomes a file, a target, one generation per model (an empty one where the model wrote
nothing and the row labels it) and the expert's labels. By default the rows go through the
bulk path (`db.importer.bulk`); `bulk=False` writes them record by record (the reference the
benchmark compares against).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from sqlalchemy import select
from sqlmodel import Session
from tqdm import tqdm

from db import models as m
from db.formats import (
    FormatError,
    check_record,
    language_from_filename,
    release_models,
    release_row_records,
    sha256_text,
)
from db.importer.bulk import BulkWriter
from db.importer.errors import ImportStats, Problems
from db.importer.project import write_all
from db.importer.records import RecordWriter
from db.importer.sources import Unreadable, counted_rows, read_table, start_table_import

REQUIRED_COLUMNS = ("file_id", "content", "original_comment")


class _FilePlaces:
    """Where each release file goes: its own repo and path, unless a different file already
    holds them (releases may repeat a path across files): then `path@file_id`. Deterministic,
    so re-importing finds the same places."""

    def __init__(self, session: Session, dataset_id: int):
        self.owners: dict[tuple[str, str], str] = {  # (repo, path) -> sha256 of the content
            (row.repo, row.path): row.content_sha256 for row in session.execute(
                select(m.SourceFile.repo, m.SourceFile.path, m.SourceFile.content_sha256)
                .where(m.SourceFile.dataset_id == dataset_id))}

    def __call__(self, file_id: str, repo: str, path: str, content: str) -> str:
        digest = sha256_text(content)
        for candidate in (path, f"{path}@{file_id}"):
            owner = self.owners.setdefault((repo, candidate), digest)
            if owner == digest:
                return candidate
        raise FormatError(f"file {file_id!r}: {repo}/{path} and {path}@{file_id} already hold "
                          f"other content", "path")


def _code_mapper(writer: RecordWriter, taxonomy_variant: str | None) -> Callable:
    taxonomy = writer.taxonomy
    if taxonomy_variant:
        return lambda codes: taxonomy.map_variant(codes, taxonomy_variant)
    return taxonomy.validate_codes


def import_release(session: Session, paths: Iterable[str | Path], *, lang: str | None = None,
                   dataset: str = "release", taxonomy_variant: str | None = None,
                   expert: str = "expert", writer: RecordWriter | None = None,
                   problems: Problems | None = None, bulk: bool = True,
                   limit: int | None = None) -> ImportStats:
    """Import tables in the study's public-release layout (one per language; a folder stands
    for every table under it). Expert labels become annotations of the annotator `expert`
    (role expert); codes labelled with another release of the taxonomy are mapped with
    `taxonomy_variant`. `limit` keeps only the first rows of each table (for timing)."""
    writer = writer or RecordWriter(session, problems)
    problems = writer.problems
    started = start_table_import(writer, paths, dataset=dataset, lang=lang, annotator=expert)
    if started is None:
        return writer.stats
    lang, files = started
    place_file = _FilePlaces(session, writer.dataset_id(dataset))
    map_codes = _code_mapper(writer, taxonomy_variant)
    bulk_writer = BulkWriter(writer) if bulk else None
    for path in files:
        try:
            language = lang or language_from_filename(str(path))
        except FormatError as error:
            problems.add(str(path), "file name", None, error.message)
            continue

        def convert(row, language=language) -> list[dict]:
            if not isinstance(row, dict):
                raise FormatError(f"a row must be an object, got {type(row).__name__}")
            missing = [c for c in REQUIRED_COLUMNS if c not in row]
            if missing:
                raise FormatError("missing column", missing[0])
            return release_row_records(row, language=language, dataset=dataset,
                                       models=release_models(row), expert=expert,
                                       map_codes=map_codes, place_file=place_file)
        rows = counted_rows(read_table(path, writer.limits.largest), str(path), problems)
        if limit is not None:
            rows = (item for i, item in enumerate(rows) if i < limit)
        if bulk_writer is None:
            write_all(writer, str(path), rows, convert)
            continue
        for location, row in tqdm(rows, desc=path.name, unit="row", disable=None, leave=False):
            if isinstance(row, Unreadable):
                problems.add(str(path), location, None, row.message)
                continue
            try:
                records = [check_record(r, writer.limits) for r in convert(row)]
            except FormatError as error:
                problems.add(str(path), location, error.field, error.message)
                continue
            bulk_writer.add(str(path), location, records)
    if bulk_writer is not None:
        bulk_writer.flush()
    return writer.stats
