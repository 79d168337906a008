"""HTML for the item view, as pure functions over strings: the code around the masked comment
(Pygments, comment span marked), the original/predicted word or character diff, and what the
raw model output adds after the predicted comment.

Nothing here touches the database or Streamlit, so every function is tested directly."""
from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass
from functools import lru_cache

from pygments.lexers import TextLexer, get_lexer_by_name, guess_lexer_for_filename
from pygments.styles import get_style_by_name
from pygments.token import STANDARD_TYPES, Token
from pygments.util import ClassNotFound

CODE_CSS_SCOPE = ".nlce-code"

# Scripts written without spaces between words: diffed per character, everything else per word.
_CJK = (r"\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff"
        r"\uac00-\ud7af\uf900-\ufaff\uff00-\uffef")


def diff_tokens(text: str) -> list[str]:
    """Split text into diff units: one CJK character, one word (Latin, Greek, Polish letters and
    digits), one run of whitespace, or one punctuation mark. Joining them gives the text back."""
    tokens: list[str] = []
    for match in re.finditer(rf"[{_CJK}]|\w+|\s+|[^\w\s]", text):
        piece = match.group(0)
        if len(piece) > 1 and re.search(f"[{_CJK}]", piece):
            # \w+ also matches CJK ideographs glued to Latin letters: split those per character.
            tokens.extend(t for t in re.findall(rf"[{_CJK}]|[^{_CJK}]+", piece))
        else:
            tokens.append(piece)
    return tokens


@dataclass(frozen=True)
class DiffSegment:
    op: str  # "equal" | "delete" | "insert"
    text: str


# Bounds that keep the item view fast whatever a comment holds (an import may carry megabytes):
# each side is shown up to DIFF_MAX_CHARS, and the word diff (quadratic in the worst case) runs
# only while the changed middle, after the common start and end, stays under DIFF_MAX_PAIRS
# token pairs; past that the middle shows as one replacement.
DIFF_MAX_CHARS = 3000
DIFF_MAX_PAIRS = 250_000


def _shown(text: str) -> str:
    return text[:DIFF_MAX_CHARS]


def _common_ends(a: list[str], b: list[str]) -> tuple[int, int]:
    """How many tokens a and b share at the start, and then at the end (linear)."""
    head, limit = 0, min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    head, tail = _common_ends(a, b)
    a_mid, b_mid = a[head:len(a) - tail], b[head:len(b) - tail]
    ops: list[tuple[str, int, int, int, int]] = []
    if head:
        ops.append(("equal", 0, head, 0, head))
    if len(a_mid) * len(b_mid) <= DIFF_MAX_PAIRS:
        matcher = difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False)
        ops += [(op, i1 + head, i2 + head, j1 + head, j2 + head)
                for op, i1, i2, j1, j2 in matcher.get_opcodes()]
    elif a_mid or b_mid:  # too different to diff word by word in bounded time
        ops.append(("replace", head, len(a) - tail, head, len(b) - tail))
    if tail:
        ops.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    return ops


def comment_diff(original: str, predicted: str) -> tuple[list[DiffSegment], list[DiffSegment]]:
    """Two segment lists: the original with its deleted parts, the prediction with its inserted
    parts (a replacement shows on both sides). Only the first DIFF_MAX_CHARS of each side."""
    a, b = diff_tokens(_shown(original)), diff_tokens(_shown(predicted))
    left: list[DiffSegment] = []
    right: list[DiffSegment] = []
    for op, i1, i2, j1, j2 in _opcodes(a, b):
        old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
        if op == "equal":
            left.append(DiffSegment("equal", old))
            right.append(DiffSegment("equal", new))
            continue
        if old:
            left.append(DiffSegment("delete", old))
        if new:
            right.append(DiffSegment("insert", new))
    return left, right


def _segments_html(segments: list[DiffSegment]) -> str:
    parts = []
    for seg in segments:
        text = html.escape(seg.text)
        if seg.op == "delete":
            parts.append(f"<del>{text}</del>")
        elif seg.op == "insert":
            parts.append(f"<ins>{text}</ins>")
        else:
            parts.append(text)
    return "".join(parts)


