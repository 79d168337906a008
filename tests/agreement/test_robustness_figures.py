"""The robustness studies' figures and report sections (agreement.robustness_report) draw and show
what their tables hold."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from matplotlib.figure import Figure

from agreement.robustness import CODE_MIX_COLUMNS, LANGUAGE_COLUMNS, STABILITY_COLUMNS
from agreement.robustness_report import (
    code_mix_figure,
    language_figure,
    stability_figure,
    study_figures,
    study_sections_html,
)
from testing.html_page import ReportPage


def _table(columns, rows):
    return pd.DataFrame([dict(zip(columns, r)) for r in rows], columns=columns)


STABILITY = _table(STABILITY_COLUMNS, [
    ("j", "rubric", "el", "en", "g1", "j[...]", "1 2 3", 3, 5, 0.8, 0.4, 0.6, -0.2, 0.3, 0.5),
    ("j", "cot", "zh", "zh", "g2", "j[...]", "4 5", 2, 0, math.nan, math.nan, math.nan,
     math.nan, math.nan, math.nan),
])
LANGUAGE = _table(LANGUAGE_COLUMNS, [
    ("j", "rubric", "el", 7, 8, "j[en]", "j[el]", 10, 0.3, 0.5, 0.0, 0.8, 3, 5, 0.7265625)])
CODE_MIX = _table(CODE_MIX_COLUMNS, [
    ("j", "standard", "el", 0.0, 3, 9, "k0", 10, 10, 0.3, 0.1, 0.0),
    ("j", "standard", "el", 0.5, 3, 10, "k1", 10, 8, 0.5, 0.4, 0.2),
    ("j", "standard", "el", 1.0, 3, 11, "k2", 10, 10, 0.6, 0.5, 0.0)])


def _widths(ax) -> list[float]:
    return [round(p.get_width(), 6) for p in ax.patches]


def test_stability_figure_has_three_bars_per_group_and_the_kappa_range():
    fig = stability_figure(STABILITY)
    assert isinstance(fig, Figure)
    rates, kappas = fig.axes
    # bars by measure (U@K, I@K, flips), each over the groups; a group without items draws 0
    assert _widths(rates) == [0.8, 0.0, 0.4, 0.0, 0.6, 0.0]
    (segment,) = kappas.collections  # one min..max line: the second group has no kappa
    ((x0, _), (x1, _)), = [path.vertices for path in segment.get_paths()]
    assert (x0, x1) == pytest.approx((-0.2, 0.3))
    labels = [t.get_text() for t in rates.get_yticklabels()]
    assert labels[0].startswith("j | rubric | el (en prompt)") and "runs 1 2 3, n=5" in labels[0]


def test_language_figure_has_the_four_rates_and_mcnemar_in_the_label():
    fig = language_figure(LANGUAGE)
    (ax,) = fig.axes
    assert _widths(ax) == [0.3, 0.5, 0.0, 0.8]
    (label,) = [t.get_text() for t in ax.get_yticklabels()]
    assert "runs 7 (en) / 8 (el)" in label and "McNemar p=0.727" in label


def test_code_mix_figure_draws_kappa_and_agreement_against_cmd():
    kappa, agreement = code_mix_figure(CODE_MIX).axes
    (line,) = kappa.get_lines()
    assert list(line.get_xdata()) == [0.0, 0.5, 1.0]
    assert list(line.get_ydata()) == pytest.approx([0.1, 0.4, 0.5])
    assert list(agreement.get_lines()[0].get_ydata()) == pytest.approx([0.3, 0.5, 0.6])


def test_figures_only_for_studies_with_runs():
    tables = {"stability": STABILITY, "stability_codes": pd.DataFrame(),
              "language_consistency": LANGUAGE.iloc[0:0], "code_mix": CODE_MIX}
    assert sorted(study_figures(tables)) == ["code_mix", "stability"]


def test_sections_escape_user_text_and_say_how_to_make_missing_runs():
    language = LANGUAGE.assign(judge="<script>x</script>")
    html = study_sections_html({"language_consistency": language},
                               {"language_consistency": "a b.png"}, prefix="judge_")
    assert "<script>" not in html and "&lt;script&gt;" in html
    page = ReportPage(html)
    assert page.sections == ["stability", "language_consistency", "code_mix"]
    assert page.images_in("language_consistency") == ["a b.png"]
    (row,) = page.tables_in("language_consistency")[0].records()
    assert (row["judge"], row["cdr"], row["p_mcnemar"]) == ("<script>x</script>", "0.800", "0.727")
    assert "judge_language_consistency.csv" in html
    assert not page.tables_in("stability") and "judges.run --repeats K" in html
