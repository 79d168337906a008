"""A jury of judges: several judge runs over the same items combined into one verdict per item
(Verga et al. 2024, "Replacing Judges with Juries", PoLL), stored as a judge run of its own.

    python -m judges.jury --runs 3,4,5 --rule majority|median --name NAME
        [--min-code-votes K] [--quorum Q] [--db URL]
    python -m judges.jury --rebuild NAME          # again, from the members and rule it recorded

Per generation judged by every member (the same items; the others are left out and counted):
- the members that vote are those with an `ok` verdict; fewer than the quorum (default: a
  majority of the members) and the jury's verdict is the most severe failure among the members'
  (as for the hierarchical merge), with no label and no codes;
- the label: `majority`, the label most voting members gave, a tie going to the lower (worse)
  of the tied labels; `median`, the median of the ordinal labels (incorrect < partial <
  correct), the lower of the two middle ones for an even number. Members that gave no label (a
  codes-only run) do not vote on it;
- the codes: those named by at least K of the n members (default a majority, n // 2 + 1), each
  stored with the share of members that named it as its confidence.

The jury is a `JudgeRun` (backend `jury`, model NAME, strategy `jury-<rule>`, prompt version
`jury-<rule>-<hash of the members' signatures and the rule>`), its members and rule in
`params.jury` (by run signature, so it can be rebuilt after the database moved), with one
`JudgeVerdict` per generation and no responses (it sends no request). Its tokens and cost are its
members' together (unknown if one's is). So `judges.report` and `align` (kappa, significance)
treat it like any judge run. Running the same command again recomputes the verdicts.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from sqlalchemy import delete, null
from sqlmodel import Session, select

from db import models
from db.engine import add_database_argument, project_database, session_scope
from judges.parse import OK, STATUS_SEVERITY
from nlce.cli import EXIT_NOTHING_DONE, EXIT_OK, InputError, UserError, run_main
from taxonomy import ACCURACY_LABELS

RULES = ("majority", "median")
BACKEND = "jury"
TIE_RULE = {"majority": "a tie goes to the lower (worse) of the tied labels",
            "median": "an even number of labels: the lower of the two middle ones"}


class NothingToCombine(UserError, LookupError):
    """The members share no judged generation: exit 1."""

    exit_code = EXIT_NOTHING_DONE


def majority_label(labels: Sequence[str]) -> str:
    """The label most often given; a tie goes to the lowest (worst) tied label."""
    counts = Counter(labels)
    top = max(counts.values())
    return min((label for label, n in counts.items() if n == top), key=ACCURACY_LABELS.index)


def median_label(labels: Sequence[str]) -> str:
    """The median of ordinal labels; for an even number, the lower of the two middle ones."""
    ordered = sorted(labels, key=ACCURACY_LABELS.index)
    return ordered[(len(ordered) - 1) // 2]


@dataclass(frozen=True)
class Rule:
    name: str  # majority | median
    min_code_votes: int  # a code is kept when at least this many members name it
    quorum: int  # ok verdicts needed for a verdict

    def describe(self, members: int) -> dict:
        return {"rule": self.name, "tie": TIE_RULE[self.name],
                "min_code_votes": self.min_code_votes, "quorum": self.quorum, "of": members}


@dataclass
class MemberVerdict:
    status: str
    accuracy: str | None
    codes: list[str] = field(default_factory=list)


def combine(verdicts: Sequence[MemberVerdict], rule: Rule) -> tuple[str, str | None, list[dict]]:
    """(status, accuracy, codes) of the jury for one generation from its members' verdicts."""
    voting = [v for v in verdicts if v.status == OK]
    if len(voting) < rule.quorum:
        failed = [v.status for v in verdicts if v.status != OK]
        return max(failed, key=STATUS_SEVERITY.__getitem__), None, []
    labels = [v.accuracy for v in voting if v.accuracy is not None]
    pick = majority_label if rule.name == "majority" else median_label
    accuracy = pick(labels) if labels else None
    named = Counter(code for v in voting for code in dict.fromkeys(v.codes))
    codes = [{"code": code, "confidence": round(n / len(verdicts), 4), "justification": None}
             for code, n in sorted(named.items()) if n >= rule.min_code_votes]
    return OK, accuracy, codes


# ---------------------------------------------------------------- the database shell


