"""Judge labels written anywhere (another harness, a spreadsheet, an LLM run elsewhere): one file
of (item, generating model, label) rows becomes one judge run, compared with the humans like
any run the project made.

    python -m judges.importer --format labels FILE --model JUDGE [--strategy S]
        [--prompt-lang L] [--prompt-version V] [--dataset D] [--replace] [--check] [--db URL]
    nlce judges import --format labels ...

The file is CSV, TSV (tab-separated) or JSON lines (any other suffix), as a pairs file is read
(db/FORMAT.md, section 4: a header of column names in any case, UTF-8 with or without a byte
order mark, or UTF-16 with one; any line ends). Columns:

- the item: `item_id` (`id`, `item`): a pairs item's id, or a file's comment named as `align`
  names it (`repo/path:start-end`); or `file_id`, the release's key (the file's external id),
  with `original_comment` where that file holds several targets;
- `model` (`system`): the generating model, as stored for that item;
- `label` (`accuracy`): correct, partial or incorrect, in any spelling the taxonomy accepts
  (case, spaces, `Partially correct`, `✓`, the labels' translations); never a number;
- `codes` (optional): taxonomy codes, separated as in a pairs file (`MS-LT, SE-HA1`);
- `language` (optional): checked against the target's language.

Every row is checked before anything is written (`--check` lists every problem); the first
problem names file, line and column; the run and its verdicts are written in one transaction.
The run is named by its judge: model `--model`, strategy `--strategy` (default `labels`),
prompt language `--prompt-lang` and prompt version `--prompt-version` (default `unknown`), so its
key is `JUDGE[labels,unknown,unknown]`; backend `labels`, tokens and cost unknown, no
responses. The same file again changes nothing. Another file for a run of the same name is
refused, naming the run and the file it holds: `--replace` makes the run's verdicts this file's,
another `--prompt-version` (or strategy) imports it as a second run.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import delete, insert, select, update

from db import models as m
from db.engine import (
    add_database_argument,
    get_engine,
    project_database,
    read_only_url,
    session_scope,
    shown_url,
)
from db.formats import FormatError, check_language, check_record, parse_error_codes
from db.formats.pairs import cell_text, column_meanings, require_columns
from db.importer import ImportFailed, Problems, RecordWriter
from db.importer.bulk import chunks
from db.importer.errors import Reject
from db.importer.sources import Unreadable, counted_rows, read_table
from db.targets import TARGET_DATASET_ID, TARGET_LANGUAGE, target_name, with_source
from nlce.cli import EXIT_OK, UserError, run_main
from taxonomy import AccuracyLabel, TaxonomyError, default_taxonomy

BACKEND = "labels"
UNKNOWN = "unknown"
COLUMNS = ("item_id", "file_id", "original_comment", "model", "label", "codes", "language")
ALIASES = {"id": "item_id", "item": "item_id", "system": "model", "accuracy": "label",
           "lang": "language", "natural_language": "language"}
DELIMITED = (".csv", ".tsv")


def label_columns(names) -> dict[str, str]:
    """Meaning -> the file's column that holds it (one column each); an unknown, repeated or
    missing column is a FormatError naming it."""
    meaning = column_meanings(names, COLUMNS, ALIASES, hint=" (db/FORMAT.md)", unique=True)
    if "item_id" in meaning.values() and "file_id" in meaning.values():
        raise FormatError("give the item as item_id or as file_id, not both", "file_id")
    if "item_id" not in meaning.values() and "file_id" not in meaning.values():
        raise FormatError("missing column (the item: item_id, or the release's file_id)",
                          "item_id")
    require_columns(meaning, ("model", "label"), "labels")
    return {key: name for name, key in meaning.items()}


def _cell(row: dict, name: str | None) -> str | None:
    """A cell's text, stripped; None where it is empty (`cell_text`)."""
    text = cell_text(row, name) if name is not None else None
    return (text or "").strip() or None


