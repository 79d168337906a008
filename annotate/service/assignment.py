"""Who labels what: planning and storing assignments, taking back untouched items, and the
team's progress per annotator and language."""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Sequence

from sqlalchemy import and_, delete, func, select
from sqlmodel import Session

from annotate.service.accounts import Operator, _check_languages, all_annotators, require_role
from annotate.service.errors import AnnotateError
from annotate.service.queue import Progress
from db import models as m
from db.targets import TARGET_LANGUAGE, with_source


@dataclass(frozen=True)
class ItemRef:
    generation_id: int
    language: str
    model: str


def plan_assignments(items: Sequence[ItemRef], annotators: Sequence[tuple[int, Sequence[str]]],
                     *, per_item: int = 1, strategy: str = "random", seed: int = 0,
                     existing: dict[int, set[int]] | None = None,
                     load: dict[int, int] | None = None) -> list[tuple[int, int]]:
    """Which annotator gets which item: (generation_id, annotator_id) pairs in queue order.

    Each item goes to `per_item` different annotators who speak its language (counting those
    it already has in `existing`), always to the least-loaded ones (ties broken by the seed).
    `random` shuffles the items; `stratified` interleaves them by (language, model) so every
    queue gets an even mix of models from the first item on. Same inputs, same plan."""
    if per_item < 1:
        raise AnnotateError("per_item must be at least 1")
    if strategy not in ("random", "stratified"):
        raise AnnotateError(f"unknown strategy {strategy!r}; expected random or stratified")
    rng = random.Random(seed)
    ordered = sorted(items, key=lambda it: it.generation_id)
    if strategy == "random":
        rng.shuffle(ordered)
    else:
        strata: dict[tuple[str, str], list[ItemRef]] = defaultdict(list)
        for item in ordered:
            strata[(item.language, item.model)].append(item)
        for bucket in strata.values():
            rng.shuffle(bucket)
        keys = sorted(strata)
        ordered = []
        for k in range(max((len(b) for b in strata.values()), default=0)):
            for key in keys:
                if k < len(strata[key]):
                    ordered.append(strata[key][k])
    existing = existing or {}
    load = Counter(load or {})
    tiebreak = {aid: rng.random() for aid, _ in annotators}
    speakers: dict[str, list[int]] = defaultdict(list)
    for aid, langs in annotators:
        for lang in langs:
            speakers[lang].append(aid)
    plan: list[tuple[int, int]] = []
    for item in ordered:
        have = existing.get(item.generation_id, set())
        need = per_item - len(have)
        candidates = [a for a in speakers.get(item.language, []) if a not in have]
        candidates.sort(key=lambda a: (load[a], tiebreak[a]))
        for aid in candidates[:max(0, need)]:
            plan.append((item.generation_id, aid))
            load[aid] += 1
    return plan


@dataclass(frozen=True)
class Shortfall:
    """Items of one language that got fewer annotators than asked for, and why."""
    language: str
    items: tuple[int, ...]  # generation ids
    wanted: int  # annotators per item asked for
    speakers: int  # chosen annotators who speak the language

    def sentence(self) -> str:
        ids = ", ".join(f"#{g}" for g in self.items[:10]) + (" ..." if len(self.items) > 10
                                                              else "")
        return (f"{len(self.items)} {self.language} item(s) have fewer than {self.wanted} "
                f"annotators ({ids}): only {self.speakers} of the chosen annotators speak "
                f"{self.language}")


@dataclass(frozen=True)
class Assigned:
    added: int
    short: tuple[Shortfall, ...] = ()


def assign(session: Session, *, acting: int | Operator, **choice) -> int:
    """`assign_items`, returning only how many assignments were added."""
    return assign_items(session, acting=acting, **choice).added


def assign_items(session: Session, *, acting: int | Operator,
                 annotator_ids: Sequence[int] | None = None,
                 languages: Sequence[str] | None = None, models: Sequence[str] | None = None,
                 per_item: int = 1, strategy: str = "random", seed: int = 0,
                 limit: int | None = None) -> Assigned:
    """Add assignments for the chosen items (by language and model) to the chosen annotators;
    existing assignments are kept and count towards `per_item`. Returns how many were added
    and, per language, the items left with fewer than `per_item` annotators (too few of the
    chosen annotators speak it). A lead action."""
    require_role(session, acting, "assign")
    # Default: every annotator and expert; a lead labels only when chosen explicitly.
    people = [a for a in all_annotators(session) if a.languages and (
        a.id in annotator_ids if annotator_ids is not None else not a.is_lead)]
    if not people:
        raise AnnotateError("no annotators to assign to (accounts need at least one language)")
    langs = _check_languages(languages) if languages else None
    stmt = with_source(select(m.Generation.id, TARGET_LANGUAGE, m.Generation.model)
                       .join(m.Target, m.Target.id == m.Generation.target_id)
                       ).order_by(m.Generation.id)
    if langs:
        stmt = stmt.where(TARGET_LANGUAGE.in_(langs))
    if models:
        stmt = stmt.where(m.Generation.model.in_(list(models)))
    items = [ItemRef(*row) for row in session.exec(stmt).all()]
    if limit is not None:
        items = random.Random(seed).sample(items, min(limit, len(items))) if limit < len(
            items) else items
    existing: dict[int, set[int]] = defaultdict(set)
    for gid, aid in session.exec(select(m.Assignment.generation_id, m.Assignment.annotator_id)):
        existing[gid].add(aid)
    load = Counter(aid for holders in existing.values() for aid in holders)
    plan = plan_assignments(items, [(a.id, a.languages) for a in people], per_item=per_item,
                            strategy=strategy, seed=seed, existing=existing, load=load)
    add_assignments(session, plan)
    return Assigned(len(plan), shortfalls(items, plan, existing, people, per_item))


