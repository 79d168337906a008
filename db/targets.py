"""A target's language and dataset, for both kinds of target: a comment in a source file (they
come from the file) and a pairs item (`source_file_id` NULL; they are on the target itself).

Queries that select targets by language or dataset use these expressions with `with_source`
(an outer join), so pairs targets are never dropped by an inner join on `source_file`.
"""
from __future__ import annotations

from sqlalchemy import func

from db.models import SourceFile, Target

TARGET_LANGUAGE = func.coalesce(Target.natural_language, SourceFile.natural_language)
TARGET_DATASET_ID = func.coalesce(Target.dataset_id, SourceFile.dataset_id)
IS_PAIRS_TARGET = Target.source_file_id.is_(None)


def with_source(statement):
    """`statement` (selecting from target) outer-joined to its source file, if any."""
    return statement.outerjoin(SourceFile, Target.source_file_id == SourceFile.id)


def target_name(item: str | None, repo: str | None, path: str | None, start: int, end: int
                ) -> str:
    """How a target is named to people (align's predictions.csv, a labels file): a pairs item
    by its id, a file's comment as `repo/path:start-end` (its character span). A missing repo or
    path may come as None or, from a pandas frame, as NaN: anything not a string is missing."""
    if not isinstance(path, str):
        return item
    return f"{'/'.join(p for p in (repo, path) if isinstance(p, str) and p)}:{start}-{end}"
