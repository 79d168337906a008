"""The study's figures as pure functions: tidy frames in, a matplotlib `Figure` out.

Built on `matplotlib.figure.Figure` (no pyplot, no global backend), so they work the same in the
CLI (saved as PNG), in tests and in the Streamlit analysis page (`st.pyplot(fig)`).
"""
from __future__ import annotations

import textwrap
from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from align.kde import KDEFit
from taxonomy import ACCURACY_LABELS

LABEL_COLOURS = {"incorrect": "#d62728", "partial": "#ff7f0e", "correct": "#2ca02c",
                 "noise": "#7f7f7f", "real": "#1f77b4"}
NOISE_COLOURS = {"none": "#1f77b4", "uniform": "#7f7f7f", "targeted": "#9467bd"}
_FALLBACK = ["#1f77b4", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def colour(label: str, i: int = 0) -> str:
    return LABEL_COLOURS.get(str(label), _FALLBACK[i % len(_FALLBACK)])


def short_key(key: str) -> str:
    """A configuration name fit for an axis: model ids without their organisation, the
    bracketed part on its own line ('bertscore\n[multilingual-e5-small,L8,full]')."""
    name, sep, rest = str(key).partition("[")
    if not sep:
        return name
    parts = [p.rsplit("/", 1)[-1] for p in rest.rstrip("]").split(",")]
    return f"{name}\n[{','.join(parts)}]"


def _figure(size, left=0.1, right=0.97, bottom=0.12, top=0.9, wspace=0.2, hspace=0.2) -> Figure:
    """A figure with fixed margins (constrained layout costs an extra draw per save)."""
    fig = Figure(figsize=size)
    fig.subplots_adjust(left=left, right=right, bottom=bottom, top=top, wspace=wspace,
                        hspace=hspace)
    return fig


def _empty(message: str) -> Figure:
    fig = Figure(figsize=(6, 2))
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return fig


def _normalise(values: np.ndarray) -> np.ndarray:
    lo, hi = np.nanmin(values), np.nanmax(values)
    return np.zeros_like(values) if hi <= lo else (values - lo) / (hi - lo)


MAX_POINTS = 2000  # points drawn per strip or scatter (a random sample beyond that)
MAX_KDE_FIGURES = 24  # Figures 5 and 7-8 for at most this many configurations (all in the CSVs)


def slug(text: str) -> str:
    """A configuration key as part of a figure's file name (fig5_kde_<slug>.png)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)[:80]


def strip_plot(scores: pd.DataFrame, labels: pd.DataFrame, keys: Sequence[str] | None = None,
               seed: int = 0, max_points: int = MAX_POINTS) -> Figure:
    """Figure 2: each configuration's scores of real predictions, min-max normalised to [0, 1],
    one jittered strip per configuration, coloured by the human label (at most `max_points`
    per strip, a random sample)."""
    real = scores[scores.noise == "none"].merge(labels[["generation_id", "label"]],
                                                on="generation_id")
    keys = list(keys) if keys else sorted(real.key.unique())
    if real.empty or not keys:
        return _empty("no labelled scores")
    rng = np.random.default_rng(seed)
    if len(real) > max_points * len(keys):  # a readable sample per strip; numbers use all items
        real = pd.concat([rows.sample(min(len(rows), max_points), random_state=seed)
                          for _, rows in real.groupby("key", sort=False)])
    fig = _figure((max(4, 1.1 * len(keys) + 2), 4.5), bottom=0.3, top=0.88)
    ax = fig.add_subplot()
    for i, key in enumerate(keys):
        rows = real[real.key == key]
        y = _normalise(rows.score.to_numpy(float))
        x = i + rng.uniform(-0.3, 0.3, len(rows))
        ax.scatter(x, y, s=6, c=[colour(lab) for lab in rows.label], alpha=0.6, linewidths=0)
    ax.set_xticks(range(len(keys)), [short_key(k) for k in keys], rotation=30, ha="right",
                  fontsize=7)
    ax.set_ylabel("normalised score")
    for label in ACCURACY_LABELS:
        ax.scatter([], [], c=colour(label), label=label)
    ax.legend(loc="upper left", fontsize=8, frameon=False, ncols=3, bbox_to_anchor=(0, 1.1))
    return fig


def noise_plot(scores: pd.DataFrame, keys: Sequence[str] | None = None) -> Figure:
    """Figure 3: score distributions of real predictions against uniform and targeted noise."""
    with_noise = scores[scores.key.isin(scores.loc[scores.noise != "none", "key"].unique())]
    keys = list(keys) if keys else sorted(with_noise.key.unique())
    if not keys:
        return _empty("no noise scores")
    kinds = [k for k in ("none", "uniform", "targeted") if k in set(with_noise.noise)]
    fig = _figure((max(4, 1.3 * len(keys) + 2), 4.5), bottom=0.3)
    ax = fig.add_subplot()
    width = 0.8 / len(kinds)
    for j, kind in enumerate(kinds):
        data = [with_noise[(with_noise.key == k) & (with_noise.noise == kind)].score.to_numpy(float)
                for k in keys]
        positions = [i - 0.4 + width * (j + 0.5) for i in range(len(keys))]
        present = [(p, d) for p, d in zip(positions, data) if d.size]
        if not present:
            continue
        parts = ax.violinplot([d for _, d in present], positions=[p for p, _ in present],
                              widths=width * 0.9, showmedians=True)
        for body in parts["bodies"]:
            body.set_facecolor(NOISE_COLOURS[kind])
            body.set_alpha(0.6)
        for name in ("cmedians", "cmins", "cmaxes", "cbars"):
            if name in parts:
                parts[name].set_color(NOISE_COLOURS[kind])
        ax.scatter([], [], c=NOISE_COLOURS[kind], label="real" if kind == "none" else kind)
    ax.set_xticks(range(len(keys)), [short_key(k) for k in keys], rotation=30, ha="right",
                  fontsize=7)
    ax.set_ylabel("score")
    ax.legend(fontsize=8, frameon=False)
    return fig


def kde_classifier_plot(fit: KDEFit, scores: Sequence[float], human: Sequence[str],
                        title: str = "", seed: int = 0, max_points: int = MAX_POINTS) -> Figure:
    """Figure 5: the items (coloured by human label) against the score axis, the class densities
    on the right, a line at every threshold and the background shaded by the winning class
    (at most `max_points` items drawn, a random sample)."""
    t = fit.thresholds
    scores = np.asarray(scores, dtype=float)
    human = list(human)
    if len(scores) > max_points:
        pick = np.sort(np.random.default_rng(seed).choice(len(scores), max_points, replace=False))
        scores, human = scores[pick], [human[i] for i in pick]
    # a long key and many regions wrap instead of running off the figure
    heading = textwrap.fill(title or t.describe(), 95, break_on_hyphens=False)
    lines = heading.count("\n") + 1
    fig = _figure((7, 4.5 + 0.2 * (lines - 1)), top=0.92 - 0.05 * (lines - 1), wspace=0.05)
    left, right = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 1]})
    lo, hi = fit.grid[0], fit.grid[-1]
    labels = [str(x) for x in t.labels]
    for ax in (left, right):
        for lower, upper, label in t.intervals:
            ax.axhspan(max(lower, lo), min(upper, hi), color=to_rgba(colour(label), 0.15),
                       linewidth=0)
        for cut in t.boundaries:
            ax.axhline(cut, color="black", linewidth=0.8)
    rng = np.random.default_rng(seed)
    left.scatter(rng.uniform(0, 1, len(scores)), scores, s=8, linewidths=0, alpha=0.7,
                 c=[colour(h, labels.index(str(h)) if str(h) in labels else 0) for h in human])
    left.set_xticks([])
    left.set_ylabel("score")
    if scores.size and np.isfinite(scores).any():  # show the data's range, not the grid's pad
        smin, smax = np.nanmin(scores), np.nanmax(scores)
        margin = 0.08 * (smax - smin) if smax > smin else 0.5 * (hi - lo) / 4
        lo, hi = max(lo, smin - margin), min(hi, smax + margin)
    left.set_ylim(lo, hi)
    density = fit.density
    for i, label in enumerate(labels):
        if np.isfinite(fit.log_density[i]).any():
            right.plot(density[i], fit.grid, color=colour(label, i), label=label)
    right.set_xlabel("density" + (" (prior-weighted)" if t.weighting == "prior" else ""))
    right.legend(fontsize=7, frameon=False)
    fig.suptitle(heading, fontsize=9)
    return fig


def confusion_plot(confusion: pd.DataFrame, title: str = "") -> Figure:
    """Figures 7-8 and 18: one column per slice value; top row row-normalised (recall), bottom
    row column-normalised (precision). `confusion` holds one configuration's rows."""
    if confusion.empty:
        return _empty("no confusion matrix")
    values = list(dict.fromkeys(confusion.slice_value))
    labels = list(dict.fromkeys(confusion.human))
    k = len(labels)
    fig = _figure((2.4 * len(values) + 0.8, 5), left=0.8 / (2.4 * len(values) + 0.8) + 0.02,
                  top=0.88, wspace=0.35, hspace=0.35)
    axes = np.atleast_2d(fig.subplots(2, len(values), squeeze=False))
    for j, value in enumerate(values):
        rows = confusion[confusion.slice_value == value]
        for i, (column, name) in enumerate((("recall_norm", "recall (rows)"),
                                            ("precision_norm", "precision (columns)"))):
            matrix = (rows.pivot(index="human", columns="predicted", values=column)
                      .reindex(index=labels, columns=labels).to_numpy(float))
            ax = axes[i, j]
            ax.imshow(np.nan_to_num(matrix), vmin=0, vmax=1, cmap="Blues")
            for a in range(k):
                for b in range(k):
                    text = "–" if np.isnan(matrix[a, b]) else f"{matrix[a, b]:.2f}"
                    ax.text(b, a, text, ha="center", va="center", fontsize=7,
                            color="white" if matrix[a, b] > 0.6 else "black")
            ax.set_xticks(range(k), [x[:4] for x in labels], fontsize=7)
            ax.set_yticks(range(k), [x[:4] for x in labels], fontsize=7)
            if i == 0:
                ax.set_title(str(value), fontsize=8)
            if j == 0:
                ax.set_ylabel(f"human\n{name}", fontsize=7)
            if i == 1:
                ax.set_xlabel("predicted", fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def kappa_plot(kappa: pd.DataFrame, series: str = "key", x: str = "slice_value",
               value: str = "kappa", title: str = "") -> Figure:
    """Figures 6 and 17: `value` (with its bootstrap interval if present) per slice value, one
    series per configuration."""
    rows = kappa.dropna(subset=[value]) if value in kappa else kappa.iloc[0:0]
    if rows.empty:
        return _empty(f"no {value} to plot")
    xs = list(dict.fromkeys(rows[x]))
    names = list(dict.fromkeys(rows[series]))
    plot_width = max(5, 0.9 * len(xs) + 3)
    # slice values side by side need about 0.09 inch a character at fontsize 8: else slanted
    slanted = sum(len(str(v)) + 2 for v in xs) * 0.09 > plot_width - 1
    fig = _figure((plot_width + 2.5, 4 + (0.8 if slanted else 0)),
                  right=1 - 2.5 / (plot_width + 2.5), bottom=0.3 if slanted else 0.15)
    ax = fig.add_subplot()
    width = 0.8 / max(len(names), 1)
    for j, name in enumerate(names):
        part = rows[rows[series] == name].set_index(x).reindex(xs)
        pos = np.arange(len(xs)) - 0.4 + width * (j + 0.5)
        y = part[value].to_numpy(float)
        err = None
        if value == "kappa" and "kappa_low" in part and part.kappa_low.notna().any():
            err = np.vstack([y - part.kappa_low.to_numpy(float), part.kappa_high.to_numpy(float) - y])
            err = np.where(np.isnan(err), 0, err)
        ax.errorbar(pos, y, yerr=err, fmt="o", ms=4, capsize=2,
                    label=short_key(name).replace("\n", " "),
                    color=_FALLBACK[j % len(_FALLBACK)] if len(names) <= 5 else None)
    ax.axhline(0, color="grey", linewidth=0.6)
    ax.set_xticks(range(len(xs)), xs, fontsize=8, rotation=30 if slanted else 0,
                  ha="right" if slanted else "center")
    ax.set_ylabel("quadratic weighted kappa" if value == "kappa" else value)
    if len(names) <= 12:
        ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1, 0.5))
    if title:
        ax.set_title(title, fontsize=9)
    return fig


