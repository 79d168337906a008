"""report.html of an `AlignReport`: one self-contained page that leads with the answer.

First the ranked table (which configuration agrees best with the humans over all items, its
kappa with the interval drawn, its rank cluster and its Kendall tau-b), then what it would take
to tell the leaders apart, a configuration x language heatmap of kappa, the study's figures each
beside the numbers it shows, and every table folded at the end with its CSV linked. Figures are
embedded (PNG data URIs), so the page opens offline on its own; it has no script. User text (keys,
judge names) is escaped: pandas escapes table cells, `html.escape` everything else.
"""
from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import pandas as pd

from agreement.robustness_report import SECTIONS, study_sections_html
from align.analysis import is_too_few
from align.figures import MAX_KDE_FIGURES, slug
from align.pipeline import AlignReport
from align.text import number_text, rank_text

# the headings of a slice's kappa (Figure 6, the heatmaps): 'all' is not a thing to slice by
SLICE_TITLES = {"all": "Kappa over all items", "language": "Kappa by language",
                "model": "Kappa by generating model"}
STUDY_FIGURE_TITLES = {name: f"LLM judges: {title}" for name, (title, _, _) in SECTIONS.items()}
STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:auto;padding:0.6em;line-height:1.4}
.scroll{overflow-x:auto;max-width:100%}
table.t{border-collapse:collapse;font-size:12px}
table.t td,table.t th{border-bottom:1px solid #ddd;padding:2px 6px;white-space:nowrap;text-align:left}
table.t td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.r1 td{background:#f3f8ee}
img{max-width:100%;height:auto;border:1px solid #eee}
.warn{color:#a40}.meta{color:#555;font-size:13px}
figure{margin:0.6em 0}figcaption{font-size:12px;color:#555}
p,li,figcaption,h2,h3{overflow-wrap:anywhere}
.rk{color:#555;font-size:11px}
@media (max-width:600px){#ranked td.key{white-space:normal;overflow-wrap:anywhere;min-width:7em}
#ranked th{white-space:normal}#ranked svg{width:96px}#ranked td.ci span{display:block}
table.heat td:first-child{white-space:normal;overflow-wrap:anywhere;min-width:7em}}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:0.5em}
details{margin:0.4em 0}summary{cursor:pointer;font-weight:600}
code{font-size:12px}
"""


def _image(path: Path) -> str:
    """A PNG as a data URI: the page carries its figures."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _figure(path: Path, caption: str = "") -> str:
    """An embedded figure; `data-figure` names its PNG under figures/ (also written)."""
    alt = html.escape(caption or path.stem, quote=True)
    text = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    return (f"<figure><img src='{_image(path)}' alt='{alt}' data-figure='{path.stem}'>{text}"
            "</figure>")


def _table(frame: pd.DataFrame | None, columns: list[str] | None = None, limit: int = 200,
           escape: bool = True) -> str:
    if frame is None or frame.empty:
        return "<p><em>none</em></p>"
    shown = frame[[c for c in (columns or frame.columns) if c in frame.columns]].head(limit)
    more = (f"<p class='meta'>first {limit} of {len(frame):,} rows</p>"
            if len(frame) > limit else "")
    return ("<div class='scroll'>" + shown.to_html(
        index=False, float_format=lambda v: f"{v:.3f}", na_rep="–", classes="t", border=0,
        escape=escape) + "</div>" + more)


def ci_axis(ranked: pd.DataFrame) -> tuple[float, float]:
    """The ranked table's interval axis: from the lowest interval end to the highest, with a
    margin (a fixed -0.2..1 axis hid a 0.12-0.15 interval at n = 6,877 under its dot)."""
    ends = pd.concat([ranked.get(c, pd.Series(dtype=float)) for c in
                      ("kappa_low", "kappa_high", "kappa")]).astype(float).dropna()
    if ends.empty:
        return -0.2, 1.0
    low, high = float(ends.min()), float(ends.max())
    margin = 0.05 * max(high - low, 0.05)
    return low - margin, high + margin


def _ci_bar(kappa: float, low: float, high: float, axis: tuple[float, float],
            width: int = 160) -> str:
    """The interval as an inline SVG bar on `axis` (0 marked where on it), kappa as a dot."""
    if any(v is None or pd.isna(v) for v in (kappa, low, high)):
        return ""

    def x(v: float) -> float:
        return round(width * (min(max(v, axis[0]), axis[1]) - axis[0]) / (axis[1] - axis[0]), 1)
    zero = (f"<line x1='{x(0)}' x2='{x(0)}' y1='0' y2='12' stroke='#bbb'/>"
            if axis[0] < 0 < axis[1] else "")
    return (f"<svg width='{width}' height='12' viewBox='0 0 {width} 12' "
            f"preserveAspectRatio='none' role='img' aria-label='95% interval {low:.2f} to "
            f"{high:.2f}'>{zero}<line x1='{x(low)}' x2='{x(high)}' y1='6' y2='6' stroke='#36c' "
            f"stroke-width='3'/><circle cx='{x(kappa)}' cy='6' r='3.5' fill='#123'/></svg>")


def ranked_configurations(report: AlignReport, slice_name: str = "all",
                          value: str = "all") -> pd.DataFrame:
    """Metrics and judges of one slice, best first: kind, key, n, kappa, its interval, rank,
    Kendall tau-b and a note (regions out of order, warnings)."""
    frames = []
    for kind, result in (("metric", report.metrics), ("judge", report.judges)):
        if result is None or result.kappa.empty:
            continue
        rows = result.kappa[(result.kappa.slice == slice_name)
                            & (result.kappa.slice_value == value)]
        note = [("regions out of order" if monotone is False else "")
                + ("; " if monotone is False and isinstance(w, str) and w else "")
                + (w if isinstance(w, str) else "")
                for monotone, w in zip(rows.get("monotone", pd.Series([None] * len(rows))),
                                       rows.warning)]
        frames.append(pd.DataFrame({
            "kind": kind, "key": rows.key.to_numpy(), "n": rows.n.to_numpy(),
            "kappa": rows.kappa.to_numpy(float), "kappa_low": rows.kappa_low.to_numpy(float),
            "kappa_high": rows.kappa_high.to_numpy(float),
            "rank": rows["rank"].to_numpy() if "rank" in rows else None, "note": note,
            "too_few": [is_too_few(r) for r in rows.itertuples()]}))
    if not frames:
        return pd.DataFrame(columns=["kind", "key", "n", "kappa", "kappa_low", "kappa_high",
                                     "rank", "note", "too_few", "kendall", "kendall_rank"])
    ranked = pd.concat(frames, ignore_index=True)
    kendall, kendall_rank = {}, {}
    if report.significance is not None:
        c = report.significance.correlations
        c = c[(c.slice == slice_name) & (c.slice_value == value) & (c.statistic == "kendall")]
        kendall = dict(zip(c.key, c.value))
        r = report.significance.ranks
        r = r[(r.slice == slice_name) & (r.slice_value == value) & (r.statistic == "kendall")]
        kendall_rank = dict(zip(r.key, r["rank"]))
    ranked["kendall"] = ranked.key.map(kendall)
    ranked["kendall_rank"] = ranked.key.map(kendall_rank)
    ranked["_rank"] = pd.to_numeric(ranked["rank"], errors="coerce").fillna(math.inf)
    return ranked.sort_values(["_rank", "kappa", "key"], ascending=[True, False, True],
                              na_position="last").drop(columns="_rank")


def _ranked_table(ranked: pd.DataFrame) -> str:
    """kappa and its interval right after the name, so that they show in a narrow window."""
    axis = ci_axis(ranked)
    rows = []
    for r in ranked.itertuples():
        rank = rank_text(r.rank)
        rows.append(
            f"<tr class='{'r1' if rank == '1' else ''}'><td class='n'>{rank}</td>"
            f"<td class='key'>{html.escape(str(r.key))}</td>"
            f"<td class='n'>{'too few' if r.too_few else number_text(r.kappa)}</td>"
            f"<td class='ci'>{_ci_bar(r.kappa, r.kappa_low, r.kappa_high, axis)} "
            f"<span class='meta'>{number_text(r.kappa_low, 2)}–{number_text(r.kappa_high, 2)}</span></td>"
            f"<td class='n'>{r.n}</td><td>{r.kind}</td><td class='n'>{number_text(r.kendall)}</td>"
            f"<td class='n'>{rank_text(r.kendall_rank)}</td>"
            f"<td class='warn'>{html.escape(r.note)}</td></tr>")
    return ("<div class='scroll'><table class='t' id='ranked'><thead><tr><th>rank</th>"
            f"<th>configuration</th><th>kappa</th><th>95% CI (axis {axis[0]:.2f} to "
            f"{axis[1]:.2f})</th><th>n</th><th>kind</th><th>Kendall τ<sub>b</sub></th>"
            "<th>Kendall rank</th><th>note</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></div>")


def _heatmap(report: AlignReport, slice_name: str, ranked: pd.DataFrame) -> str:
    """kappa per configuration (rows, in `ranked`'s order) and slice value (columns), cells
    shaded by kappa, the rank within the column after it in brackets."""
    parts = [r.kappa[r.kappa.slice == slice_name] for r in (report.metrics, report.judges)
             if r is not None and not r.kappa.empty]
    rows = pd.concat(parts) if parts else pd.DataFrame()
    if rows.empty:
        return ""
    values = sorted(rows.slice_value.unique())
    keys = list(ranked.key) or sorted(rows.key.unique())
    keys += [k for k in sorted(rows.key.unique()) if k not in keys]
    cell = {(r.key, r.slice_value): (r.kappa, getattr(r, "rank", None), is_too_few(r))
            for r in rows.itertuples()}
    head = "".join(f"<th>{html.escape(str(v))}</th>" for v in values)
    body = []
    for key in keys:
        cells = []
        for v in values:
            kappa, rank, too_few = cell.get((key, v), (math.nan, None, False))
            if too_few:
                cells.append("<td class='n meta'>too few</td>")
                continue
            if kappa is None or pd.isna(kappa):
                cells.append("<td class='n'>–</td>")
                continue
            shade = max(0.0, min(1.0, kappa))
            colour = f"hsl({int(120 * shade)},55%,{int(92 - 30 * shade)}%)"
            # the rank apart from the number, so that a copy reads '0.70 (1)', not '0.701'
            rank = "" if rank is None or pd.isna(rank) else f" <span class='rk'>({int(rank)})</span>"
            cells.append(f"<td class='n' style='background:{colour}'>{kappa:.2f}{rank}</td>")
        body.append(f"<tr><td>{html.escape(str(key))}</td>{''.join(cells)}</tr>")
    return (f"<div class='scroll'><table class='t heat' id='heatmap-{slice_name}'><thead><tr>"
            f"<th>configuration</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            "</div>")


def _labels_needed(report: AlignReport) -> str:
    if report.significance is None:
        return ""
    needed, tested = report.significance.labels_needed, report.significance.options
    if tested.untested:
        return f"<p>{html.escape(tested.untested[0].upper() + tested.untested[1:])}.</p>"
    needed = needed[(needed.slice == "all") & (needed.statistic == "kappa")]
    if needed.empty:
        ranks = report.significance.ranks
        return ("<p>The best configuration's lead over every other is significant, or there is "
                "no runner-up in its cluster.</p>" if (ranks.statistic == "kappa").any() else "")
    items = []
    for r in needed.itertuples():
        count = (html.escape(r.why_none) if pd.isna(r.labels_needed) else
                 f"about <b>{int(r.labels_needed):,}</b> labelled items "
                 f"({int(r.more_labels):,} more; {int(r.labels_if_known):,} were the resampled "
                 f"lead of {r.resampled_lead:+.3f} certain)")
        items.append(f"<li>{html.escape(r.best)} vs {html.escape(r.runner_up)}: Δκ "
                     f"{r.delta:+.3f} (p = {r.p_value:.3f}, n = {r.n}); {count}</li>")
    return ("<p>How many more labels? For the best configuration against each runner-up in its "
            "cluster, the labelled items at which the lead would be significant at alpha "
            f"{tested.alpha} with probability {tested.power}, given what the paired resamples "
            "know of it: their median as the lead and their standard deviation (which shrinks "
            "as 1/√n) as its uncertainty, which the count includes. The difference seen is not "
            "used: with thresholds refitted in each resample the resamples often centre lower. "
            "Where even labels without limit would show the lead less often than that, no "
            "count is given.</p><ul>" + "".join(items) + "</ul>")


def write_html(report: AlignReport, path: Path, figure_paths: dict[str, list[Path]],
               written: dict[str, Path], frames: dict[str, pd.DataFrame]) -> Path:
    """The page; `figure_paths` the PNGs written (embedded), `written` the data files (linked),
    `frames` every table by file stem (`align.report.tables`)."""
    options = report.options
    figures = {p.stem: p for paths in figure_paths.values() for p in paths}
    n_keys = report.metrics.kappa.key.nunique() if len(report.metrics.kappa) else 0
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             "<meta name='viewport' content='width=device-width, initial-scale=1'>",
             f"<title>align report</title><style>{STYLE}</style></head><body>",
             "<h1>Agreement of metrics and judges with the humans</h1>",
             f"<p class='meta'>{len(report.labels)} labelled generations · human labels: "
             f"<code>{html.escape(report.label_policy)}</code> · KDE weighting "
             f"<code>{options.weighting}</code>, bandwidth <code>{options.bandwidth}</code>"
             f"{' (ordered thresholds)' if options.monotone else ''} · {options.bootstrap} "
             f"resamples, seed {options.seed}, alpha {options.alpha} · slices: "
             f"{', '.join(options.slices)}</p>"]
    from align.answers import answers_html

    parts.append(answers_html(report, _figure(figures["quality_models"])
                              if "quality_models" in figures else ""))
    ranked = ranked_configurations(report)
    parts.append("<h2>Which configuration agrees best with the humans (all items)</h2>")
    parts.append(_ranked_table(ranked))
    parts.append(
        "<p class='meta'>kappa: quadratically weighted Cohen's kappa of the KDE classifier "
        "(metrics) or of the verdicts (judges) against the human labels. Rank: significance "
        "clusters (configurations sharing a rank are not told apart at alpha "
        f"{options.alpha}: the paired bootstrap of the kappa difference, thresholds refitted in "
        "each resample; every pair in <a href='significance.csv'>significance.csv</a>). Kendall "
        "τ<sub>b</sub>: the scores' rank correlation with the labels, and its own rank "
        "(PERM-BOTH; it can tell apart configurations that kappa does not; every statistic: "
        "<a href='correlations.csv'>correlations.csv</a>, <a href='ranks.csv'>ranks.csv</a>)."
        "</p>")
    parts.append(_labels_needed(report))
    if report.warnings:
        parts.append(f"<details><summary class='warn'>{len(report.warnings)} warning(s)"
                     "</summary><ul>" + "".join(f"<li class='warn'>{html.escape(w)}</li>"
                                                  for w in report.warnings) + "</ul></details>")
    for slice_name in ("language", "model"):
        title = SLICE_TITLES[slice_name]
        heat = _heatmap(report, slice_name, ranked)
        if heat:
            parts.append(f"<h2>{title}</h2>{heat}<p class='meta'>(1): the kappa rank within "
                         f"the column; too few: fewer than {options.min_items} labelled items, "
                         "no kappa or rank.</p>")
    parts.extend(_figure_sections(report, figures, n_keys, ranked))
    parts.append(_all_tables(frames, written))
    parts.append("</body></html>")
    path.write_text("\n".join(p for p in parts if p), encoding="utf-8")
    return path


def _figure_sections(report: AlignReport, figures: dict[str, Path], n_keys: int,
                     ranked: pd.DataFrame) -> list[str]:
    """The study's figures, each beside the numbers it shows (Figure 5 in `ranked`'s order)."""
    out = []
    fig5 = [k for k in ranked.key if f"fig5_kde_{slug(k)}" in figures]
    if fig5:
        out.append("<h2>Where each metric draws its thresholds (Figure 5)</h2>")
        if n_keys > MAX_KDE_FIGURES:
            out.append(f"<p class='meta'>The first {MAX_KDE_FIGURES} of {n_keys} configurations; "
                       "every threshold is in kappa.csv and thresholds.json.</p>")
        kappa = report.metrics.kappa
        cells = []
        for key in fig5:
            row = kappa[(kappa.key == key) & (kappa.slice == "all")].iloc[0]
            cells.append(_figure(figures[f"fig5_kde_{slug(key)}"],
                                 f"{key}: kappa {number_text(row.kappa)}, regions {row.regions}"))
        out.append("<div class='figs'>" + "".join(cells) + "</div>")
    if "fig11_context" in figures:
        context = report.context
        context = context[context.slice == "all"] if (context.slice == "all").any() else context
        out.append("<h2>Does context help? (RQ3.2, Figure 11)</h2>")
        out.append(_figure(figures["fig11_context"], "Δ kappa of each context variant against "
                                                     "the same configuration without context"))
        out.append(_table(context, ["key", "context", "kappa", "kappa_baseline", "delta_kappa",
                                    "ci_low", "ci_high", "p_value"]))
        out.append("<p class='meta'>Interval: paired bootstrap (same items, thresholds refitted "
                   "per resample); p: two-sided. Per slice: context.csv.</p>")
    if "fig3_noise" in figures:
        noise = report.noise
        out.append("<h2>Real predictions against noise (Figures 3, section 7.2)</h2>")
        out.append(_figure(figures["fig3_noise"]))
        out.append(_table(noise[noise.slice == "all"] if len(noise) else noise,
                          ["key", "noise", "n_real", "n_noise", "f1", "macro_f1", "kappa",
                           "thresholds"]))
    simple = [("fig2_strip", "Scores coloured by human label (Figure 2)")]
    simple += [(f"fig6_kappa_{name}", f"{SLICE_TITLES[name]} (Figure 6)") for name in SLICE_TITLES]
    for stem, title in simple:
        if stem in figures:
            out.append(f"<h2>{html.escape(title)}</h2>{_figure(figures[stem])}")
    groups = [(stem, caption) for stem, caption in (
        ("fig9_groups_kappa", "Figure 9: kappa"),
        ("fig10_groups_precision_correct", "Figure 10: precision of 'correct'"))
        if stem in figures]
    if groups:  # one section: both figures and the numbers they show
        numbers = report.groups[report.groups.slice != "model"]
        out.append("<section id='model-groups'><h2>Kappa and precision of 'correct' by "
                   "scoring-model group (Figures 9-10)</h2><div class='figs'>"
                   + "".join(_figure(figures[stem], caption) for stem, caption in groups)
                   + "</div>" + _table(numbers, ["value", "metric", "group", "slice",
                                                 "slice_value", "mean", "sd", "n"])
                   + "<p class='meta'>mean ± sd over the configurations of each metric in a "
                   "group (n of them); per generating model: groups.csv.</p></section>")
    confusions = [stem for stem in sorted(figures) if stem.startswith("fig7_confusion_")]
    if confusions:
        out.append("<details><summary>Confusion matrices (Figures 7-8; top: recall, bottom: "
                   "precision)</summary><div class='figs'>"
                   + "".join(_figure(figures[s]) for s in confusions) + "</div></details>")
    out.extend(_judge_sections(report, figures))
    if not report.annotator_pairs.empty:
        out.append(f"<h2>Annotators</h2><p>Krippendorff's alpha (ordinal): "
                   f"{report.annotator_alpha:.3f}</p>")
        out.append(_table(report.annotator_pairs))
    return out


def _judge_sections(report: AlignReport, figures: dict[str, Path]) -> list[str]:
    if report.judges is None:
        return []
    out = ["<h2>LLM judges (Figures 17-19)</h2>"]
    out.extend(_figure(figures[s]) for s in ("fig17_judges", "fig19_codes") if s in figures)
    confusions = [s for s in sorted(figures) if s.startswith("fig18_judge_confusion_")]
    if confusions:
        out.append("<details><summary>Confusion matrices per judge (Figure 18)</summary>"
                   "<div class='figs'>" + "".join(_figure(figures[s]) for s in confusions)
                   + "</div></details>")
    judges = report.judges.kappa
    out.append(_table(judges[judges.slice != "model"] if len(judges) else judges, [
        "key", "slice", "slice_value", "n_verdicts", "n", "failure_rate", "kappa", "kappa_low",
        "kappa_high", "rank"]))
    out.append("<h3>Per error code</h3>" + _table(report.judge_codes))
    images = {name: _image(figures[f"judge_{name}"]) for name in STUDY_FIGURE_TITLES
              if f"judge_{name}" in figures}
    out.append(study_sections_html(report.judge_studies, images, level=3, prefix="judge_"))
    return out


def _all_tables(frames: dict[str, pd.DataFrame], written: dict[str, Path]) -> str:
    """Every table, folded, each with its CSV (the predictions as a link only)."""
    parts = ["<h2>All numbers</h2><p class='meta'>Each table in full: "
             + " · ".join(f"<a href='{p.name}'>{p.name}</a>" for p in written.values())
             + "</p>"]
    for name, frame in frames.items():
        if frame is None or name == "predictions":
            continue
        file = f"{name}.csv"
        parts.append(f"<details><summary>{name} ({len(frame):,} rows, <a href='{file}'>{file}</a>)"
                     f"</summary>{_table(frame, limit=500)}</details>")
    return "\n".join(parts)
