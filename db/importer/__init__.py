"""Import into the database, by role:

- `db.importer.errors`: `ImportFailed`, `ImportStats`, `Problems` (stop at the first problem,
  or, for `--check`, collect every one);
- `db.importer.sources`: reading JSON lines, parquet, CSV/TSV, folders of tables;
- `db.importer.records`: `RecordWriter`, project records one by one (natural keys, upserts);
- `db.importer.project`: the project's JSONL and parquet-export formats;
- `db.importer.bulk`: `BulkWriter`, many rows in a few multi-row statements;
- `db.importer.release`: the study's public release tables;
- `db.importer.pairs`: a researcher's own reference/prediction/label pairs.

One import is one transaction: every file of it goes through one session, and a problem raises
`ImportFailed` (naming the file, line/row and field), after which the caller's `session_scope`
rolls everything back. Importing the same data twice changes nothing.
"""
from db.importer.errors import ImportFailed, ImportStats, Problems
from db.importer.pairs import import_pairs
from db.importer.project import import_jsonl, import_parquet_export
from db.importer.records import RecordWriter
from db.importer.release import import_release
from db.importer.sources import read_jsonl, read_table

__all__ = ["ImportFailed", "ImportStats", "Problems", "RecordWriter", "import_jsonl",
           "import_parquet_export", "import_release", "import_pairs", "read_jsonl",
           "read_table"]
