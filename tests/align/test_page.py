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
    assert ranked.header[:5] == ["rank", "configuration", "kind", "n", "kappa"]
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


def test_the_page_in_a_browser_wide_and_narrow(page_folder, chromium):
    url = (page_folder / "report.html").as_uri()
    for width in (1280, 400):
        page = chromium.new_page(viewport={"width": width, "height": 800})
        page.goto(url)
        assert page.evaluate("[...document.querySelectorAll('table')].slice(0, 2)"
                             ".map(t => t.id)") == ["quality", "ranked"]
        broken = page.evaluate("[...document.images].filter(i => !i.complete || "
                               "i.naturalWidth === 0).length")
        assert broken == 0 and page.evaluate("document.images.length") > 5
        # wide tables scroll in their own box; the page itself does not scroll sideways
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.close()
