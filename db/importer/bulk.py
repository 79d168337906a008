"""The bulk path: the rows of a large import (release tables, pairs) written with a few
multi-row statements instead of one ORM round trip per record.

Same outcome as the per-record writer: the same checks (languages, spans, labels through
`db.annotations.check_label`, unknown annotators, a file already stored with other content), the
same natural keys and counts (created / updated / unchanged), and labels with their history:
a label new to the database is inserted by `db.annotations.insert_new_annotations` (revision 1,
its codes, one `annotation_event`); a label that changes a stored one goes through
`save_annotation`, exactly as a per-record import would.

`add` checks one row's records against what the database and the earlier rows hold and keeps
them (a refused row is a problem at its location, and none of its records are kept); `flush`
writes everything kept.
"""
from __future__ import annotations

from sqlalchemy import insert, select

from db import models as m
from db.annotations import (
    AnnotationError,
    annotation_codes_of,
    check_label,
    insert_new_annotations,
    save_annotation,
)
from db.formats import FormatError, check_language, sha256_text
from db.importer.errors import Reject
from db.importer.records import RecordWriter

_FILE_FIELDS = ("natural_language", "programming_language", "licence", "external_id")
_GENERATION_FIELDS = ("fim_input", "raw_output", "predicted_comment", "backend")


