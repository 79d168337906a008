"""`python -m corpus.extract PATH... --lang nl --dataset NAME`: source files into the database.

Walks folders (hidden folders skipped; files with unknown extensions ignored and counted), reads
each file in its encoding (`--encoding auto`: UTF-8, UTF-16, GB18030/GBK, Big5, Latin-1 ... see
`corpus.encoding`; binary, undecodable and unreadable files are reported and skipped), runs the
selection of `corpus.select`, prints what every filter removed, and writes one `SourceFile` with
its `Target`s per kept file, each file in its own transaction: a file that fails is reported and
leaves nothing behind. A re-run skips files already stored (same dataset, repo and path) and
de-duplicates new files against the stored ones.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from sqlmodel import select as sql_select

from corpus.dedup import DuplicateIndex, sha256_text
from corpus.encoding import Decoded, SourceReadError, decode_source
from corpus.languages import PROGRAMMING_LANGUAGES, language_for_path
from corpus.select import (
    SelectedFile,
    SelectionConfig,
    SelectionReport,
    SourceText,
    render_report,
    select_targets,
)
from nlce.cli import EXIT_NOTHING_DONE, EXIT_OK, InputError, UserError, run_main


def read_source_text(path: Path, expected_language: str | None = None,
                     encoding: str = "auto") -> Decoded:
    """(text, encoding, bytes replaced) of a file, decoded by `corpus.encoding` (a BOM
    dropped); SourceReadError for binary, undecodable or unreadable files."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise SourceReadError(f"cannot read: {error.strerror or error}") from None
    return decode_source(raw, expected_language, encoding)


@dataclass
class Discovered:
    files: list[tuple[Path, str]] = field(default_factory=list)  # (file, path to store)
    ignored_extensions: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)


def discover(paths: Sequence[str | Path], forced_language: str | None = None) -> Discovered:
    """Files to read: folders walked (sorted, hidden parts skipped), files taken as given."""
    found = Discovered()
    for given in paths:
        root = Path(given)
        if root.is_dir():
            for file in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
                relative = file.relative_to(root)
                if any(part.startswith(".") for part in relative.parts):
                    continue
                if forced_language is None and language_for_path(file) is None:
                    found.ignored_extensions += 1
                    continue
                found.files.append((file, relative.as_posix()))
        elif root.exists() or root.is_symlink():
            found.files.append((root, root.as_posix()))
        else:
            found.problems.append((str(root), "no such file or folder"))
    return found


def load_sources(discovered: Discovered, forced_language: str | None, repo: str,
                 natural_language: str | None = None, encoding: str = "auto"
                 ) -> tuple[list[SourceText], list[tuple[str, str]]]:
    sources, problems = [], list(discovered.problems)
    for file, stored_path in discovered.files:
        language = forced_language or language_for_path(file)
        if language is None:
            known = ", ".join(sorted(PROGRAMMING_LANGUAGES))
            problems.append((str(file), f"unknown programming language for extension "
                                        f"{file.suffix or '(none)'!r} (known: {known}; or pass "
                                        f"--programming-language)"))
            continue
        try:
            decoded = read_source_text(file, natural_language, encoding)
        except SourceReadError as error:
            problems.append((str(file), str(error)))
            continue
        sources.append(SourceText(key=str(file), text=decoded.text,
                                  programming_language=language, repo=repo, path=stored_path,
                                  encoding=decoded.encoding, replaced=decoded.replaced))
    return sources, problems


@dataclass
class ExtractResult:
    report: SelectionReport
    dataset_id: int | None
    written_files: int = 0
    written_targets: int = 0
    already_stored: int = 0
    ignored_extensions: int = 0

    def as_dict(self) -> dict:
        out = self.report.as_dict()
        out.update(dataset_id=self.dataset_id, written_files=self.written_files,
                   written_targets=self.written_targets, already_stored=self.already_stored,
                   ignored_extensions=self.ignored_extensions)
        return out


