"""The database CLI: `python -m db import|export|demo|info|upgrade [--db URL]`.

  import  PATH...  --format jsonl|parquet|release   one transaction; a bad record changes nothing
  export  --out DIR --format jsonl|parquet          everything, incl. annotations and scores
  demo                                              load the shipped demo dataset
  info                                              row counts per table
"""
from __future__ import annotations

import argparse
import sys

from sqlalchemy.engine import make_url

from db.engine import add_database_argument, resolve_url, session_scope, table_counts


def _shown(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)  # never print a password


def _cmd_import(args) -> int:
    from db.importer import import_jsonl, import_parquet_export, import_release

    url = resolve_url(args.db)
    _warn_if_annotators_active(url)
    with session_scope(url) as session:
        if args.format == "jsonl":
            stats = import_jsonl(session, args.paths)
        elif args.format == "parquet":
            stats = None
            from db.importer import RecordWriter
            writer = RecordWriter(session)
            for folder in args.paths:
                stats = import_parquet_export(session, folder, writer=writer)
        else:
            stats = import_release(session, args.paths, lang=args.lang, dataset=args.dataset,
                                   taxonomy_variant=args.taxonomy_variant)
    print(f"imported {len(args.paths)} source(s) into {_shown(url)} (one transaction):")
    print(stats.summary())
    return 0


def _warn_if_annotators_active(url: str) -> None:
    from db.annotations import active_annotators

    with session_scope(url) as session:
        active = active_annotators(session)
    if not active:
        return
    wait = (" On SQLite their saves wait while this import runs (the app keeps their labels "
            "and retries); import when nobody labels, or use PostgreSQL (README: Deployment)."
            if make_url(url).get_backend_name() == "sqlite" else "")
    print(f"warning: {active} annotator(s) saved labels or signed in during the last 15 "
          f"minutes.{wait}", file=sys.stderr)


def _cmd_export(args) -> int:
    from db.exporter import export_jsonl, export_parquet

    url = resolve_url(args.db)
    with session_scope(url) as session:
        writer = export_jsonl if args.format == "jsonl" else export_parquet
        path, counts = writer(session, args.out)
    print(f"exported {sum(counts.values())} records from {_shown(url)} to {path}:")
    print("  " + ", ".join(f"{k} {n}" for k, n in counts.items()))
    return 0


def _cmd_demo(args) -> int:
    from db.demo import ensure_demo_database, load_demo

    url = resolve_url(args.db)
    counts = load_demo(url) if args.force else ensure_demo_database(url)
    if counts is None:
        print(f"{_shown(url)} already holds generations; demo not loaded (use --force to merge "
              f"it in anyway)")
        return 0
    print(f"demo dataset loaded into {_shown(url)} (DEMO DATA; demo users anna, bas, lead; "
          f"password 'demo'):")
    print("  " + ", ".join(f"{k} {n}" for k, n in counts.items() if n))
    return 0


def _cmd_info(args) -> int:
    url = resolve_url(args.db)
    counts = table_counts(url)
    print(f"{_shown(url)}")
    width = max(map(len, counts))
    for name, n in counts.items():
        print(f"  {name:<{width}}  {n:>7}")
    return 0


def _cmd_upgrade(args) -> int:
    from sqlalchemy import create_engine

    from db.engine import get_engine
    from db.migrate import current_revision, head_revision

    url = resolve_url(args.db)
    probe = create_engine(url)  # read the version before get_engine migrates
    before = current_revision(probe)
    probe.dispose()
    after = current_revision(get_engine(url))  # opening the database runs the migrations
    print(f"{_shown(url)}: schema {before or 'empty'} -> {after} (head {head_revision()})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m db", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("import", help="import project JSONL, a parquet export, or release "
                                           "tables (one transaction)")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--format", choices=("jsonl", "parquet", "release"), default="jsonl",
                   help="jsonl: project records (db/FORMAT.md); parquet: a folder written by "
                        "`export --format parquet`; release: the study's per-language tables "
                        "(.parquet or .jsonl)")
    p.add_argument("--lang", help="release: natural language of every table (default: from the "
                                  "file name, e.g. zh.parquet, dutch.jsonl)")
    p.add_argument("--dataset", default="release", help="release: dataset name (default release)")
    p.add_argument("--taxonomy-variant", default=None,
                   help="release: the taxonomy release the error codes were labelled with, "
                        "mapped onto the current one (e.g. variant-gr6)")
    add_database_argument(p)
    p.set_defaults(run=_cmd_import)

    p = commands.add_parser("export", help="export everything to JSONL or parquet")
    p.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    p.add_argument("--out", required=True, metavar="DIR")
    add_database_argument(p)
    p.set_defaults(run=_cmd_export)

    p = commands.add_parser("demo", help="load the shipped demo dataset (if the DB is empty)")
    p.add_argument("--force", action="store_true",
                   help="load even if the database already holds data (idempotent merge)")
    add_database_argument(p)
    p.set_defaults(run=_cmd_demo)

    p = commands.add_parser("info", help="row counts per table")
    add_database_argument(p)
    p.set_defaults(run=_cmd_info)

    p = commands.add_parser("upgrade", help="apply schema migrations (db/migrations)")
    add_database_argument(p)
    p.set_defaults(run=_cmd_upgrade)
    return parser


def main(argv: list[str] | None = None) -> int:
    from db.annotations import AnnotationError
    from db.importer import ImportFailed

    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except ImportFailed as error:
        print(f"import failed, nothing was written: {error}", file=sys.stderr)
        return 2
    except (AnnotationError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    from nlce.cli import run_main

    sys.exit(run_main(main, prog="python -m db"))