class BulkWriter:
    """Keeps checked rows, then writes them all at once (see the module docstring)."""

    def __init__(self, writer: RecordWriter):
        self.writer, self.session = writer, writer.session
        self.stats, self.problems = writer.stats, writer.problems
        self._datasets: dict[str, int] = {}
        self._stored_files: dict[int, dict[tuple, dict]] = {}  # dataset id -> (repo, path) -> row
        self.files: dict[tuple, dict] = {}  # (dataset, repo, path) -> values
        self.targets: dict[tuple, dict] = {}  # file key + (start, end), or ("item", ds, id)
        self.generations: dict[tuple, dict] = {}  # target key + (model,)
        self.labels: dict[tuple, list] = {}  # generation key + (annotator id,) -> [labels]

    # ------------------------------------------------------------------ checking rows
    def add(self, source: str, location: str, records: list[dict]) -> None:
        """Check one row's records and keep them, or note the problem and keep none."""
        kept = ({}, {}, {}, {})
        try:
            for record in records:
                getattr(self, f"_add_{record['type']}")(record, kept)
        except (FormatError, Reject) as error:
            self.problems.add(source, location, error.field, error.message)
            return
        except AnnotationError as error:
            self.problems.add(source, location, None, str(error))
            return
        for mine, found in zip((self.files, self.targets, self.generations), kept[:3]):
            mine.update(found)
        for key, label in kept[3].items():
            self.labels.setdefault(key, []).append(label)

    def _dataset_id(self, name: str) -> int:
        if name not in self._datasets:
            self._datasets[name] = self.writer.dataset_id(name, create=False)
            self._stored_files[self._datasets[name]] = {
                (row.repo, row.path): row._asdict() for row in self.session.execute(
                    select(m.SourceFile.id, m.SourceFile.repo, m.SourceFile.path,
                           m.SourceFile.content_sha256, *[getattr(m.SourceFile, f)
                                                          for f in _FILE_FIELDS])
                    .where(m.SourceFile.dataset_id == self._datasets[name]))}
        return self._datasets[name]

    def _add_file(self, rec: dict, kept) -> None:
        key = (rec["dataset"], rec["repo"], rec["path"])
        stored = self._stored_files[self._dataset_id(rec["dataset"])].get(key[1:])
        digest = sha256_text(rec["content"])
        earlier = self.files.get(key) or kept[0].get(key)
        other = earlier["content_sha256"] if earlier else stored and stored["content_sha256"]
        if other and other != digest:
            raise Reject(f"file {rec['repo']}/{rec['path']} is already in dataset "
                         f"{rec['dataset']!r} with different content; its targets' spans would "
                         f"no longer fit (import it under another dataset or path)", "content")
        values = {"natural_language": check_language(rec["natural_language"]),
                  "content": rec["content"], "content_sha256": digest}
        values.update({f: rec[f] for f in _FILE_FIELDS[1:] if f in rec})
        kept[0][key] = values

    def _file_content(self, key: tuple, kept) -> str:
        values = kept[0].get(key) or self.files.get(key)
        if values is None:
            raise Reject(f"file {key[1]}/{key[2]} of dataset {key[0]!r} is unknown (a 'file' "
                         f"record must come first)", "path")
        return values["content"]

    def _add_target(self, rec: dict, kept) -> None:
        if rec.get("item") is not None:  # a pairs target
            key = ("item", rec["dataset"], rec["item"])
            self._dataset_id(rec["dataset"])
            values = {"original_comment": rec["original_comment"],
                      "natural_language": check_language(rec["natural_language"]),
                      "context": rec.get("context"), "span": (0, len(rec["original_comment"]))}
        else:
            file_key = (rec["dataset"], rec["repo"], rec["path"])
            content = self._file_content(file_key, kept)
            start, end = rec["span"]
            if end > len(content):
                raise Reject(f"span [{start}, {end}] lies beyond the end of the file "
                             f"({len(content)} characters)", "span")
            key = file_key + (start, end)
            values = {"original_comment": rec.get("original_comment", content[start:end]),
                      "span": (start, end)}
        if "comment_kind" in rec:
            values["comment_kind"] = rec["comment_kind"]
        earlier = self.targets.get(key)
        if earlier is not None and earlier["original_comment"] != values["original_comment"]:
            raise Reject(f"another text for this target on an earlier row: "
                         f"{earlier['original_comment']!r:.60}", "original_comment"
                         if key[0] != "item" else "reference")
        kept[1][key] = values

    @staticmethod
    def target_key(rec: dict) -> tuple:
        if rec.get("item") is not None:
            return ("item", rec["dataset"], rec["item"])
        return (rec["dataset"], rec["repo"], rec["path"], *rec["span"])

    def _add_generation(self, rec: dict, kept) -> None:
        target = self.target_key(rec)
        if target not in kept[1] and target not in self.targets:
            raise Reject("no target for this generation (a 'target' record must come first)",
                         "span")
        values = {f: rec[f] for f in _GENERATION_FIELDS if f in rec}
        if rec.get("params") is not None:
            values["params"] = rec["params"]
        earlier = self.generations.get(target + (rec["model"],))
        if earlier is not None and earlier != values:
            raise Reject(f"another prediction of model {rec['model']!r} for this target on an "
                         f"earlier row", "model")
        kept[2][target + (rec["model"],)] = values

    def _add_annotation(self, rec: dict, kept) -> None:
        if rec.get("history"):
            raise Reject("the bulk path takes no label history", "history")
        key = self.target_key(rec) + (rec["model"],)
        if key not in kept[2] and key not in self.generations:
            raise Reject(f"no generation of model {rec['model']!r} for that target (a "
                         f"'generation' record must come first)", "model")
        annotator_id = self.writer.annotator_id(rec["annotator"], "annotator")
        try:
            accuracy = self.writer._accuracy(rec.get("accuracy"))
            label = check_label(accuracy, self.writer._codes(rec.get("codes")),
                                status=rec.get("status", "done"), note=rec.get("note", ""),
                                seconds_spent=rec.get("seconds_spent", 0.0),
                                note_limit=self.writer.limits.text)
        except AnnotationError as error:
            raise Reject(str(error), "accuracy") from None
        kept[3][key + (annotator_id,)] = label

    # ------------------------------------------------------------------ writing
    def _insert(self, table, rows: list[dict]) -> None:
        if rows:
            self.session.execute(insert(table), rows)

    def flush(self) -> None:
        """Write every kept row: new ones in multi-row inserts, changed ones one by one."""
        now = m.utcnow()
        file_ids = self._write_files(now)
        target_ids = self._write_targets(file_ids)
        generation_ids = self._write_generations(target_ids, now)
        self._write_labels(generation_ids)
        self.files, self.targets, self.generations, self.labels = {}, {}, {}, {}

    def _write_files(self, now) -> dict[tuple, int]:
        ids, new = {}, []
        for key, values in self.files.items():
            dataset_id = self._dataset_id(key[0])
            stored = self._stored_files[dataset_id].get(key[1:])
            if stored is None:
                new.append({"dataset_id": dataset_id, "repo": key[1], "path": key[2],
                            "licence": "", "programming_language": "", "external_id": None,
                            **values})
                continue
            ids[key] = stored["id"]
            self._apply_changes(m.SourceFile, "file", stored["id"], {
                f: v for f, v in values.items() if f not in ("content",) and stored.get(f) != v})
        self._insert(m.SourceFile.__table__, new)
        self.stats.add("file", "created", len(new))
        for dataset_id in {self._datasets[k[0]] for k in self.files}:
            for row in self.session.execute(select(m.SourceFile.id, m.SourceFile.repo,
                                                   m.SourceFile.path)
                                            .where(m.SourceFile.dataset_id == dataset_id)):
                ids.setdefault((self._name_of(dataset_id), row.repo, row.path), row.id)
        return ids

    def _name_of(self, dataset_id: int) -> str:
        return next(name for name, i in self._datasets.items() if i == dataset_id)

    def _stored_targets(self, file_ids: dict) -> dict[tuple, tuple]:
        """(key) -> (id, original_comment, comment_kind) of the stored targets concerned."""
        by_file = {i: key for key, i in file_ids.items()}
        found = {}
        if by_file:
            for row in self.session.execute(
                    select(m.Target.id, m.Target.source_file_id, m.Target.span_start,
                           m.Target.span_end, m.Target.original_comment, m.Target.comment_kind)
                    .join(m.SourceFile, m.SourceFile.id == m.Target.source_file_id)
                    .where(m.SourceFile.dataset_id.in_(set(self._datasets.values())))):
                if row.source_file_id in by_file:
                    found[by_file[row.source_file_id] + (row.span_start, row.span_end)] = row
        for row in self.session.execute(
                select(m.Target.id, m.Target.dataset_id, m.Target.external_id,
                       m.Target.original_comment, m.Target.comment_kind,
                       m.Target.natural_language, m.Target.context)
                .where(m.Target.dataset_id.in_(set(self._datasets.values())))):
            found[("item", self._name_of(row.dataset_id), row.external_id)] = row
        return found

    def _write_targets(self, file_ids: dict) -> dict[tuple, int]:
        stored, new, ids = self._stored_targets(file_ids), [], {}
        for key, values in self.targets.items():
            start, end = values["span"]
            fields = {k: v for k, v in values.items() if k != "span"}
            row = stored.get(key)
            if row is None:
                owner = ({"dataset_id": self._datasets[key[1]], "external_id": key[2],
                          "source_file_id": None} if key[0] == "item" else
                         {"source_file_id": file_ids[key[:3]], "dataset_id": None,
                          "external_id": None, "natural_language": None, "context": None})
                new.append({"span_start": start, "span_end": end, "comment_kind": "",
                            **owner, **fields})
                continue
            ids[key] = row.id
            self._apply_changes(m.Target, "target", row.id,
                                {f: v for f, v in fields.items() if getattr(row, f) != v})
        self._insert(m.Target.__table__, [{"natural_language": None, "context": None, **row}
                                          for row in new])
        self.stats.add("target", "created", len(new))
        if new:
            for key, row in self._stored_targets(file_ids).items():
                ids.setdefault(key, row.id)
        return ids

    def _apply_changes(self, model, kind: str, row_id: int, changed: dict) -> None:
        """Write the fields that differ to a stored row; counted as updated or unchanged."""
        if changed:
            row = self.session.get(model, row_id)
            for name, value in changed.items():
                setattr(row, name, value)
        self.stats.add(kind, "updated" if changed else "unchanged")

    def _write_generations(self, target_ids: dict, now) -> dict[tuple, int]:
        wanted = {target_ids[k[:-1]] for k in self.generations}
        stored = self._stored_generations(wanted)
        new, ids = [], {}
        for key, values in self.generations.items():
            target_id = target_ids[key[:-1]]
            row = stored.get((target_id, key[-1]))
            if row is None:
                new.append({"target_id": target_id, "model": key[-1], "fim_input": "",
                            "raw_output": "", "predicted_comment": "", "backend": "",
                            "params": {}, "created_at": now, **values})
                continue
            ids[key] = row.id
            self._apply_changes(m.Generation, "generation", row.id,
                                {f: v for f, v in values.items() if getattr(row, f) != v})
        self._insert(m.Generation.__table__, new)
        self.stats.add("generation", "created", len(new))
        if new:
            stored = self._stored_generations(wanted)
        for key in self.generations:
            ids.setdefault(key, stored[(target_ids[key[:-1]], key[-1])].id)
        return ids

    def _stored_generations(self, target_ids: set[int]) -> dict[tuple, object]:
        found = {}
        for chunk in chunks(sorted(target_ids)):
            for row in self.session.execute(
                    select(m.Generation.id, m.Generation.target_id, m.Generation.model,
                           m.Generation.params, *[getattr(m.Generation, f)
                                                  for f in _GENERATION_FIELDS])
                    .where(m.Generation.target_id.in_(chunk))):
                found[(row.target_id, row.model)] = row
        return found

    def _write_labels(self, generation_ids: dict) -> None:
        self.session.flush()
        keyed = {(generation_ids[key[:-1]], key[-1]): labels
                 for key, labels in self.labels.items()}
        stored = {}
        for chunk in chunks(sorted({g for g, _ in keyed})):
            for row in self.session.execute(select(m.Annotation).where(
                    m.Annotation.generation_id.in_(chunk))).scalars():
                stored[(row.generation_id, row.annotator_id)] = row
        codes = annotation_codes_of(self.session, [a.id for a in stored.values()])
        first_saves, later_saves = [], []
        for (generation_id, annotator_id), labels in keyed.items():
            current = stored.get((generation_id, annotator_id))
            if current is None:
                first_saves.append((generation_id, annotator_id, labels[0]))
                later = [b for a, b in zip(labels, labels[1:]) if _state(a) != _state(b)]
                self.stats.add("annotation", "created")
            else:
                state = (current.accuracy, tuple(sorted(codes.get(current.id, ()))),
                         current.note, current.seconds_spent, current.status)
                later = [label for label in labels if _state(label) != state]
                self.stats.add("annotation", "updated" if later else "unchanged")
            later_saves += [(generation_id, annotator_id, label) for label in later]
        insert_new_annotations(self.session, first_saves)
        for generation_id, annotator_id, label in later_saves:  # a new revision, as per record
            save_annotation(self.session, generation_id=generation_id,
                            annotator_id=annotator_id, accuracy=label.accuracy,
                            codes=label.codes, note=label.note,
                            seconds_spent=label.seconds_spent, status=label.status,
                            note_limit=self.writer.limits.text)


def _state(label) -> tuple:
    return (label.accuracy, tuple(sorted(label.codes)), label.note, label.seconds_spent,
            label.status)


def chunks(values: list, size: int = 900):
    """Slices small enough for an IN (...) list on every backend."""
    for at in range(0, len(values), size):
        yield values[at:at + size]
