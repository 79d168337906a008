"""Write a judge labels file (`judges.importer --format labels`, docs/judges.md) from one
annotator's labels with noise: a judge whose accuracy is known, for trying label plans on the
demo database (docs/annotate.md's worked plan) or any database.

    python bench/demo_judge_labels.py --annotator expert --noise 0.3 --seed 0 --out judge.csv

For every generation the annotator finished, the label is kept with probability 1 - noise and
otherwise replaced by one of the two other labels (each equally likely), seeded; columns
item_id (as align names items), model, label, language. The label policy, the judge and the
noise are this script's construction for trying the tooling, not a model's output.
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from sqlalchemy import select
from sqlmodel import Session

from db import models as m
from db.engine import add_database_argument, get_engine, read_only_url
from db.targets import TARGET_LANGUAGE, target_name, with_source
from nlce.cli import UserError
from nlce.outputs import write_csv
from taxonomy import ACCURACY_LABELS


def noisy_labels(url: str, annotator: str, noise: float, seed: int) -> list[dict]:
    """The rows of the labels file (see the module)."""
    with Session(get_engine(url)) as session:
        rows = session.execute(with_source(
            select(m.Target.external_id, m.SourceFile.repo, m.SourceFile.path,
                   m.Target.span_start, m.Target.span_end, m.Generation.model, TARGET_LANGUAGE,
                   m.Annotation.accuracy)
            .join(m.Generation, m.Generation.id == m.Annotation.generation_id)
            .join(m.Target, m.Target.id == m.Generation.target_id)
            .join(m.Annotator, m.Annotator.id == m.Annotation.annotator_id))
            .where(m.Annotator.username == annotator, m.Annotation.status == "done",
                   m.Annotation.accuracy.is_not(None))
            .order_by(m.Annotation.generation_id)).all()
    if not rows:
        raise UserError(f"annotator {annotator!r} has no finished label in this database")
    rng = random.Random(seed)
    out = []
    for item, repo, path, start, end, model, language, accuracy in rows:
        if rng.random() < noise:
            accuracy = rng.choice([a for a in ACCURACY_LABELS if a != accuracy])
        out.append({"item_id": target_name(item, repo, path, start, end), "model": model,
                    "label": accuracy, "language": language})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/demo_judge_labels.py", description=__doc__)
    add_database_argument(parser)
    parser.add_argument("--annotator", default="expert", help="whose labels (default expert)")
    parser.add_argument("--noise", type=float, default=0.3,
                        help="the share of labels replaced at random (default 0.3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="the labels file (CSV)")
    args = parser.parse_args(argv)
    if not 0 <= args.noise <= 1:
        raise UserError(f"--noise must be between 0 and 1, not {args.noise:g}")
    rows = noisy_labels(read_only_url(args.db), args.annotator, args.noise, args.seed)
    write_csv(args.out, rows, header=["item_id", "model", "label", "language"])
    print(f"wrote {args.out}: {len(rows)} labels of {args.annotator}, about {args.noise:.0%} replaced "
          f"at random (seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/, not installed
    from testing.bench import run

    sys.exit(run(main, "bench/demo_judge_labels.py"))