def _member_runs(session: Session, ids: Sequence[int]) -> list[models.JudgeRun]:
    if len(set(ids)) != len(ids):
        raise InputError("--runs names a run twice")
    if len(ids) < 2:
        raise InputError("a jury needs at least two runs (--runs ID,ID,...)")
    runs = []
    for run_id in ids:
        run = session.get(models.JudgeRun, run_id)
        if run is None:
            known = session.exec(select(models.JudgeRun.id).order_by(models.JudgeRun.id)).all()
            raise InputError(f"--runs: no judge run {run_id} (runs: "
                             f"{', '.join(map(str, known)) or 'none'})")
        if run.backend == BACKEND:  # its members would vote twice and their tokens count twice
            raise InputError(f"--runs: run {run_id} is the jury {run.model!r} ({_shown(run)}); "
                             "a jury's members are judge runs: name its members instead")
        runs.append(run)
    return runs


def _sum(values) -> float | None:
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


def jury_signature(name: str, members: Sequence[models.JudgeRun], rule: Rule) -> str:
    payload = {"members": [run.signature for run in members], **rule.describe(len(members))}
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    return f"{BACKEND}|{name}|{rule.name}|{digest}"


@dataclass
class JuryResult:
    run_id: int
    members: list[int]
    statuses: dict[str, int]
    left_out: int  # generations not judged by every member


def build_jury(session: Session, name: str, members: Sequence[models.JudgeRun],
               rule: Rule) -> JuryResult:
    """Store (or recompute) the jury run and its verdicts."""
    signature = jury_signature(name, members, rule)
    existing = session.exec(select(models.JudgeRun).where(models.JudgeRun.backend == BACKEND,
                                                          models.JudgeRun.model == name)).first()
    if existing is not None and existing.signature != signature:
        raise InputError(f"a jury named {name!r} (run {existing.id}) has other members or another "
                         f"rule ({_shown(existing)}): choose another --name, or --rebuild {name}")
    by_member: dict[int, dict[int, MemberVerdict]] = {}
    for run in members:
        rows = session.exec(select(models.JudgeVerdict).where(
            models.JudgeVerdict.run_id == run.id)).all()
        by_member[run.id] = {v.generation_id: MemberVerdict(
            v.status, v.accuracy, [c["code"] if isinstance(c, dict) else c for c in v.codes])
            for v in rows}
    judged = [set(v) for v in by_member.values()]
    common, every = set.intersection(*judged), set.union(*judged)
    if not common:
        raise NothingToCombine(f"runs {', '.join(str(r.id) for r in members)} share no judged "
                               "generation: nothing to combine")
    languages = {run.prompt_language for run in members}
    targets = sorted({(run.params or {}).get("target_language") or run.prompt_language
                      for run in members})
    params = {"jury": {"members": [{"run_id": run.id, "signature": run.signature}
                                   for run in members], **rule.describe(len(members))},
              "target_language": ",".join(targets), "order": "fixed"}
    values = dict(model=name, backend=BACKEND, strategy=f"jury-{rule.name}",
                  prompt_language=languages.pop() if len(languages) == 1 else "mixed",
                  prompt_version=f"jury-{rule.name}-{signature.rsplit('|', 1)[1][:12]}",
                  params=params,
                  prompt_tokens=_sum(run.prompt_tokens for run in members),
                  completion_tokens=_sum(run.completion_tokens for run in members),
                  cost_usd=_sum(run.cost_usd for run in members))
    run = existing or models.JudgeRun(signature=signature)
    for key, value in values.items():  # an unknown token count or cost must stay NULL, not
        setattr(run, key, null() if value is None else value)  # the column's default
    session.add(run)
    session.flush()
    session.exec(delete(models.JudgeVerdict).where(models.JudgeVerdict.run_id == run.id))
    statuses: Counter = Counter()
    for generation_id in sorted(common):
        status, accuracy, codes = combine([by_member[m.id][generation_id] for m in members], rule)
        session.add(models.JudgeVerdict(run_id=run.id, generation_id=generation_id,
                                        status=status, accuracy=accuracy, codes=codes))
        statuses[status] += 1
    return JuryResult(run.id, [m.id for m in members], dict(statuses), len(every - common))


def _shown(run: models.JudgeRun) -> str:
    jury = (run.params or {}).get("jury") or {}
    ids = ", ".join(str(m["run_id"]) for m in jury.get("members", []))
    return f"runs {ids}, {jury.get('rule')}"


