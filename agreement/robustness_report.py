"""The robustness studies (`agreement.robustness`) as figures and as report sections: what
`judges.report --out` and `align --out` both put in their report.html, so the two pages
show the same figure and the same numbers for the same runs.

Figures are built on `matplotlib.figure.Figure` (no pyplot, no global backend), like
`align.figures`: tidy study table in, Figure out. User text (judge names, run keys) is
HTML-escaped on the page (pandas escapes table cells, `html.escape` everything else).
"""
from __future__ import annotations

import html
from typing import Callable, Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

# per study with a figure: (section title, what the numbers mean, how to make such runs)
SECTIONS = {
    "stability": (
        "Stability over K runs",
        "One configuration judged K times (seed, and with --temperatures / --vary-order the "
        "temperature or the prediction order, varied). Over the items with a human label and an "
        "ok verdict in all K runs: U@K = share where at least one of the K verdicts disagrees "
        "with the human, I@K = share where all K disagree (a consistent error), flip rate = "
        "share whose label changes across runs; kappa per run (min..max).",
        "judges.run --repeats K"),
    "language_consistency": (
        "Prompt language: English prompt vs the comment's language",
        "The same items judged with an English prompt and with one in the comment's language "
        "(every other setting equal), over the items ok under both: CR_en / CR_x = share that "
        "agrees with the human under that prompt, CR_bi = under both, CDR = under exactly one "
        "(en_only + x_only items); McNemar's two-sided p on those discordant items.",
        "judges.run --prompt-lang en beside the same run with the native prompt"),
    "code_mix": (
        "Code-mixed prompts: agreement against CMD",
        "CMD = share of the prompt's switchable segments kept in English (0: the comment's "
        "language throughout, 1: English throughout; output schema, code ids and taxonomy texts "
        "never switched). Exact agreement and quadratic weighted kappa per run.",
        "judges.run --code-mix 0 0.3 0.6 0.9 1"),
}
_BAR_COLOURS = ("#b04a4a", "#4a6fb0", "#5a8f5a", "#8f7a3a")


def _label(row, *parts: str) -> str:
    return " | ".join(str(row[p]) for p in parts)


def _bars(ax, labels: list[str], frame: pd.DataFrame, columns: list[tuple[str, str]]) -> None:
    """Grouped horizontal bars, one group per row of `frame`, one bar per (column, legend name);
    rates in 0..1, a missing value drawn as 0."""
    height = 0.8 / len(columns)
    y = np.arange(len(frame))
    for i, ((column, name), colour) in enumerate(zip(columns, _BAR_COLOURS)):
        values = pd.to_numeric(frame[column], errors="coerce")
        at = y - 0.4 + height * (i + 0.5)
        ax.barh(at, values.fillna(0.0).to_numpy(float), height, label=name, color=colour)
        for where, value in zip(at, values):
            ax.text(0.005 if pd.isna(value) else value + 0.005, where, _number(value),
                    va="center", fontsize=7)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlim(0, 1)
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="lower right")


def _number(value) -> str:
    return "–" if pd.isna(value) else f"{value:.2f}"


def _figure(width: float, rows: int, left: float, row_height: float) -> Figure:
    """A figure with room for `rows` bar groups and fixed margins in inches."""
    height = 1.3 + row_height * rows
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(left=left, right=0.97, bottom=0.5 / height, top=1 - 0.4 / height,
                        wspace=0.08)
    return fig


def stability_figure(table: pd.DataFrame) -> Figure:
    """Per repeat group: U@K, I@K and flip rate as bars; kappa's range over the K runs beside."""
    fig = _figure(12, len(table), 0.3, 0.8)
    rates, kappas = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    labels = [f"{_label(r, 'judge', 'strategy', 'language')} ({r['prompt_language']} prompt)\n"
              f"runs {r['runs']}, n={r['n']}" for _, r in table.iterrows()]
    _bars(rates, labels, table, [("u_at_k", "U@K"), ("i_at_k", "I@K"),
                                 ("flip_rate", "flip rate")])
    rates.set_title("share of items")
    for y, (_, row) in enumerate(table.iterrows()):
        low, high = row["kappa_min"], row["kappa_max"]
        if pd.isna(low) or pd.isna(high):
            continue
        kappas.hlines(y, low, high, color="#444", linewidth=2)
        kappas.plot([low, high], [y, y], "o", color="#444")
    kappas.set_xlim(-1.05, 1.05)
    kappas.axvline(0, color="#ccc", linewidth=1)
    kappas.set_title("kappa over the K runs (min..max)")
    return fig


