"""Comments out of source text, with exact character spans, through Pygments lexers.

`extract_comments(text, language)` returns `Comment`s whose `text == source[start:end]` always
holds (offsets are Python `str` indices, so a non-BMP character counts as one; CRLF files keep
their `\\r\\n`). A lexer, not a regular expression, decides what is a comment, so `"// no"` in a
string or a regex literal stays code.

Kinds:
- `line`: a run of line comments (`//`, `#`, `///`) merged into one comment when they sit on
  consecutive lines at the same column (tabs expanded to 4 or 8: either agrees) and use the same
  marker (`//`, `///`, `//!`, `#`: the leading run of `/`, `#`, `!`, so `///<summary>` is a
  `///` line). A trailing comment after code (`x = 1  # why`) starts a run that continues on the
  next lines only with comments alone on their lines at its column; a blank line, a line of code
  or a second trailing comment ends a run.
- `block`: `/* ... */`.
- `docblock`: `/** ... */` (Javadoc, JSDoc, PHPDoc, Doxygen).
- `docstring`: Python, a string literal that is the first statement of a module, class or def.
Preprocessor lines (`#include`), shebang lines and `<?php` tags are not comments, and neither is
anything in a disabled region of C, C++ or C# (`#if 0` / `#if false` up to its `#else`, `#elif`
or `#endif`): that is code switched off, not prose.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import Comment as CommentToken
from pygments.token import Keyword, String, Text, Whitespace

from corpus.languages import UnknownLanguageError, lexer_name  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class Comment:
    start: int  # character offset into the source, inclusive
    end: int  # exclusive
    text: str  # source[start:end]
    kind: str  # line | block | docblock | docstring
    line: int  # 1-based line of `start`

    @property
    def opener(self) -> str:
        return comment_opener(self.text, self.kind)


_COMMENT_TYPES = (CommentToken.Single, CommentToken.Multiline, CommentToken.Special)
_NOT_COMMENTS = (CommentToken.Preproc, CommentToken.PreprocFile, CommentToken.Hashbang)


@lru_cache(maxsize=None)
def _lexer(name: str) -> Lexer:
    return get_lexer_by_name(name, stripnl=False, ensurenl=False, startinline=False)


def _normalise_newlines(text: str) -> tuple[str, list[int]]:
    """`\\r\\n` -> `\\n` and lone `\\r` -> `\\n`; returns the text and, for every removed `\\r`,
    the index (in the new text) of the `\\n` that followed it."""
    if "\r" not in text:
        return text, []
    out: list[str] = []
    removed: list[int] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\r":
            if i + 1 < n and text[i + 1] == "\n":
                removed.append(len(out))
                i += 1
                continue
            ch = "\n"
        out.append(ch)
        i += 1
    return "".join(out), removed


def _to_original(index: int, removed: list[int]) -> int:
    # Every removed `\r` that sat before `index` (its `\n` is at a smaller index) shifts it by one;
    # an index pointing at such a `\n` maps onto the `\r`, so a span never ends inside a CRLF.
    return index + bisect.bisect_left(removed, index)


def _is_comment_token(ttype) -> bool:
    if any(ttype in t for t in _NOT_COMMENTS):
        return False
    return ttype in CommentToken


def _classify_block(value: str) -> str:
    if value.startswith("/**") and not value.startswith("/**/"):
        return "docblock"
    if value.startswith("/*") or value.startswith("{-") or value.startswith("(*"):
        return "block"
    return "line"


def _raw_comments(norm: str, language: str):
    """(start, end, kind, marker) in normalised text from the lexer's comment tokens."""
    # lexers' line-comment rules want a final newline; it is whitespace, so spans never reach it
    lexed = norm if norm.endswith("\n") else norm + "\n"
    tokens = list(_lexer(lexer_name(language)).get_tokens_unprocessed(lexed))
    if language in _PREPROCESSED:
        tokens = _relex_directives(norm, tokens, language)
        tokens = _drop_disabled(norm, tokens, language)
    # 1. the comment tokens, with tokens that continue one comment glued together (some lexers
    #    give `/*`, ` body `, `*/` or a line comment in pieces)
    pieces: list[list] = []  # [start, raw text]
    for start, ttype, value in tokens:
        # PHP and Rust lex doc comments (`/** */`, `///`) as String.Doc
        is_doc = (ttype in String.Doc and language != "python"
                  and value.lstrip().startswith(("/*", "//", "#")))
        if not (_is_comment_token(ttype) or is_doc):
            continue
        if pieces and pieces[-1][0] + len(pieces[-1][1]) == start:
            text = pieces[-1][1]
            open_block = text.startswith("/*") and not text.rstrip().endswith("*/")
            if open_block or not text.endswith("\n"):
                pieces[-1][1] = text + value
                continue
        pieces.append([start, value])
    # 2. their kinds
    found = []
    for start, value in pieces:
        stripped = value.rstrip()
        if not stripped:
            continue
        kind = _classify_block(stripped)
        marker = _line_marker(stripped) if kind == "line" else ""
        found.append((start, start + len(stripped), "line_part" if kind == "line" else kind,
                      marker))
    if language == "python":
        found.extend(_python_docstrings(tokens))
        found.sort()
    return found


