"""report.html (align/page.py): leads with the ranked table, carries its figures, fetches
nothing, and reads in a narrow window; checked as text and in a real browser."""
from __future__ import annotations

import base64
import re

import pytest

from align.pipeline import AlignOptions, run_alignment
from align.report import write_report
from testing.html_page import ReportPage


@pytest.fixture(scope="module")
def page_folder(align_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("page") / "report"
    report = run_alignment(align_db["url"], AlignOptions(bootstrap=100))
    write_report(report, out)
    return out


def test_the_ranked_table_comes_first_and_every_figure_is_embedded_once(page_folder):
    text = (page_folder / "report.html").read_text(encoding="utf-8")
    page = ReportPage(text)
    quality, ranked = page.tables[:2]  # the answers first: the models ranked by the humans
    assert quality.header == ["model", "all", "en", "nl"]
    assert {r["model"] for r in quality.records()} == {"model-a", "model-b"}
    assert all(re.fullmatch(r"#[12] \d\.\d\d \(\d\.\d\d–\d\.\d\d\) [a-z]+", r["all"])
               for r in quality.records())
    assert ranked.header[:3] == ["rank", "configuration", "kappa"]
    assert ranked.header[3].startswith("95% CI (axis ")
    assert ranked.header[4:8] == ["n", "kind", "Kendall τb", "Kendall rank"]
    records = ranked.records()
    assert [r["rank"] for r in records] == sorted(r["rank"] for r in records)
    assert records[0]["configuration"] == "goodmetric[intfloat/multilingual-e5-small,L8,none]"
    assert "fake-judge[standard,en,v1]" in {r["configuration"] for r in records}
    images = [src for _, src in page.images]
    assert images and all(src.startswith("data:image/png;base64,") for src in images)
    shown = sorted(base64.b64decode(src.split(",", 1)[1]) for src in images)
    written = sorted(p.read_bytes() for p in (page_folder / "figures").glob("*.png"))
    assert shown == written
    assert "id='heatmap-language'" in text and "id='heatmap-model'" in text
    assert "<script" not in text.lower()
    assert not re.search(r"""(src|href)=['"]?(https?:)?//""", text)  # nothing fetched


@pytest.fixture(scope="module")
def long_names_folder(tmp_path_factory):
    """A report shaped like the WMT MQM ones: 1,500 items, a BERTScore key, scores that make
    many regions, 13 systems with long names, two languages."""
    import numpy as np
    import pandas as pd

    from align.pipeline import align_frames

    rng = np.random.default_rng(4)
    n = 1_500
    human = rng.choice(["incorrect", "partial", "correct"], n, p=[0.1, 0.35, 0.55])
    level = pd.Series(human).map({"incorrect": 0, "partial": 1, "correct": 2}).to_numpy()
    systems = ["Facebook-AI", "HuaweiTSC", "Nemo", "Online-W", "UEdin", "VolcTrans-AT",
               "VolcTrans-GLAT", "eTranslation"] + [f"metricsystem{i}" for i in range(1, 6)]
    frames = []
    for key, metric, scorer, modes, spread in (
            ("bertscore[intfloat/multilingual-e5-small,none]", "bertscore",
             "intfloat/multilingual-e5-small", 4, 0.04),
            ("chrf", "chrf", "", 2, 0.2), ("bleu[tokenize:13a]", "bleu", "", 2, 0.25)):
        # scores in several clumps: the class densities cross many times (long regions)
        clumps = rng.integers(0, modes, n) * spread
        frames.append(pd.DataFrame({
            "key": key, "metric": metric, "scorer": scorer, "layer": None, "context": "none",
            "noise": "none", "generation_id": np.arange(n), "target_id": np.arange(n) // 13,
            "score": 0.8 + 0.3 * spread * level + clumps + rng.normal(0, spread / 6, n),
            "model": np.array(systems)[np.arange(n) % 13],
            "language": np.where(np.arange(n) % 2, "zh", "en"), "higher_is_better": True}))
    labels = pd.DataFrame({"generation_id": np.arange(n), "label": human,
                           "codes": [frozenset()] * n})
    report = align_frames(pd.concat(frames, ignore_index=True), labels,
                          AlignOptions(bootstrap=100, significance=("kappa", "kendall")))
    regions = report.metrics.kappa.regions[report.metrics.kappa.slice == "all"]
    assert regions.str.len().max() >= 60  # wider than 390 px unbroken, as on WMT MQM zh-en
    out = tmp_path_factory.mktemp("long") / "report"
    write_report(report, out)
    return out


def test_every_page_reads_at_1280_and_390_pixels(page_folder, long_names_folder, chromium):
    """Both reports in Chromium, wide and narrow: the page never scrolls sideways (a regions
    string in a caption made it 510 px wide at 390), kappa and its interval show without a
    sideways scroll, every interval is drawn wider than its dot (a fixed -0.2..1 axis hid it
    at n >= 1,500), heat-map cells copy as '0.70 (1)' (they copied as '0.701'), no heading says
    'by all', Figures 9-10 are one section with their numbers, and Kendall's rank is there."""
    for folder in (page_folder, long_names_folder):
        for width in (1280, 390):
            page = chromium.new_page(viewport={"width": width, "height": 800})
            page.goto((folder / "report.html").as_uri())
            assert page.evaluate("[...document.querySelectorAll('table')].slice(0, 2)"
                                 ".map(t => t.id)") == ["quality", "ranked"]
            broken = page.evaluate("[...document.images].filter(i => !i.complete || "
                                   "i.naturalWidth === 0).length")
            assert broken == 0 and page.evaluate("document.images.length") > 5
            assert page.evaluate("document.documentElement.scrollWidth") <= width, folder
            hidden = page.evaluate("""() => {
                const box = document.querySelector('#ranked').closest('.scroll')
                    .getBoundingClientRect();
                return [...document.querySelectorAll('#ranked tbody tr')].flatMap(row =>
                    [row.cells[2], row.cells[3]].filter(c => c.getBoundingClientRect().right
                                                         > box.right + 0.5)
                    .map(c => row.cells[1].innerText + ': ' + c.innerText));
            }""")
            assert hidden == [], (folder, width, hidden)
            bars = page.evaluate("""[...document.querySelectorAll('#ranked svg')].map(svg => {
                const line = svg.querySelector("line[stroke='#36c']");
                const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
                return [svg.parentElement.querySelector('span').innerText,
                        Math.abs(line.x2.baseVal.value - line.x1.baseVal.value) * scale]; })""")
            wide = [length for text, length in bars if len(set(text.split("–"))) == 2]
            assert wide and min(wide) > 7, (folder, width, bars)  # the dot is 7 px across
            cells = page.evaluate("[...document.querySelectorAll('table.heat tbody td.n')]"
                                  ".map(td => td.innerText)")
            assert cells and all(re.fullmatch(r"–|too few|-?\d\.\d\d( \(\d+\))?", c)
                                 for c in cells), cells
            headings = page.evaluate("[...document.querySelectorAll('h2')].map(h => h.innerText)")
            assert not [h for h in headings if "by all" in h.lower()], headings
            groups = [h for h in headings if "Figures 9-10" in h or "Figure 9" in h
                      or "Figure 10" in h]
            assert len(groups) == 1 and "Figures 9-10" in groups[0], headings
            after = page.evaluate("""() => {
                const section = document.querySelector('#model-groups');
                return {figures: section.querySelectorAll('img').length,
                        table: !!section.querySelector('table')}; }""")
            assert after == {"figures": 2, "table": True}, after
            kendall = page.evaluate("[...document.querySelectorAll('#ranked tbody tr')]"
                                    ".map(r => r.cells[7].innerText)")
            assert kendall and all(re.fullmatch(r"\d+|–", k) for k in kendall), kendall
            page.close()
