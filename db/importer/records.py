"""The per-record writer: validated project records into one session, resolving natural keys
(dataset name; file = dataset + repo + path; target = file + span; generation = target + model;
annotator = username; runs = signature; label plans = name), so importing the same data twice
changes nothing.
Labels go through `db.annotations.save_annotation`, one save per label with its history.
What an `annotator` record may do to accounts: `db.importer.accounts`.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, null, select, update
from sqlmodel import Session

from db import models as m
from db.annotations import (
    AnnotationError,
    annotation_codes,
    check_label,
    get_annotation,
    gold_label_codes,
    save_annotation,
    save_gold_label,
)
from db.formats import FormatError, check_language, locate_comment, sha256_text
from db.formats.text import TextLimits
from db.importer.accounts import (
    ACCOUNT_POLICIES,
    ACCOUNTS_CREATE,
    ACCOUNTS_NONE,
    AccountWriter,
    record_time,
)
from db.importer.errors import ImportStats, Problems, Reject
from db.importer.event_order import EventOrder, history_seq
from db.importer.plans import PlanWriters, first_difference
from db.importer.results import ResultWriters
from taxonomy import AccuracyLabel, TaxonomyError, default_taxonomy


class RecordWriter(ResultWriters, PlanWriters, AccountWriter):
    """Writes validated project records into one session, resolving natural keys."""

    def __init__(self, session: Session, problems: Problems | None = None, *,
                 accounts: str = ACCOUNTS_NONE, privileges: bool = False,
                 limits: TextLimits | None = None):
        if accounts not in ACCOUNT_POLICIES:
            raise ValueError(f"accounts must be one of {ACCOUNT_POLICIES}, got {accounts!r}")
        self.session = session
        self.accounts = accounts
        self.privileges = privileges
        self.limits = limits or TextLimits.from_env()
        self.stats = ImportStats()
        self.problems = problems if problems is not None else Problems()
        self._datasets: dict[str, int] = {}
        self._files: dict[tuple, m.SourceFile] = {}
        self._targets: dict[tuple, int] = {}
        self._generations: dict[tuple, int] = {}
        self._annotators: dict[str, int] = {}
        self._metric_runs: dict[str, int] = {}
        self._judge_runs: dict[str, int] = {}
        self._plans: dict[str, tuple[int, int]] = {}
        self._new_plans: set[str] = set()  # plans this import created: they take generations
        self.taxonomy = default_taxonomy()
        self.event_order = EventOrder()

    def forget(self) -> None:
        """Drop the cached keys (after a rolled-back savepoint, some may name undone rows)."""
        for cache in (self._datasets, self._files, self._targets, self._generations,
                      self._annotators, self._metric_runs, self._judge_runs, self._plans):
            cache.clear()
        self.event_order.forget()

    def finish(self) -> None:
        """After the last record: history rows take their ids in the order they were saved
        (`db.importer.event_order`; a check, which writes nothing, leaves them)."""
        if not self.problems.collect:
            self.event_order.apply(self.session)

    # -------------------------------------------------------------- generic upsert
    def _upsert(self, model, key: dict, values: dict, created_at: str | None = None
                ) -> tuple[Any, str]:
        """The row with `key`: created with `values` (and the record's `created_at`, so a move
        keeps when it was made), updated to them, or left unchanged (its own time kept)."""
        row = self.session.execute(select(model).filter_by(**key)).scalars().first()
        if row is None:
            return self._create(model, key, values, created_at), "created"
        if first_difference(row, values) is not None:
            for name, value in values.items():
                setattr(row, name, value)
            self.session.flush()
            return row, "updated"
        return row, "unchanged"

    def _create(self, model, key: dict, values: dict, created_at: str | None = None):
        """A new row with `key` and `values` (and the record's `created_at`), where the caller
        knows there is none."""
        row = model(**key, **values)
        for name, value in values.items():  # an explicit None must stay NULL, not the
            setattr(row, name, null() if value is None else value)  # column default
        if created_at is not None:
            row.created_at = record_time(created_at, "created_at")
        self.session.add(row)
        self.session.flush()
        return row

    # -------------------------------------------------------------- key resolution
    def dataset_id(self, name: str, create: bool = True) -> int:
        if name not in self._datasets:
            row = self.session.execute(select(m.Dataset).where(m.Dataset.name == name)
                                       ).scalars().first()
            if row is None:
                if not create:
                    raise Reject(f"dataset {name!r} does not exist", "dataset")
                row = m.Dataset(name=name)
                self.session.add(row)
                self.session.flush()
                self.stats.add("dataset", "created")
            self._datasets[name] = row.id
        return self._datasets[name]

    def source_file(self, rec: dict) -> m.SourceFile:
        key = (rec["dataset"], rec["repo"], rec["path"])
        if key not in self._files:
            dataset_id = self.dataset_id(rec["dataset"], create=False)
            row = self.session.execute(select(m.SourceFile).filter_by(
                dataset_id=dataset_id, repo=rec["repo"], path=rec["path"])).scalars().first()
            if row is None:
                raise Reject(f"file {rec['repo']}/{rec['path']} of dataset {rec['dataset']!r} "
                              f"is unknown (a 'file' record must come first)", "path")
            self._files[key] = row
        return self._files[key]

    def _stored_id(self, cache: dict, key, column, filters: dict, missing: Reject) -> int:
        """The id of a row an earlier record wrote (looked up once, then cached), or `missing`
        raised when there is none."""
        if key not in cache:
            found = self.session.execute(select(column).filter_by(**filters)).scalars().first()
            if found is None:
                raise missing
            cache[key] = found
        return cache[key]

    def target_id(self, rec: dict) -> int:
        if rec.get("item") is not None:
            dataset_id = self.dataset_id(rec["dataset"], create=False)
            return self._stored_id(
                self._targets, ("item", dataset_id, rec["item"]), m.Target.id,
                {"dataset_id": dataset_id, "external_id": rec["item"]},
                Reject(f"no item {rec['item']!r} in dataset {rec['dataset']!r} (its "
                       f"'target' record must come first)", "item"))
        source = self.source_file(rec)
        start, end = rec["span"]
        return self._stored_id(
            self._targets, (source.id, start, end), m.Target.id,
            {"source_file_id": source.id, "span_start": start, "span_end": end},
            Reject(f"no target at span [{start}, {end}] in {rec['repo']}/{rec['path']} (a "
                   f"'target' record must come first)", "span"))

    def generation_id(self, rec: dict) -> int:
        target_id = self.target_id(rec)
        return self._stored_id(
            self._generations, (target_id, rec["model"]), m.Generation.id,
            {"target_id": target_id, "model": rec["model"]},
            Reject(f"no generation of model {rec['model']!r} for that target (a 'generation' "
                   f"record must come first)", "model"))

    def annotator_id(self, username: str, field_name: str) -> int:
        return self._stored_id(
            self._annotators, username, m.Annotator.id, {"username": username},
            Reject(f"annotator {username!r} is unknown (an 'annotator' record must come "
                   f"first)", field_name))

    def ensure_annotator(self, username: str, role: str = "expert") -> int:
        """The labels' annotator of a release or pairs import: created with `role` if new,
        left as it is (role, languages, password) if it exists."""
        try:
            return self.annotator_id(username, "annotator")
        except Reject:  # named by a flag of the import, so its creation is explicit
            outcome = self._write_annotator({"type": "annotator", "username": username,
                                             "role": role}, policy=ACCOUNTS_CREATE)
            self.stats.add("annotator", outcome)
            return self._annotators[username]

    def _run_id(self, cache: dict, model, signature: str) -> int:
        if signature not in cache:
            found = self.session.execute(select(model.id).where(model.signature == signature)
                                         ).scalars().first()
            if found is None:
                raise Reject(f"run {signature!r} is unknown (its run record must come first)",
                              "run")
            cache[signature] = found
        return cache[signature]

    # -------------------------------------------------------------- label checks
    def _accuracy(self, value, field_name="accuracy"):
        if value is None:
            return None
        try:
            return AccuracyLabel.parse(value).value
        except TaxonomyError as error:
            raise Reject(str(error), field_name) from None

    def _codes(self, codes, field_name="codes") -> list[str]:
        try:
            return list(self.taxonomy.validate_codes(codes or []))
        except TaxonomyError as error:
            raise Reject(str(error), field_name) from None

    # -------------------------------------------------------------- writers per type
    def write(self, rec: dict) -> None:
        kind = rec["type"]
        outcome = getattr(self, f"_write_{kind}")(rec)
        self.stats.add(kind, outcome)

    def _write_dataset(self, rec):
        values = {k: rec[k] for k in ("description",) if k in rec}
        row, outcome = self._upsert(m.Dataset, {"name": rec["name"]}, values,
                                    rec.get("created_at"))
        self._datasets[rec["name"]] = row.id
        return outcome

    def _write_file(self, rec):
        dataset_id = self.dataset_id(rec["dataset"])
        try:
            lang = check_language(rec["natural_language"])
        except FormatError as error:
            raise Reject(error.message, error.field) from None
        digest = sha256_text(rec["content"])
        key = {"dataset_id": dataset_id, "repo": rec["repo"], "path": rec["path"]}
        existing = self.session.execute(select(m.SourceFile).filter_by(**key)).scalars().first()
        if existing is not None and existing.content_sha256 != digest:
            raise Reject(f"file {rec['repo']}/{rec['path']} is already in dataset "
                          f"{rec['dataset']!r} with different content; its targets' spans would "
                          f"no longer fit (import it under another dataset or path)", "content")
        values = {"natural_language": lang, "content": rec["content"], "content_sha256": digest}
        for name in ("programming_language", "licence", "external_id"):
            if name in rec:
                values[name] = rec[name]
        row, outcome = self._upsert(m.SourceFile, key, values)
        self._files[(rec["dataset"], rec["repo"], rec["path"])] = row
        return outcome

    def _write_pairs_target(self, rec):
        key = {"dataset_id": self.dataset_id(rec["dataset"], create=False),
               "external_id": rec["item"]}
        try:
            language = check_language(rec["natural_language"])
        except FormatError as error:
            raise Reject(error.message, error.field) from None
        values = {"original_comment": rec["original_comment"], "natural_language": language,
                  "context": rec.get("context"), "span_start": 0,
                  "span_end": len(rec["original_comment"])}
        if "comment_kind" in rec:
            values["comment_kind"] = rec["comment_kind"]
        row, outcome = self._upsert(m.Target, key, values)
        self._targets[("item", key["dataset_id"], rec["item"])] = row.id
        return outcome

    def _write_target(self, rec):
        if rec.get("item") is not None:
            return self._write_pairs_target(rec)
        source = self.source_file(rec)
        if "span" in rec:
            start, end = rec["span"]
            if end > len(source.content):
                raise Reject(f"span [{start}, {end}] lies beyond the end of the file "
                              f"({len(source.content)} characters)", "span")
        else:
            try:
                start, end = locate_comment(source.content, rec["original_comment"])
            except FormatError as error:
                raise Reject(error.message, error.field) from None
        comment = rec.get("original_comment", source.content[start:end])
        values = {"original_comment": comment}
        if "comment_kind" in rec:
            values["comment_kind"] = rec["comment_kind"]
        row, outcome = self._upsert(m.Target, {"source_file_id": source.id, "span_start": start,
                                               "span_end": end}, values)
        self._targets[(source.id, start, end)] = row.id
        return outcome

    def _write_generation(self, rec):
        target_id = self.target_id(rec)
        values = {k: rec[k] for k in ("fim_input", "raw_output", "predicted_comment", "backend")
                  if k in rec}
        if rec.get("params") is not None:
            values["params"] = rec["params"]
        row, outcome = self._upsert(m.Generation, {"target_id": target_id, "model": rec["model"]},
                                    values, rec.get("created_at"))
        self._generations[(target_id, rec["model"])] = row.id
        return outcome

    def _write_assignment(self, rec):
        key = {"generation_id": self.generation_id(rec),
               "annotator_id": self.annotator_id(rec["annotator"], "annotator")}
        values = {"position": rec["position"]} if "position" in rec else {}
        return self._upsert(m.Assignment, key, values, rec.get("created_at"))[1]

    def _label(self, rec: dict, prefix: str = "") -> dict:
        status = rec.get("status", "done")
        try:
            label = check_label(self._accuracy(rec.get("accuracy"), prefix + "accuracy"),
                                self._codes(rec.get("codes"), prefix + "codes"), status=status,
                                note=rec.get("note", ""),
                                seconds_spent=rec.get("seconds_spent", 0.0),
                                note_limit=self.limits.text)
        except AnnotationError as error:
            field = next((f for f in ("status", "note") if f in str(error)), "accuracy")
            raise Reject(str(error), prefix + field) from None
        return {"accuracy": label.accuracy, "codes": list(label.codes), "note": label.note,
                "seconds_spent": label.seconds_spent, "status": label.status}

    def _write_annotation(self, rec):
        generation_id = self.generation_id(rec)
        annotator_id = self.annotator_id(rec["annotator"], "annotator")
        label = self._label(rec)
        existing = get_annotation(self.session, generation_id, annotator_id)
        outcome = "updated" if existing is not None else "created"
        event_times: dict[int, datetime | None] = {}  # revision -> when it was saved
        if existing is None and rec.get("history"):
            history = rec["history"]
            if not isinstance(history, list):
                raise Reject("expected a list of earlier labels", "history")
            for i, event in enumerate(history):
                if not isinstance(event, dict):
                    raise Reject(f"entry {i} is not an object", "history")
                past = self._label(event, prefix=f"history[{i}].")
                seq = history_seq(event, f"history[{i}].seq")
                saved = save_annotation(self.session, generation_id=generation_id,
                                        annotator_id=annotator_id, **past,
                                        note_limit=self.limits.text)
                if seq is not None:  # its row's id, to be reordered by seq (event_order)
                    self.event_order.note(m.AnnotationEvent, seq, self.session.execute(
                        select(m.AnnotationEvent.id).where(
                            m.AnnotationEvent.annotation_id == saved.id,
                            m.AnnotationEvent.revision == saved.revision)).scalar_one())
                event_times[saved.revision] = record_time(event.get("created_at"),
                                                    f"history[{i}].created_at")
            existing = get_annotation(self.session, generation_id, annotator_id)
        unchanged = existing is not None and {
            "accuracy": existing.accuracy, "codes": sorted(annotation_codes(self.session,
                                                                            existing.id)),
            "note": existing.note, "seconds_spent": existing.seconds_spent,
            "status": existing.status} == {**label, "codes": sorted(label["codes"])}
        if not unchanged:
            saved = save_annotation(self.session, generation_id=generation_id,
                                    annotator_id=annotator_id, **label,
                                    note_limit=self.limits.text)
            event_times[saved.revision] = record_time(rec.get("updated_at"), "updated_at")
        if outcome == "created":
            self._keep_times(generation_id, annotator_id, rec, event_times)
        replied = self._write_reply(generation_id, annotator_id, rec.get("reply"))
        return outcome if outcome == "created" or not unchanged or replied else "unchanged"

    def _write_reply(self, generation_id: int, annotator_id: int, reply) -> bool:
        """The lead's answer to a flagged label (`reply`: {text, lead, created_at}); True when
        it was stored or changed."""
        if reply is None:
            return False
        if not isinstance(reply, dict) or not isinstance(reply.get("text"), str) \
                or not isinstance(reply.get("lead"), str):
            raise Reject("expected {\"text\", \"lead\", \"created_at\"}", "reply")
        self.limits.check(reply["text"], "reply.text")
        lead_id = self.annotator_id(reply["lead"], "reply.lead")
        annotation = get_annotation(self.session, generation_id, annotator_id)
        row = self.session.execute(select(m.FlagReply).where(
            m.FlagReply.annotation_id == annotation.id)).scalars().first()
        if row is not None and (row.text, row.lead_id) == (reply["text"], lead_id):
            return False
        row = row or m.FlagReply(annotation_id=annotation.id, lead_id=lead_id)
        row.lead_id, row.text = lead_id, reply["text"]
        row.created_at = record_time(reply.get("created_at"), "reply.created_at") or m.utcnow()
        self.session.add(row)
        self.session.flush()
        return True

    def _keep_times(self, generation_id: int, annotator_id: int, rec: dict,
                    event_times: dict[int, datetime | None]) -> None:
        """A label new to this database keeps the times it was made (a move keeps history)."""
        annotation = get_annotation(self.session, generation_id, annotator_id)
        for revision, moment in event_times.items():
            if moment is not None:
                self.session.execute(
                    update(m.AnnotationEvent)
                    .where(m.AnnotationEvent.annotation_id == annotation.id,
                           m.AnnotationEvent.revision == revision)
                    .values(created_at=moment).execution_options(synchronize_session=False))
        times = {name: record_time(rec.get(name), name) for name in ("created_at", "updated_at")}
        if times["created_at"] is None and event_times:
            times["created_at"] = event_times[min(event_times)]
        if times["updated_at"] is None and event_times:
            times["updated_at"] = event_times[max(event_times)]
        times = {name: moment for name, moment in times.items() if moment is not None}
        if times:
            self.session.execute(update(m.Annotation).where(m.Annotation.id == annotation.id)
                                 .values(**times).execution_options(synchronize_session=False))
            self.session.expire(annotation)

    def _write_gold_label(self, rec):
        generation_id = self.generation_id(rec)
        adjudicator_id = self.annotator_id(rec["adjudicator"], "adjudicator")
        label = self._label(rec)
        existing = self.session.execute(select(m.GoldLabel).where(
            m.GoldLabel.generation_id == generation_id)).scalars().first()
        if existing is None and rec.get("history"):
            self._replay_gold_history(generation_id, rec["history"])
            existing = self.session.execute(select(m.GoldLabel).where(
                m.GoldLabel.generation_id == generation_id)).scalars().first()
            if existing is not None and (
                    existing.accuracy, sorted(gold_label_codes(self.session, existing.id)),
                    existing.note, existing.adjudicator_id) == (
                    label["accuracy"], sorted(label["codes"]), label["note"], adjudicator_id):
                moment = record_time(rec.get("created_at"), "created_at")
                if moment is not None:  # the history ends with the current gold label
                    self.session.execute(update(m.GoldLabel).where(m.GoldLabel.id == existing.id)
                                         .values(created_at=moment)
                                         .execution_options(synchronize_session=False))
                return "created"
            return self._store_gold(generation_id, adjudicator_id, label, rec, "created")
        if existing is not None and (
                existing.accuracy, sorted(gold_label_codes(self.session, existing.id)),
                existing.note, existing.adjudicator_id) == (
                label["accuracy"], sorted(label["codes"]), label["note"], adjudicator_id):
            return "unchanged"
        return self._store_gold(generation_id, adjudicator_id, label, rec,
                                "created" if existing is None else "updated")

    def _store_gold(self, generation_id: int, adjudicator_id: int, label: dict, rec: dict,
                    outcome: str, field: str = "", seq: int | None = None) -> str:
        try:
            gold = save_gold_label(self.session, generation_id=generation_id,
                                   adjudicator_id=adjudicator_id, accuracy=label["accuracy"],
                                   codes=label["codes"], note=label["note"],
                                   note_limit=self.limits.text)
        except AnnotationError as error:
            raise Reject(str(error), field + "adjudicator") from None
        moment = record_time(rec.get("created_at"), field + "created_at")
        if seq is None and moment is None:  # its history row is neither reordered nor dated
            return outcome
        newest = self.session.execute(select(func.max(m.GoldLabelEvent.id)).where(
            m.GoldLabelEvent.gold_label_id == gold.id)).scalar_one()
        self.event_order.note(m.GoldLabelEvent, seq, newest)
        if moment is not None:  # the gold label and its newest history row keep their time
            self.session.execute(update(m.GoldLabel).where(m.GoldLabel.id == gold.id)
                                 .values(created_at=moment)
                                 .execution_options(synchronize_session=False))
            self.session.execute(update(m.GoldLabelEvent).where(m.GoldLabelEvent.id == newest)
                                 .values(created_at=moment)
                                 .execution_options(synchronize_session=False))
        return outcome

    def _replay_gold_history(self, generation_id: int, history) -> None:
        """A gold label new to this database gets its earlier versions first, oldest first,
        each by its own adjudicator at its own time (a move keeps the gold label history)."""
        if not isinstance(history, list):
            raise Reject("expected a list of earlier gold labels", "history")
        for i, event in enumerate(history):
            where = f"history[{i}]."
            if not isinstance(event, dict) or not isinstance(event.get("adjudicator"), str):
                raise Reject("expected an object with an 'adjudicator'", where[:-1])
            past = self._label({**event, "status": "done"}, prefix=where)
            self._store_gold(generation_id, self.annotator_id(event["adjudicator"],
                                                              where + "adjudicator"),
                             past, event, "created", where, history_seq(event, where + "seq"))
