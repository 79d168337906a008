"""The item view's HTML: diff units per script, <del>/<ins> marks, the code window and the
highlighted comment span."""
from __future__ import annotations

import re

from annotate.render import (code_html, code_window, comment_diff, diff_html, diff_tokens,
                             output_overflow)


def test_chinese_is_diffed_per_character():
    assert diff_tokens("计算两个数") == ["计", "算", "两", "个", "数"]
    left, right = comment_diff("计算两个数的和", "计算三个数的和")
    assert [s.text for s in left if s.op == "delete"] == ["两"]
    assert [s.text for s in right if s.op == "insert"] == ["三"]


def test_greek_and_polish_are_diffed_per_word():
    assert diff_tokens("Υπολογίζει το άθροισμα.") == ["Υπολογίζει", " ", "το", " ", "άθροισμα", "."]
    left, right = comment_diff("Zwraca sumę dwóch liczb", "Zwraca różnicę dwóch liczb")
    assert [s.text for s in left if s.op == "delete"] == ["sumę"]
    assert [s.text for s in right if s.op == "insert"] == ["różnicę"]


def test_mixed_cjk_and_latin_tokens_round_trip():
    text = "返回user的ID列表, see get_ids()"
    assert "".join(diff_tokens(text)) == text
    assert "user" in diff_tokens(text) and "的" in diff_tokens(text)


def test_diff_html_escapes_and_marks():
    out = diff_html("a <b> c", "a <i> c")
    assert "<del>&lt;b&gt;</del>" not in out  # '<', 'b', '>' are separate units
    assert "<del>b</del>" in out and "<ins>i</ins>" in out
    assert "<b>" not in out and "&lt;" in out


def test_overflow_is_what_follows_the_comment():
    assert output_overflow("# adds two numbers\nreturn a + b", "# adds two numbers") == (
        "\nreturn a + b")
    assert output_overflow("# same", "# same") == ""
    assert output_overflow("something else", "# cut") == "something else"
    # the raw output continues a primer the comment starts with: nothing runs past it
    assert output_overflow(" σε λεκτικό χαρακτηρισμό", "# Μετατρέπει τον βαθμό σε λεκτικό "
                           "χαρακτηρισμό") == ""
    assert output_overflow(" twee getallen\nreturn a + b", "# Geeft de som van twee getallen"
                           ).strip() == "return a + b"


def test_code_window_keeps_the_span():
    content = "".join(f"line {i}\n" for i in range(100))
    start = content.index("line 50")
    window = code_window(content, start, start + 7, before=3, after=2)
    assert window.first_line == 48
    assert window.text[window.span_start:window.span_end] == "line 50"
    assert window.text.count("\n") == 5


def test_code_html_marks_the_comment_on_every_line_it_spans():
    content = 'def f(a, b):\n    """Add\n    two."""\n    return a + b\n'
    start = content.index('"""Add')
    end = content.index('two."""') + len('two."""')
    out = code_html(content, start, end, programming_language="python")
    marked = re.findall(r'<mark class="nlce-mask"[^>]*>(.*?)</mark>', out)
    assert len(marked) == 2  # one mark per line, so each line keeps its own number
    assert '<span class="nlce-ln">4</span>' in out and out.count('class="nlce-line"') == 4
    assert '<span class="k">return</span>' in out


def test_code_html_survives_out_of_range_offsets():
    out = code_html("x = 1\n", 50, 70, programming_language="no-such-language")
    assert "nlce-code" in out


def test_user_text_in_markdown_elements_renders_as_typed():
    """ui.plain makes names and messages quoting user text safe for st.markdown/st.error: a
    CommonMark renderer (as Streamlit's) makes no image, link, HTML or emphasis of them."""
    from markdown_it import MarkdownIt

    from annotate.ui import plain

    evil = ("![beacon](http://evil.test/b.png) [click](http://evil.test/p) <img src=x> "
            "<a href='http://evil.test'>x</a> **bold** `code` # head :red[x] $x$ <http://evil.test>")
    html = MarkdownIt("commonmark").render(plain(evil))
    assert not re.search(r"<(img|a|strong|code|h1|script)\b", html), html
    assert html == "<p>" + (evil.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                            .replace('"', "&quot;")) + "</p>\n"