class Targets:
    """A dataset's targets by every name a labels file may give them, their languages and
    generations (read once: a file of any size then costs a few queries)."""

    def __init__(self, session, dataset_id: int):
        self.by_name: dict[str, int | None] = {}  # None: two targets share the name
        self.by_file: dict[str, list[tuple[int, str]]] = {}
        self.language: dict[int, str] = {}
        for row in session.execute(with_source(select(
                m.Target.id, m.Target.external_id, m.Target.original_comment,
                m.SourceFile.external_id.label("file_id"), m.SourceFile.repo, m.SourceFile.path,
                m.Target.span_start, m.Target.span_end, TARGET_LANGUAGE.label("lang")))
                .where(TARGET_DATASET_ID == dataset_id)):
            name = target_name(row.external_id, row.repo, row.path, row.span_start, row.span_end)
            self.by_name[name] = None if name in self.by_name else row.id
            if row.file_id is not None:
                self.by_file.setdefault(row.file_id, []).append((row.id, row.original_comment))
            self.language[row.id] = row.lang
        self.generations: dict[tuple[int, str], int] = {}
        self.models: dict[int, list[str]] = {}
        for gid, tid, model in session.execute(
                with_source(select(m.Generation.id, m.Generation.target_id, m.Generation.model)
                            .join(m.Target, m.Target.id == m.Generation.target_id))
                .where(TARGET_DATASET_ID == dataset_id)):
            self.generations[(tid, model)] = gid
            self.models.setdefault(tid, []).append(model)

    def by_item(self, item: str, column: str, dataset: str) -> int:
        found = self.by_name.get(item, 0)
        if found == 0:
            raise FormatError(f"no item {item!r} in dataset {dataset!r} (a pairs item's id, or "
                              f"a file's comment as align names it, repo/path:start-end)", column)
        if found is None:
            raise FormatError(f"{item!r} names two targets of dataset {dataset!r}", column)
        return found

    def by_file_id(self, file_id: str, comment: str | None, columns: dict, dataset: str) -> int:
        targets = self.by_file.get(file_id)
        if not targets:
            raise FormatError(f"no file {file_id!r} in dataset {dataset!r}", columns["file_id"])
        if comment is None and len(targets) == 1:
            return targets[0][0]
        if comment is None:
            raise FormatError(f"file {file_id!r} holds {len(targets)} targets: say which in an "
                              f"original_comment column", columns["file_id"])
        chosen = [t for t, text in targets if text == comment] or [
            t for t, text in targets if text.strip() == comment]
        if len(chosen) != 1:
            what = "no target" if not chosen else f"{len(chosen)} targets"
            raise FormatError(f"{what} of file {file_id!r} with this comment",
                              columns.get("original_comment", "original_comment"))
        return chosen[0]

    def generation(self, target_id: int, model: str, column: str, item: str) -> int:
        found = self.generations.get((target_id, model))
        if found is None:
            models = ", ".join(sorted(self.models.get(target_id, []))) or "none"
            raise FormatError(f"item {item!r} has no generation of model {model!r} (its "
                              f"models: {models})", column)
        return found


@dataclass
class Verdict:
    generation_id: int
    target_id: int
    accuracy: str
    codes: list[str]
    location: str
    item: str
    model: str


@dataclass
class LabelsFile:
    """What one file holds once checked: a verdict per generation, the targets' languages."""
    path: Path
    sha256: str
    rows: int = 0
    duplicates: int = 0
    verdicts: dict[int, Verdict] = field(default_factory=dict)
    languages: set[str] = field(default_factory=set)


def row_verdict(row: dict, name: dict[str, str], targets: Targets, dataset: str) -> Verdict:
    """One row checked: its generation, label and codes (FormatError naming the column).
    `name`: meaning -> column (`label_columns`)."""
    if "item_id" in name:
        item = _cell(row, name["item_id"])
        if item is None:
            raise FormatError("missing or empty", name["item_id"])
        target_id = targets.by_item(item, name["item_id"], dataset)
    else:
        item = _cell(row, name["file_id"])
        if item is None:
            raise FormatError("missing or empty", name["file_id"])
        target_id = targets.by_file_id(item, _cell(row, name.get("original_comment")), name,
                                       dataset)
    model = _cell(row, name["model"])
    if model is None:
        raise FormatError("missing or empty", name["model"])
    generation_id = targets.generation(target_id, model, name["model"], item)
    label = _cell(row, name["label"])
    if label is None:
        raise FormatError("missing or empty (a row is a verdict: leave out the generations the "
                          "judge gave no label)", name["label"])
    try:
        accuracy = AccuracyLabel.parse(label).value
    except TaxonomyError as error:
        raise FormatError(str(error), name["label"]) from None
    codes_column = name.get("codes")
    try:
        codes = list(default_taxonomy().validate_codes(
            parse_error_codes(row.get(codes_column), codes_column) if codes_column else []))
    except TaxonomyError as error:
        raise FormatError(str(error), codes_column) from None
    language = _cell(row, name.get("language"))
    if language is not None:
        stated, actual = check_language(language, name["language"]), targets.language[target_id]
        if stated != actual:
            raise FormatError(f"item {item!r} is in {actual!r}, not {stated!r}", name["language"])
    return Verdict(generation_id, target_id, accuracy, codes, "", item, model)