def _get_or_create_dataset(db_url: str | None, name: str, create: bool = True) -> int | None:
    """The dataset's id; a missing one is created (or, with `create=False`, None: a run that
    keeps no file leaves no empty dataset behind)."""
    from sqlalchemy.exc import IntegrityError

    from db.engine import session_scope
    from db.models import Dataset

    for _attempt in range(2):  # a concurrent run may create it between our read and write
        try:
            with session_scope(db_url) as session:
                found = session.exec(sql_select(Dataset).where(Dataset.name == name)).first()
                if found is None and not create:
                    return None
                if found is None:
                    found = Dataset(name=name)
                    session.add(found)
                    session.flush()
                return int(found.id)
        except IntegrityError:
            continue
    raise RuntimeError(f"could not create dataset {name!r}")


def _stored_files(db_url: str | None, dataset_id: int):
    from db.engine import session_scope
    from db.models import SourceFile

    with session_scope(db_url) as session:
        rows = session.exec(sql_select(SourceFile.repo, SourceFile.path, SourceFile.content)
                            .where(SourceFile.dataset_id == dataset_id)).all()
        return [(r[0], r[1], r[2]) for r in rows]


def write_selected_file(db_url: str | None, dataset_id: int, item: SelectedFile, *,
                        natural_language: str, licence: str) -> int:
    """One SourceFile and its Targets in one transaction; returns the number of targets."""
    from db.engine import session_scope
    from db.models import SourceFile, Target

    source = item.source
    with session_scope(db_url) as session:
        row = SourceFile(dataset_id=dataset_id, natural_language=natural_language,
                         programming_language=source.programming_language, repo=source.repo,
                         path=source.path, licence=licence, content=source.text,
                         content_sha256=sha256_text(source.text),
                         source_encoding=source.encoding)
        session.add(row)
        session.flush()
        for comment in item.targets:
            if source.text[comment.start:comment.end] != comment.text:  # never store a bad span
                raise ValueError(f"span {comment.start}:{comment.end} does not round-trip")
            session.add(Target(source_file_id=row.id, span_start=comment.start,
                               span_end=comment.end, original_comment=comment.text,
                               comment_kind=comment.kind))
    return len(item.targets)


_LANGUAGE_CODE = re.compile(r"^[a-z]{2}$")


