"""The targets a judge run selects: comments in source files (shown in their file around the mask)
and pairs targets (a reference and predictions, no file), each with its generations, read from
the database by language and dataset. A selection that matches nothing is `NoTargets`, naming
the filter and what there is instead."""
from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session, select

from db import models
from db.targets import TARGET_DATASET_ID, TARGET_LANGUAGE, with_source
from judges.prompts import code_context_with_mask
from nlce.cli import EXIT_NOTHING_DONE, UserError


@dataclass(frozen=True)
class GenerationData:
    generation_id: int
    model: str
    predicted_comment: str


@dataclass(frozen=True)
class TargetData:
    target_id: int
    original_comment: str
    content: str  # the source file; for a pairs target (no file) its context text, if any
    span_start: int
    span_end: int
    generations: tuple[GenerationData, ...]
    in_file: bool = True  # False: a pairs target, whose context is shown as it is

    def code_context(self, context_chars: int | None) -> str:
        """What the judge sees of the code: the file with the comment masked (a window of it),
        or a pairs target's context text."""
        if not self.in_file:
            return self.content
        return code_context_with_mask(self.content, self.span_start, self.span_end,
                                      context_chars)


class NoTargets(UserError, LookupError):
    """The selection (language, dataset) matches no target with a generation; says which.
    Nothing was done: exit 1."""

    exit_code = EXIT_NOTHING_DONE


def load_targets(session: Session, lang: str, dataset: str | None = None,
                 limit: int | None = None) -> list[TargetData]:
    """Targets in `lang` (of a source file, or pairs targets) that have at least one
    generation, by id; NoTargets, naming the filter, when there are none."""
    query = with_source(select(models.Target, models.SourceFile)).where(
        TARGET_LANGUAGE == lang).order_by(models.Target.id)
    if dataset is not None:
        query = query.join(models.Dataset, TARGET_DATASET_ID == models.Dataset.id).where(
            models.Dataset.name == dataset)
    targets = []
    for target, source in session.exec(query):
        generations = session.exec(select(models.Generation)
                                   .where(models.Generation.target_id == target.id)
                                   .order_by(models.Generation.model, models.Generation.id)).all()
        if not generations:
            continue
        targets.append(TargetData(
            target.id, target.original_comment,
            source.content if source is not None else (target.context or ""),
            target.span_start, target.span_end,
            tuple(GenerationData(g.id, g.model, g.predicted_comment) for g in generations),
            in_file=source is not None))
        if limit is not None and len(targets) >= limit:
            break
    if not targets:
        raise NoTargets("nothing to judge: " + _nothing_selected(session, lang, dataset))
    return targets


def _nothing_selected(session: Session, lang: str, dataset: str | None) -> str:
    """Why a selection is empty, and what there is instead."""
    names = session.exec(select(models.Dataset.name).order_by(models.Dataset.name)).all()
    if dataset is not None and dataset not in names:
        return f"no dataset {dataset!r} (datasets: {', '.join(names) or 'none'})"
    having = session.exec(with_source(select(models.Dataset.name).select_from(models.Target))
                          .join(models.Dataset, TARGET_DATASET_ID == models.Dataset.id)
                          .join(models.Generation, models.Generation.target_id == models.Target.id)
                          .where(TARGET_LANGUAGE == lang).distinct()).all()
    where = f" in dataset {dataset!r}" if dataset is not None else ""
    langs = session.exec(with_source(select(TARGET_LANGUAGE).select_from(models.Target))
                         .join(models.Generation, models.Generation.target_id == models.Target.id)
                         .distinct()).all()
    return (f"no target in language {lang!r}{where} has a generation to judge (--lang {lang} "
            f"has targets in: {', '.join(sorted(having)) or 'no dataset'}; languages with "
            f"generations: {', '.join(sorted(langs)) or 'none'})")