def group_plot(groups: pd.DataFrame, title: str = "") -> Figure:
    """Figures 9-10: mean (+- sd) per scoring-model group and slice value."""
    if groups.empty:
        return _empty("no model groups")
    xs = list(dict.fromkeys(groups.slice_value))
    names = sorted(groups.group.unique())
    fig = _figure((max(5, 0.9 * len(xs) + 3), 4), bottom=0.15)
    ax = fig.add_subplot()
    width = 0.8 / len(names)
    for j, name in enumerate(names):
        part = groups[groups.group == name].groupby("slice_value")[["mean", "sd"]].mean().reindex(xs)
        pos = np.arange(len(xs)) - 0.4 + width * (j + 0.5)
        ax.bar(pos, part["mean"].to_numpy(float), width * 0.9,
               yerr=np.nan_to_num(part["sd"].to_numpy(float)), capsize=2, label=name)
    ax.set_xticks(range(len(xs)), xs, fontsize=8)
    ax.axhline(0, color="grey", linewidth=0.6)
    ax.legend(fontsize=7, frameon=False)
    if title:
        ax.set_title(title, fontsize=9)
    return fig


def context_plot(context: pd.DataFrame, title: str = "", alpha: float = 0.05) -> Figure:
    """Figure 11: change in kappa against no context, per context variant and scoring model,
    with its paired-bootstrap 95% interval where context.csv has one; a filled marker where the
    change is significant (two-sided p < `alpha`), a hollow one where it is not."""
    if context.empty:
        return _empty("no context variants to compare")
    variants = list(dict.fromkeys(context.context))
    fig = _figure((max(5, 1.5 * len(variants) + 3) + 2.5, 4), right=0.62)
    ax = fig.add_subplot()
    context = context.assign(series=[f"{m}[{s}]" if s else m
                                     for m, s in zip(context.metric, context.scorer)])
    names = list(dict.fromkeys(context.series))
    offsets = np.linspace(-0.2, 0.2, len(names)) if len(names) > 1 else np.zeros(1)
    has_ci = "ci_low" in context and context.ci_low.notna().any()
    for j, name in enumerate(names):
        part = context[context.series == name]
        pos = np.array([variants.index(v) for v in part.context], float) + offsets[j]
        y = part.delta_kappa.to_numpy(float)
        colour = _FALLBACK[j % len(_FALLBACK)]
        if has_ci:
            err = np.vstack([y - part.ci_low.to_numpy(float), part.ci_high.to_numpy(float) - y])
            ax.errorbar(pos, y, yerr=np.where(np.isnan(err), 0, err), fmt="none", ecolor=colour,
                        elinewidth=1, capsize=2)
        significant = (part.p_value.to_numpy(float) < alpha) if "p_value" in part else \
            np.zeros(len(part), dtype=bool)
        label = short_key(name).replace("\n", " ")
        ax.scatter(pos[significant], y[significant], s=30, color=colour,
                   label=label if significant.any() else None)
        ax.scatter(pos[~significant], y[~significant], s=30, facecolors="white",
                   edgecolors=colour, label=None if significant.any() else label)
    means = context.groupby("context").delta_kappa.mean().reindex(variants)
    ax.scatter(range(len(variants)), means, marker="_", s=600, color="black", label="mean")
    ax.axhline(0, color="grey", linewidth=0.6)
    ax.set_xticks(range(len(variants)), variants)
    ax.set_xlim(-0.5, len(variants) - 0.5)
    ax.set_ylabel("Δ kappa vs no context")
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1, 0.5),
              title=f"filled: p < {alpha:g}" + (", bars: 95% CI" if has_ci else ""),
              title_fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    return fig


