"""One alignment run end to end: read the database, run every analysis, collect the results.

`run_alignment(url, AlignOptions(...))` is what `python -m align` and the Streamlit
analysis page call; `split_scores` implements `--fit-on/--apply-to`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from agreement.judges import usable_verdicts
from agreement.labels import DEFAULT_POLICY, describe_policy
from agreement.robustness import study_tables
from align import analysis
from align.comparisons import ALL_STATISTICS, SignificanceResult
from align.kde import DEFAULT_GRID_SIZE
from align.questions import StudyAnswers
from align.thresholds import Thresholds
from nlce.cli import InputError
from taxonomy import ACCURACY_LABELS

MIN_RESAMPLES = 100  # and at least 5 / alpha: see check_resamples


def check_resamples(resamples: int, alpha: float = 0.05, name: str = "resamples") -> None:
    """Refuse a number of resamples that intervals and p-values cannot rest on: 0 (no intervals,
    tests or ranks) or at least `MIN_RESAMPLES` and 5 / alpha. With fewer, a 95% interval's ends
    (2.5% of the resamples on each side) and a p-value near alpha are a handful of resamples:
    one resample gives an interval of one point and p-values of 0 or 1."""
    least = max(MIN_RESAMPLES, math.ceil(5 / alpha)) if 0 < alpha < 1 else MIN_RESAMPLES
    if resamples == 0 or resamples >= least:
        return
    raise InputError(f"{name} {resamples}: use 0 (no intervals, tests or ranks) or at least "
                     f"{least:,}; with fewer, the ends of a 95% interval and p-values near alpha "
                     f"{alpha} rest on a handful of resamples (the default is 1,000)")


@dataclass
class AlignOptions:
    metrics: Sequence[str] | None = None  # metric names to include; None = all
    slices: Sequence[str] = ("all", "language", "model")
    weighting: str = "equal"
    bandwidth: str | float = "scott"
    bootstrap: int = 1000  # resamples for every interval and test (`--resamples`)
    seed: int = 0
    labels: str = DEFAULT_POLICY  # the label policy (agreement.labels)
    families: Sequence[str] = ()  # extra model-family YAML files
    fit_on: str | None = None  # see split_scores
    apply_to: str | None = None
    thresholds: dict[str, Thresholds] | None = None  # saved thresholds to apply instead of fitting
    grid_size: int = DEFAULT_GRID_SIZE
    judges: bool = True
    datasets: Sequence[str] = ()  # only these datasets (by name); () = all
    # statistics compared pairwise for significance and ranks (align.comparisons); () = none
    significance: Sequence[str] = ALL_STATISTICS
    alpha: float = 0.05  # significance level of the rank clusters and of "labels needed"
    monotone: bool = False  # fit ordered thresholds where the KDE regions are out of order
    # fewer labelled items in a slice: no kappa, interval or rank there ("too few")
    min_items: int = analysis.MIN_SLICE_ITEMS
    progress: bool = False  # a progress bar on stderr for the paired tests (the CLI, at a terminal)
    alt_scoring: str = "accuracy"  # the alternative annotator test's scoring (align.replace)
    alt_epsilon: float = 0.2  # its cost-benefit margin (the authors' value for experts)

    def __post_init__(self):
        check_resamples(self.bootstrap, self.alpha)

    def describe(self) -> dict:
        out = asdict(self)
        out["thresholds"] = None if self.thresholds is None else f"{len(self.thresholds)} saved"
        out["metrics"] = list(self.metrics) if self.metrics else None
        out["slices"] = list(self.slices)
        out["families"] = list(self.families)
        out["datasets"] = list(self.datasets)
        out["significance"] = list(self.significance)
        out["resamples"] = out.pop("bootstrap")
        out.pop("progress")
        return out


@dataclass
class AlignReport:
    """Every table of one run (DataFrames), the fits behind Figure 5, and the warnings."""
    options: AlignOptions
    scores: pd.DataFrame
    labels: pd.DataFrame
    metrics: analysis.AlignResult
    noise: pd.DataFrame
    context: pd.DataFrame
    groups: pd.DataFrame
    judges: analysis.AlignResult | None = None
    judge_codes: pd.DataFrame = field(default_factory=pd.DataFrame)
    # the robustness studies (agreement.robustness: stability, stability_codes,
    # language_consistency, code_mix), each empty where no such runs exist
    judge_studies: dict[str, pd.DataFrame] = field(default_factory=dict)
    annotator_pairs: pd.DataFrame = field(default_factory=pd.DataFrame)
    annotator_alpha: float = math.nan
    significance: SignificanceResult | None = None
    compared: int = 0  # labelled generations that some metric configuration or judge run covers
    # generation_id -> dataset, item, model (`data.load_generations`): what predictions.csv names
    generations: pd.DataFrame | None = None
    slices: Sequence[str] = ()  # the slices computed: options.slices less those repeating 'all'
    # model quality, judge-assisted estimates, the alternative annotator test (align.questions)
    answers: StudyAnswers | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def label_policy(self) -> str:
        """The label policy's name as every table and page of the report states it."""
        return describe_policy(self.options.labels)

    @property
    def warnings(self) -> list[str]:
        return self.notes + (self.answers.notes if self.answers else []) + self.metrics.warnings


