"""The project's metrics as Hugging Face `evaluate` modules, for researchers who score with
``evaluate.load(...)`` elsewhere. Offline, from the installed package:

    import evaluate
    from metrics.evaluate_modules import module_path

    bertscore = evaluate.load(module_path("bertscore"))
    bertscore.compute(predictions=["Geeft de som terug"], references=["Geeft de som van alles"],
                      lang="nl", context="minimal", layer=9)

One module file per metric (``nlce_<metric>.py`` beside this file: bleu, chrf, rouge_l, meteor,
bertscore, bartscore, lmscore; `python -m metrics.evaluate_modules` prints their paths). Each
``compute`` goes through `metrics.core.score_items`, the function `metrics.score` scores with,
so the numbers are the same as `python -m metrics.score` stores for the same pairs and options:

- ``lang="nl"`` (all pairs) or ``languages=[...]`` (one per pair): required, as the comment
  tokenizer and the minimal context depend on it;
- ``context``: none (default), minimal, or full with ``files=[...]`` (each pair's source file)
  and ``spans=[(start, end), ...]`` (the original comment's characters in it: the prediction
  and the reference each take its place, as in the database);
- the metric's options by name or key (``tokenize="13a"`` or ``bleu_tokenize="13a"``,
  ``layer=9``, ``model=...``, ``backend=...``, ``idf=True`` over the given references,
  ``rescale=...``, ``prompt="v2"`` for lmscore), and ``device``, ``batch_size``.

The result: ``score`` (the metric's F, one per pair), ``precision`` and ``recall`` (None where
the metric has none), ``errors`` (None, or why that pair has no score) and ``signature`` (the
run signature `metrics.score` stores these scores under).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

MODULES = ("bleu", "chrf", "rouge_l", "meteor", "bertscore", "bartscore", "lmscore")
HERE = Path(__file__).resolve().parent


def module_path(metric: str) -> str:
    """The file to give `evaluate.load` for one of the project's metrics."""
    if metric not in MODULES:
        raise ValueError(f"no evaluate module for {metric!r}; choose one of {', '.join(MODULES)}")
    return str(HERE / f"nlce_{metric}.py")


def info(metric: str, description: str):
    """The MetricInfo of a module: two string inputs; everything else is a compute argument."""
    import datasets
    import evaluate

    return evaluate.MetricInfo(
        description=description, citation="", inputs_description=__doc__,
        features=datasets.Features({"predictions": datasets.Value("string"),
                                    "references": datasets.Value("string")}),
        codebase_urls=[], reference_urls=[])


def _options(metric, given: dict) -> dict:
    """Option name or key -> key (``tokenize`` -> ``bleu_tokenize`` for bleu)."""
    by_name = {option.name: option.key(metric.name) for option in metric.options}
    return {by_name.get(name, name): value for name, value in given.items()}


def compute(metric: str, predictions: Sequence[str], references: Sequence[str], *,
            lang: Optional[str] = None, languages: Optional[Sequence[str]] = None,
            context: str = "none", files: Optional[Sequence[str]] = None,
            spans: Optional[Sequence[Sequence[int]]] = None, device: Optional[str] = None,
            batch_size: Optional[int] = None, **options) -> dict:
    """Score the pairs as `metrics.score` would (see the module docstring)."""
    from metrics.config import ScoringConfig
    from metrics.core import ScoringItem, score_items
    from metrics.registry import METRICS

    n = len(predictions)
    if languages is None:
        if lang is None:
            raise ValueError("give lang='nl' (every pair) or languages=[...] (one per pair)")
        languages = [lang] * n
    for name, values in (("languages", languages), ("files", files), ("spans", spans)):
        if values is not None and len(values) != n:
            raise ValueError(f"{len(values)} {name} for {n} predictions")
    config = ScoringConfig(metric, context=context, device=device, batch_size=batch_size,
                           **_options(METRICS[metric], options)).validated()
    implementation = config.implementation
    loaded = implementation.prepare(config)
    if getattr(loaded, "backend", config.backend) != config.backend:  # as the runner stores it
        from dataclasses import replace

        config = replace(config, backend=loaded.backend)
    items = [ScoringItem("generation", i, i, p, r, languages[i],
                         files[i] if files is not None else None,
                         tuple(spans[i]) if spans is not None else None,
                         has_source=True)  # full without files: "needs the source file"
             for i, (p, r) in enumerate(zip(predictions, references))]
    references_by_target = {i: (r, languages[i]) for i, r in enumerate(references)}
    setup = None
    if implementation.needs_references(config):
        setup, _ = implementation.prepare_run(config, references_by_target, {})
    scores = score_items(config, items, setup)
    return {"score": [s.f for s in scores], "precision": [s.precision for s in scores],
            "recall": [s.recall for s in scores], "errors": [s.error for s in scores],
            "signature": config.signature()}