_PREPROCESSED = ("c", "cpp", "csharp")


def _directive_spans(norm: str) -> list[tuple[int, int]]:
    """(start of the text after '#', end) of every preprocessor directive, with its lines
    continued by a backslash."""
    spans: list[tuple[int, int]] = []
    pos, continuing = 0, False
    for line in norm.splitlines(keepends=True):
        body = line.rstrip("\n")
        if continuing:
            spans[-1] = (spans[-1][0], pos + len(body))
        elif body.lstrip().startswith("#"):
            spans.append((pos + len(body) - len(body.lstrip()) + 1, pos + len(body)))
        else:
            pos += len(line)
            continue
        continuing = body.endswith("\\")
        pos += len(line)
    return spans


def _relex_directives(norm: str, tokens, language: str):
    """Pygments lexes a directive's body loosely (`#define S "// x"` gives a comment): drop the
    comment tokens inside directives and lex each directive's body again as ordinary code."""
    spans = _directive_spans(norm)
    if not spans:
        return tokens
    starts = [s for s, _ in spans]

    def inside(index: int) -> bool:
        k = bisect.bisect_right(starts, index) - 1
        return k >= 0 and spans[k][0] <= index < spans[k][1]

    kept = [t for t in tokens if not (t[1] in CommentToken and inside(t[0]))]
    lexer = _lexer(lexer_name(language))
    for start, end in spans:
        # the lexer's line-comment rule wants the newline that ends it
        for offset, ttype, value in lexer.get_tokens_unprocessed(norm[start:end] + "\n"):
            if _is_comment_token(ttype):
                kept.append((start + offset, ttype, value))
    kept.sort(key=lambda t: t[0])
    return kept


def _line_marker(text: str) -> str:
    i = 0
    while i < len(text) and text[i] in "/#!":
        i += 1
    return text[:i] or text[:1]


_DISABLED_START = {"c": r"#\s*if\s+0\b", "cpp": r"#\s*if\s+0\b",
                   "csharp": r"#\s*if\s+false\b"}