def parse_split(spec: str) -> tuple[str, Any]:
    """'language=en,nl' | 'model=NAME' | 'random:0.5' | 'rest' | 'all' -> (kind, value).

    >>> parse_split("language=en,nl"), parse_split("random:0.3"), parse_split("rest")
    (('language', ('en', 'nl')), ('random', 0.3), ('rest', None))
    """
    spec = spec.strip()
    if spec in ("all", "rest"):
        return spec, None
    if spec.startswith("random:"):
        try:
            share = float(spec.split(":", 1)[1])
        except ValueError:
            share = -1.0
        if not 0 < share < 1:
            raise InputError(f"split {spec!r}: random:SHARE needs 0 < SHARE < 1")
        return "random", share
    column, sep, values = spec.partition("=")
    if not sep or column not in ("language", "model") or not values:
        raise InputError(f"split {spec!r}: use language=CODE[,CODE], model=NAME[,NAME], "
                         f"random:SHARE, rest or all")
    return column, tuple(v.strip() for v in values.split(","))


def _mask(scores: pd.DataFrame, spec: str, seed: int) -> np.ndarray:
    kind, value = parse_split(spec)
    if kind == "all":
        return np.ones(len(scores), dtype=bool)
    if kind == "random":  # whole targets go to one side, so no comment is in both
        targets = np.sort(scores.target_id.dropna().unique())
        chosen = np.random.default_rng(seed).permutation(targets)[:int(round(value * len(targets)))]
        return scores.target_id.isin(chosen).to_numpy()
    if kind == "rest":
        raise InputError("'rest' is only valid for --apply-to")
    return scores[kind].isin(value).to_numpy()


