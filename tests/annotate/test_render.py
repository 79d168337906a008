"""The item view's HTML: diff units per script, <del>/<ins> marks, the code window and the
highlighted comment span."""
from __future__ import annotations

import re

from annotate.render import code_html, code_window, comment_diff, diff_html, diff_tokens, output_overflow


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


# ------------------------------------------------------------------------------ bounded time

def _words(n_chars: int, seed: int) -> str:
    """Comment-like text of about n_chars from a small vocabulary: many repeated tokens, the
    costly case for a word diff."""
    import random

    rng = random.Random(seed)
    vocabulary = ["zwraca", "sumę", "listy", "the", "value", "返回", "of", "liczb", "x", "."]
    words, size = [], 0
    while size < n_chars:
        words.append(rng.choice(vocabulary))
        size += len(words[-1]) + 1
    return " ".join(words)


def _elapsed_in_child(function, *args, limit_s: float) -> float | None:
    """Seconds `function(*args)` takes in a forked process; None when it runs past limit_s (the
    child is then stopped, so a stall fails the test instead of hanging the suite)."""
    import multiprocessing
    import time

    context = multiprocessing.get_context("fork")
    results = context.Queue()

    def timed():
        started = time.perf_counter()
        function(*args)
        results.put(time.perf_counter() - started)

    child = context.Process(target=timed, daemon=True)
    child.start()
    child.join(limit_s)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return results.get(timeout=5)


def _bound(small_s: float) -> float:
    # Generous: the 2 MB case may cost a few times the small one (reading the text once), never
    # the hundreds of times a quadratic diff costs (6 s at 20 kB, 43 s at 39 kB before).
    return 20 * small_s + 0.5


def test_a_two_megabyte_comment_diffs_in_bounded_time():
    small = (_words(3_000, 1), _words(3_000, 2))
    big = (_words(2_000_000, 3), _words(2_000_000, 4))
    small_s = _elapsed_in_child(diff_html, *small, limit_s=60)
    assert small_s is not None
    big_s = _elapsed_in_child(diff_html, *big, limit_s=_bound(small_s))
    assert big_s is not None, f"2 MB diff ran past {_bound(small_s):.2f}s (3 kB: {small_s:.3f}s)"


def test_a_long_comment_is_cut_with_a_note_and_keeps_its_start():
    from annotate.render import DIFF_MAX_CHARS

    original = _words(50_000, 5)
    out = diff_html(original, original + " extra")
    assert f"of {len(original):,})" in out and "more characters not shown" in out
    left, _ = comment_diff(original, "other")
    shown = "".join(s.text for s in left)
    assert shown == original[:DIFF_MAX_CHARS]


def test_a_small_change_in_a_long_comment_is_still_marked_word_by_word():
    from annotate.render import DIFF_MAX_CHARS

    base = _words(DIFF_MAX_CHARS - 200, 6)
    left, right = comment_diff(base + " alpha tail", base + " omega tail")
    assert [s.text for s in left if s.op == "delete"] == ["alpha"]
    assert [s.text for s in right if s.op == "insert"] == ["omega"]


def test_overflow_of_a_two_megabyte_output_is_found_in_bounded_time():
    # The comment's end is nowhere in the raw output: the costly path (the primer search).
    small = (_words(3_000, 7), _words(3_000, 8) + " QZX")
    big = (_words(2_000_000, 9), _words(2_000_000, 10) + " QZX")
    small_s = _elapsed_in_child(output_overflow, *small, limit_s=60)
    assert small_s is not None
    big_s = _elapsed_in_child(output_overflow, *big, limit_s=_bound(small_s))
    assert big_s is not None, f"2 MB overflow check ran past {_bound(small_s):.2f}s"


def test_overflow_after_a_long_primer_continuation():
    comment = "# " + _words(10_000, 11)
    continuation = comment[5_000:]  # the model's output starts inside the comment
    assert output_overflow(continuation + "\nreturn x", comment).strip() == "return x"
    assert output_overflow(continuation, comment) == ""
