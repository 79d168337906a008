"""The database CLI: `python -m db import|export|demo|info|upgrade [--db URL]`.

  import  PATH...  --format jsonl|parquet|release|pairs [--check]
                                                    one transaction; a bad record changes nothing
  export  --out DIR --format jsonl|parquet          everything, incl. annotations and scores
  demo                                              load the shipped demo dataset
  info                                              row counts per table

info and export only read: they open the database read-only (a read-only disk or server role
is enough) and never create or upgrade one.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url

from db.engine import (
    add_database_argument,
    password_in_flag,
    project_database,
    read_only_url,
    resolve_url,
    session_scope,
    shown_url,
    table_counts,
    without_password,
)
from nlce.cli import EXIT_OK, UserError, is_database_unavailable, run_main

_shown = shown_url  # never print a password


def _cmd_import(args) -> int:
    from db.formats.text import TextLimits
    from db.importer import (
        Problems,
        RecordWriter,
        import_jsonl,
        import_pairs,
        import_parquet_export,
        import_release,
    )
    from db.importer.accounts import ACCOUNTS_CREATE, ACCOUNTS_NONE, ACCOUNTS_TRUSTED

    url = project_database(args.db, create=True)
    problems = Problems(collect=args.check)
    accounts = (ACCOUNTS_TRUSTED if args.trust_accounts else
                ACCOUNTS_CREATE if args.accounts else ACCOUNTS_NONE)
    limits = TextLimits.from_env(args.max_text_chars, args.max_document_chars)
    if args.account_privileges and accounts == ACCOUNTS_NONE:
        raise UserError("--account-privileges goes with --accounts or --trust-accounts")
    if accounts == ACCOUNTS_TRUSTED:
        print("warning: --trust-accounts: accounts and password hashes of new accounts are "
              "taken from the file; use it only with a file you exported yourself",
              file=sys.stderr)
    if args.account_privileges:
        print("warning: --account-privileges: the file may create lead accounts and re-activate "
              "or deactivate accounts", file=sys.stderr)
    if not args.check:
        _warn_if_annotators_active(url)
    with _checked_database(url, args.check) as url, session_scope(url) as session:
        writer = RecordWriter(session, problems, accounts=accounts,
                              privileges=args.account_privileges, limits=limits)
        if args.format == "jsonl":
            import_jsonl(session, args.paths, writer=writer)
        elif args.format == "parquet":
            for folder in args.paths:
                import_parquet_export(session, folder, writer=writer)
        elif args.format == "pairs":
            import_pairs(session, args.paths, dataset=args.dataset or "pairs", lang=args.lang,
                         model=args.model, annotator=args.annotator, writer=writer)
        else:
            import_release(session, args.paths, lang=args.lang,
                           dataset=args.dataset or "release",
                           taxonomy_variant=args.taxonomy_variant, expert=args.annotator,
                           writer=writer)
        if args.check:
            session.rollback()  # a check writes nothing
    if args.check:
        problems.refuse(f" in {len(args.paths)} source(s)")
        print(f"check: no problems in {len(args.paths)} source(s); an import would write:")
        print(writer.stats.summary())
        return EXIT_OK
    print(f"imported {len(args.paths)} source(s) into {_shown(url)} (one transaction):")
    print(writer.stats.summary())
    return EXIT_OK


@contextmanager
def _checked_database(url: str, check: bool):
    """The database an import goes to: ``url``, or for a check of one that does not exist yet or
    is empty, a throwaway SQLite database with the schema (a check creates no file and no schema)."""
    from db.engine import get_engine, holds_tables

    if not check or holds_tables(url):
        yield url
        return
    with tempfile.TemporaryDirectory(prefix="nlce-check-") as scratch:
        scratch_url = f"sqlite:///{Path(scratch) / 'check.db'}"
        try:
            yield scratch_url
        finally:
            get_engine(scratch_url).dispose()


def _warn_if_annotators_active(url: str) -> None:
    from db.annotations import active_annotators

    with session_scope(url) as session:
        active = active_annotators(session)
    if not active:
        return
    wait = (" On SQLite their saves wait while this import runs (the app keeps their labels "
            "and retries); import when nobody labels, or use PostgreSQL (docs/deployment.md)."
            if make_url(url).get_backend_name() == "sqlite" else "")
    print(f"warning: {active} annotator(s) saved labels or signed in during the last 15 "
          f"minutes.{wait}", file=sys.stderr)


def _cmd_export(args) -> int:
    from db.exporter import export_jsonl, export_parquet

    url = resolve_url(args.db)
    with session_scope(read_only_url(url)) as session:  # reads only: works on a read-only disk
        writer = export_jsonl if args.format == "jsonl" else export_parquet
        path, counts = writer(session, args.out, args.include_password_hashes)
    print(f"exported {sum(counts.values())} records from {_shown(url)} to {path}:")
    print("  " + ", ".join(f"{k} {n}" for k, n in counts.items()))
    if args.include_password_hashes:
        print(f"warning: {path} holds the accounts' password hashes: keep it as secret as the "
              f"database (readable by you only), import it with `db import --trust-accounts`, "
              f"then delete it", file=sys.stderr)
    return EXIT_OK


def _cmd_demo(args) -> int:
    from db.demo import ensure_demo_database, load_demo

    url = project_database(args.db, create=True)
    counts = load_demo(url) if args.force else ensure_demo_database(url)
    if counts is None:
        print(f"{_shown(url)} already holds generations; demo not loaded (use --force to merge "
              f"it in anyway)")
        return EXIT_OK
    print(f"demo dataset loaded into {_shown(url)} (DEMO DATA; demo users anna, bas, lead; "
          f"password 'demo'):")
    print("  " + ", ".join(f"{k} {n}" for k, n in counts.items() if n))
    return EXIT_OK


def _cmd_info(args) -> int:
    url = resolve_url(args.db)
    counts = table_counts(read_only_url(url))
    print(f"{_shown(url)}")
    width = max(map(len, counts))
    for name, n in counts.items():
        print(f"  {name:<{width}}  {n:>7}")
    return EXIT_OK


def _cmd_upgrade(args) -> int:
    from sqlalchemy import create_engine

    from db.engine import get_engine
    from db.migrate import current_revision, head_revision

    url = project_database(args.db, create=True)
    probe = create_engine(url)  # read the version before get_engine migrates
    before = current_revision(probe)
    probe.dispose()
    after = current_revision(get_engine(url))  # opening the database runs the migrations
    print(f"{_shown(url)}: schema {before or 'empty'} -> {after} (head {head_revision()})")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m db", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("import", help="import project JSONL, a parquet export, release "
                                           "tables or pairs files (one transaction)")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--format", choices=("jsonl", "parquet", "release", "pairs"), default="jsonl",
                   help="jsonl: project records (db/FORMAT.md); parquet: a folder written by "
                        "`export --format parquet`; release: the study's per-language tables "
                        "(.parquet or .jsonl files, or a folder holding them); pairs: "
                        "reference/prediction/label rows (.csv, .tsv, .jsonl)")
    p.add_argument("--check", action="store_true",
                   help="read everything and list every problem (file, row, field); write "
                        "nothing; exit 2 when there are problems")
    p.add_argument("--lang", help="release, pairs: natural language (ISO 639-1/-3) of every "
                                  "table or row without one (release default: from the file or "
                                  "folder name, e.g. zh.parquet, Dutch/train.parquet)")
    p.add_argument("--dataset", default=None,
                   help="release, pairs: dataset name (default release, pairs)")
    p.add_argument("--taxonomy-variant", default=None,
                   help="release: the taxonomy release the error codes were labelled with, "
                        "mapped onto the current one (e.g. variant-gr6)")
    p.add_argument("--model", default="model",
                   help="pairs: model name of rows without a model column (default model)")
    p.add_argument("--accounts", action="store_true",
                   help="jsonl, parquet: create the annotator and expert accounts of "
                        "'annotator' records and update their languages and names (default: "
                        "annotator records only refer to existing accounts). No import changes "
                        "a role")
    p.add_argument("--trust-accounts", action="store_true",
                   help="--accounts, and take the password hashes of new accounts (scrypt at "
                        "N=2^17, r=8, p=1 or stronger): for moving a database with a file from "
                        "`export --include-password-hashes`")
    p.add_argument("--account-privileges", action="store_true",
                   help="with --accounts or --trust-accounts: also create lead accounts and "
                        "apply the records' active flag to existing accounts (re-activate or "
                        "deactivate); without it an import that would do either is refused")
    p.add_argument("--max-text-chars", type=int, default=None, metavar="N",
                   help="longest comment, note or name accepted (default "
                        "$NLCE_IMPORT_MAX_TEXT or 10000)")
    p.add_argument("--max-document-chars", type=int, default=None, metavar="N",
                   help="longest file content, FIM input, raw output, response or pairs "
                        "context accepted (default $NLCE_IMPORT_MAX_DOCUMENT or 1000000)")
    p.add_argument("--annotator", default="expert",
                   help="release, pairs: username the labels are stored under (default expert; "
                        "created with role expert)")
    add_database_argument(p)
    p.set_defaults(run=_cmd_import)

    p = commands.add_parser("export", help="export everything to JSONL or parquet")
    p.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--include-password-hashes", action="store_true",
                   help="also export the accounts' password hashes, so people can sign in after "
                        "a move (`import --trust-accounts`); the files are then secret")
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
    from sqlalchemy.exc import SQLAlchemyError

    from db.importer import ImportFailed

    args = build_parser().parse_args(argv)
    if password_in_flag(args.db):
        print("warning: the password in --db is visible to every user of this machine (ps); "
              "put the URL in $NLCE_DATABASE_URL or the password in a pgpass file instead",
              file=sys.stderr)
    try:
        return args.run(args)
    except ImportFailed as error:
        raise UserError(f"import failed, nothing was written: {error}") from error
    except SQLAlchemyError as error:  # the server refused us, or the database is damaged
        if is_database_unavailable(error):
            raise  # the one line every CLI prints for it: nlce.cli.run_main
        first = (str(getattr(error, "orig", None) or error).strip().splitlines() or [""])[0]
        raise UserError(f"database error ({shown_url(resolve_url(args.db))}): "
                        f"{without_password(first, resolve_url(args.db))}") from error


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m db"))