def stored_jury(session: Session, name: str) -> tuple[str, list[models.JudgeRun], Rule]:
    """The name, members (found by their signatures) and rule a stored jury (by name or run id)
    recorded."""
    run = session.exec(select(models.JudgeRun).where(models.JudgeRun.backend == BACKEND,
                                                     models.JudgeRun.model == name)).first()
    if run is None and name.isdigit():
        run = session.get(models.JudgeRun, int(name))
    if run is None or run.backend != BACKEND:
        names = session.exec(select(models.JudgeRun.model).where(
            models.JudgeRun.backend == BACKEND)).all()
        raise InputError(f"--rebuild: no jury {name!r} (juries: {', '.join(names) or 'none'})")
    jury = run.params["jury"]
    members = []
    for member in jury["members"]:
        found = session.exec(select(models.JudgeRun).where(
            models.JudgeRun.signature == member["signature"])).first()
        if found is None:
            raise InputError(f"--rebuild {name}: its member run {member['run_id']} "
                             f"({member['signature']}) is no longer in the database")
        members.append(found)
    return run.model, members, Rule(jury["rule"], jury["min_code_votes"], jury["quorum"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m judges.jury", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", metavar="ID,ID,...", help="the member judge runs (ids as "
                   "judges.report shows them), at least two")
    p.add_argument("--rule", choices=RULES, default="majority",
                   help="majority vote (ties: the lower label) or the median label")
    p.add_argument("--name", help="the jury's name (its 'model' in reports)")
    p.add_argument("--min-code-votes", type=int, metavar="K",
                   help="keep a code named by at least K members (default: a majority)")
    p.add_argument("--quorum", type=int, metavar="Q",
                   help="ok verdicts a generation needs (default: a majority of the members)")
    p.add_argument("--rebuild", metavar="NAME", help="recompute a stored jury from its members")
    add_database_argument(p)
    args = p.parse_args(argv)
    args.db = project_database(args.db)
    with session_scope(args.db) as session:
        if args.rebuild:
            if args.runs or args.name:
                raise InputError("--rebuild takes the members and rule the jury recorded; give "
                                 "no --runs or --name")
            name, members, rule = stored_jury(session, args.rebuild)
        else:
            if not args.runs or not args.name:
                raise InputError("give --runs ID,ID,... and --name (or --rebuild NAME)")
            try:
                ids = [int(part) for part in args.runs.split(",") if part.strip()]
            except ValueError:
                raise InputError(f"--runs: expected run ids like 3,4,5, got {args.runs!r}") from None
            members = _member_runs(session, ids)
            n = len(members)
            majority = n // 2 + 1  # the default of each (0 is no default: it is refused)
            rule = Rule(args.rule, majority if args.min_code_votes is None else args.min_code_votes,
                        majority if args.quorum is None else args.quorum)
            for flag, value in (("--min-code-votes", rule.min_code_votes),
                                ("--quorum", rule.quorum)):
                if not 1 <= value <= n:
                    raise InputError(f"{flag} must lie between 1 and the {n} members")
            name = args.name
        result = build_jury(session, name, members, rule)
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(result.statuses.items()))
    print(f"jury {name!r} (run {result.run_id}): {rule.name} of runs "
          f"{', '.join(map(str, result.members))} ({TIE_RULE[rule.name]}); codes named by at "
          f"least {rule.min_code_votes} of {len(result.members)}; quorum {rule.quorum}")
    print(f"verdicts: {sum(result.statuses.values())} ({statuses}); left out: {result.left_out} "
          "generation(s) not judged by every member")
    for line in comparison_lines(args.db, [*result.members, result.run_id]):
        print(line)
    return EXIT_OK if result.statuses.get(OK) else EXIT_NOTHING_DONE


def comparison_lines(db_url: str | None, run_ids: Sequence[int]) -> list[str]:
    """The jury against its members: n and kappa with the humans (label policy auto), each on its
    own usable verdicts (`python -m align` tests the differences on the same items)."""
    from agreement.judges import judge_agreement, load_verdicts
    from agreement.labels import DEFAULT_POLICY, load_labels

    labels = {g: r.accuracy for g, r in load_labels(db_url, DEFAULT_POLICY).items()
              if r.accuracy is not None}
    if not labels:
        return ["agreement: no human labels to compare with"]
    verdicts = load_verdicts(db_url)
    lines = [f"agreement with the humans (label policy {DEFAULT_POLICY}; quadratic kappa, no CI):"]
    for run_id in run_ids:
        rows = verdicts[verdicts.judge_run_id == run_id]
        result = judge_agreement(rows, labels, bootstrap=0)
        key = rows.key.iloc[0] if len(rows) else f"run {run_id}"
        lines.append(f"  run {run_id:<4} n {result.n:<5} kappa {result.kappa:7.3f}  {key}")
    return lines


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m judges.jury"))
