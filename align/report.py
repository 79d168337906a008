"""Writing an `AlignReport`: CSV and JSON of every number, the figures as PNG, one HTML page that
links them, and the rich table for the terminal."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agreement.robustness_report import study_figures
from align import figures
from align.figures import MAX_KDE_FIGURES, slug
from align.page import SLICE_TITLES, STUDY_FIGURE_TITLES, write_html
from align.pipeline import AlignReport
from align.thresholds import save_thresholds
from nlce.outputs import output_set, write_csv


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in (sorted(value) if isinstance(value, (set, frozenset))
                                       else value)]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def _records(frame: pd.DataFrame | None) -> list[dict]:
    if frame is None or frame.empty:
        return []
    return [_jsonable(r) for r in frame.to_dict("records")]


def _with_policy(frame: pd.DataFrame, policy: str) -> pd.DataFrame:
    """The table with a `label_policy` column: which human labels its numbers compare with."""
    if frame is None or frame.empty or "label_policy" in frame:
        return frame
    return frame.assign(label_policy=policy)


def tables(report: AlignReport) -> dict[str, pd.DataFrame]:
    """Every table of the report by file stem; those compared with human labels name the label
    policy in a `label_policy` column (the predictions file: see results.json)."""
    policy = report.label_policy
    out = {"kappa": _with_policy(report.metrics.kappa, policy),
           "confusion": _with_policy(report.metrics.confusion, policy),
           "noise": report.noise, "context": report.context, "groups": report.groups,
           "predictions": _named_predictions(report)}
    if report.judges is not None:
        out["judges"] = _with_policy(report.judges.kappa, policy)
        out["judge_confusion"] = _with_policy(report.judges.confusion, policy)
        out["judge_codes"] = _with_policy(report.judge_codes, policy)
        for name, frame in report.judge_studies.items():  # judge_stability, judge_code_mix, ...
            if not frame.empty:
                out[f"judge_{name}"] = _with_policy(frame, policy)
    if report.significance is not None:  # the tests' tables where pairs were tested
        tested = report.significance.options.tested
        for name in ("correlations", "significance", "ranks", "labels_needed")[:4 if tested else 1]:
            out[name] = _with_policy(getattr(report.significance, name), policy)
    if not report.annotator_pairs.empty:
        out["annotators"] = report.annotator_pairs
    if report.answers is not None:  # their columns are fixed (docs/align.md); quality.csv and
        out.update(report.answers.tables())  # code_shares.csv name the label policy themselves
    return out


def _named_predictions(report: AlignReport) -> pd.DataFrame | None:
    """predictions.csv: each row's dataset, item and generating model beside its generation id,
    so that it joins with an export or another report."""
    predictions = report.metrics.predictions
    if predictions is None or report.generations is None:
        return predictions
    names = report.generations[["generation_id", "dataset", "item", "model"]]
    named = predictions.merge(names, on="generation_id", how="left")
    first = ["key", "slice", "slice_value", "dataset", "item", "model", "generation_id"]
    return named[first + [c for c in named.columns if c not in first]]


def summary(report: AlignReport) -> str:
    """What was aligned, in a line: the configurations, and the labelled generations they cover
    of all those with a human label (in other datasets, or unscored, they are not aligned)."""
    kappa = report.metrics.kappa
    n_metrics = kappa.key.nunique() if len(kappa) else 0
    n_judges = (report.judges.kappa.key.nunique()
                if report.judges is not None and len(report.judges.kappa) else 0)
    judges = f" and {n_judges} judge run(s)" if n_judges else ""
    return (f"{n_metrics} metric configuration(s){judges} on {report.compared:,} of "
            f"{len(report.labels):,} labelled generations")


def to_json(report: AlignReport) -> dict:
    data = {"options": _jsonable(report.options.describe()), "label_policy": report.label_policy,
            "warnings": report.warnings,
            "annotator_alpha": _jsonable(report.annotator_alpha)}
    for name, frame in tables(report).items():
        if name != "predictions":
            data[name] = _records(frame)
    return data


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=100)
    return path


def report_figures(report: AlignReport, kde_limit: int = MAX_KDE_FIGURES
                   ) -> dict[str, list[tuple[str, Any]]]:
    """Every figure of the report as {section title: [(file stem, matplotlib Figure), ...]}:
    what the HTML report saves and what the Streamlit analysis page shows (`st.pyplot(fig)`)."""
    out: dict[str, list[tuple[str, Any]]] = {}
    result = report.metrics
    if report.answers is not None and not report.answers.quality.empty:
        out["Table 2: mean score per model and language"] = [
            ("quality_models", figures.quality_plot(report.answers.ranking,
                                                    report.options.alpha))]
    if not report.scores.empty and not report.labels.empty:
        out["Figure 2: scores coloured by human label"] = [
            ("fig2_strip", figures.strip_plot(report.scores, report.labels))]
    if (report.scores.noise != "none").any():
        out["Figure 3: real predictions vs noise"] = [
            ("fig3_noise", figures.noise_plot(report.scores))]
    if result.fits:
        real = report.scores[report.scores.noise == "none"]
        label_of = report.labels.set_index("generation_id")["label"]
        real = real[real.generation_id.isin(label_of.index)]
        rows_of = {key: rows for key, rows in real.groupby("key", sort=False)}
        items = []
        for (key, slice_name, _value), fit in sorted(result.fits.items()):
            if slice_name != "all" or len(items) >= kde_limit or key not in rows_of:
                continue
            rows = rows_of[key]
            items.append((f"fig5_kde_{slug(key)}", figures.kde_classifier_plot(
                fit, rows.score.to_numpy(float), list(rows.generation_id.map(label_of)),
                title=f"{key}: {fit.thresholds.describe()}")))
        out["Figure 5: KDE classifier per configuration"] = items
    if not result.confusion.empty:
        items = []
        keys = sorted(result.confusion.key.unique())[:kde_limit]
        for (key, slice_name), rows in result.confusion[result.confusion.key.isin(keys)].groupby(
                ["key", "slice"]):
            if slice_name == "model":
                continue
            items.append((f"fig7_confusion_{slug(key)}_{slice_name}",
                          figures.confusion_plot(rows, f"{key} by {slice_name}")))
        out["Figures 7-8: confusion matrices (top: recall, bottom: precision)"] = items
    if not result.kappa.empty:
        out["Figure 6: kappa per slice"] = [
            (f"fig6_kappa_{slice_name}", figures.kappa_plot(rows, title=SLICE_TITLES.get(
                slice_name, slice_name)))
            for slice_name, rows in result.kappa.groupby("slice")]
    if not report.groups.empty:
        groups = report.groups[report.groups.slice != "model"]
        out["Figures 9-10: kappa and precision of 'correct' by scoring-model group"] = [
            (f"fig{9 if value == 'kappa' else 10}_groups_{value}",
             figures.group_plot(rows, title=value.replace("_", " ")))
            for value, rows in groups.groupby("value", sort=False)]
    if not report.context.empty:
        context = report.context
        if (context.slice == "all").any():
            context = context[context.slice == "all"]
        out["Figure 11: change in kappa against no context"] = [
            ("fig11_context", figures.context_plot(context, alpha=report.options.alpha))]
    if report.judges is not None and not report.judges.kappa.empty:
        judges = report.judges.kappa
        items = [("fig17_judges", figures.kappa_plot(judges[judges.slice != "model"],
                                                     title="judges: kappa"))]
        conf = report.judges.confusion
        if not conf.empty:
            for key, rows in conf[conf.slice != "model"].groupby("key"):
                items.append((f"fig18_judge_confusion_{slug(key)}",
                              figures.confusion_plot(rows, key)))
        if not report.judge_codes.empty:
            items.append(("fig19_codes", figures.code_plot(report.judge_codes)))
        out["Figures 17-19: LLM judges"] = items
    for name, fig in study_figures(report.judge_studies).items():
        out[STUDY_FIGURE_TITLES[name]] = [(f"judge_{name}", fig)]
    return out


def write_figures(report: AlignReport, folder: Path) -> dict[str, list[Path]]:
    """`report_figures` saved as PNG files under `folder`, by section."""
    folder.mkdir(parents=True, exist_ok=True)
    return {section: [_save(fig, folder / f"{stem}.png") for stem, fig in items]
            for section, items in report_figures(report).items()}


# what `--out` holds (anything else in an existing folder: refused, as it would be replaced)
OWNED = ("*.csv", "results.json", "thresholds.json", "report.html", "figures")


def write_report(report: AlignReport, out_dir: str | Path, with_figures: bool = True
                 ) -> dict[str, Path]:
    """Write everything into `out_dir`, whole or not at all (`nlce.outputs.output_set`: a killed
    or failed run leaves the previous report as it was); returns the main paths (report.html,
    results.json...) under `out_dir`."""
    out = Path(out_dir)
    with output_set(out, OWNED) as folder:
        written: dict[str, Path] = {}
        frames = tables(report)
        for name, frame in frames.items():
            if frame is None:
                continue
            path = folder / f"{name}.csv"
            write_csv(path, frame)
            written[name] = path
        results = folder / "results.json"
        results.write_text(json.dumps(to_json(report), indent=1, ensure_ascii=False),
                           encoding="utf-8")
        written["results"] = results
        if report.metrics.thresholds:
            written["thresholds"] = save_thresholds(folder / "thresholds.json",
                                                    report.metrics.thresholds)
        figure_paths = write_figures(report, folder / "figures") if with_figures else {}
        written["html"] = write_html(report, folder / "report.html", figure_paths, written,
                                     frames)
    return {name: out / path.relative_to(folder) for name, path in written.items()}
