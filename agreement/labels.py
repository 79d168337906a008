"""Which human label counts for a generation: the project's one label policy.

A policy is a chain of rules joined by "-else-", tried in order; the first rule that gives a
generation a label wins (e.g. `gold-else-expert`: the adjudicated gold label, and where there is
none the experts' label). The rules:

- `gold`: the adjudicated gold label (lead or expert, `annotate` adjudication page);
- `expert`: the majority of the expert annotators (role "expert", or username "expert");
- `majority`: the majority of all annotators;
- `agreed`: the annotators' label when they all gave the same label and codes (or only one
  labelled the item); items they disagree on get no label from this rule;
- `annotator:NAME`: that annotator's own label (an error if NAME has no finished label).

A majority tie goes to the label of the earliest annotation, and the label's codes are those of
the earliest annotation with that label. Named policies:

- `auto` (the default everywhere): `gold-else-expert-else-majority`, so every labelled
  generation gets a label and adjudicated or expert labels win;
- `gold-else-agreed`: what the app's summary tables (the study's Tables 1 and 2) count: items
  whose annotators disagree wait for adjudication.

Every report names the policy it used (`describe_policy`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping

from sqlalchemy import select
from sqlmodel import Session

from db import models as m
from db.engine import get_engine
from nlce.cli import InputError
from taxonomy import ACCURACY_LABELS

RULES = ("gold", "expert", "majority", "agreed", "annotator:NAME")
ALIASES = {"auto": "gold-else-expert-else-majority"}
DEFAULT_POLICY = "auto"
SUMMARY_POLICY = "gold-else-agreed"
POLICY_HELP = (
    "which human label counts for a generation: 'auto' (default) = the gold (adjudicated) label, "
    "else the expert annotators' majority, else all annotators' majority; or any of the rules "
    "gold, expert, majority, agreed (all annotators gave the same label), annotator:NAME, alone or "
    "chained with -else- (e.g. gold-else-expert). Majority ties go to the earliest annotation.")


@dataclass(frozen=True)
class Vote:
    """One finished annotation; votes are passed in the order they were made."""
    generation_id: int
    annotator: str
    role: str
    accuracy: str
    codes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Gold:
    accuracy: str
    codes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ResolvedLabel:
    generation_id: int
    accuracy: str
    codes: frozenset[str]
    source: str  # the rule that gave it: "gold", "expert", "majority", "agreed", "annotator:NAME"
    n_annotators: int  # finished annotations of the generation (0 for a gold-only item)


def parse_policy(policy: str) -> tuple[str, ...]:
    """The rules of a policy, in order; a clear ValueError for an unknown name.

    >>> parse_policy("auto")
    ('gold', 'expert', 'majority')
    >>> parse_policy("gold-else-annotator:anna")
    ('gold', 'annotator:anna')
    """
    name = str(policy or "").strip()
    rules = tuple(r.strip() for r in ALIASES.get(name, name).split("-else-"))
    for rule in rules:
        if rule not in RULES[:-1] and not (rule.startswith("annotator:") and rule[10:]):
            raise InputError(f"unknown label policy {policy!r}: rule {rule!r} is not one of "
                             f"{', '.join(RULES)} (chain them with -else-, or use 'auto')")
    return rules


def describe_policy(policy: str) -> str:
    """The policy's name as reports print it, with what an alias stands for.

    >>> describe_policy("auto")
    'auto (gold-else-expert-else-majority)'
    """
    rules = "-else-".join(parse_policy(policy))
    return policy if rules == policy else f"{policy} ({rules})"


def _majority(votes: list[Vote]) -> Vote:
    counts = Counter(v.accuracy for v in votes)
    best = max(counts.values())
    return next(v for v in votes if counts[v.accuracy] == best)


def _by_rule(rule: str, votes: list[Vote]) -> Vote | None:
    """The vote whose label and codes `rule` picks for one generation's votes, or None."""
    if rule == "expert":
        votes = [v for v in votes if v.role == "expert" or v.annotator == "expert"]
    elif rule.startswith("annotator:"):
        votes = [v for v in votes if v.annotator == rule[10:]]
    elif rule == "agreed":
        return votes[0] if votes and len({(v.accuracy, v.codes) for v in votes}) == 1 else None
    return _majority(votes) if votes else None


