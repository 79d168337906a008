"""The lead's review of finished labels: the label sets for analysis, disagreements and
adjudication into gold labels, which label counts per item (`resolve_labels`), and the
inter-annotator agreement per language."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

from sqlalchemy import select
from sqlmodel import Session

from annotate.service.accounts import Operator, require_role
from annotate.service.errors import LabelError
from annotate.service.labelling import _require_generation, validate_label
from db import models as m
from db.annotations import (
    AnnotationError,
    annotation_codes,
    get_annotation,
    save_annotation,
    save_gold_label,
)
from db.targets import TARGET_LANGUAGE, with_source


@dataclass(frozen=True)
class HumanLabel:
    generation_id: int
    language: str
    model: str
    annotator: str
    accuracy: str
    codes: tuple[str, ...]
    note: str = ""


def finished_labels(session: Session, *, acting: int | Operator, language: str | None = None,
                    include_expert: bool = True) -> list[HumanLabel]:
    """Every finished label (status done, accuracy set), for the lead's pages only. With
    include_expert=False the labels of accounts with role expert (imported expert labels) are
    left out: the team's raters only, as agreement and adjudication show by default."""
    require_role(session, acting, "read_labels")
    stmt = (with_source(select(m.Annotation.id, m.Annotation.generation_id, TARGET_LANGUAGE,
                               m.Generation.model, m.Annotator.username, m.Annotation.accuracy,
                               m.Annotation.note)
                        .join(m.Generation, m.Generation.id == m.Annotation.generation_id)
                        .join(m.Target, m.Target.id == m.Generation.target_id))
            .join(m.Annotator, m.Annotator.id == m.Annotation.annotator_id)
            .where(m.Annotation.status == "done", m.Annotation.accuracy.is_not(None))
            .order_by(m.Annotation.generation_id, m.Annotator.username))
    if language:
        stmt = stmt.where(TARGET_LANGUAGE == language)
    if not include_expert:
        stmt = stmt.where(m.Annotator.role != "expert")
    rows = session.exec(stmt).all()
    codes: dict[int, list[str]] = defaultdict(list)
    ids = [r[0] for r in rows]
    for chunk in range(0, len(ids), 900):  # stay under SQLite's bound-parameter limit
        part = ids[chunk:chunk + 900]
        for aid, code in session.exec(select(m.AnnotationCode.annotation_id, m.AnnotationCode.code)
                                      .where(m.AnnotationCode.annotation_id.in_(part))):
            codes[aid].append(code)
    return [HumanLabel(gid, lang, model, user, acc, tuple(sorted(codes[aid])), note or "")
            for aid, gid, lang, model, user, acc, note in rows]


def accuracy_matrix(labels: Sequence[HumanLabel]) -> tuple[list[str], list[int], list[list]]:
    """(annotators, generation ids, rows of labels-or-None per annotator) for items labelled by
    at least two annotators: the shape reliability statistics take."""
    by_item: dict[int, dict[str, str]] = defaultdict(dict)
    for label in labels:
        by_item[label.generation_id][label.annotator] = label.accuracy
    items = sorted(g for g, who in by_item.items() if len(who) >= 2)
    people = sorted({a for g in items for a in by_item[g]})
    return people, items, [[by_item[g].get(a) for g in items] for a in people]


# ------------------------------------------------------------------------------ adjudication

@dataclass(frozen=True)
class Disagreement:
    generation_id: int
    language: str
    model: str
    labels: tuple[HumanLabel, ...]
    kinds: tuple[str, ...]  # "accuracy" and/or "codes"
    gold: dict | None = None


def find_disagreements(labels: Sequence[HumanLabel], gold: dict[int, dict] | None = None,
                       *, include_resolved: bool = False) -> list[Disagreement]:
    """Items whose annotators differ on the accuracy label or on the codes."""
    gold = gold or {}
    by_item: dict[int, list[HumanLabel]] = defaultdict(list)
    for label in labels:
        by_item[label.generation_id].append(label)
    out = []
    for gid in sorted(by_item):
        group = by_item[gid]
        if len(group) < 2:
            continue
        kinds = []
        if len({l.accuracy for l in group}) > 1:
            kinds.append("accuracy")
        if len({l.codes for l in group}) > 1:
            kinds.append("codes")
        if not kinds or (gid in gold and not include_resolved):
            continue
        out.append(Disagreement(gid, group[0].language, group[0].model, tuple(group),
                                tuple(kinds), gold.get(gid)))
    return out


