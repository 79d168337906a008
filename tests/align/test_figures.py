"""The figure functions return real matplotlib Figures that show what they claim."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from align import figures
from align.analysis import align_metrics
from align.kde import fit_kde_thresholds


def test_kde_classifier_plot_marks_every_threshold_and_shades_every_interval():
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.normal(m, 0.05, 100) for m in (0.2, 0.5, 0.8)])
    human = ["incorrect"] * 100 + ["partial"] * 100 + ["correct"] * 100
    fit = fit_kde_thresholds(scores, human)
    fig = figures.kde_classifier_plot(fit, scores, human)
    assert isinstance(fig, Figure)
    left, right = fig.axes
    cuts = fit.thresholds.boundaries
    horizontal = [line.get_ydata()[0] for line in left.get_lines()]
    assert np.allclose(sorted(horizontal), sorted(cuts))
    assert len(left.patches) == len(fit.thresholds.intervals)  # one shaded band per interval
    assert len(right.get_lines()) == len(cuts) + 3  # threshold lines + one density per class


def test_strip_confusion_and_kappa_plots_from_frames():
    rng = np.random.default_rng(1)
    labels = pd.DataFrame({"generation_id": np.arange(90),
                           "label": np.repeat(["incorrect", "partial", "correct"], 30)})
    scores = pd.DataFrame({"key": "m", "metric": "m", "scorer": "", "layer": None,
                           "context": "none", "noise": "none", "generation_id": np.arange(90),
                           "target_id": np.arange(90), "language": np.tile(["en", "nl"], 45),
                           "model": "x",
                           "score": np.repeat([0.2, 0.5, 0.8], 30) + rng.normal(0, 0.05, 90)})
    result = align_metrics(scores, labels, ["all", "language"], bootstrap=50)
    for fig in (figures.strip_plot(scores, labels),
                figures.confusion_plot(result.confusion[result.confusion.slice == "language"]),
                figures.kappa_plot(result.kappa)):
        assert isinstance(fig, Figure) and fig.axes
    conf = figures.confusion_plot(result.confusion[result.confusion.slice == "language"])
    assert len(conf.axes) == 4  # en, nl x recall, precision
    assert isinstance(figures.noise_plot(scores), Figure)  # no noise: a message, not a crash


def _drawn(fig: Figure):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer(), fig.bbox


def test_a_long_key_and_many_regions_stay_inside_figure_5():
    """A BERTScore key and five regions made a title wider than the figure (clipped)."""
    rng = np.random.default_rng(3)
    scores = np.concatenate([rng.normal(m, 0.01, 200) for m in (0.84, 0.87, 0.9)])
    human = ["correct"] * 200 + ["partial"] * 200 + ["incorrect"] * 200
    fit = fit_kde_thresholds(scores, human)
    key = "bertscore[intfloat/multilingual-e5-small,none]"
    title = f"{key}: correct < 0.839 ≤ partial < 0.869 ≤ incorrect < 0.947 ≤ partial < 0.953 ≤ " \
            "correct"
    fig = figures.kde_classifier_plot(fit, scores, human, title=title)
    renderer, frame = _drawn(fig)
    shown = fig._suptitle
    box = shown.get_window_extent(renderer)
    assert box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y1 <= frame.y1
    assert shown.get_text().replace("\n", " ") == title
    for ax in fig.axes:  # the title does not run into the plots
        assert box.y0 >= ax.get_window_extent(renderer).y1


def test_many_generating_models_get_labels_that_do_not_overlap():
    """Figure 6 by model on 13 WMT systems: the labels ran into each other."""
    models = ["Facebook-AI", "HuaweiTSC", "Nemo", "Online-W", "UEdin", "VolcTrans-AT",
              "VolcTrans-GLAT", "eTranslation", "metricsystem1", "metricsystem2",
              "metricsystem3", "metricsystem4", "metricsystem5"]
    kappa = pd.DataFrame([{"key": key, "slice": "model", "slice_value": m, "kappa": 0.1 + i / 100,
                           "kappa_low": 0.05, "kappa_high": 0.3}
                          for key in ("bleu", "bertscore[intfloat/multilingual-e5-small,none]")
                          for i, m in enumerate(models)])
    fig = figures.kappa_plot(kappa, title="Kappa by generating model")
    renderer, frame = _drawn(fig)
    labels = [t.get_window_extent(renderer) for t in fig.axes[0].get_xticklabels()]
    assert len(labels) == 13
    for a, b in zip(labels, labels[1:]):
        assert not a.overlaps(b), (a, b)
    assert all(box.x0 >= frame.x0 and box.y0 >= frame.y0 for box in labels)


def test_quality_plot_draws_each_models_interval_and_its_letters_per_group():
    ranked = pd.DataFrame({
        "group": ["all", "all", "el", "el"], "model": ["m", "n", "n", "m"], "n": 10,
        "mean_score": [0.8, 0.3, 0.9, 0.5], "mean_score_low": [0.7, 0.2, 0.8, 0.3],
        "mean_score_high": [0.9, 0.4, 1.0, 0.7], "letters": ["a", "b", "a", "a"]})
    fig = figures.quality_plot(ranked)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["all", "el"]
    assert sorted(t.get_text() for t in ax.texts) == ["a", "a", "a", "b"]
    # each letter sits just above its model's interval
    tops = sorted(round(t.get_position()[1], 2) for t in ax.texts)
    assert tops == [0.42, 0.72, 0.92, 1.02]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["m", "n"]
    empty = figures.quality_plot(ranked.iloc[0:0])
    assert "no human labels" in empty.axes[0].texts[0].get_text()