def language_figure(table: pd.DataFrame) -> Figure:
    """Per judge x strategy x language: CR_en, CR_x, CR_bi and CDR, McNemar's p in the label."""
    fig = _figure(10, len(table), 0.38, 1.0)
    ax = fig.add_subplot()
    labels = [f"{_label(r, 'judge', 'strategy', 'language')}\nruns {r['english_run']} (en) / "
              f"{r['native_run']} ({r['language']}), n={r['n']}, McNemar p={_p(r['p_mcnemar'])}"
              for _, r in table.iterrows()]
    _bars(ax, labels, table, [("cr_en", "CR_en"), ("cr_x", "CR_x"), ("cr_bi", "CR_bi"),
                              ("cdr", "CDR")])
    ax.set_title("agreement with the humans under each prompt language")
    return fig


def _p(value) -> str:
    return "–" if pd.isna(value) else f"{value:.3g}"


def code_mix_figure(table: pd.DataFrame) -> Figure:
    """Judge agreement against CMD, one line per judge x strategy x language (kappa and exact
    agreement side by side)."""
    fig = Figure(figsize=(11, 4))
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.14, top=0.9, wspace=0.2)
    axes = fig.subplots(1, 2)
    for (judge, strategy, language), group in table.groupby(["judge", "strategy", "language"]):
        curve = group.groupby("cmd")[["kappa", "exact_agreement"]].mean()
        for ax, column in zip(axes, ("kappa", "exact_agreement")):
            ax.plot(curve.index, curve[column], marker="o", label=f"{judge} | {strategy} | {language}")
    lowest = pd.to_numeric(table.kappa, errors="coerce").min()
    low = -0.1 if pd.isna(lowest) else min(-0.1, lowest - 0.05)
    for ax, title, ylim in zip(axes, ("quadratic weighted kappa", "exact agreement with humans"),
                               ((low, 1.02), (0, 1.02))):
        ax.set_xlabel("CMD (share of the prompt's switchable segments in English)")
        ax.set_title(title)
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(*ylim)
    axes[1].legend(fontsize=7)
    return fig


_FIGURES: dict[str, Callable[[pd.DataFrame], Figure]] = {
    "stability": stability_figure, "language_consistency": language_figure,
    "code_mix": code_mix_figure}


def study_figures(tables: Mapping[str, pd.DataFrame]) -> dict[str, Figure]:
    """{study name: Figure} for each study of SECTIONS whose table has rows."""
    return {name: draw(tables[name]) for name, draw in _FIGURES.items()
            if name in tables and not tables[name].empty}


def table_html(frame: pd.DataFrame | None, limit: int = 200) -> str:
    """A table for a report page (cells escaped; rates to 3 decimals)."""
    if frame is None or frame.empty:
        return "<p><em>none</em></p>"
    return frame.head(limit).to_html(index=False, float_format=lambda v: f"{v:.3f}", na_rep="–",
                                     classes="t", border=0)


def study_sections_html(tables: Mapping[str, pd.DataFrame], images: Mapping[str, str],
                        level: int = 2, prefix: str = "") -> str:
    """The three study sections of a report page, each with its explanation, figure (`images`:
    study name -> the PNG's path relative to the page) and table; a study without runs says how
    to make them. `prefix` names the tables' CSV files (`judge_` in `align`)."""
    parts = []
    for name, (title, meaning, how) in SECTIONS.items():
        table = tables.get(name)
        parts.append(f"<section id='{name}'><h{level}>{html.escape(title)}</h{level}>")
        if table is None or table.empty:
            parts.append(f"<p><em>No such runs in this database</em> (make them with "
                         f"<code>{html.escape(how)}</code>).</p></section>")
            continue
        parts.append(f"<p>{html.escape(meaning)} Every number: <a href='{prefix}{name}.csv'>"
                     f"{prefix}{name}.csv</a>.</p>")
        if name in images:
            src = html.escape(images[name], quote=True)
            parts.append(f"<p><a href='{src}'><img src='{src}' alt='{html.escape(title)}'></a></p>")
        parts.append(table_html(table))
        codes = tables.get("stability_codes") if name == "stability" else None
        if codes is not None and not codes.empty:
            codes = codes[codes.found_in_all + codes.found_in_some > 0]
            parts.append(f"<h{level + 1}>Error codes found by the judge in some or all runs "
                         f"(all codes: <a href='{prefix}stability_codes.csv'>"
                         f"{prefix}stability_codes.csv</a>)</h{level + 1}>")
            parts.append(table_html(codes))
        parts.append("</section>")
    return "\n".join(parts)


__all__ = ["SECTIONS", "code_mix_figure", "language_figure", "stability_figure",
           "study_figures", "study_sections_html", "table_html"]