def item_for_review(session: Session, generation_id: int, *, acting: int | Operator):
    """The item as an annotator sees it (code around the comment, both comments, raw output),
    without anyone's label: for the lead's adjudication. None when it is gone."""
    from annotate.service.labelling import ItemView

    require_role(session, acting, "read_item")
    generation = session.get(m.Generation, generation_id)
    if generation is None:
        return None
    target = session.get(m.Target, generation.target_id)
    source = session.get(m.SourceFile, target.source_file_id) if target.source_file_id else None
    predicted, raw = generation.predicted_comment or "", generation.raw_output or ""
    place = (dict(language=target.natural_language or "", programming_language="",
                  path=target.external_id or "", content="", span_start=0, span_end=0,
                  is_pairs=True, context=target.context or "")
             if source is None else
             dict(language=source.natural_language,
                  programming_language=source.programming_language or "",
                  path=source.path or "", content=source.content or "",
                  span_start=target.span_start, span_end=target.span_end))
    return ItemView(generation_id=generation.id, model=generation.model,
                    original_comment=target.original_comment or "", predicted_comment=predicted,
                    raw_output=raw, model_wrote_nothing=not predicted.strip() and not raw.strip(),
                    **place)


def comment_pair(session: Session, generation_id: int, *, acting: int | Operator
                 ) -> tuple[str, str] | None:
    """(original comment, predicted comment) of a generation; None when it is gone. A lead
    action (annotators see only the items in their queue, through load_item)."""
    require_role(session, acting, "read_item")
    row = session.exec(select(m.Target.original_comment, m.Generation.predicted_comment)
                       .join(m.Target, m.Target.id == m.Generation.target_id)
                       .where(m.Generation.id == generation_id)).first()
    return (row[0] or "", row[1] or "") if row else None


def gold_labels(session: Session, *, acting: int | Operator) -> dict[int, dict]:
    """The adjudicated label per generation id (a lead action)."""
    require_role(session, acting, "read_gold")
    rows = session.exec(select(m.GoldLabel, m.Annotator.username)
                        .join(m.Annotator, m.Annotator.id == m.GoldLabel.adjudicator_id)).all()
    codes: dict[int, list[str]] = defaultdict(list)
    for gid, code in session.exec(select(m.GoldLabelCode.gold_label_id, m.GoldLabelCode.code)):
        codes[gid].append(code)
    return {g.generation_id: {"accuracy": g.accuracy, "codes": tuple(sorted(codes[g.id])),
                              "note": g.note, "adjudicator": user}
            for g, user in rows}


def gold_history(session: Session, generation_id: int, *, acting: int | Operator) -> list[dict]:
    """Every gold label an item has had, newest first (a lead action)."""
    require_role(session, acting, "read_gold")
    rows = session.exec(
        select(m.GoldLabelEvent, m.Annotator.username)
        .join(m.GoldLabel, m.GoldLabel.id == m.GoldLabelEvent.gold_label_id)
        .join(m.Annotator, m.Annotator.id == m.GoldLabelEvent.adjudicator_id)
        .where(m.GoldLabel.generation_id == generation_id)
        .order_by(m.GoldLabelEvent.id.desc())).all()
    return [{"accuracy": e.accuracy, "codes": " ".join(e.codes or ()), "note": e.note,
             "adjudicator": user, "saved": e.created_at} for e, user in rows]


def majority_label(labels: Sequence[HumanLabel]) -> tuple[str | None, tuple[str, ...]]:
    """The adjudication form's starting point: the accuracy more than half of the raters chose
    (None when there is no such majority: the lead decides) and the codes more than half of
    them chose."""
    half = len(labels) / 2
    votes: dict[str, int] = defaultdict(int)
    code_votes: dict[str, int] = defaultdict(int)
    for label in labels:
        votes[label.accuracy] += 1
        for code in set(label.codes):
            code_votes[code] += 1
    accuracy = next((a for a, n in votes.items() if n > half), None)
    return accuracy, tuple(sorted(c for c, n in code_votes.items() if n > half))


def adjudicate(session: Session, *, generation_id: int, adjudicator_id: int, accuracy: str,
               codes: Iterable[str], note: str = "") -> None:
    """Store the gold label for an item (the annotators' own labels stay untouched)."""
    _require_generation(session, generation_id)
    require_role(session, adjudicator_id, "adjudicate")
    if not accuracy:  # (check_label would speak of a 'done' annotation)
        raise LabelError("Not saved: a gold label needs an accuracy (correct, partial or "
                         "incorrect)")
    label = validate_label(accuracy, codes, note=note)
    try:
        save_gold_label(session, generation_id=generation_id, adjudicator_id=adjudicator_id,
                        accuracy=label.accuracy, codes=sorted(label.codes), note=label.note)
    except AnnotationError as error:
        raise LabelError(f"Not saved: {error}") from error


def accept_label(session: Session, *, generation_id: int, annotator_id: int,
                 acting: int | Operator) -> None:
    """Review queue: the annotator's finished label becomes the item's gold label (the label
    itself is not touched; the gold label history keeps what it replaces). A lead action."""
    lead = require_role(session, acting, "review_label")
    label = _finished(session, generation_id, annotator_id)
    adjudicate(session, generation_id=generation_id, adjudicator_id=lead.id if lead else acting,
               accuracy=label.accuracy, codes=annotation_codes(session, label.id),
               note=f"accepted: {session.get(m.Annotator, annotator_id).username}")