def diff_html(original: str, predicted: str, *, original_label: str = "Original",
              predicted_label: str = "Predicted") -> str:
    """Original and predicted comment side by side, with <del>/<ins> marking the differences."""
    left, right = comment_diff(original, predicted)
    empty = '<span class="nlce-empty">(empty)</span>'
    return (
        '<div class="nlce-diff">'
        f'<div class="nlce-diff-side"><div class="nlce-diff-head">{html.escape(original_label)}'
        f'</div><pre>{_segments_html(left) or empty}{_cut_note(original)}</pre></div>'
        f'<div class="nlce-diff-side"><div class="nlce-diff-head">{html.escape(predicted_label)}'
        f'</div><pre>{_segments_html(right) or empty}{_cut_note(predicted)}</pre></div>'
        "</div>"
    )


def _cut_note(text: str) -> str:
    """Says that (and how much of) a side was cut at DIFF_MAX_CHARS ("" when nothing was)."""
    if len(text) <= DIFF_MAX_CHARS:
        return ""
    return (f'<span class="nlce-empty">… {len(text) - DIFF_MAX_CHARS:,} more characters not '
            f"shown (first {DIFF_MAX_CHARS:,} of {len(text):,})</span>")


def output_overflow(raw_output: str, predicted_comment: str, *, anchor_chars: int = 24) -> str:
    """What the raw model output holds beyond the predicted comment ("" when nothing).

    The predicted comment is cut out of the raw output; the raw output may also be only the
    continuation of a primer that the comment starts with. The end of the comment is found by
    its last `anchor_chars` characters; when they are not in the raw output at all, the whole
    raw output is returned, so nothing the model wrote is hidden."""
    raw = raw_output or ""
    predicted = (predicted_comment or "").strip()
    if not raw.strip() or raw.strip() == predicted:
        return ""
    if predicted.endswith(raw.strip()):  # the raw output is the comment's own continuation
        return ""
    tail = predicted[-anchor_chars:]
    at = raw.find(tail) if tail else -1
    if at >= 0:
        rest = raw[at + len(tail):]
        return rest if rest.strip() else ""
    # The raw output may start inside the comment (after a primer): the longest start of it
    # that the comment ends with is the comment's part.
    lead = len(raw) - len(raw.lstrip())
    shared = _longest_prefix_that_ends(raw[lead:], predicted)
    if shared:
        rest = raw[lead + shared:]
        return rest if rest.strip() else ""
    return raw


OVERFLOW_MAX_PRIMER = 4096  # longer continuations of a comment show whole, as overflow


def _longest_prefix_that_ends(text: str, other: str) -> int:
    """Length of the longest start of `text` (up to OVERFLOW_MAX_PRIMER characters) that `other`
    ends with: the Knuth-Morris-Pratt failure function of that start, run over as many of
    `other`'s last characters, so bounded whatever the two lengths."""
    if not text or not other:
        return 0
    text = text[:min(len(other), OVERFLOW_MAX_PRIMER)]
    other = other[-len(text):]
    failure = [0] * len(text)
    k = 0
    for i in range(1, len(text)):
        while k and text[i] != text[k]:
            k = failure[k - 1]
        if text[i] == text[k]:
            k += 1
        failure[i] = k
    k = 0
    for char in other:
        while k and (k == len(text) or char != text[k]):
            k = failure[k - 1]
        if k < len(text) and char == text[k]:
            k += 1
    return k


# ------------------------------------------------------------------------------ one item

def _box(css_class: str, head: str, text: str) -> str:
    return (f'<div class="{css_class}"><div class="nlce-diff-head">{html.escape(head)}</div>'
            f"<pre>{html.escape(text)}</pre></div>")


def item_html(view, words: dict[str, str], *, before: int = 14, after: int = 10) -> str:
    """An item as annotators and the lead see it (`view`: annotate.service.ItemView): the code
    around the comment, or a pairs item's own context (none when it has none); then the two
    comments as a diff, or "the model wrote nothing" beside the original; then what the raw
    output adds. `words`: the interface texts context, wrote_nothing, original, predicted,
    overflow."""
    parts = []
    if not view.is_pairs:
        parts.append(code_html(view.content, view.span_start, view.span_end,
                               programming_language=view.programming_language, path=view.path,
                               before=before, after=after))
    elif view.context:
        parts.append(_box("nlce-context", words["context"], view.context))
    if view.model_wrote_nothing:  # a real outcome to label, not an empty diff
        parts.append(f'<div class="nlce-empty-output"><b>{html.escape(words["wrote_nothing"])}'
                     f"</b></div>" + _box("nlce-diff-side", words["original"],
                                           view.original_comment))
        return "".join(parts)
    parts.append(diff_html(view.original_comment, view.predicted_comment,
                           original_label=words["original"], predicted_label=words["predicted"]))
    overflow = output_overflow(view.raw_output, view.predicted_comment)
    if overflow.strip():
        parts.append(_box("nlce-overflow", words["overflow"], overflow))
    return "".join(parts)