def split_scores(scores: pd.DataFrame, fit_on: str, apply_to: str | None, seed: int = 0
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows to fit thresholds on and the rows to apply them to ("rest", the default, is
    everything not fitted on). Noise rows follow their target like real ones."""
    fit_mask = _mask(scores, fit_on, seed)
    apply_mask = ~fit_mask if apply_to in (None, "rest") else _mask(scores, apply_to, seed)
    fit, apply = scores[fit_mask], scores[apply_mask]
    if fit.empty:
        raise InputError(f"--fit-on {fit_on!r} selects no scores")
    if apply.empty:
        raise InputError(f"--apply-to {apply_to or 'rest'!r} selects no scores")
    return fit, apply


def align_frames(scores: pd.DataFrame, labels: pd.DataFrame, options: AlignOptions,
                 verdicts: pd.DataFrame | None = None,
                 annotations: pd.DataFrame | None = None,
                 generations: pd.DataFrame | None = None) -> AlignReport:
    """Everything except the database reads: pure over the frames (what the tests and the app's
    analysis page call with frames they already hold). `generations`: every generation of the
    aligned datasets (generation_id, target_id, model, language), what the quality tables and
    estimates count; by default those the scores and verdicts name."""
    from align.families import load_model_families

    notes: list[str] = []
    slices, repeats = analysis.distinct_slices(
        options.slices, scores[scores.noise == "none"] if "noise" in scores else scores, verdicts)
    if repeats:
        notes.append(f"slice(s) {', '.join(repeats)} left out: one value, the same items as 'all'")
    common = dict(weighting=options.weighting, bandwidth=options.bandwidth,
                  grid_size=options.grid_size, min_items=options.min_items)
    ordered = dict(monotone=options.monotone)
    if options.fit_on:
        fit_rows, apply_rows = split_scores(scores, options.fit_on, options.apply_to, options.seed)
        fitted = analysis.align_metrics(fit_rows, labels, ["all"], keep_fits=False, **common,
                                        **ordered)
        result = analysis.align_metrics(apply_rows, labels, slices, bootstrap=options.bootstrap,
                                        seed=options.seed, fitted=fitted.thresholds, **common)
        result.thresholds = fitted.thresholds
        most = fitted.kappa.n.max() if len(fitted.kappa) else 0
        notes.append(f"thresholds fitted on {options.fit_on!r} ({most} "
                     f"labelled items per configuration at most), applied to "
                     f"{options.apply_to or 'rest'!r}")
        scored = apply_rows
    else:
        result = analysis.align_metrics(scores, labels, slices, bootstrap=options.bootstrap,
                                        seed=options.seed, fitted=options.thresholds, **common,
                                        **ordered)
        scored = scores
    noise = analysis.noise_table(scored, slices, weighting=options.weighting,
                                 bandwidth=options.bandwidth, grid_size=options.grid_size)
    context = analysis.context_effect(result.kappa)
    families = load_model_families(list(options.families) or None)
    groups = pd.DataFrame()
    if len(result.kappa):  # Figure 9 (kappa) and Figure 10 (precision of the correct label)
        groups = pd.concat([analysis.group_kappa(result.kappa, families, value).assign(value=value)
                            for value in ("kappa", "precision_correct")
                            if value in result.kappa], ignore_index=True)
    report = AlignReport(options=options, scores=scores, labels=labels, metrics=result,
                         noise=noise, context=context, groups=groups, notes=notes,
                         slices=slices)
    if verdicts is not None and len(verdicts):
        report.judges = analysis.align_judges(verdicts, labels, slices,
                                              bootstrap=options.bootstrap, seed=options.seed,
                                              min_items=options.min_items)
        label_of = {g: label for g, label in zip(labels.generation_id, labels.label)
                    if isinstance(label, str)}  # as judges.report: items with an accuracy label
        human_codes, codes = None, ()
        try:
            report.judge_codes = analysis.judge_code_table(verdicts, labels)
            if "codes" in labels:  # the per-code stability, over the codes judges.report uses
                from taxonomy import default_taxonomy

                human_codes = dict(zip(labels.generation_id, labels.codes))
                codes = [c.id for c in default_taxonomy().labelable()]
        except Exception as error:  # the taxonomy may be unavailable; accuracy still counts
            notes.append(f"judge error codes skipped: {error}")
        report.judge_studies = study_tables(verdicts, label_of, human_codes, codes)
    labelled = set(labels.generation_id[labels.label.notna()]) if len(labels) else set()
    covered = set(scored.generation_id[scored.noise == "none"].dropna()) if len(scored) else set()
    if verdicts is not None and len(verdicts):
        covered |= set(usable_verdicts(verdicts).generation_id)
    report.compared = len(labelled & covered)
    compare_configurations(report, verdicts)  # correlations always; tests as options.significance
    if annotations is not None and annotations.annotator.nunique() > 1:
        report.annotator_pairs, report.annotator_alpha = analysis.annotator_agreement(annotations)
    report.answers = study_answers(report, verdicts, annotations, generations)
    if labels.empty:
        notes.append("no human labels found: nothing to align (label generations first, or "
                     "check --labels)")
    elif scores.empty:
        notes.append("no metric scores found: run `python -m metrics.score` first")
    return report


def metric_directions(kappa: pd.DataFrame) -> dict[str, bool | None]:
    """key -> whether a higher score is better, as its run recorded (None where it did not)."""
    if kappa.empty or "direction" not in kappa:
        return {}
    return {key: {"higher": True, "lower": False}.get(d) for key, d in
            zip(kappa.key, kappa.direction)}


def study_answers(report: AlignReport, verdicts: pd.DataFrame | None,
                  annotations: pd.DataFrame | None, generations: pd.DataFrame | None
                  ) -> StudyAnswers:
    """Model quality, judge-assisted estimates and the alternative annotator test
    (`align.questions`), metrics cross-fitted with the thresholds this run fits."""
    from align.kde import fit_classifier
    from align.questions import answer_questions, generations_from

    options = report.options
    direction = metric_directions(report.metrics.kappa)
    codes = tuple(range(len(ACCURACY_LABELS)))

    def fit(key, x, human):
        return fit_classifier(x, human, codes, options.weighting, options.bandwidth,
                              options.grid_size, options.monotone, direction.get(key))[0].thresholds

    if generations is None:
        generations = generations_from(report.scores, verdicts)
    return answer_questions(report.labels, annotations, generations, verdicts, report.scores,
                            fit, policy=report.label_policy, resamples=options.bootstrap,
                            seed=options.seed, alt_scoring=options.alt_scoring,
                            alt_epsilon=options.alt_epsilon, alpha=options.alpha)


def compare_configurations(report: AlignReport, verdicts: pd.DataFrame | None) -> None:
    """Correlations, paired significance, ranks and labels needed (`align.comparisons`) for the
    metrics and judges of `report`, and intervals for the context deltas; in place."""
    from align.comparisons import SignificanceOptions, compare, context_intervals
    from align.configurations import judge_configurations, metric_configurations

    options = report.options
    configurations = metric_configurations(report.metrics.predictions, report.metrics.thresholds,
                                           metric_directions(report.metrics.kappa))
    if report.judges is not None:
        for where, configs in judge_configurations(verdicts, report.labels,
                                                   report.slices).items():
            configurations.setdefault(where, []).extend(configs)
    refit = not (options.fit_on or options.thresholds)
    report.significance = compare(configurations, SignificanceOptions(
        resamples=options.bootstrap, seed=options.seed, alpha=options.alpha,
        statistics=tuple(options.significance), refit=refit, weighting=options.weighting,
        bandwidth=options.bandwidth, grid_size=options.grid_size, monotone=options.monotone,
        min_items=options.min_items), progress=options.progress)
    report.context = context_intervals(report.context, report.significance.samples)
    kappa_ranks = report.significance.ranks[report.significance.ranks.statistic == "kappa"]
    rank_of = {(r.slice, r.slice_value, r.key): r.rank for r in kappa_ranks.itertuples()}
    for result in (report.metrics, report.judges):
        if result is not None and len(result.kappa):
            result.kappa["rank"] = [rank_of.get(where) for where in zip(
                result.kappa.slice, result.kappa.slice_value, result.kappa.key)]


def run_alignment(url: str | None, options: AlignOptions) -> AlignReport:
    """Read scores, human labels, judge verdicts and annotations from `url` and align them."""
    from align import data

    if options.metrics:
        check_metric_names(options.metrics, data.stored_metrics(url))
    scores = data.load_scores(url, options.metrics)
    annotations = data.load_annotations(url)
    labels = data.choose_human_labels(annotations, data.load_gold_labels(url), options.labels)
    verdicts = data.load_judge_verdicts(url) if options.judges else None
    generations = data.load_generations(url)
    scores, labels, verdicts, generations, notes = keep_datasets(generations, scores, labels,
                                                                 verdicts, options.datasets)
    report = align_frames(scores, labels, options, verdicts, annotations, generations)
    report.generations = generations
    if report.answers is not None:
        from agreement.plans import load_plans
        from align.questions import add_plans

        plans = load_plans(url, dict(zip(labels.generation_id, labels.label)))
        add_plans(report.answers, [p for p in plans if not options.datasets
                                   or p.dataset in options.datasets])
    report.notes[:0] = notes
    legacy = scores.loc[~scores.key_stable, "run_id"].nunique() if "key_stable" in scores else 0
    if legacy:
        report.notes.append(
            f"{legacy} metric run(s) were stored before runs recorded their options: they are "
            f"named by the old rule, which can change with what else is stored; run "
            f"`python -m metrics.score` once more with their configurations to record them "
            f"(nothing is scored again)")
    if scores.empty and not labels.empty:
        runs, stored, errors = data.count_metric_scores(url)
        report.notes = [n for n in report.notes if not n.startswith("no metric scores found")]
        report.notes.append(
            f"no metric scores found: the database has {runs} metric run(s) with {stored} stored "
            f"score(s), {errors} of them errors"
            + (f", none in dataset(s) {', '.join(options.datasets)}" if options.datasets else "")
            + ("; run `python -m metrics.score` first" if not stored else
               "; see the errors with `python -m metrics.score --retry-errors`"))
    return report


def check_metric_names(names: Sequence[str], stored: Sequence[str]) -> None:
    """Refuse a metric name the database has no run of (a typo would align nothing), naming the
    ones it has and the closest. A database without metric runs refuses nothing here: there is
    nothing to align, which `nothing_aligned` says.

    >>> check_metric_names(["blue"], ["bleu", "chrf"])
    Traceback (most recent call last):
    nlce.cli.InputError: metric not stored: 'blue' (did you mean 'bleu'?); this database has: bleu, chrf
    """
    import difflib

    unknown = [name for name in dict.fromkeys(names) if name not in stored]
    if not unknown or not stored:
        return
    close = [hit for name in unknown for hit in difflib.get_close_matches(name, stored, n=1)]
    hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
    raise InputError(f"metric not stored: {', '.join(map(repr, unknown))}{hint}; this database "
                     f"has: {', '.join(stored)}")


def nothing_aligned(report: AlignReport) -> str:
    """Why no labelled generation was compared with any metric configuration or judge run and
    the labels say nothing of the models either (no quality.csv row), or "" when there is
    something to report (`python -m align` exits 1 on a reason, as a run that did nothing
    useful). Labels alone still answer which model writes the best comments."""
    if report.compared or (report.answers is not None and not report.answers.quality.empty):
        return ""
    reasons = [note for note in report.notes if note.startswith("no ")]
    return "; ".join(reasons) or (
        f"no labelled generation has a metric score or an ok judge verdict ({len(report.labels):,}"
        f" labelled generations, {report.scores.generation_id.nunique():,} scored)")


def keep_datasets(generations: pd.DataFrame, scores: pd.DataFrame, labels: pd.DataFrame,
                  verdicts: pd.DataFrame | None, datasets: Sequence[str]):
    """Scores, labels, verdicts and generations of the chosen datasets only; and, where one
    model name occurs in two datasets, its model slice named `dataset/model` so systems of
    different datasets are never pooled. Raises InputError naming the datasets there are when
    one is unknown."""
    notes: list[str] = []
    known = sorted(generations.dataset.unique())
    if datasets:
        unknown = sorted(set(datasets) - set(known))
        if unknown:
            raise InputError(f"no dataset named {', '.join(map(repr, unknown))}; this database has: "
                             f"{', '.join(known) or 'none'}")
        generations = generations[generations.dataset.isin(datasets)]
        targets, kept = set(generations.target_id), set(generations.generation_id)
        scores = scores[scores.target_id.isin(targets)]
        labels = labels[labels.generation_id.isin(kept)]
        if verdicts is not None:
            verdicts = verdicts[verdicts.generation_id.isin(kept)]
    dataset_of = dict(zip(generations.generation_id, generations.dataset))
    pairs = generations.assign(model=generations.generation_id.map(
        dict(zip(scores.generation_id, scores.model))))
    shared = {m for m, n in pairs.dropna(subset=["model"]).groupby("model").dataset.nunique().items()
              if n > 1}
    if shared:
        def qualified(frame: pd.DataFrame) -> pd.DataFrame:
            mask = frame.model.isin(shared) & frame.generation_id.notna()
            frame = frame.copy()
            frame.loc[mask, "model"] = [f"{dataset_of.get(g)}/{m}" for g, m in
                                        zip(frame.generation_id[mask], frame.model[mask])]
            return frame

        scores = qualified(scores)
        generations = qualified(generations)
        if verdicts is not None and "model" in verdicts:
            verdicts = qualified(verdicts)
        notes.append(f"model names in several datasets are sliced per dataset: "
                     f"{', '.join(sorted(shared))} (choose datasets with --dataset)")
    return scores, labels, verdicts, generations, notes