def quality_plot(ranked: pd.DataFrame, alpha: float = 0.05) -> Figure:
    """Table 2 as a figure: mean score (correct 1, partial 0.5, incorrect 0) per generating model
    over all items and per language, with 95% intervals; the compact letters above each point
    mark the significant gaps (models sharing a letter are not told apart, Holm at `alpha`).
    `ranked`: `align.quality.ranked_models`."""
    if ranked.empty:
        return _empty("no human labels to rate the models by")
    groups = list(dict.fromkeys(ranked.group))
    models = sorted(ranked.model.unique())
    width = min(16.0, max(6.0, 0.3 * len(groups) * max(len(models), 2) + 3.5))
    fig = _figure((width, 4.2), left=0.7 / width, right=1 - 2.8 / width, bottom=0.12, top=0.86)
    ax = fig.add_subplot()
    width = 0.8 / max(len(models), 1)
    for j, model in enumerate(models):
        part = ranked[ranked.model == model].set_index("group").reindex(groups)
        x = np.arange(len(groups)) - 0.4 + width * (j + 0.5)
        y = part.mean_score.to_numpy(float)
        err = np.vstack([y - part.mean_score_low.to_numpy(float),
                         part.mean_score_high.to_numpy(float) - y])
        ax.errorbar(x, y, yerr=np.where(np.isnan(err), 0, err), fmt="o", ms=4, capsize=2,
                    label=short_key(model).replace("\n", " "),
                    color=_FALLBACK[j % len(_FALLBACK)] if len(models) <= 5 else None)
        for xi, yi, high, letters in zip(x, y, part.mean_score_high.to_numpy(float),
                                         part.letters):
            if isinstance(letters, str) and not np.isnan(yi):
                ax.text(xi, (yi if np.isnan(high) else high) + 0.02, letters, ha="center",
                        va="bottom", fontsize=7)
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    ax.set_ylim(-0.05, 1.12)
    ax.set_ylabel("mean score (human labels)")
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1, 0.5))
    ax.set_title(f"Mean score per model, 95% intervals; models sharing a letter are not told "
                 f"apart (paired permutation tests, Holm, alpha {alpha})", fontsize=8)
    return fig


def code_plot(codes: pd.DataFrame, title: str = "") -> Figure:
    """Figure 19: average precision and recall per error code over judge configurations."""
    if codes.empty:
        return _empty("no judge error codes")
    mean = codes.groupby("code")[["precision", "recall"]].mean()
    sparse = codes.groupby("code").sparse.all()
    names = [f"{c}*" if sparse[c] else c for c in mean.index]
    fig = _figure((6, max(3, 0.25 * len(mean) + 1)), left=0.18)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, column in zip(axes, ("precision", "recall")):
        ax.barh(range(len(mean)), np.nan_to_num(mean[column].to_numpy(float)))
        ax.set_xlim(0, 1)
        ax.set_title(column, fontsize=9)
    axes[0].set_yticks(range(len(mean)), names, fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig
