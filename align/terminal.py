"""The terminal view of an `AlignReport`: ranked kappa tables, noise, judges, what the ranks
say and the warnings (rich tables; `python -m align` prints them)."""
from __future__ import annotations

import math
from typing import Any

import pandas as pd

from align.analysis import is_too_few
from align.pipeline import AlignReport
from align.text import display_name, rank_text


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _kappa(row) -> str:
    """kappa, or "too few" where the slice has too few labelled items to measure it."""
    return "too few" if is_too_few(row) else _fmt(row.kappa)


def _ci(row) -> str:
    if pd.isna(getattr(row, "kappa_low", math.nan)):
        return "–"
    return f"{_fmt(row.kappa_low, 2)}–{_fmt(row.kappa_high, 2)}"


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
    if result is not None and result.options.untested:
        return [f"rank: none; {result.options.untested}"]
    if result is None or result.ranks.empty:
        return []
    options = report.options
    lines = [f"rank: significance clusters among metrics and judges per slice (alpha "
             f"{options.alpha}; kappa: paired bootstrap, {options.bootstrap} resamples, seed "
             f"{options.seed}; pairs and p-values: significance.csv)"]
    needed = result.labels_needed
    needed = needed[(needed.slice == slice_name) & (needed.statistic == "kappa")]
    for r in needed.itertuples():
        more = (r.why_none if pd.isna(r.labels_needed) else
                f"about {int(r.labels_needed):,} labelled items would show it "
                f"({int(r.more_labels):,} more; {int(r.labels_if_known):,} were the resamples' lead "
                f"of {r.resampled_lead:+.3f} certain; alpha {result.options.alpha}, power "
                f"{result.options.power})")
        lines.append(f"labels needed: {display_name(r.best)} leads {display_name(r.runner_up)} (same rank) "
                     f"by {r.delta:+.3f} kappa (p = {r.p_value:.3f}, n = {r.n:,}); {more}")
    return lines


def print_answers(report: AlignReport, console) -> None:
    """The answers first (`align.answers`): the models ranked per language, then the best
    metric and judge, the alternative annotator test and what the judges add."""
    from rich.markup import escape
    from rich.table import Table

    from align.answers import RANKING_TITLE, answer_lines, ranking_grid, summarise

    summary = summarise(report)
    groups, rows = ranking_grid(summary)
    if rows:
        console.print(escape(RANKING_TITLE.format(alpha=summary.alpha)))
        table = Table()
        table.add_column("model")
        for group in groups:
            table.add_column(escape(group), no_wrap=True)
        for model, cells in rows:
            table.add_row(escape(model), *(escape(c) for c in cells))
        console.print(table)
    for line in answer_lines(report, summary):
        console.print(escape(line))


def print_table(report: AlignReport, console=None) -> None:
    """The terminal view: kappa per configuration and slice, noise, judges, warnings."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table


    console = console or Console()

    def terminal_rows(frame: pd.DataFrame) -> pd.DataFrame:
        # per-model rows stay in the CSV files when there is a broader slice to show
        if frame.empty or not (frame.slice != "model").any():
            return frame
        return frame[frame.slice != "model"]

    def name(key: str) -> str:
        return escape(display_name(key))

    print_answers(report, console)
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
            notes = ["⚠ see warnings"] if isinstance(r.warning, str) and r.warning else []
            if getattr(r, "monotone", None) is False:
                notes.append("regions out of order")
            note = "; ".join(notes)
            regions = getattr(r, "regions", "")
            table.add_row(name(r.key), r.slice_value if r.slice != "all" else "all", str(r.n),
                          _kappa(r), _ci(r), rank_text(getattr(r, "rank", None)),
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
                          _kappa(r), _ci(r),
                          rank_text(getattr(r, "rank", None)))
        console.print(table)
    for line in significance_lines(report):
        console.print(escape(line))
    if any(frame is not None and "too_few" in frame and frame.too_few.eq(True).any()
           for frame in (report.metrics.kappa, getattr(report.judges, "kappa", None))):
        console.print(f"too few: a slice with fewer than {report.options.min_items} labelled "
                      "items has no kappa, interval or rank (--min-items)")
    if "model" in report.options.slices and len(report.options.slices) > 1:
        console.print("per generating model (and noise per slice): kappa.csv, noise.csv, "
                      "judges.csv and report.html")
    console.print(f"human labels: label policy {escape(report.label_policy)}")
    if not math.isnan(report.annotator_alpha):
        console.print(f"annotators: Krippendorff's alpha (ordinal) = {report.annotator_alpha:.3f}")
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}")
