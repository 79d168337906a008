"""Importing judge results written elsewhere: the study's `judge_results.json` layout, or
(`--format labels`, `judges.labels`) a file of labels from anywhere.

    python -m judges.importer FILE|FOLDER... [--model M] [--strategy S] [--lang L]
        [--prompt-lang L] [--dataset release] [--taxonomy-variant variant-gr6] [--check] [--db URL]
    python -m judges.importer --format labels FILE --model JUDGE ...   (see judges.labels)
    nlce judges import ...

A file is a JSON list of instances, one per target: `metadata` (`file_id`, `language`),
`code_context` (`source_code`, `original_comment`), `model_predictions` (`model_name`,
`predicted_comment`, `masked_code`), the judge's answer `raw_response` (per cluster in
`cluster_details` for the hierarchical strategy), the study's own parse `judge_evaluations`,
and `usage` (tokens). Each file becomes one judge run: its model, strategy and prompt language
come from the flags, else from the study's folder name `<model>_-<lang>_-<prompt-lang>_-<strategy>`
(the hierarchical strategy also from `cluster_details`). Each instance's target is the one the
release import stored for its `file_id` in `--dataset` (so the release's expert labels are the
humans the report compares with), else a new file, target and generations made from the
instance. The answers are parsed by `judges.parse`, with the codes read as the taxonomy release
the judge was prompted with (`--taxonomy-variant`, default variant-gr6, the study's); the study's
own parse is kept in each response's repairs (`study_parse`). One transaction; importing a
file again changes nothing.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import make_url

from db import models as m
from db.engine import (
    add_database_argument,
    get_engine,
    project_database,
    read_only_url,
    resolve_url,
    session_scope,
    shown_url,
)
from db.formats import LANGUAGE_NAMES, FormatError, check_language, locate_comment
from db.importer import ImportFailed, Problems, RecordWriter
from db.importer.errors import Reject
from db.importer.project import write_all
from db.models import JUDGE_STRATEGIES
from judges import labels
from judges.i18n import PROMPT_LANGUAGES
from judges.parse import merge_cluster_verdicts, parse_response
from judges.prompts import prediction_ids
from nlce.cli import EXIT_NOTHING_DONE, EXIT_OK, run_main
from taxonomy import default_taxonomy

BACKEND = "import"


@dataclass
class RunInfo:
    """What a file says (or the flags say) about the run that wrote it."""
    model: str
    strategy: str
    prompt_lang: str
    path: Path
    sha256: str
    instances: list = field(default_factory=list)

    def signature(self, variant: str | None) -> str:
        return (f"{self.model}|{self.strategy}|{self.prompt_lang}|{self.version}|"
                f"{BACKEND}:{self.sha256[:16]}:{variant or 'current'}")

    @property
    def version(self) -> str:
        return f"study-{self.strategy}-{self.prompt_lang}"


def language(name: str, where: str = "metadata.language") -> str:
    """An ISO 639-1 code from a code or an English name ("English", as the study writes)."""
    return LANGUAGE_NAMES.get(name.strip().casefold()) or check_language(name, where)


def study_files(paths) -> list[Path]:
    """The judge_results.json files named, or found under the folders named."""
    files: list[Path] = []
    for path in map(Path, paths):
        found = sorted(path.rglob("judge_results.json")) if path.is_dir() else [path]
        if not found:
            raise ImportFailed(str(path), "folder", None, "holds no judge_results.json")
        files += found
    return files


def experiment_instances(path: Path, data: dict) -> tuple[list[dict], str, str]:
    """The study's experiments layout (`rubric_results.json`: file id -> {"instance",
    "judge_evaluation": {"<strategy>_evaluator": {judge model: its chat completion}}}) as
    judge_results.json instances, with the judge model and strategy it names; ImportFailed
    naming the entry where it is not that layout."""
    instances, judges = [], set()
    for key, entry in data.items():
        evaluation = entry.get("judge_evaluation") if isinstance(entry, dict) else None
        if not isinstance(evaluation, dict) or not isinstance(entry.get("instance"), dict):
            raise ImportFailed(str(path), f"entry {key!r}", "judge_evaluation", "expected a JSON "
                               "list of instances (judge_results.json) or a mapping of entries "
                               "with 'instance' and the judge's completion under "
                               "'judge_evaluation' (the study's experiments layout)")
        answers = [(evaluator, model, completion) for evaluator, by_model in evaluation.items()
                   if isinstance(by_model, dict) for model, completion in by_model.items()]
        if len(answers) != 1 or not isinstance(answers[0][2], dict):
            raise ImportFailed(str(path), f"entry {key!r}", "judge_evaluation", "expected one "
                               "judge's completion (an evaluator holding one model's answer)")
        evaluator, model, completion = answers[0]
        judges.add((model, evaluator.removesuffix("_evaluator")))
        choice = (completion.get("choices") or [{}])[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        instances.append({**entry["instance"],
                          "raw_response": (message or {}).get("content"),
                          "finish_reason": choice.get("finish_reason") if message else None,
                          "usage": completion.get("usage")})
    if len(judges) != 1:
        raise ImportFailed(str(path), "file", "judge_evaluation", "expected the answers of one "
                           f"judge and strategy, found {len(judges)}")
    model, strategy = judges.pop()
    return instances, model, strategy


def run_info(path: Path, args) -> RunInfo:
    """The run's model, strategy and prompt language: flags first, then what the file says (the
    study's folder name `<model>_-<lang>_-<prompt-lang>_-<strategy>`, or the experiments
    layout's evaluator and judge)."""
    try:
        data = path.read_bytes()
        instances = json.loads(data)
    except OSError as exc:
        raise ImportFailed(str(path), "file", None, f"cannot read: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ImportFailed(str(path), "file", None, f"not JSON: {exc}") from None
    named_model = named_strategy = None
    if isinstance(instances, dict) and instances:
        instances, named_model, named_strategy = experiment_instances(path, instances)
    if not isinstance(instances, list) or not all(isinstance(i, dict) for i in instances):
        raise ImportFailed(str(path), "file", None, "expected a JSON list of instances "
                           "(the study's judge_results.json layout) or its experiments layout "
                           "(a mapping of entries with 'instance' and 'judge_evaluation')")
    parts = path.parent.name.split("_-")
    named = len(parts) == 4 and parts[3] in JUDGE_STRATEGIES and parts[2] in PROMPT_LANGUAGES
    if named_strategy not in JUDGE_STRATEGIES:
        named_strategy = None
    strategy = args.strategy or (parts[3] if named else named_strategy) or (
        "hierarchical" if any("cluster_details" in i for i in instances) else None)
    model = args.model or (parts[0] if named else named_model)
    langs = {args.lang or (i.get("metadata") or {}).get("language") for i in instances}
    if len(langs) == 1 and None not in langs:
        try:
            langs = {language(langs.pop())}
        except FormatError:
            langs = set()
    prompt_lang = args.prompt_lang or (parts[2] if named else None) or (
        langs.pop() if len(langs) == 1 and langs <= set(PROMPT_LANGUAGES) else None)
    for value, flag in ((model, "--model"), (strategy, "--strategy"),
                        (prompt_lang, "--prompt-lang")):
        if not value:
            raise ImportFailed(str(path), "file", None, f"the file does not say its judge's "
                               f"{flag[2:].replace('-', ' ')}: give {flag}")
    return RunInfo(model, strategy, prompt_lang, path, hashlib.sha256(data).hexdigest(),
                   instances)


def _text(instance: dict, *keys: str, required: bool = True) -> str | None:
    value = instance
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise FormatError("missing or not a text", ".".join(keys))
    return value


def _count(value) -> int | None:
    """A token count from `usage` (None: the file did not keep it, unknown); anything else is a
    problem of the instance."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FormatError(f"a token count must be a whole number, got {value!r:.20}", "usage")
    return value


def _answers(instance: dict) -> list[tuple[str, str | None, object, dict]]:
    """(cluster, answer text, the study's parse, notes) per request of one instance; a request
    whose answer is missing (or no text) has None, which parses as a parse_error. (The answer's
    finish_reason, where the file kept it, is the instance's `finish_reason`.)"""
    def text(value):
        return value if isinstance(value, str) else None

    clusters = instance.get("cluster_details")
    if isinstance(clusters, list) and clusters:
        clusters = [c if isinstance(c, dict) else {} for c in clusters]
        return [(str(c.get("cluster_name") or f"cluster{i}"), text(c.get("raw_response")),
                 c.get("parsed_evaluations"), {}) for i, c in enumerate(clusters)]
    raw, study = text(instance.get("raw_response")), instance.get("judge_evaluations")
    if raw is None and isinstance(study, str):  # the study kept the text it could not parse
        return [("", study, study, {"kind": "answer_from_judge_evaluations"})]
    if raw is None and isinstance(study, dict):  # no raw answer kept: its parse is all there is
        return [("", json.dumps(study, ensure_ascii=False), study,
                 {"kind": "answer_rebuilt_from_study_parse"})]
    return [("", raw, study, {})]


def _finish_reason(instance: dict) -> str | None:
    value = instance.get("finish_reason")
    return value if isinstance(value, str) else None


def _usage(instance: dict) -> dict | None:
    """The instance's token usage, None where the file kept none."""
    usage = instance.get("usage")
    return usage if isinstance(usage, dict) else None


class StudyImport:
    """Turns one file's instances into project records, resolving targets already stored."""

    def __init__(self, writer: RecordWriter, info: RunInfo, dataset: str, lang: str | None,
                 variant: str | None):
        self.writer, self.info, self.dataset, self.lang, self.variant = (
            writer, info, dataset, lang, variant)
        self.tax = default_taxonomy()
        self.offered = tuple(c.id for c in self.tax.labelable())
        self.statuses: dict[str, int] = {}
        self._accuracy_asked: bool | None = None

    def language(self, instance: dict) -> str:
        named = self.lang or _text(instance, "metadata", "language", required=False)
        if not named:
            raise FormatError("no language: pass --lang", "metadata.language")
        return language(named)

    def file_key(self, instance: dict, lang: str) -> tuple[dict, list[dict], str]:
        """The file's key, the records that make it (none when stored), and its content."""
        file_id = _text(instance, "metadata", "file_id")
        source = _text(instance, "code_context", "source_code")
        comment = _text(instance, "code_context", "original_comment")
        stored = self.writer.session.execute(select(m.SourceFile).where(
            m.SourceFile.dataset_id == self.writer.dataset_id(self.dataset),
            m.SourceFile.external_id == file_id)).scalars().all()
        stored = [f for f in stored if comment in f.content] or stored
        if stored:
            found = stored[0]
            return ({"dataset": self.dataset, "repo": found.repo, "path": found.path}, [],
                    found.content)
        key = {"dataset": self.dataset, "repo": "", "path": file_id}
        return key, [{"type": "file", **key, "natural_language": lang, "external_id": file_id,
                      "content": source}], source

    def records(self, instance: dict) -> list[dict]:
        predictions = instance.get("model_predictions")
        if not isinstance(predictions, list) or not predictions or not all(
                isinstance(p, dict) and isinstance(p.get("model_name"), str) for p in predictions):
            raise FormatError("expected a list of {model_name, predicted_comment}",
                              "model_predictions")
        lang = self.language(instance)
        key, records, content = self.file_key(instance, lang)
        comment = _text(instance, "code_context", "original_comment")
        hints = [p["masked_code"] for p in predictions if isinstance(p.get("masked_code"), str)]
        start, end = locate_comment(content, comment, hints)
        target = {**key, "span": [start, end]}
        records.append({"type": "target", **target, "original_comment": comment})
        for p in predictions:
            if not self._stored_generation(target, p["model_name"]):
                text = p.get("predicted_comment") or ""
                records.append({"type": "generation", **target, "model": p["model_name"],
                                "fim_input": p.get("masked_code") or "", "raw_output": text,
                                "predicted_comment": text, "backend": BACKEND})
        return records + self.judged(instance, target, [p["model_name"] for p in predictions])

    def _stored_generation(self, target: dict, model: str) -> bool:
        try:
            self.writer.generation_id({**target, "model": model})
            return True
        except Reject:
            return False

    @property
    def accuracy_asked(self) -> bool:
        """Whether the run asked its judge for an accuracy label: some answer of the file
        gives one (the study's hierarchical and some rubric prompts asked for codes only)."""
        if self._accuracy_asked is None:
            self._accuracy_asked = any(
                v.accuracy is not None for instance in self.info.instances
                for parsed, *_ in self._parse(instance, True).values()
                for v in parsed.verdicts.values())
        return self._accuracy_asked

    def _parse(self, instance: dict, accuracy_asked: bool) -> dict:
        """cluster -> (its ParsedResponse, answer text, the study's parse, note) of one instance."""
        names = [p.get("model_name") for p in instance.get("model_predictions") or []
                 if isinstance(p, dict)]
        ids = prediction_ids(len(names))
        out = {}
        for cluster, text, study, note in _answers(instance):
            parsed = parse_response(text, lang=self.info.prompt_lang, strategy=self.info.strategy,
                                    tax=self.tax, offered=self.offered, prediction_ids=ids,
                                    prediction_models=dict(zip(ids, names)),
                                    code_variant=self.variant, accuracy_asked=accuracy_asked,
                                    finish_reason=_finish_reason(instance))
            if text is None:
                parsed.error = "the file holds no answer for this request"
            out[cluster] = (parsed, text, study, note)
        return out

    def judged(self, instance: dict, target: dict, model_names: list[str]) -> list[dict]:
        """The instance's responses and verdicts, read by judges.parse."""
        ids = prediction_ids(len(model_names))
        usage = _usage(instance) or {}
        run = self.info.signature(self.variant)
        records, parsed_by_cluster = [], {}
        for n, (cluster, (parsed, text, study, note)) in enumerate(
                self._parse(instance, self.accuracy_asked).items()):
            parsed_by_cluster[cluster] = parsed
            # the instance's usage goes on its first response (unknown on all without one)
            tokens = {k: _count(usage.get(k)) if n == 0 or usage.get(k) is None else 0
                      for k in ("prompt_tokens", "completion_tokens")}
            records.append({"type": "judge_response", "run": run, **target, "cluster": cluster,
                            "status": parsed.status, "raw_response": text or "",
                            "repairs": ([note] if note else []) + parsed.repairs
                            + [{"kind": "study_parse", "value": study}],
                            "error": parsed.error, **tokens})
            self.statuses[parsed.status] = self.statuses.get(parsed.status, 0) + 1
        for position, (pid, model) in enumerate(zip(ids, model_names), start=1):
            verdict = (parsed_by_cluster[""].verdicts[pid] if list(parsed_by_cluster) == [""]
                       else merge_cluster_verdicts(parsed_by_cluster, pid))
            records.append({"type": "judge_verdict", "run": run, **target, "model": model,
                            "status": verdict.status, "accuracy": verdict.accuracy,
                            "codes": [c.as_dict() for c in verdict.codes], "position": position})
        return records

    def run_tokens(self) -> dict:
        """The run's tokens: the instances' sum, None (unknown) unless every one kept its count
        (a bad count is its instance's problem, named there)."""
        out = {}
        for key in ("prompt_tokens", "completion_tokens"):
            counts = [(_usage(i) or {}).get(key) for i in self.info.instances]
            known = all(isinstance(c, int) and not isinstance(c, bool) for c in counts)
            out[key] = sum(counts) if known else None
        return out

    def run_record(self) -> dict:
        langs = sorted({self.language(i) for i in self.info.instances
                        if self.lang or _text(i, "metadata", "language", required=False)})
        return {"type": "judge_run", "signature": self.info.signature(self.variant),
                "model": self.info.model, "backend": BACKEND, "strategy": self.info.strategy,
                "prompt_language": self.info.prompt_lang,
                "prompt_version": self.info.version, "cost_usd": None, **self.run_tokens(),
                "params": {"imported_from": f"{self.info.path.parent.name}/{self.info.path.name}",
                           "sha256": self.info.sha256, "target_language": ",".join(langs),
                           "code_variant": self.variant or self.tax.version, "order": "fixed",
                           "accuracy_asked": self.accuracy_asked}}


def import_study(session, paths, args, problems: Problems) -> tuple[RecordWriter, list]:
    writer = RecordWriter(session, problems)
    variant = None if args.taxonomy_variant in ("none", default_taxonomy().version) \
        else args.taxonomy_variant
    done = []
    for path in study_files(paths):
        info = run_info(path, args)
        job = StudyImport(writer, info, args.dataset, args.lang, variant)
        try:
            writer.write(job.run_record())
        except (FormatError, Reject) as error:
            problems.add(str(path), "file", error.field, error.message)
            continue
        write_all(writer, str(path), ((f"instance {n}", i) for n, i in enumerate(info.instances)),
                  job.records, total=len(info.instances))
        done.append(job)
    return writer, done


FORMATS = ("study", "labels")


def main(argv: list[str] | None = None) -> int:
    chosen, rest = _format_parser().parse_known_args(argv)
    if chosen.format == "labels":  # one file of labels from anywhere: judges.labels
        return labels.main(rest)
    p = argparse.ArgumentParser(prog="python -m judges.importer", description=__doc__.split("\n\n")[0],
                                parents=[_format_parser()])
    p.add_argument("paths", nargs="+", metavar="FILE|FOLDER")
    p.add_argument("--model", help="the judge model (default: from the study's folder name)")
    p.add_argument("--strategy", choices=JUDGE_STRATEGIES, help="default: from the folder name")
    p.add_argument("--lang", help="language of the targets (default: each instance's metadata)")
    p.add_argument("--prompt-lang", choices=PROMPT_LANGUAGES,
                   help="language of the judge's prompt (default: the folder name's, else the "
                        "targets')")
    p.add_argument("--dataset", default="release", help="dataset of the targets (default release,"
                   " where `db import --format release` puts the study's)")
    p.add_argument("--taxonomy-variant", default="variant-gr6", metavar="VARIANT",
                   help="the taxonomy release the judge was prompted with (default variant-gr6, "
                        "the study's; 'none': the current one)")
    p.add_argument("--check", action="store_true", help="read and parse everything, list every "
                   "problem, write nothing")
    add_database_argument(p)
    args = p.parse_args(argv)
    # an import: it makes the database if need be (a check makes none)
    url = resolve_url(args.db) if args.check else project_database(args.db, create=True)
    problems = Problems(collect=args.check)
    checked = check_url(url) if args.check else url
    with session_scope(checked) as session:  # ImportFailed (a UserError): one line, nothing written
        writer, jobs = import_study(session, args.paths, args, problems)
        if args.check:
            session.rollback()
    problems.refuse()
    statuses: dict[str, int] = {}
    for job in jobs:
        answers = ", ".join(f"{k} {v}" for k, v in sorted(job.statuses.items()))
        print(f"{job.info.path}: judge {job.info.model}, {job.info.strategy}, prompt "
              f"{job.info.prompt_lang}: {len(job.info.instances)} instances; answers: {answers}")
        for status, n in job.statuses.items():
            statuses[status] = statuses.get(status, 0) + n
    if checked != url:
        print(f"check: no database at {shown_url(url)} yet: checked against an empty one")
    print(("check: an import would write:" if args.check else
           f"imported into {shown_url(url)} (one transaction):") + "\n" + writer.stats.summary())
    if statuses.get("ok"):
        return EXIT_OK
    counts = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) or "none"
    print(f"{'warning' if args.check else 'error'}: none of the {sum(statuses.values())} answers "
          f"{'would be' if args.check else 'was'} read ok ({counts}); "
          f"{'they would be' if args.check else 'they are'} stored as the judge gave them: see "
          "`python -m judges.report` and each response's error", file=sys.stderr)
    return EXIT_OK if args.check else EXIT_NOTHING_DONE


def _format_parser() -> argparse.ArgumentParser:
    """--format alone: read first to choose the format's own parser, and a parent of the study
    format's."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--format", choices=FORMATS, default="study", help="study (default): the "
                   "study's judge_results.json layout; labels: a CSV/TSV/JSONL of item, model, "
                   "label (`--format labels --help`)")
    return p


def check_url(url: str) -> str:
    """Where `--check` reads and rolls back: the database itself, or, where it is a SQLite file
    that does not exist yet, an empty one in memory (creating the file would be a write). A
    database whose schema is not the newest is refused (upgrading it would be a write)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:") \
            and not parsed.query.get("uri") and not Path(parsed.database).exists():
        return "sqlite://"
    get_engine(read_only_url(url))  # DatabaseNotReadable (one line) unless at the newest schema
    return url


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m judges.importer"))