def reject_label(session: Session, *, generation_id: int, annotator_id: int, reason: str,
                 acting: int | Operator) -> None:
    """Review queue: the label goes back to its annotator, open again (status draft, as it
    was otherwise) with the lead's reason shown on the item. A lead action."""
    from annotate.service.flags import answer_flag

    require_role(session, acting, "review_label")
    label = _finished(session, generation_id, annotator_id)
    answer_flag(session, generation_id=generation_id, annotator_id=annotator_id, text=reason,
                acting=acting)
    save_annotation(session, generation_id=generation_id, annotator_id=annotator_id,
                    accuracy=label.accuracy, codes=annotation_codes(session, label.id),
                    note=label.note, seconds_spent=label.seconds_spent, status="draft")


def _finished(session: Session, generation_id: int, annotator_id: int) -> m.Annotation:
    label = get_annotation(session, generation_id, annotator_id)
    if label is None or label.status != "done" or label.accuracy is None:
        raise LabelError(f"Not saved: account #{annotator_id} has no finished label on item "
                         f"#{generation_id}")
    return label


@dataclass(frozen=True)
class ResolvedLabel:
    generation_id: int
    language: str
    model: str
    accuracy: str
    codes: tuple[str, ...]
    source: str  # "gold" | "single" | "agreed"


def resolve_labels(labels: Sequence[HumanLabel], gold: dict[int, dict]
                   ) -> tuple[list[ResolvedLabel], list[int]]:
    """One label per item for the summary tables, by the label policy SUMMARY_POLICY
    (`agreement.labels`: the gold label where adjudicated, else the annotators' label when there
    is one or they all agree). Returns the items left unresolved."""
    from agreement.labels import SUMMARY_POLICY, Gold, Vote, resolve

    first: dict[int, HumanLabel] = {}
    for label in labels:
        first.setdefault(label.generation_id, label)
    chosen = resolve([Vote(l.generation_id, l.annotator, "", l.accuracy, frozenset(l.codes))
                      for l in labels],
                     {g: Gold(v["accuracy"], frozenset(v["codes"])) for g, v in gold.items()
                      if g in first}, SUMMARY_POLICY)
    resolved, unresolved = [], []
    for gid in sorted(first):
        if gid not in chosen:
            unresolved.append(gid)
            continue
        r, item = chosen[gid], first[gid]
        source = r.source if r.source == "gold" else "single" if r.n_annotators == 1 else "agreed"
        resolved.append(ResolvedLabel(gid, item.language, item.model, r.accuracy,
                                      tuple(sorted(r.codes)), source))
    return resolved, unresolved


@dataclass
class LanguageAgreement:
    language: str
    raters: list[str]
    n_items: int  # items with at least two finished labels
    pairs: object  # DataFrame from agreement.statistics.pairwise_kappa
    alpha: float | None  # Krippendorff's alpha (ordinal) when more than two raters
    codes: object  # DataFrame: per code alpha (nominal, presence) and pairwise F1


def agreement_by_language(labels: Sequence[HumanLabel], codes: Sequence[str]
                          ) -> list[LanguageAgreement]:
    """Inter-annotator agreement per language, with the statistics of `align`:
    quadratically weighted kappa per pair, Krippendorff's alpha (ordinal) for more than two
    annotators, and per code the alpha of presence/absence and the mean pairwise F1."""
    import pandas as pd

    from agreement.statistics import code_precision_recall, krippendorff_alpha, pairwise_kappa

    out = []
    for lang in sorted({l.language for l in labels}):
        subset = [l for l in labels if l.language == lang]
        raters, items, matrix = accuracy_matrix(subset)
        by_rater: dict[str, dict[int, str]] = defaultdict(dict)
        code_sets: dict[str, dict[int, set]] = defaultdict(dict)
        for l in subset:
            if l.generation_id in items:
                by_rater[l.annotator][l.generation_id] = l.accuracy
                code_sets[l.annotator][l.generation_id] = set(l.codes)
        pairs = pairwise_kappa({r: by_rater[r] for r in raters})
        alpha = (krippendorff_alpha(matrix, level="ordinal") if len(raters) > 2 and items
                 else None)
        rows = []
        for code in codes:
            presence = [[(code in code_sets[r][g]) if g in code_sets[r] else None for g in items]
                        for r in raters]
            used = sum(1 for g in items if any(code in code_sets[r].get(g, ()) for r in raters))
            code_alpha = (krippendorff_alpha(presence, labels=[False, True], level="nominal")
                          if items and used else float("nan"))
            f1s = []
            for i, ra in enumerate(raters):
                for rb in raters[i + 1:]:
                    shared = [g for g in items if g in code_sets[ra] and g in code_sets[rb]]
                    if shared:
                        table = code_precision_recall([code_sets[ra][g] for g in shared],
                                                      [code_sets[rb][g] for g in shared], [code])
                        f1s.append(float(table.loc[code, "f1"]))
            valid = [f for f in f1s if f == f]
            rows.append({"code": code, "items_with_code": used, "alpha_nominal": code_alpha,
                         "mean_pair_f1": sum(valid) / len(valid) if valid else float("nan")})
        out.append(LanguageAgreement(lang, raters, len(items), pairs, alpha,
                                     pd.DataFrame(rows)))
    return out