def run_extract(paths: Sequence[str | Path], *, natural_language: str, dataset: str,
                db_url: str | None = None, repo: str = "", licence: str = "",
                programming_language: str | None = None,
                config: SelectionConfig = SelectionConfig(), tokenizers: Sequence[str] = (),
                detector_kind: str = "lingua", detector_languages: Sequence[str] | None = None,
                encoding: str = "auto", dry_run: bool = False, console=None) -> ExtractResult:
    """Select and store; ValueError (nothing written) for a bad argument, a missing path or
    no source file at all."""
    from corpus.langid import DEFAULT_CANDIDATES, make_detector
    from corpus.tokens import make_counters

    if not _LANGUAGE_CODE.match(natural_language):
        raise InputError(f"--lang must be an ISO 639-1 code such as nl or zh, "
                         f"not {natural_language!r}")
    if programming_language is not None and programming_language not in PROGRAMMING_LANGUAGES:
        raise InputError(f"unknown programming language {programming_language!r}; known: "
                         f"{', '.join(sorted(PROGRAMMING_LANGUAGES))}")
    if encoding != "auto":
        decode_source(b"", None, encoding)  # an unknown encoding name fails here, before any work
    discovered = discover(paths, programming_language)
    if discovered.problems:
        raise InputError("; ".join(f"{path}: {why}" for path, why in discovered.problems))
    if not discovered.files:
        raise InputError(f"no source files under {', '.join(map(str, paths))} "
                         f"({discovered.ignored_extensions} files with other extensions ignored; "
                         f"known: {', '.join(sorted(PROGRAMMING_LANGUAGES))})")
    sources, problems = load_sources(discovered, programming_language, repo, natural_language,
                                     encoding)

    dataset_id = None
    duplicates = DuplicateIndex(threshold=config.near_threshold, near=config.dedup_near)
    already = 0
    if not dry_run:
        dataset_id = _get_or_create_dataset(db_url, dataset, create=False)
        stored = _stored_files(db_url, dataset_id) if dataset_id is not None else []
        stored_keys = {(r, p) for r, p, _ in stored}
        for r, p, content in stored:
            duplicates.add(f"(stored) {r}/{p}".lstrip("/"), content)
        fresh = [s for s in sources if (s.repo, s.path) not in stored_keys]
        already = len(sources) - len(fresh)
        sources = fresh

    detector = None
    if config.language_check or config.mixed_language:
        if detector_languages is None:
            candidates = DEFAULT_CANDIDATES
        elif list(detector_languages) == ["all"]:
            candidates = None  # every language lingua knows
        else:
            candidates = tuple(detector_languages)
        if candidates is not None and natural_language not in candidates:
            candidates = candidates + (natural_language,)
        detector = make_detector(detector_kind, candidates if detector_kind == "lingua" else None)
    counters = make_counters(list(tokenizers))
    selected, report = select_targets(sources, natural_language, config, detector=detector,
                                      counters=counters, duplicates=duplicates)
    report.problems[:0] = problems
    result = ExtractResult(report, dataset_id, already_stored=already,
                           ignored_extensions=discovered.ignored_extensions)
    if not dry_run and selected:  # the dataset is created only for something to put in it
        dataset_id = result.dataset_id = _get_or_create_dataset(db_url, dataset)
        for item in selected:
            try:
                result.written_targets += write_selected_file(
                    db_url, dataset_id, item, natural_language=natural_language, licence=licence)
                result.written_files += 1
            except Exception as error:  # one bad file is reported; the others are written
                report.problems.append((item.source.key, f"not written: {error}"))
    if console is not False:
        render_report(report, console)
        from rich.console import Console

        out = console or Console()
        out.print(f"written: {result.written_files} files, {result.written_targets} targets "
                  f"into dataset {dataset!r}" + (" (dry run: nothing written)" if dry_run else "")
                  + f"; already stored: {already}; other extensions ignored: "
                    f"{discovered.ignored_extensions}", soft_wrap=True)
    return result