def resolve(votes: Iterable[Vote], gold: Mapping[int, Gold], policy: str = DEFAULT_POLICY
            ) -> dict[int, ResolvedLabel]:
    """generation id -> its label under `policy` (pure; generations no rule labels are absent)."""
    rules = parse_policy(policy)
    by_item: dict[int, list[Vote]] = {}
    for vote in votes:
        by_item.setdefault(vote.generation_id, []).append(vote)
    for rule in rules:
        if rule.startswith("annotator:") and not any(
                v.annotator == rule[10:] for item in by_item.values() for v in item):
            known = ", ".join(sorted({v.annotator for item in by_item.values() for v in item}))
            raise InputError(f"label policy {policy!r}: annotator {rule[10:]!r} has no finished "
                             f"labels (annotators with labels: {known or 'none'})")
    out: dict[int, ResolvedLabel] = {}
    for generation_id in sorted(set(by_item) | set(gold)):
        item = by_item.get(generation_id, [])
        for rule in rules:
            if rule == "gold":
                if generation_id in gold:
                    g = gold[generation_id]
                    out[generation_id] = ResolvedLabel(generation_id, g.accuracy,
                                                       frozenset(g.codes), "gold", len(item))
                    break
                continue
            vote = _by_rule(rule, item)
            if vote is not None:
                out[generation_id] = ResolvedLabel(generation_id, vote.accuracy, vote.codes, rule,
                                                   len(item))
                break
    unknown = {r.accuracy for r in out.values()} - set(ACCURACY_LABELS)
    if unknown:
        raise ValueError(f"stored accuracy label(s) {sorted(unknown)} are not in {ACCURACY_LABELS}")
    return out


# ---------------------------------------------------------------- the database shell


def load_votes(session: Session) -> list[Vote]:
    """Every finished annotation (status done, accuracy set), in the order it was made."""
    rows = session.execute(
        select(m.Annotation.id, m.Annotation.generation_id, m.Annotator.username, m.Annotator.role,
               m.Annotation.accuracy)
        .join(m.Annotator, m.Annotator.id == m.Annotation.annotator_id)
        .where(m.Annotation.status == "done", m.Annotation.accuracy.is_not(None))
        .order_by(m.Annotation.id)).all()
    codes: dict[int, set] = {}
    for annotation_id, code in session.execute(select(m.AnnotationCode.annotation_id,
                                                      m.AnnotationCode.code)):
        codes.setdefault(annotation_id, set()).add(code)
    return [Vote(g, user, role, accuracy, frozenset(codes.get(a, ())))
            for a, g, user, role, accuracy in rows]


def load_gold(session: Session) -> dict[int, Gold]:
    codes: dict[int, set] = {}
    for gold_id, code in session.execute(select(m.GoldLabelCode.gold_label_id,
                                                m.GoldLabelCode.code)):
        codes.setdefault(gold_id, set()).add(code)
    return {g: Gold(accuracy, frozenset(codes.get(i, ())))
            for i, g, accuracy in session.execute(select(m.GoldLabel.id, m.GoldLabel.generation_id,
                                                         m.GoldLabel.accuracy))}


def load_labels(url: str | None = None, policy: str = DEFAULT_POLICY) -> dict[int, ResolvedLabel]:
    """`resolve` over what the database at `url` holds."""
    parse_policy(policy)  # a wrong name fails before any read
    with Session(get_engine(url)) as session:
        return resolve(load_votes(session), load_gold(session), policy)


__all__ = ["ALIASES", "DEFAULT_POLICY", "Gold", "POLICY_HELP", "RULES", "ResolvedLabel",
           "SUMMARY_POLICY", "Vote", "describe_policy", "load_gold", "load_labels", "load_votes",
           "parse_policy", "resolve"]
