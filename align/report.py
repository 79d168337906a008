"""Writing an `AlignReport`: CSV and JSON of every number, the figures as PNG, one HTML page that
links them, and the rich table for the terminal."""
from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agreement.robustness_report import SECTIONS, study_figures, study_sections_html
from align import figures
from align.pipeline import AlignReport
from align.thresholds import save_thresholds
from nlce.outputs import output_set, write_csv

MAX_KDE_FIGURES = 24  # Figures 5 and 7-8 for at most this many configurations (all in the CSVs)
# the robustness studies' figure sections (agreement.robustness_report), by study name
STUDY_FIGURE_TITLES = {name: f"LLM judges: {title}" for name, (title, _, _) in SECTIONS.items()}


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
           "predictions": report.metrics.predictions}
    if report.judges is not None:
        out["judges"] = _with_policy(report.judges.kappa, policy)
        out["judge_confusion"] = _with_policy(report.judges.confusion, policy)
        out["judge_codes"] = _with_policy(report.judge_codes, policy)
        for name, frame in report.judge_studies.items():  # judge_stability, judge_code_mix, ...
            if not frame.empty:
                out[f"judge_{name}"] = _with_policy(frame, policy)
    if report.significance is not None:
        for name in ("correlations", "significance", "ranks", "labels_needed"):
            out[name] = _with_policy(getattr(report.significance, name), policy)
    if not report.annotator_pairs.empty:
        out["annotators"] = report.annotator_pairs
    return out


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
            items.append((f"fig5_kde_{_slug(key)}", figures.kde_classifier_plot(
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
            items.append((f"fig7_confusion_{_slug(key)}_{slice_name}",
                          figures.confusion_plot(rows, f"{key} by {slice_name}")))
        out["Figures 7-8: confusion matrices (top: recall, bottom: precision)"] = items
    if not result.kappa.empty:
        out["Figure 6: kappa per slice"] = [
            (f"fig6_kappa_{slice_name}", figures.kappa_plot(rows, title=f"kappa by {slice_name}"))
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
            ("fig11_context", figures.context_plot(context))]
    if report.judges is not None and not report.judges.kappa.empty:
        judges = report.judges.kappa
        items = [("fig17_judges", figures.kappa_plot(judges[judges.slice != "model"],
                                                     title="judges: kappa"))]
        conf = report.judges.confusion
        if not conf.empty:
            for key, rows in conf[conf.slice != "model"].groupby("key"):
                items.append((f"fig18_judge_confusion_{_slug(key)}",
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


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)[:80]


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
        for name, frame in tables(report).items():
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
        written["html"] = write_html(report, folder / "report.html", figure_paths, written)
    return {name: out / path.relative_to(folder) for name, path in written.items()}


def _table_html(frame: pd.DataFrame, columns: list[str] | None = None, limit: int = 200) -> str:
    if frame is None or frame.empty:
        return "<p><em>none</em></p>"
    shown = frame[[c for c in (columns or frame.columns) if c in frame.columns]].head(limit)
    return shown.to_html(index=False, float_format=lambda v: f"{v:.3f}", na_rep="–",
                         classes="t", border=0)


KAPPA_COLUMNS = ["key", "slice", "slice_value", "n", "n_incorrect", "n_partial", "n_correct",
                 "kappa", "kappa_low", "kappa_high", "thresholds", "intervals_incorrect",
                 "intervals_partial", "intervals_correct", "orientation", "point_mass", "warning"]


def write_html(report: AlignReport, path: Path, figure_paths: dict[str, list[Path]],
               written: dict[str, Path]) -> Path:
    options = report.options
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>align report</title>",
             "<style>body{font-family:sans-serif;max-width:1200px;margin:auto;padding:1em}"
             "table.t{border-collapse:collapse;font-size:12px}table.t td,table.t th{border-bottom:"
             "1px solid #ddd;padding:2px 6px}img{max-width:100%;border:1px solid #eee}"
             ".warn{color:#a40}</style></head><body>",
             "<h1>Agreement of metrics and judges with the humans</h1>",
             f"<p>human labels (label policy): <code>{html.escape(report.label_policy)}</code> · "
             f"weighting: "
             f"<code>{options.weighting}</code> · bandwidth: <code>{options.bandwidth}</code> · "
             f"bootstrap: {options.bootstrap} · slices: {', '.join(options.slices)} · "
             f"{len(report.labels)} labelled generations</p>"]
    if report.warnings:
        parts.append("<h2>Warnings</h2><ul>" + "".join(
            f"<li class='warn'>{html.escape(w)}</li>" for w in report.warnings) + "</ul>")
    parts.append("<h2>Data files</h2><ul>" + "".join(
        f"<li><a href='{p.name}'>{p.name}</a></li>" for p in written.values()) + "</ul>")
    parts.append("<h2>Metrics: quadratic weighted kappa of the KDE classifier</h2>")
    parts.append(_table_html(report.metrics.kappa, KAPPA_COLUMNS))
    parts.append("<h2>Noise separation (F1 of the noise class, kappa)</h2>")
    parts.append(_table_html(report.noise, ["key", "noise", "slice", "slice_value", "n_real",
                                            "n_noise", "f1", "macro_f1", "kappa", "thresholds"]))
    parts.append("<h2>Context: change in kappa against no context</h2>")
    parts.append(_table_html(report.context))
    parts.append("<h2>Scoring-model groups</h2>")
    parts.append(_table_html(report.groups))
    if report.judges is not None:
        parts.append("<h2>LLM judges</h2>")
        parts.append(_table_html(report.judges.kappa, [
            "key", "settings", "slice", "slice_value", "n_verdicts", "n", "failure_rate",
            "parse_failure_rate", "empty_rate", "kappa", "kappa_low", "kappa_high",
            "precision_correct", "recall_partial"]))
        parts.append("<h3>Per error code</h3>")
        parts.append(_table_html(report.judge_codes))
        # the robustness studies, each with its figure and table (as judges.report shows them)
        images = {name: paths[0].relative_to(path.parent).as_posix()
                  for name, title in STUDY_FIGURE_TITLES.items()
                  for paths in [figure_paths.get(title)] if paths}
        parts.append(study_sections_html(report.judge_studies, images, level=3, prefix="judge_"))
    if not report.annotator_pairs.empty:
        parts.append(f"<h2>Annotators</h2><p>Krippendorff's alpha (ordinal): "
                     f"{report.annotator_alpha:.3f}</p>")
        parts.append(_table_html(report.annotator_pairs))
    n_keys = report.metrics.kappa.key.nunique() if len(report.metrics.kappa) else 0
    for title, paths in figure_paths.items():
        if title in STUDY_FIGURE_TITLES.values():  # shown in the judges' section above
            continue
        parts.append(f"<h2>{html.escape(title)}</h2>")
        if title.startswith(("Figure 5", "Figures 7-8")) and n_keys > MAX_KDE_FIGURES:
            parts.append(f"<p>The first {MAX_KDE_FIGURES} of {n_keys} configurations; every "
                         f"number is in kappa.csv and confusion.csv.</p>")
        for p in paths:
            rel = p.relative_to(path.parent).as_posix()
            parts.append(f"<p><a href='{rel}'><img src='{rel}' alt='{html.escape(p.stem)}'></a></p>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _rank(value) -> str:
    return "–" if value is None or pd.isna(value) else str(int(value))


def ranked_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows by slice (all first, then each slice's values), best kappa first within each."""
    if frame.empty:
        return frame
    order = {"all": 0, "language": 1, "model": 2}
    return frame.assign(_slice=frame.slice.map(order).fillna(3)).sort_values(
        ["_slice", "slice_value", "kappa", "key"], ascending=[True, True, False, True],
        na_position="last").drop(columns="_slice")


def significance_lines(report: AlignReport, slice_name: str = "all") -> list[str]:
    """What the terminal says of the ranks: the options, and for the best kappa over all items
    each runner-up it cannot yet be told from, with the labels that would tell them apart."""
    result = report.significance
    if result is None or result.ranks.empty:
        return []
    options = report.options
    lines = [f"rank: significance clusters among metrics and judges per slice (alpha "
             f"{options.alpha}; kappa: paired bootstrap, {options.bootstrap} resamples, seed "
             f"{options.seed}; pairs and p-values: significance.csv)"]
    needed = result.labels_needed
    needed = needed[(needed.slice == slice_name) & (needed.statistic == "kappa")]
    for r in needed.itertuples():
        more = ("–" if pd.isna(r.labels_needed) else
                f"about {int(r.labels_needed):,} labelled items ({int(r.more_labels):,} more)")
        lines.append(f"labels needed: {r.best} vs {r.runner_up} (same rank): delta kappa "
                     f"{r.delta:+.3f}, p = {r.p_value:.3f} on {r.n} items; to tell them apart "
                     f"at alpha {options.alpha} with power 0.8: {more}")
    return lines


def print_table(report: AlignReport, console=None) -> None:
    """The terminal view: kappa per configuration and slice, noise, judges, warnings."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from align.figures import short_key

    console = console or Console()

    def terminal_rows(frame: pd.DataFrame) -> pd.DataFrame:
        # per-model rows stay in the CSV files when there is a broader slice to show
        if frame.empty or not (frame.slice != "model").any():
            return frame
        return frame[frame.slice != "model"]

    def name(key: str) -> str:
        return escape(short_key(key).replace("\n", ""))

    kappa = ranked_rows(terminal_rows(report.metrics.kappa))
    if kappa.empty:
        console.print("[yellow]no metric configuration could be aligned[/yellow]")
    else:
        table = Table(title="metrics vs humans: quadratic weighted kappa (KDE classifier, "
                            f"{report.options.weighting} weighting), ranked", title_justify="left")
        for column in ("configuration", "slice", "n", "kappa", "95% CI", "rank", "regions",
                       "note"):
            table.add_column(column, overflow="fold",
                             no_wrap=column in ("n", "kappa", "95% CI", "rank"))
        for r in kappa.itertuples():
            ci = (f"{_fmt(r.kappa_low, 2)}–{_fmt(r.kappa_high, 2)}"
                  if not pd.isna(getattr(r, "kappa_low", math.nan)) else "–")
            note = "⚠ see warnings" if isinstance(r.warning, str) and r.warning else ""
            regions = getattr(r, "regions", "")
            table.add_row(name(r.key), r.slice_value if r.slice != "all" else "all", str(r.n),
                          _fmt(r.kappa), ci, _rank(getattr(r, "rank", None)),
                          regions if isinstance(regions, str) else "", note)
        console.print(table)
    noise = report.noise
    if not noise.empty and (noise.slice == "all").any():
        noise = noise[noise.slice == "all"]  # per-slice rows: noise.csv
    if not noise.empty:
        table = Table(title="noise separation (binary KDE): F1 of the noise class",
                      title_justify="left")
        for column in ("configuration", "noise", "slice", "n real/noise", "F1", "kappa"):
            table.add_column(column)
        for r in noise.itertuples():
            table.add_row(name(r.key), r.noise, f"{r.slice}={r.slice_value}",
                          f"{r.n_real}/{r.n_noise}",
                          _fmt(r.f1), _fmt(r.kappa))
        console.print(table)
    judges = (ranked_rows(terminal_rows(report.judges.kappa)) if report.judges is not None
              else pd.DataFrame())
    if not judges.empty:
        table = Table(title="LLM judges vs humans", title_justify="left")
        for column in ("judge", "slice", "n", "failures", "kappa", "95% CI", "rank"):
            table.add_column(column)
        for r in judges.itertuples():
            table.add_row(escape(r.key), f"{r.slice}={r.slice_value}", str(r.n),
                          _fmt(r.failure_rate, 2),
                          _fmt(r.kappa), f"{_fmt(r.kappa_low, 2)}–{_fmt(r.kappa_high, 2)}",
                          _rank(getattr(r, "rank", None)))
        console.print(table)
    for line in significance_lines(report):
        console.print(escape(line))
    if "model" in report.options.slices and len(report.options.slices) > 1:
        console.print("per generating model (and noise per slice): kappa.csv, noise.csv, "
                      "judges.csv and report.html")
    console.print(f"human labels: label policy {escape(report.label_policy)}")
    if not math.isnan(report.annotator_alpha):
        console.print(f"annotators: Krippendorff's alpha (ordinal) = {report.annotator_alpha:.3f}")
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}")
