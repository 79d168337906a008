"""`python -m annotate.plan` (`nlce annotate plan`): label where a judge is least reliable, with
estimates that stay valid (issue 39; `annotate.service.plans` makes the plan).

    python -m annotate.plan --dataset D --predictor JUDGE_KEY --budget B --out plan.csv
        [--estimand mean_score] [--language L] [--min-probability 0.05] [--seed 0]
        [--name N] [--target-width W] [--compare LANGUAGE:A:B] [--labels POLICY] [--uniform]
        [--assign] [--db URL]
    python -m annotate.plan --status [--plan NAME] [--target-width W] [--labels POLICY]

The first stores the plan and all its generations in one transaction (nothing on any error),
writes plan.csv (the planned generations: PLAN_COLUMNS) and, with --assign, gives the drawn
ones to active annotators who speak their language. `--status` (read-only) prints the stop
rule of each plan (`agreement.plans.plan_status`) per estimand and slice.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from agreement.labels import POLICY_HELP
from db.engine import add_database_argument, project_database, read_only_url, session_scope, shown_url
from nlce.cli import EXIT_NOTHING_DONE, EXIT_OK, UserError, run_main

PROG = "python -m annotate.plan"


def _parser() -> argparse.ArgumentParser:
    from annotate.service.plans import ESTIMANDS

    parser = argparse.ArgumentParser(
        prog=PROG, description="Plan human labels where a judge is least reliable (active "
        "statistical inference: each generation drawn with a known probability), store the plan, "
        "write plan.csv and optionally assign the drawn generations; or show when to stop.")
    add_database_argument(parser)
    parser.add_argument("--dataset", help="the dataset to plan")
    parser.add_argument("--predictor", metavar="JUDGE_KEY",
                        help="the judge run or jury: its key as align names it, or its run id")
    parser.add_argument("--budget", type=float, help="the expected number of labels")
    parser.add_argument("--estimand", choices=ESTIMANDS,
                        help="what the plan estimates (default mean_score; --status: only this "
                        "one)")
    parser.add_argument("--language", help="one language of the dataset (default: all)")
    parser.add_argument("--min-probability", type=float, default=0.05,
                        help="each generation's least probability of being drawn (default 0.05)")
    parser.add_argument("--seed", type=int, default=0, help="the draw's seed (default 0)")
    parser.add_argument("--name", help="the plan's name (default <dataset>-<language|all>-<n>)")
    parser.add_argument("--target-width", type=float,
                        help="the stop rule's 95%% interval width (e.g. 0.1)")
    parser.add_argument("--compare", metavar="LANGUAGE:A:B",
                        help="the stop rule's comparison: model B vs A in LANGUAGE")
    parser.add_argument("--labels", default=None, metavar="POLICY",
                        help=POLICY_HELP + " (--status: default each plan's own)")
    parser.add_argument("--uniform", action="store_true",
                        help="draw uniformly: the pilot does not steer the probabilities")
    parser.add_argument("--out", metavar="plan.csv", help="where plan.csv goes")
    parser.add_argument("--assign", action="store_true",
                        help="give the drawn generations to active annotators of their language")
    parser.add_argument("--status", action="store_true",
                        help="show each plan's stop rule instead (read-only)")
    parser.add_argument("--plan", action="append", metavar="NAME",
                        help="--status: only this plan (repeatable)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.status:
        return show_status(args)
    missing = [f"--{n.replace('_', '-')}" for n in ("dataset", "predictor", "budget", "out")
               if getattr(args, n) is None]
    if missing:
        parser.error(f"a plan needs {', '.join(missing)} (or --status)")
    return make(args)


def make(args) -> int:
    from agreement.labels import DEFAULT_POLICY
    from annotate.service import OPERATOR
    from annotate.service.plans import PLAN_COLUMNS, PlanRequest, assign_plan, make_plan
    from nlce.outputs import write_csv

    out = Path(args.out)
    if out.is_dir() or not out.parent.is_dir():
        raise UserError(f"--out {out}: expected a file in an existing folder")
    request = PlanRequest(dataset=args.dataset, predictor=args.predictor, budget=args.budget,
                          estimand=args.estimand or "mean_score", language=args.language,
                          min_probability=args.min_probability, seed=args.seed, name=args.name,
                          target_width=args.target_width, compare=args.compare,
                          labels=args.labels or DEFAULT_POLICY, uniform=args.uniform)
    url = project_database(args.db)  # an existing project database: a typo makes none
    part = out.with_name(f".{out.name}.part-{os.getpid()}")
    try:
        with session_scope(url) as session:
            draft = make_plan(session, request, acting=OPERATOR)
            write_csv(part, draft.rows(), header=PLAN_COLUMNS)  # before the commit: all or none
            assigned = assign_plan(session, draft.name, acting=OPERATOR,
                                   labelled=draft.labelled) if args.assign else None
        os.replace(part, out)
    finally:
        part.unlink(missing_ok=True)
    print("\n".join(draft.summary()))
    print(f"stored plan {draft.name!r} ({len(draft.pilot)} pilot + {len(draft.planned)} planned "
          f"generations) in {shown_url(url)}; wrote {out} ({len(draft.planned)} rows)")
    if assigned is not None:
        print(f"assigned {assigned.added} drawn generation(s) to active annotators who speak "
              f"their language ({assigned.held} of the {assigned.waiting} waiting for a label "
              f"were in such a queue already)")
        for short in assigned.short:
            print(f"warning: {short.sentence()}", file=sys.stderr)
    return EXIT_OK


def _cell(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def show_status(args) -> int:
    from sqlmodel import Session

    from annotate.service import OPERATOR
    from annotate.service.plans import plan_statuses
    from db.engine import get_engine

    with Session(get_engine(read_only_url(args.db))) as session:
        found = plan_statuses(session, acting=OPERATOR, names=args.plan,
                              target_width=args.target_width, labels=args.labels)
    if not found:
        print("no label plan in this database (make one: python -m annotate.plan --dataset ... "
              "--predictor ... --budget ... --out plan.csv)", file=sys.stderr)
        return EXIT_NOTHING_DONE
    for plan, policy, status in found:
        target = status.target_width.iloc[0] if len(status) else None
        print(f"plan {plan.name!r}: {plan.predictor}, estimand {plan.estimand}, "
              f"{plan.language or 'all languages'}, budget {plan.budget:g}, labels {policy}, "
              f"target width {_cell(target)}"
              f"{', compare ' + _compared(plan.compare) if plan.compare else ''}")
        if args.estimand:
            status = status[status.estimand == args.estimand]
        header = ("estimand", "slice", "estimate (95% CI)", "width", "done", "drawn left",
                  "decided")
        rows = [(r.estimand, f"{r.slice} {r.slice_value}" if r.slice != "all" else "all",
                 _interval(r.estimate, r.ci_low, r.ci_high), _cell(r.width),
                 str(r.labels_done), str(r.still_drawn),
                 f"yes: {r.why}" if r.decided else "no")
                for r in status.itertuples()]
        widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
        for row in (header, *rows):
            print("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return EXIT_OK


def _interval(estimate, low, high) -> str:
    if _cell(estimate) == "-":
        return "-"
    return f"{_cell(estimate)} ({_cell(low)}-{_cell(high)})"


def _compared(compare: dict) -> str:
    return f"{compare['b']} vs {compare['a']}" + (f" in {compare['language']}"
                                                 if compare.get("language") else "")


if __name__ == "__main__":
    sys.exit(run_main(main, prog=PROG))
