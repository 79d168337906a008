"""Reading import sources: JSON lines, parquet tables, CSV/TSV, a parquet export folder, and
the files of a release folder. Each yields (location, row), location being 'line N' or 'row N'.
"""
from __future__ import annotations

import codecs
import csv
import json
import re
from pathlib import Path
from typing import Any, Iterator

from db.formats import RECORD_FIELDS, RECORD_TYPES, FormatError, check_language, check_record
from db.formats.text import DEFAULT_MAX_DOCUMENT
from db.importer.errors import ImportFailed, Reject

Located = tuple[str, Any]  # ("line 12", record)
TABLE_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv", ".tsv")


class Unreadable:
    """In place of a row that cannot be parsed (bad JSON): the reader goes on to the next."""

    def __init__(self, message: str):
        self.message = message
# A UTF-16 text file starts with its byte order mark (Excel's "Unicode text" export does)
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# how deep JSON may nest before the parser gives up (Python's recursion limit): named, not a crash
# a line and its end (\n, \r\n or \r; str.splitlines would also split at U+2028, \f, \x1c ...)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_TOO_DEEP = "nested too deeply to read (JSON arrays or objects inside each other)"


def _utf8_problem(line: bytes, error: UnicodeDecodeError) -> str:
    column = len(line[:error.start].decode("utf-8", "replace")) + 1
    return (f"not valid UTF-8 (byte 0x{line[error.start]:02x} at column {column}): save the "
            f"file as UTF-8")


def text_lines(path: Path) -> Iterator[tuple[int, str, str | None]]:
    """(line number, the line, None) per line of a text file; for a line that cannot be decoded
    (line number, the line with U+FFFD for what could not be read, the problem), so the caller
    names it. UTF-8 (a BOM is skipped), or UTF-16 when the file starts with a UTF-16 byte
    order mark (Excel's "Unicode text"). Lines end with \n, \r\n or \r, and nothing else
    (U+2028 or a form feed inside a cell stays in it)."""
    with open(path, "rb") as handle:
        start = handle.read(2)
        if start in _UTF16_BOMS:
            yield from _utf16_lines(start + handle.read())
            return
        handle.seek(0)
        # a line ends at \n, \r\n or a lone \r (old Mac files, some exports): bytes.splitlines
        # splits at exactly these
        pieces = (piece for raw in handle for piece in raw.splitlines(keepends=True))
        for number, raw in enumerate(pieces, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            try:
                yield number, raw.decode("utf-8"), None
            except UnicodeDecodeError as error:
                yield number, raw.decode("utf-8", "replace"), _utf8_problem(raw, error)


def _utf16_lines(data: bytes) -> Iterator[tuple[int, str, str | None]]:
    try:
        text = data.decode("utf-16")
    except UnicodeDecodeError as error:
        text = data.decode("utf-16", "replace")
        bad_line = data[:error.start - error.start % 2].decode("utf-16", "replace").count("\n")
        problem = f"not valid UTF-16 ({error.reason} at byte {error.start}): save it again"
        for number, line in enumerate(_LINE.findall(text), start=1):
            yield number, line, (problem if number == bad_line + 1 else None)
        return
    for number, line in enumerate(_LINE.findall(text), start=1):
        yield number, line, None


def parse_json(text: str):
    """`json.loads`, with a structure nested too deep for the parser as a ValueError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None


def read_jsonl(path: Path) -> Iterator[Located]:
    """(location, parsed object) per non-blank line; `Unreadable` for a line of bad JSON or one
    that is not UTF-8 text."""
    for number, line, problem in text_lines(path):
        if problem is not None:
            yield f"line {number}", Unreadable(problem)
            continue
        if not line.strip():
            continue
        try:
            parsed = parse_json(line)
        except json.JSONDecodeError as error:
            parsed = Unreadable(f"not valid JSON ({error.msg} at column {error.colno})")
        except ValueError as error:
            parsed = Unreadable(str(error))
        yield f"line {number}", parsed


def read_delimited(path: Path, max_cell: int = DEFAULT_MAX_DOCUMENT) -> Iterator[Located]:
    """Rows of a CSV (comma) or TSV (tab) file with a header line, as dicts ('line N' counts
    the header as line 1). Empty cells are empty strings. A row with more or fewer cells than
    the header, a line that is not text, a cell over `max_cell` characters: `Unreadable`."""
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    undecodable: dict[int, str] = {}

    def lines() -> Iterator[str]:
        for number, line, problem in text_lines(path):
            if problem is not None:  # read on; the row it is part of is refused below
                undecodable[number] = problem
            yield line

    # csv's cell limit is process-wide: this file's limit while it is read, the old one after
    previous_limit = csv.field_size_limit(max_cell + 1)
    reader = csv.DictReader(lines(), delimiter=delimiter)
    row_start = 1
    try:
        header = reader.fieldnames
        if 1 in undecodable:
            raise ImportFailed(str(path), "line 1", None, undecodable[1])
        if not header:
            raise ImportFailed(str(path), "line 1", None, "no header line")
        row_start = reader.line_num + 1
        for row in reader:
            bad = [n for n in range(row_start, reader.line_num + 1) if n in undecodable]
            if bad:
                row = Unreadable(undecodable[bad[0]])
            elif None in row:
                row = Unreadable(f"more cells than the {len(reader.fieldnames)} header columns")
            elif None in row.values():
                cells = sum(value is not None for value in row.values())
                row = Unreadable(f"{cells} cell(s), fewer than the {len(reader.fieldnames)} "
                                 f"header columns (a cell cut off, or a separator missing)")
            yield f"line {row_start}", row
            row_start = reader.line_num + 1
    except csv.Error as error:  # a cell over the limit, a NUL byte, a broken quote
        message = str(error)
        if "field larger than field limit" in message:
            message = (f"a cell of more than {max_cell} characters, over the import's limits "
                       f"(--max-text-chars, --max-document-chars)")
        raise ImportFailed(str(path), f"line {row_start}", None, message) from None
    finally:
        csv.field_size_limit(previous_limit)


def read_parquet(path: Path):
    """A parquet file as a pyarrow Table; one that cannot be read names the file."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path)
    except Exception as error:  # pyarrow raises several kinds for a broken file
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ImportFailed(str(path), "file", None, f"not a readable parquet file: {first}"
                           ) from None


def read_table(path: Path, max_cell: int = DEFAULT_MAX_DOCUMENT) -> Iterator[Located]:
    """Rows of a parquet file ('row N', 1-based), a CSV/TSV file, or a JSON lines file."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        for number, row in enumerate(read_parquet(path).to_pylist(), start=1):
            yield f"row {number}", row
    elif suffix in (".csv", ".tsv"):
        yield from read_delimited(path, max_cell)
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
        for number, row in enumerate(read_parquet(files[kind]).to_pylist(), start=1):
            record: Any = {"type": kind}
            for name, value in row.items():
                if name in as_json and isinstance(value, str):
                    try:
                        value = parse_json(value)
                    except ValueError as error:  # JSONDecodeError is one too
                        record = Unreadable(f"column {name!r}: not valid JSON ({error})")
                        break
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
    try:
        writer.ensure_annotator(annotator)
    except Reject as error:  # a name that differs only in case from an account's
        writer.problems.add("--annotator", "option", None, error.message)
        return None
    return lang, files
