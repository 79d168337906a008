"""The keyboard code picker's matching (pure): what a typed query ticks. An exact code id, or a
unique start of one, ticks exactly that code; anything that matches several codes ticks none
and says which ones it matched; nothing ever ticks "all matches". The annotator's picker and the
lead's gold codes field (Adjudicate) both pick with it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

MAX_SHOWN = 6  # matches named when a query is ambiguous


@dataclass(frozen=True)
class Pick:
    codes: tuple[str, ...] = ()  # to toggle, in the order typed
    ambiguous: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (query, the codes it matched)
    unknown: tuple[str, ...] = ()  # queries that matched nothing


def _matches(query: str, codes: Sequence[tuple[str, str]]) -> list[str]:
    """The codes one query names: an exact id first; else those whose id, or the id after its
    category ("GR1" for LG-GR1), starts with it; else those whose name contains it."""
    q = query.casefold()
    exact = [c for c, _ in codes if c.casefold() == q]
    if exact:
        return exact
    starts = [c for c, _ in codes if c.casefold().startswith(q)
              or c.casefold().split("-", 1)[-1].startswith(q)]
    if starts:
        return starts
    return [c for c, name in codes if q in name.casefold()]


def pick_codes(query: str, codes: Sequence[tuple[str, str]]) -> Pick:
    """What `query` ticks among `codes` ((id, name in the interface language) pairs): the whole
    query as one (a name may have spaces), else each word of it on its own ("GR1 SE-MD")."""
    query = query.strip()
    if not query:
        return Pick()
    whole = _matches(query, codes)
    words = [w for w in re.split(r"[\s,;]+", query) if w]
    if len(whole) == 1 or len(words) < 2:
        return _verdict([(query, whole)])
    return _verdict([(word, _matches(word, codes)) for word in words])


def _verdict(found: list[tuple[str, list[str]]]) -> Pick:
    picked, ambiguous, unknown = [], [], []
    for query, matches in found:
        if len(matches) == 1:
            if matches[0] not in picked:
                picked.append(matches[0])
        elif matches:
            ambiguous.append((query, tuple(matches)))
        else:
            unknown.append(query)
    return Pick(tuple(picked), tuple(ambiguous), tuple(unknown))


def toggled(pick: Pick, ticked: Sequence[str], order: Sequence[str]) -> list[str]:
    """The codes ticked after `pick` toggles its codes in `ticked`, in the order of `order`."""
    now = set(ticked) ^ set(pick.codes)
    return [code for code in order if code in now]


def said(pick: Pick, ticked_now: Callable[[str], bool], t: Callable[..., str]) -> str:
    """What the picker says after `pick`: each code it ticked or unticked (`ticked_now(code)`),
    then each query that matched several codes (naming up to MAX_SHOWN) or none. `t`: the
    interface's text function (messages pick.*)."""
    lines = [t("pick.ticked" if ticked_now(code) else "pick.unticked", code=code)
             for code in pick.codes]
    lines += [t("pick.ambiguous", query=query, count=len(found),
                codes=", ".join(found[:MAX_SHOWN]) + (" …" if len(found) > MAX_SHOWN else ""))
              for query, found in pick.ambiguous]
    lines += [t("pick.unknown", query=query) for query in pick.unknown]
    return " · ".join(lines)
