"""Label plans (issue 39): spend a label budget where a judge is least reliable, with estimates
that stay valid (`agreement.active`, Zrnic & Candes 2024). The one home of making a plan:
`python -m annotate.plan` and the Assign page's "assign by need" both call `draft_plan` (what
would be drawn), `store_plan` (the plan and all its generations, in the caller's transaction)
and `assign_plan` (the drawn generations into the queues of annotators who speak their
language); `plan_statuses` is the stop rule the Team page and `annotate.plan --status` show.

A plan covers one dataset (one language, or all) and one predictor (a judge run or jury, named
by its key as `align` names it, or by its run id). Its **pilot** is the slice's generations with
a human label (under the label policy) and an ok verdict; its **pool** the ones with an ok
verdict and no human label. Each pooled generation is drawn with probability proportional to the
judge's root mean squared error given its value, learned from the pilot (`error_scale`; uniform
without a pilot, or when asked), floored at the minimum probability, capped at 1 and summing to
the budget; the draw is seeded (same inputs and seed, same draws). Refusals are `PlanError`s,
whose message key lets the page say them in the lead's language.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
from sqlalchemy import and_, func, insert, select
from sqlmodel import Session

from agreement import active
from agreement.judges import OK, config_names
from agreement.labels import DEFAULT_POLICY, load_gold, load_votes, resolve
from agreement.plans import estimand_value
from agreement.statistics import encode_labels
from annotate import i18n
from annotate.service.accounts import Operator, all_annotators, require_role
from annotate.service.assignment import (
    Assigned,
    ItemRef,
    add_assignments,
    plan_assignments,
    shortfalls,
)
from annotate.service.errors import AnnotateError
from db import models as m
from db.targets import TARGET_DATASET_ID, TARGET_LANGUAGE, target_name, with_source
from nlce.cli import InputError
from taxonomy import ACCURACY_LABELS

ESTIMANDS = m.PLAN_ESTIMANDS
PLAN_COLUMNS = ["plan", "generation_id", "item_id", "model", "language", "predictor_value",
                "probability", "drawn"]
MAX_NAME = 200


class PlanError(AnnotateError):
    """A plan refused, nothing stored. `key` and `values` name its message in the app's
    catalogue (annotate/data/messages.yaml); the text is the English one."""

    def __init__(self, key: str, **values):
        self.key, self.values = key, values
        super().__init__(i18n.text(key, "en", **values))


@dataclass(frozen=True)
class PlanRequest:
    """What the lead asks for (the command's options, the page's form)."""
    dataset: str
    predictor: str  # a judge run's or jury's key (agreement.judges.config_names) or run id
    budget: float  # the expected number of labels
    estimand: str = "mean_score"
    language: str | None = None  # None: every language of the dataset
    min_probability: float = 0.05
    seed: int = 0
    name: str | None = None  # None: `<dataset>-<language or all>-<n>`
    target_width: float | None = None
    compare: str | None = None  # "LANGUAGE:A:B" (an empty language: all of the plan)
    labels: str = DEFAULT_POLICY
    uniform: bool = False  # a uniform draw even where a pilot could steer it


@dataclass(frozen=True)
class PlannedItem:
    generation_id: int
    item_id: str
    model: str
    language: str
    predictor_value: float
    probability: float
    drawn: bool


@dataclass(frozen=True)
class PlanDraft:
    """A plan worked out but not stored: the resolved choices, the pilot (generation id ->
    the judge's value) and the planned generations with their probabilities and draws."""
    name: str
    dataset: str
    dataset_id: int
    judge_run_id: int
    predictor: str
    estimand: str
    language: str | None
    budget: float
    min_probability: float
    seed: int
    label_policy: str
    target_width: float | None
    compare: dict
    method: str
    uniform: bool  # the probabilities are uniform (no pilot, or asked for)
    pilot: dict[int, float] = field(repr=False)
    planned: tuple[PlannedItem, ...] = field(repr=False)
    left_out: int = 0  # generations of the slice without an ok verdict of the predictor
    # the slice's generations with a human label under the policy, as the draft read them:
    # what `assign_plan` skips, handed over where it runs in the same transaction
    labelled: frozenset[int] = field(default=frozenset(), repr=False, compare=False)

    @property
    def drawn(self) -> list[PlannedItem]:
        return [item for item in self.planned if item.drawn]

    @property
    def expected(self) -> float:
        """The expected number of labels: the planned generations' probabilities summed."""
        return sum(item.probability for item in self.planned)

    def per_language(self, items) -> str:
        counts = Counter(item.language for item in items)
        return ", ".join(f"{lang} {n}" for lang, n in sorted(counts.items())) or "-"

    def rows(self) -> list[dict]:
        """plan.csv's rows (PLAN_COLUMNS): the planned generations, not the pilot."""
        return [{"plan": self.name, "generation_id": i.generation_id, "item_id": i.item_id,
                 "model": i.model, "language": i.language, "predictor_value": i.predictor_value,
                 "probability": i.probability, "drawn": i.drawn} for i in self.planned]

    def same_draw(self, other: PlanDraft) -> bool:
        return (self.name, self.pilot, self.planned) == (other.name, other.pilot, other.planned)

    def summary(self) -> list[str]:
        """What the plan does, in English lines (the command prints them)."""
        where = f"language {self.language}" if self.language else "all languages"
        return [
            f"plan {self.name!r}: dataset {self.dataset!r} ({where}), predictor "
            f"{self.predictor}, estimand {self.estimand}, label policy {self.label_policy}",
            f"  pilot: {len(self.pilot)} generation(s) with a human label and an ok verdict",
            f"  pool: {len(self.planned)} generation(s) with an ok verdict and no human label "
            f"({self.per_language(self.planned)}); {self.left_out} without an ok verdict "
            f"left out",
            f"  probabilities: {self.method}; at least {self.min_probability:g}, at most 1, "
            f"summing to the budget",
            f"  expected labels {self.expected:.1f} (budget "
            f"{self.budget:g}), drawn {len(self.drawn)} ({self.per_language(self.drawn)}) "
            f"with seed {self.seed}"]


# ---------------------------------------------------------------- choices


def plan_options(session: Session, *, acting: int | Operator) -> dict[str, list[str]]:
    """The page's choices: dataset names, the predictors' keys (runs with an ok verdict) and
    the targets' languages."""
    require_role(session, acting, "plan")
    judged = session.execute(select(m.JudgeVerdict.run_id).where(m.JudgeVerdict.status == OK)
                             .distinct()).scalars()
    names = config_names(list(session.execute(select(m.JudgeRun)).scalars()))
    return {"datasets": sorted(session.execute(select(m.Dataset.name)).scalars()),
            "predictors": sorted(names[run_id] for run_id in judged),
            "languages": sorted(session.execute(with_source(
                select(TARGET_LANGUAGE).select_from(m.Target)).distinct()).scalars())}


def _listed(values, limit: int = 8) -> str:
    values = [str(v) for v in values]
    return (", ".join(values[:limit]) + (f" (+{len(values) - limit})" if len(values) > limit
                                         else "")) or "none"


def _dataset(session: Session, name: str) -> int:
    found = session.execute(select(m.Dataset.id).where(m.Dataset.name == name)).scalar()
    if found is None:
        raise PlanError("plan.error.no_dataset", dataset=name,
                        known=_listed(sorted(session.execute(select(m.Dataset.name)).scalars())))
    return found


def _predictor(session: Session, predictor: str) -> tuple[int, str]:
    """(run id, key) of a judge run or jury named by its key or its run id."""
    names = config_names(list(session.execute(select(m.JudgeRun)).scalars()))
    wanted = str(predictor).strip()
    for run_id, key in names.items():
        if key == wanted or str(run_id) == wanted:
            return run_id, key
    raise PlanError("plan.error.no_predictor", predictor=wanted,
                    known=_listed(sorted(names.values())))


def _request_checks(request: PlanRequest) -> None:
    if request.estimand not in ESTIMANDS:
        raise PlanError("plan.error.estimand", estimand=request.estimand, known=_listed(ESTIMANDS))
    width = request.target_width
    if width is not None and not (0 < width <= 1):
        raise PlanError("plan.error.target_width", value=f"{width:g}")


class _SliceRow(NamedTuple):
    generation_id: int
    item_id: str  # the item's name (db.targets.target_name)
    model: str
    language: str
    status: str | None  # the predictor run's verdict status (None: no verdict)
    accuracy: str | None  # the verdict's accuracy label


def _slice_rows(session: Session, dataset_id: int, language: str | None, run_id: int
                ) -> tuple[list[_SliceRow], list[str]]:
    """The slice's generations, by generation id, and the dataset's languages."""
    stmt = (with_source(select(m.Generation.id, m.Target.external_id, m.SourceFile.repo,
                               m.SourceFile.path, m.Target.span_start, m.Target.span_end,
                               m.Generation.model, TARGET_LANGUAGE, m.JudgeVerdict.status,
                               m.JudgeVerdict.accuracy)
                        .join(m.Target, m.Target.id == m.Generation.target_id))
            .outerjoin(m.JudgeVerdict, and_(m.JudgeVerdict.generation_id == m.Generation.id,
                                            m.JudgeVerdict.run_id == run_id))
            .where(TARGET_DATASET_ID == dataset_id).order_by(m.Generation.id))
    rows = session.execute(stmt).all()
    languages = sorted({r[7] for r in rows})
    if language is not None:
        rows = [r for r in rows if r[7] == language]
    return [_SliceRow(gid, target_name(external_id, repo, path, start, end), model, lang,
                      status, accuracy)
            for gid, external_id, repo, path, start, end, model, lang, status, accuracy in rows
            ], languages


def _speakers(session: Session) -> list:
    """The accounts a plan's generations go to: active annotators with languages (the Assign
    page's default choice; leads and imported experts only when assigned by hand)."""
    return [a for a in all_annotators(session)
            if a.active and a.role == "annotator" and a.languages]


def _name(session: Session, asked: str | None, stem: str) -> str:
    """The name asked for (refused where taken: a plan is never redrawn), else the first free
    `<stem>-<n>`."""
    taken = set(session.execute(select(m.LabelPlan.name)).scalars())
    if asked is not None and asked.strip():
        name = asked.strip()
        if len(name) > MAX_NAME:
            raise PlanError("plan.error.name", length=len(name), limit=MAX_NAME)
        if name in taken:
            raise PlanError("plan.error.name_taken", name=name)
        return name
    return next(f"{stem}-{n}" for n in range(1, len(taken) + 2) if f"{stem}-{n}" not in taken)


def _compare(text: str | None, language: str | None, models: set[str],
             languages: set[str]) -> dict:
    """{"language", "a", "b"} from "LANGUAGE:A:B" (model names may hold a colon: the split
    that names two of the plan's models wins), or {} for none."""
    if not text or not text.strip():
        return {}
    lang, _, rest = text.strip().partition(":")
    lang = lang.strip().lower() or language
    pairs = [(rest[:i], rest[i + 1:]) for i, c in enumerate(rest) if c == ":"]
    found = [(a, b) for a, b in pairs if a in models and b in models and a != b]
    if len(found) != 1 or (lang is not None and lang not in languages):
        raise PlanError("plan.error.compare", value=text, known=_listed(sorted(models)))
    return {"language": lang, "a": found[0][0], "b": found[0][1]}


def draft_plan(session: Session, request: PlanRequest, *, acting: int | Operator) -> PlanDraft:
    """Work out the plan `request` asks for (nothing stored), or PlanError saying why not."""
    require_role(session, acting, "plan")
    _request_checks(request)
    dataset_id = _dataset(session, request.dataset)
    language = request.language.strip().lower() if request.language else None
    name = _name(session, request.name, f"{request.dataset}-{language or 'all'}")
    run_id, key = _predictor(session, request.predictor)
    rows, languages = _slice_rows(session, dataset_id, language, run_id)
    if language is not None and language not in languages:
        raise PlanError("plan.error.no_language", dataset=request.dataset, language=language,
                        known=_listed(languages))
    try:
        labels = resolve(load_votes(session), load_gold(session), request.labels)
    except InputError as error:
        raise PlanError("plan.error.reason", reason=str(error)) from error
    usable = [r for r in rows if r.status == OK and r.accuracy in ACCURACY_LABELS]
    where = language or "all languages"
    if not usable:
        raise PlanError("plan.error.no_verdicts", predictor=key, dataset=request.dataset,
                        language=where)
    judge = encode_labels([r.accuracy for r in usable], ACCURACY_LABELS)
    value = estimand_value(request.estimand, judge)
    human = encode_labels([getattr(labels.get(r.generation_id), "accuracy", None)
                           for r in usable],
                          ACCURACY_LABELS, allow_missing=True)  # -1: no human label
    in_pilot, pool = human >= 0, np.flatnonzero(human < 0)
    if pool.size == 0:
        raise PlanError("plan.error.no_pool", predictor=key, language=where)
    if request.budget > pool.size:
        raise PlanError("plan.error.budget", budget=f"{request.budget:g}", pool=pool.size)
    mute = sorted({usable[i].language for i in pool}
                  - {lang for a in _speakers(session) for lang in a.languages})
    if mute:
        raise PlanError("plan.error.nobody_speaks", languages=", ".join(mute),
                        count=sum(usable[i].language in mute for i in pool))
    pilot_human = estimand_value(request.estimand, human[in_pilot])
    if in_pilot.any() and not request.uniform and len(np.unique(pilot_human)) < 2:
        raise PlanError("plan.error.one_class", n=int(in_pilot.sum()),
                        estimand=request.estimand, value=f"{pilot_human[0]:g}")
    try:
        if in_pilot.any() and not request.uniform:
            scale, method = active.error_scale(value[in_pilot], pilot_human, value[pool])
        else:
            scale = None
            method = ("uniform: asked for (the pilot is not used for the probabilities)"
                      if in_pilot.any() else
                      "uniform: no pilot (no generation here has both a human label under "
                      f"{request.labels!r} and an ok verdict)")
        pi = active.sampling_probabilities(scale, int(pool.size), float(request.budget),
                                           float(request.min_probability))
    except InputError as error:
        raise PlanError("plan.error.reason", reason=str(error)) from error
    drawn = active.draw(pi, int(request.seed))
    models = {r.model for r in usable}
    planned = tuple(PlannedItem(usable[i].generation_id, usable[i].item_id, usable[i].model,
                                usable[i].language, float(value[i]), float(p), bool(d))
                    for i, p, d in zip(pool, pi, drawn))
    return PlanDraft(
        name=name, dataset=request.dataset,
        dataset_id=dataset_id, judge_run_id=run_id, predictor=key, estimand=request.estimand,
        language=language, budget=float(request.budget),
        min_probability=float(request.min_probability), seed=int(request.seed),
        label_policy=request.labels, target_width=request.target_width,
        compare=_compare(request.compare, language, models, {r.language for r in usable}),
        method=method, uniform=scale is None,
        pilot={usable[i].generation_id: float(value[i]) for i in np.flatnonzero(in_pilot)},
        planned=planned, left_out=len(rows) - len(usable),
        labelled=frozenset(r.generation_id for r in rows if r.generation_id in labels))


# ---------------------------------------------------------------- storing and assigning


def store_plan(session: Session, draft: PlanDraft, *, acting: int | Operator) -> int:
    """Store the plan and every one of its generations in the caller's transaction (its
    rollback leaves nothing); PlanError where the name is taken meanwhile. Returns its id."""
    require_role(session, acting, "plan")
    if session.execute(select(m.LabelPlan.id).where(m.LabelPlan.name == draft.name)).first():
        raise PlanError("plan.error.name_taken", name=draft.name)
    plan = m.LabelPlan(name=draft.name, dataset_id=draft.dataset_id,
                       judge_run_id=draft.judge_run_id, predictor=draft.predictor,
                       estimand=draft.estimand, language=draft.language, budget=draft.budget,
                       min_probability=draft.min_probability, seed=draft.seed,
                       method=draft.method, label_policy=draft.label_policy,
                       target_width=draft.target_width, compare=draft.compare)
    session.add(plan)
    session.flush()
    items = [{"plan_id": plan.id, "generation_id": g, "pilot": True, "predictor_value": v,
              "probability": 1.0, "drawn": True} for g, v in draft.pilot.items()]
    items += [{"plan_id": plan.id, "generation_id": i.generation_id, "pilot": False,
               "predictor_value": i.predictor_value, "probability": i.probability,
               "drawn": i.drawn} for i in draft.planned]
    session.execute(insert(m.LabelPlanItem), items)
    return plan.id


def make_plan(session: Session, request: PlanRequest, *, acting: int | Operator,
              preview: PlanDraft | None = None) -> PlanDraft:
    """Draft and store a plan in one go; with `preview` (what the lead confirmed), refuse
    where the generations, labels or verdicts changed since (PlanError, nothing stored)."""
    if preview is not None:  # the name the lead saw, generated or not
        request = replace(request, name=preview.name)
    draft = draft_plan(session, request, acting=acting)
    if preview is not None and not draft.same_draw(preview):
        raise PlanError("plan.error.changed")
    store_plan(session, draft, acting=acting)
    return draft


@dataclass(frozen=True)
class PlanAssigned(Assigned):
    waiting: int = 0  # drawn generations without a human label (under the plan's policy)
    held: int = 0  # of those: already in the queue of an active annotator of their language


def assign_plan(session: Session, name: str, *, acting: int | Operator,
                labelled: Collection[int] | None = None) -> PlanAssigned:
    """Give the plan's drawn generations that still have no human label (under the plan's
    label policy) to active annotators who speak their language, one each: the least loaded
    (open items in their queue) first, never to one who holds it already; stratified by
    language and model, seeded by the plan's seed (service.assign_items' machinery).
    `labelled`: the labelled generations where the caller has them from this transaction (the
    `PlanDraft.labelled` of `make_plan`); None: read and resolved here."""
    require_role(session, acting, "assign")
    plan = _stored(session, name)
    if labelled is None:
        labelled = resolve(load_votes(session), load_gold(session), plan.label_policy)
    rows = session.execute(with_source(
        select(m.LabelPlanItem.generation_id, TARGET_LANGUAGE, m.Generation.model)
        .join(m.Generation, m.Generation.id == m.LabelPlanItem.generation_id)
        .join(m.Target, m.Target.id == m.Generation.target_id))
        .where(m.LabelPlanItem.plan_id == plan.id, m.LabelPlanItem.drawn.is_(True),
               m.LabelPlanItem.pilot.is_(False))
        .order_by(m.LabelPlanItem.generation_id)).all()
    items = [ItemRef(*row) for row in rows if row[0] not in labelled]
    people = _speakers(session)
    eligible = {a.id for a in people}
    holders: dict[int, set[int]] = defaultdict(set)
    for gid, aid in session.execute(select(m.Assignment.generation_id,
                                           m.Assignment.annotator_id)):
        if aid in eligible:
            holders[gid].add(aid)
    load = dict(session.execute(
        select(m.Assignment.annotator_id, func.count()).select_from(m.Assignment)
        .outerjoin(m.Annotation, and_(m.Annotation.generation_id == m.Assignment.generation_id,
                                      m.Annotation.annotator_id == m.Assignment.annotator_id,
                                      m.Annotation.status == "done"))
        .where(m.Annotation.id.is_(None)).group_by(m.Assignment.annotator_id)).all())
    pairs = plan_assignments(items, [(a.id, a.languages) for a in people], per_item=1,
                             strategy="stratified", seed=plan.seed, existing=holders, load=load)
    add_assignments(session, pairs)
    return PlanAssigned(len(pairs), shortfalls(items, pairs, holders, people, 1),
                        waiting=len(items), held=sum(1 for i in items if holders.get(
                            i.generation_id)))


def _stored(session: Session, name: str) -> m.LabelPlan:
    plan = session.execute(select(m.LabelPlan).where(m.LabelPlan.name == name)).scalar()
    if plan is None:
        raise PlanError("plan.error.unknown_plan", name=name, known=_listed(sorted(
            session.execute(select(m.LabelPlan.name)).scalars())))
    return plan


# ---------------------------------------------------------------- the stop rule


def plan_statuses(session: Session, *, acting: int | Operator, names=None,
                  target_width: float | None = None, labels: str | None = None) -> list:
    """[(agreement.plans.Plan, the label policy read, its plan_status table)] for the plans
    named (or all), oldest first: each read with its own label policy unless `labels` names
    one."""
    from agreement.plans import plan_status, read_plans

    require_role(session, acting, "team_progress")
    if target_width is not None and not (0 < target_width <= 1):
        raise PlanError("plan.error.target_width", value=f"{target_width:g}")
    for name in names or ():
        _stored(session, name)
    query = select(m.LabelPlan.name, m.LabelPlan.label_policy).order_by(m.LabelPlan.id)
    if names:
        query = query.where(m.LabelPlan.name.in_(list(names)))
    by_policy: dict[str, list[str]] = defaultdict(list)
    order = {}
    for name, policy in session.execute(query).all():
        by_policy[labels or policy].append(name)
        order[name] = labels or policy
    votes, gold = load_votes(session), load_gold(session)
    plans = {}
    for policy, members in by_policy.items():
        try:
            resolved = resolve(votes, gold, policy)
        except InputError as error:
            raise PlanError("plan.error.reason", reason=str(error)) from error
        for plan in read_plans(session, {g: r.accuracy for g, r in resolved.items()}, members):
            plans[plan.name] = plan
    return [(plans[name], policy, plan_status(plans[name], target_width))
            for name, policy in order.items()]


__all__ = ["ESTIMANDS", "PLAN_COLUMNS", "PlanAssigned", "PlanDraft", "PlanError", "PlanRequest",
           "PlannedItem",
           "assign_plan", "draft_plan", "make_plan", "plan_options", "plan_statuses",
           "store_plan"]