# ------------------------------------------------------------------------------ code view

_FILENAME_LEXERS = {"python": "python", "java": "java", "javascript": "javascript",
                    "typescript": "typescript", "c": "c", "c++": "cpp", "cpp": "cpp",
                    "c#": "csharp", "csharp": "csharp", "go": "go", "rust": "rust", "php": "php",
                    "ruby": "ruby", "kotlin": "kotlin", "scala": "scala", "swift": "swift"}


@lru_cache(maxsize=64)
def _lexer(programming_language: str, path: str):
    name = _FILENAME_LEXERS.get((programming_language or "").strip().lower(),
                                (programming_language or "").strip().lower())
    try:
        if name:
            return get_lexer_by_name(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        pass
    try:
        if path:
            return guess_lexer_for_filename(path, "", stripnl=False, ensurenl=False)
    except ClassNotFound:
        pass
    return TextLexer(stripnl=False, ensurenl=False)


def _css_class(token_type) -> str:
    while token_type not in STANDARD_TYPES:
        token_type = token_type.parent
    return STANDARD_TYPES.get(token_type, "")


@dataclass(frozen=True)
class CodeWindow:
    first_line: int  # 1-based number of the first shown line
    text: str  # the shown lines
    span_start: int  # the masked comment's span inside `text`
    span_end: int


def code_window(content: str, span_start: int, span_end: int, *, before: int = 14,
                after: int = 10) -> CodeWindow:
    """The lines around a character span: `before` lines above its first line, `after` below
    its last. Offsets outside the content are clamped rather than trusted."""
    span_start = max(0, min(span_start, len(content)))
    span_end = max(span_start, min(span_end, len(content)))
    first_line = content.count("\n", 0, span_start)
    last_line = content.count("\n", 0, span_end)
    lines = content.split("\n")
    lo = max(0, first_line - before)
    hi = min(len(lines), last_line + after + 1)
    offset = sum(len(line) + 1 for line in lines[:lo])
    text = "\n".join(lines[lo:hi])
    return CodeWindow(lo + 1, text, span_start - offset, min(span_end - offset, len(text)))


def code_html(content: str, span_start: int, span_end: int, *, programming_language: str = "",
              path: str = "", before: int = 14, after: int = 10,
              span_label: str = "masked comment") -> str:
    """Syntax-highlighted lines around the masked comment, the comment itself marked, with line
    numbers. Classes follow Pygments' short names; `code_css()` styles them."""
    window = code_window(content, span_start, span_end, before=before, after=after)
    lexer = _lexer(programming_language, path)
    pieces: list[str] = []
    position = 0
    title = html.escape(span_label)
    for token_type, value in lexer.get_tokens(window.text):
        if not value:
            continue
        start, end = position, position + len(value)
        position = end
        cuts = sorted({start, end, *(c for c in (window.span_start, window.span_end)
                                     if start < c < end)})
        cls = _css_class(token_type) if token_type is not Token.Text else ""
        for a, b in zip(cuts, cuts[1:]):
            inside = window.span_start <= a < window.span_end
            # Newlines stay outside every tag so each line can get its own number.
            for k, part in enumerate(value[a - start:b - start].split("\n")):
                if k:
                    pieces.append("\n")
                if not part:
                    continue
                inner = html.escape(part)
                if cls:
                    inner = f'<span class="{cls}">{inner}</span>'
                if inside:
                    inner = f'<mark class="nlce-mask" title="{title}">{inner}</mark>'
                pieces.append(inner)
    if window.span_start == window.span_end:  # an empty span still shows where it is
        marker = f'<mark class="nlce-mask nlce-caret" title="{title}">▍</mark>'
        pieces = _insert_at(pieces, window, marker)
    body = "".join(pieces)
    lines = body.split("\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # the file's final newline is not a line of its own
    numbered = "".join(
        f'<span class="nlce-line"><span class="nlce-ln">{window.first_line + i}</span>'
        f"{line}</span>" for i, line in enumerate(lines))
    return f'<div class="nlce-code highlight"><pre>{numbered}</pre></div>'


def _insert_at(pieces: list[str], window: CodeWindow, marker: str) -> list[str]:
    # Rebuild around the caret: escape-aware insertion is simplest on the plain text.
    before = html.escape(window.text[:window.span_start])
    after = html.escape(window.text[window.span_start:])
    return [before, marker, after]


LIGHT_STYLE, DARK_STYLE = "friendly", "github-dark"  # Pygments styles of the two themes


def _css_colour(value: str | None, fallback: str) -> str:
    return f"#{value}" if value else fallback


@lru_cache(maxsize=4)
def code_css(light: str = LIGHT_STYLE, dark: str = DARK_STYLE) -> str:
    """Pygments colours scoped to the code view, and the app's own marks, for both themes:
    every colour is a CSS light-dark() pair, so the colour scheme the app runs in (Streamlit sets
    it from the chosen or the system theme) picks the readable one, with no reload."""
    light_style, dark_style = get_style_by_name(light), get_style_by_name(dark)
    light_text = _css_colour(light_style.style_for_token(Token)["color"], "#1f2328")
    dark_text = _css_colour(dark_style.style_for_token(Token)["color"], "#e6edf3")
    rules = []
    for token_type, cls in STANDARD_TYPES.items():
        if not cls:
            continue
        a, b = light_style.style_for_token(token_type), dark_style.style_for_token(token_type)
        declarations = []
        if a["color"] or b["color"]:
            declarations.append(f"color: light-dark({_css_colour(a['color'], light_text)}, "
                                f"{_css_colour(b['color'], dark_text)})")
        if a["bold"]:
            declarations.append("font-weight: bold")
        if a["italic"]:
            declarations.append("font-style: italic")
        if declarations:
            rules.append(f"{CODE_CSS_SCOPE} .{cls} {{ {'; '.join(declarations)} }}")
    return (f"{CODE_CSS_SCOPE} pre {{ color: light-dark({light_text}, {dark_text}); "
            f"background: light-dark(#fafafa, {dark_style.background_color}); }}\n"
            + "\n".join(rules) + _APP_CSS)


_APP_CSS = """
.nlce-code pre { font-size: 12.5px; line-height: 1.35; max-height: 470px; overflow: auto;
  margin: 0; padding: 6px 8px; border: 1px solid light-dark(#e5e5e5, #3d444d);
  border-radius: 6px; }
.nlce-line { display: block; white-space: pre-wrap; word-break: break-word;
  padding-left: 3.2em; text-indent: -3.2em; min-height: 1.35em; }
.nlce-ln { display: inline-block; width: 3.2em; text-indent: 0; color: light-dark(#767676, #9198a1);
  user-select: none; }
mark.nlce-mask { background: light-dark(#ffe58a, #5c4a00); color: inherit;
  outline: 2px solid light-dark(#f0b400, #d4a72c); border-radius: 2px; padding: 0; }
.nlce-code mark.nlce-mask span { color: light-dark(#1f2328, #f0f6fc); }
.nlce-diff { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
.nlce-diff-side pre { white-space: pre-wrap; word-break: break-word; font-size: 13.5px;
  margin: 0; padding: 6px 8px; color: light-dark(#1f2328, #e6edf3);
  background: light-dark(#ffffff, #0d1117); border: 1px solid light-dark(#e5e5e5, #3d444d);
  border-radius: 6px; max-height: 150px; overflow: auto; }
.nlce-diff-head { font-size: 12px; color: light-dark(#595959, #b1bac4); margin-bottom: 2px; }
.nlce-diff del { background: light-dark(#ffd7d5, #67060c); color: inherit;
  text-decoration: line-through; }
.nlce-diff ins { background: light-dark(#ccf2d1, #033a16); color: inherit; text-decoration: none; }
.nlce-empty { color: light-dark(#767676, #9198a1); font-style: italic; }
.nlce-context pre { white-space: pre-wrap; word-break: break-word; font-size: 12.5px;
  line-height: 1.35; max-height: 12em; overflow: auto; margin: 0; padding: 6px 8px;
  color: light-dark(#1f2328, #e6edf3); background: light-dark(#fafafa, #0d1117);
  border: 1px solid light-dark(#e5e5e5, #3d444d); border-radius: 6px; }
.nlce-overflow pre { white-space: pre-wrap; font-size: 12px; max-height: 90px; overflow: auto;
  margin: 0; padding: 4px 8px; color: light-dark(#1f2328, #e6edf3);
  background: light-dark(#fff6f0, #2b1d10); border: 1px dashed light-dark(#f0a060, #9e6a03);
  border-radius: 6px; }
"""