def build_parser() -> argparse.ArgumentParser:
    from db.engine import add_database_argument

    p = argparse.ArgumentParser(prog="python -m corpus.extract", description=__doc__.split("\n")[0])
    p.add_argument("paths", nargs="+", metavar="PATH", help="source files or folders")
    p.add_argument("--lang", required=True, help="expected natural language (ISO 639-1: nl, zh...)")
    p.add_argument("--dataset", required=True, help="dataset name (created if missing)")
    p.add_argument("--repo", default="", help="repository the files come from (owner/name)")
    p.add_argument("--licence", default="", help="licence of the files (e.g. MIT)")
    p.add_argument("--programming-language", choices=sorted(PROGRAMMING_LANGUAGES),
                   help="lex every file as this language instead of going by extension")
    d = SelectionConfig()
    for flag, help_text in [
        ("dedup-exact", "drop exact duplicate files"),
        ("dedup-near", "drop near-duplicate files (MinHash)"),
        ("generated-file", "drop files written by a tool or a wizard's template (file-wide)"),
        ("licence-filter", "drop licence/copyright comments"),
        ("todo", "drop TODO/FIXME comments"), ("author-only", "drop author/contact-only comments"),
        ("autogenerated", "drop auto-generated comments"),
        ("commented-code", "drop commented-out code"),
        ("program-output", "drop console transcripts (the program's strings and numbers)"),
        ("broken-text", "drop comments holding bytes the file's encoding could not read"),
        ("too-short", "drop comments under --min-tokens"),
        ("prime-covers", "drop comments whose prime (first --prime-length tokens of each "
                         "--tokenizer; words without one) leaves no word to generate"),
        ("language-check", "drop comments not in --lang"),
        ("mixed-language", "drop files with comments in another language"),
        ("context-window", "drop files whose tokens + budget exceed --window-tokens"),
    ]:
        p.add_argument(f"--{flag}", action=argparse.BooleanOptionalAction, default=True,
                       help=help_text)
    p.add_argument("--near-threshold", type=float, default=d.near_threshold)
    p.add_argument("--min-tokens", type=int, default=d.min_tokens)
    p.add_argument("--prime-length", type=int, default=d.prime_length,
                   help="tokens of the comment the model is primed with (study: 3)")
    p.add_argument("--window-tokens", type=int, default=d.window_tokens)
    p.add_argument("--budget-sigmas", type=float, default=d.budget_sigmas)
    p.add_argument("--targets-per-file", type=int, default=d.targets_per_file,
                   help="first N passing comments of a file become targets (0: all)")
    p.add_argument("--tokenizer", action="append", default=[], metavar="ID_OR_DIR",
                   help="count tokens with this model's tokenizer (repeatable); default: an "
                        "approximation")
    p.add_argument("--detector", default="lingua", choices=["lingua", "langdetect"])
    p.add_argument("--langid-languages", default=None,
                   help="comma-separated candidate languages for lingua, or 'all'")
    p.add_argument("--encoding", default="auto",
                   help="encoding of the files: auto (default: BOM, UTF-8, UTF-16, then "
                        "charset-normalizer guided by --lang) or a codec name such as gbk")
    p.add_argument("--report-json", metavar="PATH",
                   help="also write the report as JSON, with every comment's decision and reason")
    p.add_argument("--explain", action="store_true",
                   help="print every comment's decision and reason (file:line, kind, filter)")
    p.add_argument("--dry-run", action="store_true", help="select and report; write nothing")
    add_database_argument(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.dry_run:  # a new database is made here if need be; a dry run opens none
        from db.engine import project_database

        args.db = project_database(args.db, create=True)
    config = SelectionConfig(
        dedup_exact=args.dedup_exact, dedup_near=args.dedup_near,
        near_threshold=args.near_threshold, generated_file=args.generated_file,
        licence=args.licence_filter, todo=args.todo,
        author_only=args.author_only, autogenerated=args.autogenerated,
        commented_code=args.commented_code, program_output=args.program_output,
        broken_text=args.broken_text,
        too_short=args.too_short, min_tokens=args.min_tokens,
        prime_covers=args.prime_covers, prime_length=args.prime_length,
        language_check=args.language_check, mixed_language=args.mixed_language,
        context_window=args.context_window, window_tokens=args.window_tokens,
        budget_sigmas=args.budget_sigmas, targets_per_file=args.targets_per_file)
    languages = None
    if args.langid_languages:
        languages = [x.strip() for x in args.langid_languages.split(",") if x.strip()]
    result = run_extract(
        args.paths, natural_language=args.lang, dataset=args.dataset, db_url=args.db,
        repo=args.repo, licence=args.licence, programming_language=args.programming_language,
        config=config, tokenizers=args.tokenizer, detector_kind=args.detector,
        detector_languages=languages, encoding=args.encoding,
        dry_run=args.dry_run)
    if args.explain:
        from corpus.select import render_decisions

        render_decisions(result.report)
    if args.report_json:
        try:
            Path(args.report_json).write_text(json.dumps(result.as_dict(), indent=2,
                                                         ensure_ascii=False), encoding="utf-8")
        except OSError as error:
            raise UserError(f"cannot write --report-json {args.report_json}: "
                            f"{error.strerror or error}") from error
    if result.report.files_out == 0 and result.already_stored == 0:
        raise UserError(f"nothing kept: none of {result.report.files_in} readable files gave a "
                        f"target ({len(result.report.problems)} skipped); see the table above"
                        + ("" if args.explain else ", or --explain for every comment's reason"),
                        exit_code=EXIT_NOTHING_DONE)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m corpus.extract"))
