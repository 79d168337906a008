"""The data formats of the project, as pure functions over plain data (no database here).

- `db.formats.records`: the project's JSONL records (`check_record`, `RECORD_FIELDS`);
- `db.formats.spans`: where a target comment sits in its file (`locate_comment`);
- `db.formats.release`: the study's public release tables (`release_row_records`);
- `db.formats.pairs`: a researcher's own reference/prediction/label pairs (`pairs_row_records`).

Every error is a `FormatError` whose `field` names the offending field; the importer adds the
file and line/row. The layout of each format is documented in db/FORMAT.md.
"""
from db.formats.records import (
                                FORMAT_VERSION,
                                RECORD_FIELDS,
                                RECORD_TYPES,
                                FormatError,
                                check_record,
                                sha256_text,
)
from db.formats.release import (
                                LANGUAGE_NAMES,
                                STUDY_MODELS,
                                check_language,
                                is_missing,
                                language_from_filename,
                                parse_error_codes,
                                programming_language_of,
                                release_models,
                                release_row_records,
)
from db.formats.spans import locate_comment

__all__ = [
    "FORMAT_VERSION", "RECORD_FIELDS", "RECORD_TYPES", "FormatError", "check_record",
    "sha256_text", "LANGUAGE_NAMES", "STUDY_MODELS", "check_language", "is_missing",
    "language_from_filename", "parse_error_codes", "programming_language_of", "release_models",
    "release_row_records", "locate_comment",
]