def read_labels(path: Path, targets: Targets, dataset: str, problems: Problems,
                limit: int) -> LabelsFile:
    """Every row of the file checked; each problem goes to `problems` (file, line, column)."""
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ImportFailed(str(path), "file", None, f"cannot read: {exc.strerror}") from None
    found = LabelsFile(path, digest)
    delimited = path.suffix.lower() in DELIMITED
    columns: dict[tuple, dict[str, str]] = {}  # header -> meaning -> column
    for location, row in counted_rows(read_table(path, limit), str(path), problems):
        if isinstance(row, Unreadable):
            problems.add(str(path), location, None, row.message)
            continue
        found.rows += 1
        try:
            if not isinstance(row, dict):
                raise FormatError(f"a row must be an object, got {type(row).__name__}")
            header = tuple(row)
            if header not in columns:
                try:
                    columns[header] = label_columns(header)
                except FormatError as error:  # a CSV's columns are its header's, line 1
                    if delimited:
                        problems.add(str(path), "line 1", error.field, error.message)
                        return found
                    raise
            verdict = row_verdict(row, columns[header], targets, dataset)
        except FormatError as error:
            problems.add(str(path), location, error.field, error.message)
            continue
        verdict.location = location
        earlier = found.verdicts.get(verdict.generation_id)
        if earlier is None:
            found.verdicts[verdict.generation_id] = verdict
            found.languages.add(targets.language[verdict.target_id])
        elif (earlier.accuracy, sorted(earlier.codes)) == (verdict.accuracy, sorted(verdict.codes)):
            found.duplicates += 1
        else:
            problems.add(str(path), location, columns[header]["label"],
                         f"item {verdict.item!r}, model {verdict.model!r} is labelled "
                         f"{_shown(earlier)} on {earlier.location}, {_shown(verdict)} here")
    return found


def _shown(verdict: Verdict) -> str:
    return verdict.accuracy + (f" ({', '.join(verdict.codes)})" if verdict.codes else "")


@dataclass(frozen=True)
class RunName:
    """What names the run: the judge and how it was asked (as `agreement.judges` shows it)."""
    model: str
    strategy: str
    prompt_language: str
    prompt_version: str

    @property
    def signature(self) -> str:
        return "|".join((BACKEND, self.model, self.strategy, self.prompt_language,
                         self.prompt_version))

    @property
    def key(self) -> str:
        return f"{self.model}[{self.strategy},{self.prompt_language},{self.prompt_version}]"


def store(writer: RecordWriter, name: RunName, found: LabelsFile, dataset: str,
          replace: bool) -> None:
    """The run (created, or left as it is for the same file) and its verdicts, one per row's
    generation; a run of this name holding another file is refused unless `replace`."""
    session = writer.session
    run = session.execute(select(m.JudgeRun).where(m.JudgeRun.signature == name.signature)
                          ).scalars().first()
    held = (run.params or {}) if run is not None else {}
    if run is not None and not replace and (held.get("sha256"), held.get("dataset")) != (
            found.sha256, dataset):
        raise Reject((
            f"judge run {run.id} {name.key} already holds other labels ({held.get('imported_from')}"
            f", sha256 {str(held.get('sha256'))[:12]}, dataset {held.get('dataset')!r}): "
            "--replace makes its verdicts this file's; another --prompt-version imports this "
            "file as a second run"))
    params = {"imported_from": found.path.name, "sha256": found.sha256, "dataset": dataset,
              "target_language": ",".join(sorted(found.languages)), "order": "fixed"}
    writer.write(check_record({
        "type": "judge_run", "signature": name.signature, "model": name.model,
        "backend": BACKEND, "strategy": name.strategy, "prompt_language": name.prompt_language,
        "prompt_version": name.prompt_version, "params": params, "prompt_tokens": None,
        "completion_tokens": None, "cost_usd": None}, writer.limits))
    run_id = writer.judge_run_id(name.signature)
    stored = {row.generation_id: row for row in session.execute(
        select(m.JudgeVerdict.id, m.JudgeVerdict.generation_id, m.JudgeVerdict.status,
               m.JudgeVerdict.accuracy, m.JudgeVerdict.codes)
        .where(m.JudgeVerdict.run_id == run_id))}
    new, now = [], m.utcnow()
    for generation_id, verdict in found.verdicts.items():
        values = {"status": "ok", "accuracy": verdict.accuracy,
                  "codes": [{"code": c, "confidence": None, "justification": None}
                            for c in verdict.codes]}
        old = stored.pop(generation_id, None)
        if old is None:
            new.append({"run_id": run_id, "generation_id": generation_id, "position": None,
                        "created_at": now, **values})
        elif (old.status, old.accuracy, old.codes) == tuple(values.values()):
            writer.stats.add("judge_verdict", "unchanged")
        else:
            session.execute(update(m.JudgeVerdict).where(m.JudgeVerdict.id == old.id)
                            .values(**values))
            writer.stats.add("judge_verdict", "updated")
    if new:
        session.execute(insert(m.JudgeVerdict.__table__), new)  # one executemany
    writer.stats.add("judge_verdict", "created", len(new))
    gone = [row.id for row in stored.values()]  # the run is the file: its other verdicts go
    for chunk in chunks(gone):
        session.execute(delete(m.JudgeVerdict).where(m.JudgeVerdict.id.in_(chunk)))
    writer.stats.add("judge_verdict", "deleted", len(gone))