def add_assignments(session: Session, plan: Sequence[tuple[int, int]]) -> None:
    """Store (generation_id, annotator_id) pairs at the end of each annotator's queue, in order."""
    next_position: dict[int, int] = dict(session.exec(
        select(m.Assignment.annotator_id, func.max(m.Assignment.position))
        .group_by(m.Assignment.annotator_id)).all())
    for gid, aid in plan:
        position = next_position.get(aid, -1) + 1
        next_position[aid] = position
        session.add(m.Assignment(generation_id=gid, annotator_id=aid, position=position))
    session.flush()


def shortfalls(items: Sequence[ItemRef], plan: Sequence[tuple[int, int]],
               existing: dict[int, set[int]], people: Sequence, per_item: int
               ) -> tuple[Shortfall, ...]:
    """Per language, the items that hold fewer than `per_item` annotators after `plan`."""
    holders = {item.generation_id: set(existing.get(item.generation_id, ())) for item in items}
    for gid, aid in plan:
        holders[gid].add(aid)
    short: dict[str, list[int]] = defaultdict(list)
    for item in items:
        if len(holders[item.generation_id]) < per_item:
            short[item.language].append(item.generation_id)
    return tuple(Shortfall(lang, tuple(sorted(gids)), per_item,
                           sum(1 for p in people if lang in p.languages))
                 for lang, gids in sorted(short.items()))


def models_to_assign(session: Session, *, acting: int | Operator) -> list[str]:
    """The model names the generations carry, sorted (the Assign page's choice; a lead
    action)."""
    require_role(session, acting, "assign")
    return sorted(session.exec(select(m.Generation.model).distinct()).scalars().all())


def unassign_open(session: Session, annotator_id: int, *, acting: int | Operator) -> int:
    """Take back an annotator's items they have not touched (their labels stay; a lead action)."""
    require_role(session, acting, "unassign")
    touched = select(m.Annotation.generation_id).where(m.Annotation.annotator_id == annotator_id)
    result = session.exec(delete(m.Assignment).where(
        m.Assignment.annotator_id == annotator_id, m.Assignment.generation_id.not_in(touched)))
    return int(result.rowcount or 0)


def team_progress(session: Session, *, acting: int | Operator) -> list[dict]:
    """One row per annotator and language: assigned, done, draft, skipped, flagged, remaining,
    and the median seconds per finished item in that language. Aggregate queries, whatever the
    queue sizes.
    A lead action."""
    require_role(session, acting, "team_progress")
    stmt = (with_source(select(m.Annotator.username, m.Annotator.role, TARGET_LANGUAGE,
                               m.Annotation.status, func.count())
                        .select_from(m.Assignment)
                        .join(m.Annotator, m.Annotator.id == m.Assignment.annotator_id)
                        .join(m.Generation, m.Generation.id == m.Assignment.generation_id)
                        .join(m.Target, m.Target.id == m.Generation.target_id))
            .outerjoin(m.Annotation, and_(m.Annotation.generation_id == m.Assignment.generation_id,
                                          m.Annotation.annotator_id == m.Assignment.annotator_id))
            .group_by(m.Annotator.username, m.Annotator.role, TARGET_LANGUAGE,
                      m.Annotation.status))
    counts: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for user, role, lang, status, n in session.exec(stmt).all():
        counts[(user, role, lang)]["assigned"] += n
        if status:
            counts[(user, role, lang)][status] += n
    seconds: dict[tuple[str, str], list[float]] = defaultdict(list)  # (user, language)
    for user, lang, spent in session.exec(
            with_source(select(m.Annotator.username, TARGET_LANGUAGE, m.Annotation.seconds_spent)
                        .join(m.Annotator, m.Annotator.id == m.Annotation.annotator_id)
                        .join(m.Generation, m.Generation.id == m.Annotation.generation_id)
                        .join(m.Target, m.Target.id == m.Generation.target_id))
            .where(m.Annotation.status == "done")).all():
        seconds[(user, lang)].append(float(spent or 0))
    rows = []
    for (user, role, lang), c in sorted(counts.items()):
        spent = sorted(seconds.get((user, lang), ()))
        p = Progress(c["assigned"], c["done"], c["draft"], c["skipped"], c["flagged"])
        rows.append({"annotator": user, "role": role, "language": lang, "assigned": p.assigned,
                     "done": p.done, "draft": p.draft, "skipped": p.skipped,
                     "flagged": p.flagged, "remaining": p.remaining,
                     "median_seconds": spent[len(spent) // 2] if spent else None})
    return rows