def _disabled_regions(norm: str, language: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the lines inside `#if 0` ... `#else`/`#elif`/`#endif`, nesting
    counted."""
    start_re = re.compile(_DISABLED_START[language])
    regions: list[tuple[int, int]] = []
    depth, region_start, pos = 0, 0, 0
    for line in norm.splitlines(keepends=True):
        directive = line.strip()
        if depth == 0:
            if start_re.match(directive):
                depth, region_start = 1, pos + len(line)
        elif re.match(r"#\s*if", directive):
            depth += 1
        elif re.match(r"#\s*endif", directive) or (
                depth == 1 and re.match(r"#\s*el(se|if)", directive)):
            depth -= 1
            if depth == 0:
                regions.append((region_start, pos))
        pos += len(line)
    if depth:
        regions.append((region_start, len(norm)))
    return regions


def _drop_disabled(norm: str, tokens, language: str):
    regions = _disabled_regions(norm, language)
    if not regions:
        return tokens
    starts = [s for s, _ in regions]

    def disabled(index: int) -> bool:
        k = bisect.bisect_right(starts, index) - 1
        return k >= 0 and index < regions[k][1]

    return [t for t in tokens if not (t[1] in CommentToken and disabled(t[0]))]


def _python_docstrings(tokens):
    """String literals that are the first statement of the module or of a class/def body."""
    out = []
    expect = True  # at the start of the module
    depth = 0
    in_header = False
    i, n = 0, len(tokens)

    def is_space(ttype, value):
        return (ttype in Text or ttype in Whitespace) and not value.strip()

    while i < n:
        start, ttype, value = tokens[i]
        if expect:
            if is_space(ttype, value) or (ttype in CommentToken):
                i += 1
                continue
            expect = False
            if ttype in String:
                j = i
                while j < n and tokens[j][1] in String:
                    j += 1
                end_index = tokens[j - 1][0] + len(tokens[j - 1][2])
                k = j  # the statement must end right after the literal
                while k < n and is_space(tokens[k][1], tokens[k][2]) and "\n" not in tokens[k][2]:
                    k += 1
                if k >= n or "\n" in tokens[k][2] or tokens[k][1] in CommentToken \
                        or tokens[k][2] == ";":
                    text_start = start
                    out.append((text_start, end_index, "docstring", ""))
                i = j
                continue
        if ttype in Keyword and value in ("def", "class"):
            in_header, depth = True, 0
        elif in_header:
            if value in ("(", "[", "{"):
                depth += 1
            elif value in (")", "]", "}"):
                depth -= 1
            elif depth == 0 and value == ":" and ttype not in String:
                in_header, expect = False, True
        i += 1
    return out


def extract_comments(text: str, language: str) -> list[Comment]:
    """Every comment of `text` in source order; see the module docstring for the kinds."""
    norm, removed = _normalise_newlines(text)
    raw = _raw_comments(norm, language)
    line_starts = [0] + [i + 1 for i, ch in enumerate(norm) if ch == "\n"]

    def line_of(index: int) -> int:
        return bisect.bisect_right(line_starts, index) - 1

    def own_line(index: int) -> bool:
        return not norm[line_starts[line_of(index)]:index].strip()

    def columns(index: int) -> tuple[int, int]:
        before = norm[line_starts[line_of(index)]:index]
        return len(before.expandtabs(4)), len(before.expandtabs(8))

    merged: list[list] = []
    for start, end, kind, marker in raw:
        if kind == "line_part":
            prev = merged[-1] if merged else None
            column = columns(start)
            if (prev and prev[2] == "line" and prev[3] == marker and own_line(start)
                    and line_of(start) == line_of(prev[1]) + 1
                    and (column[0] == prev[4][0] or column[1] == prev[4][1])):
                prev[1] = end
                continue
            merged.append([start, end, "line", marker, column])
        else:
            merged.append([start, end, kind, "", (0, 0)])
    comments = []
    for start, end, kind, *_ in merged:
        o_start, o_end = _to_original(start, removed), _to_original(end, removed)
        comments.append(Comment(o_start, o_end, text[o_start:o_end], kind, line_of(start) + 1))
    return comments


def comment_opener(text: str, kind: str) -> str:
    """The marker a comment starts with: `//`, `#`, `/*`, `/**`, `\"\"\"`, `r'''` ..."""
    if kind == "docstring":
        i = 0
        while i < len(text) and text[i].isalpha():
            i += 1
        quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else text[i:i + 1]
        return text[:i] + quote
    if kind == "docblock":
        return "/**"
    if kind == "block":
        return text[:2]
    return _line_marker(text)


def comment_closer(text: str, kind: str) -> str:
    """What ends the comment: `*/`, the closing quotes, or "" for a line comment run."""
    if kind == "docstring":
        opener = comment_opener(text, kind)
        return opener.lstrip("rRuUbBfF")
    if kind in ("block", "docblock"):
        return {"/*": "*/", "{-": "-}", "(*": "*)"}.get(text[:2], "*/")
    return ""


def comment_body(text: str, kind: str) -> str:
    """The words of a comment without its markers (`//`, `*` gutters, quotes)."""
    opener, closer = comment_opener(text, kind), comment_closer(text, kind)
    if kind == "line":
        lines = [ln.strip() for ln in text.splitlines()]
        lines = [ln[len(opener):] if ln.startswith(opener) else ln for ln in lines]
        return "\n".join(ln.strip().lstrip("/#!").strip() for ln in lines).strip()
    inner = text[len(opener):]
    if closer and inner.endswith(closer):
        inner = inner[: -len(closer)]
    lines = [ln.strip() for ln in inner.splitlines()]
    if kind in ("block", "docblock"):
        lines = [ln[1:].strip() if ln.startswith("*") else ln for ln in lines]
    return "\n".join(lines).strip()