def pick_dataset(session, wanted: str | None) -> tuple[int, str]:
    """The dataset named, or the database's only one."""
    found = dict(session.execute(select(m.Dataset.name, m.Dataset.id)).all())
    if wanted is None and len(found) == 1:
        return next(iter(found.values())), next(iter(found))
    if wanted is None or wanted not in found:
        names = ", ".join(sorted(found)) or "none"
        what = "give --dataset" if wanted is None else f"no dataset {wanted!r}"
        raise UserError(f"--dataset: {what} (datasets here: {names})")
    return found[wanted], wanted


def run_name(args) -> RunName:
    values = {}
    for flag in ("model", "strategy", "prompt_version"):
        value = getattr(args, flag).strip()
        if not value:
            raise UserError(f"--{flag.replace('_', '-')}: empty")
        values[flag] = value
    lang = args.prompt_lang
    if lang != UNKNOWN:
        try:
            lang = check_language(lang, "--prompt-lang")
        except FormatError as error:
            raise UserError(f"--prompt-lang: {error.message}") from None
    return RunName(values["model"], values["strategy"], lang, values["prompt_version"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m judges.importer --format labels",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", metavar="FILE", type=Path, help="CSV, TSV or JSON lines")
    p.add_argument("--model", required=True, help="the judge: names the run")
    p.add_argument("--strategy", default="labels", help="how the judge was asked (default labels)")
    p.add_argument("--prompt-lang", default=UNKNOWN, help="the prompt's language (default unknown)")
    p.add_argument("--prompt-version", default=UNKNOWN,
                   help="the prompt's version (default unknown); another one names a second run")
    p.add_argument("--dataset", help="the targets' dataset (default: the database's only one)")
    p.add_argument("--replace", action="store_true",
                   help="a run of this name holding another file gets this file's verdicts")
    p.add_argument("--check", action="store_true",
                   help="check every row, list every problem, write nothing")
    add_database_argument(p)
    args = p.parse_args(argv)
    if len(args.paths) > 1:
        raise UserError(f"one file is one run, and {len(args.paths)} were given: import each with "
                        "its own --model or --prompt-version")
    args.path = args.paths[0]
    name = run_name(args)
    url = project_database(args.db)  # an existing project database: named, never made
    if args.check:  # a database at an older schema is refused, not upgraded (a write)
        get_engine(read_only_url(url))
    problems = Problems(collect=args.check)
    with session_scope(url) as session:  # ImportFailed (a UserError): one line, nothing written
        dataset_id, dataset = pick_dataset(session, args.dataset)
        writer = RecordWriter(session, problems)
        found = read_labels(args.path, Targets(session, dataset_id), dataset, problems,
                            writer.limits.largest)
        if not problems:
            try:
                store(writer, name, found, dataset, args.replace)
            except (FormatError, Reject) as error:
                problems.add(str(args.path), "file", error.field, error.message)
        if args.check:
            session.rollback()
    problems.refuse()
    labels = Counter(v.accuracy for v in found.verdicts.values())
    shown = ", ".join(f"{k} {labels[k]}" for k in ("correct", "partial", "incorrect") if labels[k])
    repeated = (f"; {found.duplicates} repeated row(s) with the same label counted once"
                if found.duplicates else "")
    print(f"{args.path}: judge {name.key}: {found.rows} rows, {len(found.verdicts)} verdicts "
          f"({shown}) on dataset {dataset!r}{repeated}")
    print(("check: an import would write:" if args.check else
           f"imported into {shown_url(url)} (one transaction):") + "\n" + writer.stats.summary())
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m judges.importer --format labels"))
