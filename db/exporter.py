"""Export everything in the database as project records (db/FORMAT.md): files, targets,
generations, annotators, assignments, annotations with codes, history and the lead's answer to
a flag, gold labels with their history, metric runs and scores, noise samples, judge runs,
responses and verdicts, label plans with their generations' probabilities and draws, with the
times labels were made. Password hashes only on request (a trusted migration); sign-in sessions
never. Each history entry carries `seq`, its place among all history rows of its table in the
order they were saved, so that an import gives them ids in that order (a move keeps their ids).

The folder is written whole or not at all (`nlce.outputs.output_set`): the files go into a new
hidden folder beside it (readable by its owner only), which then takes the folder's place; a
failed or killed export leaves the previous folder as it was, and the next export removes what a
killed one left.

`export_records` yields plain dicts in dependency order, so `db.importer` reads them back; the
files are one JSONL file, or one parquet table per record type.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Iterator

from sqlalchemy import select
from sqlmodel import Session

from db import models as m
from db.formats import FORMAT_VERSION, RECORD_FIELDS, RECORD_TYPES
from nlce.outputs import check_output_folder, output_set

JSONL_NAME = "export.jsonl"
# what an export folder holds (either format): anything else there is refused, not replaced
OWNED = (JSONL_NAME, "*.parquet")


def _by_id(session: Session, model) -> list:
    return list(session.execute(select(model).order_by(model.id)).scalars())


def _iso(moment) -> str | None:
    return moment.isoformat() if moment else None


def export_records(session: Session, include_password_hashes: bool = False) -> Iterator[dict]:
    """Every row of the database as a project record, in dependency order. Password hashes
    only with `include_password_hashes` (the file is then as secret as the database)."""
    datasets = {d.id: d for d in _by_id(session, m.Dataset)}
    for d in datasets.values():
        yield {"type": "dataset", "name": d.name, "description": d.description,
               "created_at": _iso(d.created_at)}

    files = {}
    for f in _by_id(session, m.SourceFile):
        files[f.id] = {"dataset": datasets[f.dataset_id].name, "repo": f.repo, "path": f.path}
        yield {"type": "file", **files[f.id], "natural_language": f.natural_language,
               "programming_language": f.programming_language, "licence": f.licence,
               "external_id": f.external_id, "content": f.content}

    targets = {}
    for t in _by_id(session, m.Target):
        if t.source_file_id is None:  # a pairs item, without a file
            targets[t.id] = {"dataset": datasets[t.dataset_id].name, "item": t.external_id}
            yield {"type": "target", **targets[t.id], "original_comment": t.original_comment,
                   "comment_kind": t.comment_kind, "natural_language": t.natural_language,
                   "context": t.context}
            continue
        targets[t.id] = {**files[t.source_file_id], "span": [t.span_start, t.span_end]}
        yield {"type": "target", **targets[t.id], "original_comment": t.original_comment,
               "comment_kind": t.comment_kind}

    generations = {}
    for g in _by_id(session, m.Generation):
        generations[g.id] = {**targets[g.target_id], "model": g.model}
        yield {"type": "generation", **generations[g.id], "fim_input": g.fim_input,
               "raw_output": g.raw_output, "predicted_comment": g.predicted_comment,
               "backend": g.backend, "params": g.params or {}, "created_at": _iso(g.created_at)}

    annotators = {}
    for a in _by_id(session, m.Annotator):
        annotators[a.id] = a.username
        record = {"type": "annotator", "username": a.username, "role": a.role,
                  "languages": list(a.languages or []), "display_name": a.display_name,
                  "interface_language": a.interface_language, "active": bool(a.active),
                  "created_at": _iso(a.created_at)}
        if include_password_hashes:  # the key always, so every parquet row has the column
            record["password_hash"] = a.password_hash
        yield record

    for s in _by_id(session, m.Assignment):
        yield {"type": "assignment", **generations[s.generation_id],
               "annotator": annotators[s.annotator_id], "position": s.position,
               "created_at": _iso(s.created_at)}

    codes = defaultdict(list)
    for annotation_id, code in session.execute(
            select(m.AnnotationCode.annotation_id, m.AnnotationCode.code)
            .order_by(m.AnnotationCode.annotation_id, m.AnnotationCode.code)):
        codes[annotation_id].append(code)
    history = defaultdict(list)
    events = _by_id(session, m.AnnotationEvent)
    for seq, e in sorted(enumerate(events), key=lambda p: (p[1].annotation_id, p[1].revision,
                                                           p[0])):
        history[e.annotation_id].append({
            "revision": e.revision, "accuracy": e.accuracy, "codes": list(e.codes or []),
            "note": e.note, "seconds_spent": e.seconds_spent, "status": e.status,
            "created_at": _iso(e.created_at), "seq": seq})
    replies = {r.annotation_id: {"text": r.text, "lead": annotators[r.lead_id],
                                 "created_at": _iso(r.created_at)}
               for r in _by_id(session, m.FlagReply)}
    for a in _by_id(session, m.Annotation):
        yield {"type": "annotation", **generations[a.generation_id],
               "annotator": annotators[a.annotator_id], "accuracy": a.accuracy,
               "codes": codes[a.id], "note": a.note, "seconds_spent": a.seconds_spent,
               "status": a.status, "revision": a.revision, "history": history[a.id],
               "reply": replies.get(a.id), "created_at": _iso(a.created_at),
               "updated_at": _iso(a.updated_at)}

    gold_codes = defaultdict(list)
    for gold_id, code in session.execute(
            select(m.GoldLabelCode.gold_label_id, m.GoldLabelCode.code)
            .order_by(m.GoldLabelCode.gold_label_id, m.GoldLabelCode.code)):
        gold_codes[gold_id].append(code)
    gold_history = defaultdict(list)
    for seq, e in enumerate(_by_id(session, m.GoldLabelEvent)):  # in id order, per gold label
        gold_history[e.gold_label_id].append({
            "adjudicator": annotators[e.adjudicator_id], "accuracy": e.accuracy,
            "codes": list(e.codes or []), "note": e.note, "created_at": _iso(e.created_at),
            "seq": seq})
    for g in _by_id(session, m.GoldLabel):
        yield {"type": "gold_label", **generations[g.generation_id],
               "adjudicator": annotators[g.adjudicator_id], "accuracy": g.accuracy,
               "codes": gold_codes[g.id], "note": g.note, "history": gold_history[g.id],
               "created_at": _iso(g.created_at)}

    metric_runs = {}
    for r in _by_id(session, m.MetricRun):
        metric_runs[r.id] = r.signature
        yield {"type": "metric_run", "signature": r.signature, "metric": r.metric,
               "model": r.model, "layer": r.layer, "tokenizer": r.tokenizer,
               "context": r.context, "noise": r.noise, "seed": r.seed, "params": r.params or {},
               "library_versions": r.library_versions or {}, "created_at": _iso(r.created_at)}

    noise = {}
    for n in _by_id(session, m.NoiseSample):
        noise[n.id] = (targets[n.target_id], {"kind": n.kind, "tokenizer": n.tokenizer,
                                              "seed": n.seed})
        yield {"type": "noise_sample", **targets[n.target_id], "kind": n.kind,
               "tokenizer": n.tokenizer, "seed": n.seed, "text": n.text}

    for s in _by_id(session, m.MetricScore):
        if s.generation_id is not None:
            subject = {**generations[s.generation_id], "noise": None}
        else:
            target, key = noise[s.noise_sample_id]
            subject = {**target, "model": None, "noise": key}
        yield {"type": "metric_score", "run": metric_runs[s.run_id], **subject,
               "precision": s.precision, "recall": s.recall, "f": s.f, "error": s.error,
               "details": s.details or {}}

    judge_runs = {}
    for r in _by_id(session, m.JudgeRun):
        judge_runs[r.id] = r.signature
        yield {"type": "judge_run", "signature": r.signature, "model": r.model,
               "backend": r.backend, "strategy": r.strategy, "prompt_language": r.prompt_language,
               "prompt_version": r.prompt_version, "params": r.params or {},
               "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
               "cost_usd": r.cost_usd, "created_at": _iso(r.created_at)}
    for r in _by_id(session, m.JudgeResponse):
        yield {"type": "judge_response", "run": judge_runs[r.run_id], **targets[r.target_id],
               "cluster": r.cluster, "order": list(r.order or []), "status": r.status,
               "raw_response": r.raw_response, "repairs": list(r.repairs or []),
               "error": r.error, "prompt_tokens": r.prompt_tokens,
               "completion_tokens": r.completion_tokens, "latency_s": r.latency_s,
               "cached": bool(r.cached), "created_at": _iso(r.created_at)}
    for v in _by_id(session, m.JudgeVerdict):
        yield {"type": "judge_verdict", "run": judge_runs[v.run_id], **generations[v.generation_id],
               "status": v.status, "accuracy": v.accuracy, "codes": list(v.codes or []),
               "position": v.position, "created_at": _iso(v.created_at)}
    for b in _by_id(session, m.JudgeBatch):  # requests name their targets by key, not by id
        requests = {cid: {"target": targets[r["target_id"]],
                          **{k: v for k, v in r.items() if k != "target_id"}}
                    for cid, r in (b.requests or {}).items()}
        yield {"type": "judge_batch", "run": judge_runs[b.run_id], "submission": b.submission,
               "batch_id": b.batch_id, "input_file_id": b.input_file_id,
               "output_file_id": b.output_file_id, "error_file_id": b.error_file_id,
               "status": b.status, "requests": requests, "counts": b.counts or {},
               "error": b.error, "created_at": _iso(b.created_at),
               "finished_at": _iso(b.finished_at)}

    plans = {}
    for p in _by_id(session, m.LabelPlan):
        plans[p.id] = p.name
        yield {"type": "label_plan", "name": p.name, "dataset": datasets[p.dataset_id].name,
               "run": judge_runs[p.judge_run_id], "predictor": p.predictor,
               "estimand": p.estimand, "language": p.language, "budget": p.budget,
               "min_probability": p.min_probability, "seed": p.seed, "method": p.method,
               "label_policy": p.label_policy, "target_width": p.target_width,
               "compare": p.compare or {}, "created_at": _iso(p.created_at)}
    for i in session.execute(select(m.LabelPlanItem).order_by(
            m.LabelPlanItem.plan_id, m.LabelPlanItem.generation_id)).scalars():
        yield {"type": "label_plan_item", "plan": plans[i.plan_id],
               **generations[i.generation_id], "pilot": bool(i.pilot),
               "predictor_value": i.predictor_value, "probability": i.probability,
               "drawn": bool(i.drawn)}


def export_jsonl(session: Session, out_dir: str | Path, include_password_hashes: bool = False
                 ) -> tuple[Path, dict[str, int]]:
    """Write `<out_dir>/export.jsonl`; returns its path and the count per record type."""
    out_dir, counts = Path(out_dir), {}
    with output_set(out_dir, OWNED, private=True) as folder, \
            open(folder / JSONL_NAME, "w", encoding="utf-8") as handle:
        for record in export_records(session, include_password_hashes):
            counts[record["type"]] = counts.get(record["type"], 0) + 1
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return out_dir / JSONL_NAME, counts


def _json_columns(kind: str) -> set[str]:
    return {f for f, k in RECORD_FIELDS[kind].items() if k.rstrip("!?") == "json"}


def export_parquet(session: Session, out_dir: str | Path, include_password_hashes: bool = False
                   ) -> tuple[Path, dict[str, int]]:
    """Write `<out_dir>/<type>.parquet` per record type present. Free-form JSON fields (params,
    details, history, judge codes, ...) are stored as JSON text columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_dir = Path(out_dir)
    check_output_folder(out_dir, OWNED)  # before reading the whole database
    rows: dict[str, list[dict]] = defaultdict(list)
    for record in export_records(session, include_password_hashes):
        kind = record.pop("type")
        as_json = _json_columns(kind)
        rows[kind].append({k: (json.dumps(v, ensure_ascii=False) if k in as_json and v is not None
                               else v) for k, v in record.items()})
    counts = {}
    with output_set(out_dir, OWNED, private=True) as folder:
        for kind in RECORD_TYPES:
            if not rows.get(kind):
                continue
            # every column any row has (a pairs target has no repo, a file target no item): the
            # schema of the first row alone would drop the others' fields
            columns = list(dict.fromkeys(name for row in rows[kind] for name in row))
            table = pa.Table.from_pylist([{name: row.get(name) for name in columns}
                                          for row in rows[kind]])
            table = table.replace_schema_metadata({"nlce_format_version": str(FORMAT_VERSION),
                                                   "nlce_record_type": kind})
            pq.write_table(table, folder / f"{kind}.parquet")
            counts[kind] = len(rows[kind])
    return out_dir, counts
