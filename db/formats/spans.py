"""Where a target comment sits in its file, from the comment text and the models' FIM inputs.

A FIM input holds the file up to the comment plus the prime (the comment's first words) as its
prefix, laid out per model family (`models.fim`: `<fim_prefix>{prefix}<fim_suffix>...`,
CodeLlama's `<PRE> {prefix} <SUF>...`, a plain prefix). That prefix pins the comment's start
exactly, even where the comment occurs several times with identical surroundings.
"""
from __future__ import annotations

from typing import Iterable

from db.formats.records import FormatError
from models.fim import families

WINDOW = 200  # characters either side of an occurrence, for the fallback rule


def _fim_prefixes(hint: str) -> list[str]:
    """Every text that the FIM layouts of `models.fim` read as the prefix of `hint`.

    A separator may occur inside the code too, so each place it occurs gives a candidate; a BOS
    token or other text before the family's opening sentinel is skipped."""
    found: list[str] = []
    for family in families().values():
        head, _, rest = family.template.partition("{prefix}")
        between = rest.partition("{suffix}")[0] if family.uses_suffix else ""
        if not between:  # plain: the whole input is the prefix
            if not head:
                found.append(hint)
            continue
        at = hint.find(head) if head else 0
        if at == -1:
            continue
        body = hint[at + len(head):]
        cut = body.find(between)
        while cut != -1:
            found.append(body[:cut])
            cut = body.find(between, cut + 1)
    return found


def _starts_by_fim(content: str, comment: str, starts: list[int], hints: list[str]) -> set[int]:
    """The occurrences whose start a FIM prefix gives exactly: prefix == content[:s] + prime,
    the prime being a beginning of the comment."""
    kept: set[int] = set()
    for hint in hints:
        for prefix in _fim_prefixes(hint):
            for start in starts:
                prime = prefix[start:]
                if (len(prime) <= len(comment) and comment.startswith(prime)
                        and prefix.startswith(content[:start]) and len(prefix) >= start):
                    kept.add(start)
    return kept


def _starts_by_window(content: str, comment: str, starts: list[int], hints: list[str]
                      ) -> set[int]:
    """The occurrences whose WINDOW characters before and after both appear in one hint."""
    def fits(start: int) -> bool:
        before = content[max(0, start - WINDOW):start]
        after = content[start + len(comment):start + len(comment) + WINDOW]
        return any(before in hint and after in hint for hint in hints)
    return {s for s in starts if fits(s)}


def locate_comment(content: str, comment: str, hints: Iterable[str] = ()) -> tuple[int, int]:
    """The [start, end) span of `comment` in `content`.

    Exactly one occurrence: its span. None: FormatError. Several: the FIM inputs in `hints`
    decide; first by their prefix (the file up to the comment plus the prime, in any layout of
    `models.fim`), and only when no FIM input can be read that way, by the text around each
    occurrence (its WINDOW characters before and after both appear in one FIM input). Still
    several or none: FormatError (ambiguous).
    """
    if not comment:
        raise FormatError("is empty; nothing to locate", "original_comment")
    starts, at = [], content.find(comment)
    while at != -1:
        starts.append(at)
        at = content.find(comment, at + 1)
    if not starts:
        raise FormatError("not found in the file's content (it must occur verbatim)",
                          "original_comment")
    if len(starts) == 1:
        return starts[0], starts[0] + len(comment)
    hints = [h for h in hints if h]
    kept = _starts_by_fim(content, comment, starts, hints)
    if not kept and hints:
        kept = _starts_by_window(content, comment, starts, hints)
    if len(kept) == 1:
        start = kept.pop()
        return start, start + len(comment)
    why = ("there is no FIM input to decide" if not hints else
           "the FIM inputs fit several of them" if kept else
           "the FIM inputs fit none of them")
    raise FormatError(f"ambiguous: occurs {len(starts)} times in the content (at characters "
                      f"{', '.join(map(str, starts[:5]))}) and {why}", "original_comment")
