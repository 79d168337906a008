"""Reading import sources: JSON lines, parquet tables, CSV/TSV, a parquet export folder, and
the files of a release folder. Each yields (location, row), location being 'line N' or 'row N'.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterator

from db.formats import RECORD_FIELDS, RECORD_TYPES, FormatError, check_language, check_record
from db.importer.errors import ImportFailed

Located = tuple[str, Any]  # ("line 12", record)
TABLE_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv", ".tsv")


class Unreadable:
    """In place of a row that cannot be parsed (bad JSON): the reader goes on to the next."""

    def __init__(self, message: str):
        self.message = message
def read_jsonl(path: Path) -> Iterator[Located]:
    """(location, parsed object) per non-blank line; `Unreadable` for a line of bad JSON."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError as error:
                parsed = Unreadable(f"not valid JSON ({error.msg} at column {error.colno})")
            yield f"line {number}", parsed


def read_delimited(path: Path) -> Iterator[Located]:
    """Rows of a CSV (comma) or TSV (tab) file with a header line, as dicts ('line N' counts
    the header as line 1). Empty cells are empty strings."""
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        if not reader.fieldnames:
            raise ImportFailed(str(path), "line 1", None, "no header line")
        for row in reader:
            if None in row:
                row = Unreadable(f"more cells than the {len(reader.fieldnames)} header columns")
            yield f"line {reader.line_num}", row


def read_table(path: Path) -> Iterator[Located]:
    """Rows of a parquet file ('row N', 1-based), a CSV/TSV file, or a JSON lines file."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as error:  # pyarrow raises several kinds for a broken file
            raise ImportFailed(str(path), "file", None, f"cannot read parquet: {error}") from None
        for number, row in enumerate(table.to_pylist(), start=1):
            yield f"row {number}", row
    elif suffix in (".csv", ".tsv"):
        yield from read_delimited(path)
    else:
        yield from read_jsonl(path)


def counted_rows(rows: Iterator[Located], source: str, problems) -> Iterator[Located]:
    """The rows, and a problem (`problems.add`) when there are none: a table that imports
    nothing is a mistake (a wrong file, an empty export), not a success."""
    empty = True
    for item in rows:
        empty = False
        yield item
    if empty:
        problems.add(source, "file", None, "no rows in it")


def table_files(paths) -> list[Path]:
    """The files to read: each path itself, or for a folder every table file under it (sorted),
    so `Chinese/train-00000-of-00001.parquet` ... of a downloaded release come in one call."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            tables = sorted(p for p in path.rglob("*") if p.is_file()
                            and p.suffix.lower() in TABLE_SUFFIXES and not p.name.startswith("."))
            if not tables:
                raise ImportFailed(str(path), "folder", None,
                                   f"no table files ({', '.join(TABLE_SUFFIXES)}) in it")
            found.extend(tables)
        elif not path.exists():
            raise ImportFailed(str(path), "file", None, "does not exist")
        else:
            found.append(path)
    return found


def _json_fields(kind: str) -> set[str]:
    return {f for f, k in RECORD_FIELDS[kind].items() if k.rstrip("!?") == "json"}


def read_parquet_export(folder: Path) -> Iterator[tuple[str, Located]]:
    """Records of a parquet export folder (one `<type>.parquet` per record type)."""
    import pyarrow.parquet as pq

    files = {p.stem: p for p in folder.glob("*.parquet")}
    unknown = sorted(set(files) - set(RECORD_TYPES))
    if unknown:
        raise ImportFailed(str(folder), "folder", None,
                           f"unknown table(s) {', '.join(unknown)}; expected <type>.parquet for "
                           f"type in {', '.join(RECORD_TYPES)}")
    if not files:
        raise ImportFailed(str(folder), "folder", None, "no <type>.parquet files in it")
    for kind in RECORD_TYPES:
        if kind not in files:
            continue
        spec, as_json = RECORD_FIELDS[kind], _json_fields(kind)
        for number, row in enumerate(pq.read_table(files[kind]).to_pylist(), start=1):
            record = {"type": kind}
            for name, value in row.items():
                if name in as_json and isinstance(value, str):
                    value = json.loads(value)
                if value is None and name in spec and not spec[name].endswith("?"):
                    continue  # a column that this row does not use
                record[name] = value
            yield str(files[kind]), (f"row {number}", record)


def start_table_import(writer, paths, *, dataset: str, lang: str | None, annotator: str
                       ) -> tuple[str | None, list[Path]] | None:
    """What every table import (release, pairs) does first: `--lang` checked (a bad one is a
    problem, and None is returned), the dataset and the labels' annotator written; then
    (lang, the table files) to read."""
    if lang is not None:
        try:
            lang = check_language(lang, "--lang")
        except FormatError as error:
            writer.problems.add("--lang", "option", None, error.message)
            return None
    files = table_files(paths)
    writer.write(check_record({"type": "dataset", "name": dataset}))
    writer.ensure_annotator(annotator)
    return lang, files
