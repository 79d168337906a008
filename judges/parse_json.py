"""Finding the JSON document in a judge's answer (`judges.parse` reads what it holds): a
byte-order mark, code fences, prose around it and `//` comments are taken away and recorded as
repairs; an answer cut off inside its JSON is `CutOff`; a value that is only a piece of a larger
document which does not decode (a missing comma between entries, a key inside the list) is
marked so (`json_structure_broken`): what the rest held is lost, not read as absent; two
different complete answers in one text (a judge revising itself) are no answer. Objects keep
the keys they repeat (`duplicate_keys`), which json alone would drop silently.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


class CutOff(ValueError):
    """The answer ends inside a JSON document: it was cut off (a token limit, a dropped
    connection, a file that kept only part of it)."""


class _Object(dict):
    """A JSON object that remembers the keys it was given more than once (json keeps the last)."""
    duplicates: tuple = ()


def _object(pairs: list) -> _Object:
    obj, repeated = _Object(), {}
    for key, value in pairs:
        if key in obj:
            repeated.setdefault(key, [obj[key]]).append(value)
        obj[key] = value
    obj.duplicates = tuple(repeated.items())
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_object)
_BRACKET = re.compile(r"[{\[]")


def _starts_like_json(text: str, start: int) -> bool:
    """Whether the bracket at `start` opens a JSON document, not a bracket of prose."""
    return text[start + 1:].lstrip()[:1] in ('"', "{", "[")


def _ends_inside(text: str, start: int, exc: json.JSONDecodeError) -> bool:
    """Whether decoding a document that starts like JSON at `start` failed because the text
    ended inside it (not because of a stray brace in prose)."""
    if not _starts_like_json(text, start):
        return False
    return exc.pos >= len(text) or exc.msg.startswith("Unterminated string")


def _string_state(in_string: bool, escaped: bool, c: str) -> tuple[bool, bool]:
    """(in a JSON string, after a backslash) once the character `c` is read."""
    if in_string:
        return (True, False) if escaped else (c != '"', c == "\\")
    return c == '"', False


def _extent(text: str, start: int) -> int:
    """Where the bracketed document opened at `start` closes, by its brackets alone (strings
    skipped): the reach of a document that does not decode; the text's end if it never closes."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        was_in_string = in_string
        in_string, escaped = _string_state(in_string, escaped, c)
        if was_in_string or in_string:
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _without_line_comments(text: str) -> str | None:
    """`text` without `// ...` line comments outside strings (JSON with comments, as judges
    sometimes write it), or None when it has none."""
    out, in_string, escaped, i, found = [], False, False, 0, False
    while i < len(text):
        if not in_string and text.startswith("//", i):
            end = text.find("\n", i)
            i, found = (len(text) if end < 0 else end), True
            continue
        in_string, escaped = _string_state(in_string, escaped, text[i])
        out.append(text[i])
        i += 1
    return "".join(out) if found else None


@dataclass
class _Found:
    """What a scan of a text for its JSON document found."""
    value: Any = None
    start: int = 0
    end: int = 0
    cut_at: int | None = None  # where a document starts that the text ends inside
    # (start, reach, why) of a document around `value` that does not decode: `value` is a
    # piece of it
    broken: tuple[int, int, str] | None = None


def _scan(text: str) -> _Found:
    """The first JSON object or non-empty list in `text`, noting a cut-off document before it
    and a broken one around it."""
    found = _Found()
    broken: list[tuple[int, int, str]] = []  # (start, reach, why) of documents that break
    for match in re.finditer(r"[{\[]", text):
        start = match.start()
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            if found.cut_at is None and _ends_inside(text, start, exc):
                found.cut_at = start
            elif _starts_like_json(text, start) and not any(b <= start < r for b, r, _ in broken):
                broken.append((start, _extent(text, start),
                               f"{exc.msg} at line {exc.lineno} column {exc.colno}"))
            continue
        if found.cut_at is not None:  # a part of the cut-off document, not the answer
            return found
        if not isinstance(value, (dict, list)) or (isinstance(value, list) and not value):
            continue
        found.value, found.start, found.end = value, start, end
        around = [(b, reach, why) for b, reach, why in broken if b < start and end <= reach]
        found.broken = around[0] if around else None
        return found
    return found


def _same_kind(first: Any, other: Any) -> bool:
    """Whether a later JSON document in an answer is another answer (not an aside)."""
    if isinstance(first, dict) and isinstance(other, dict):
        return bool(set(first) & set(other))
    return (isinstance(first, list) and isinstance(other, list) and bool(other)
            and all(isinstance(x, dict) for x in other))


def _other_answers(text: str, found: _Found, repairs: list[dict]) -> None:
    """A second complete answer after the first: the same one again is recorded
    (`json_repeated`); a different one (a judge that revises itself: "{...} Wait, I revise:
    {...}") makes the answer unreadable (ValueError), never read as its first or last silently."""
    # (after the broken document a piece was read from: its other entries are no answers)
    position, copies = found.broken[1] if found.broken else found.end, 0
    while (match := _BRACKET.search(text, position)) is not None:
        try:
            value, end = _DECODER.raw_decode(text, match.start())
        except json.JSONDecodeError:
            position = match.start() + 1
            continue
        position = end
        if not _same_kind(found.value, value):
            continue
        if value != found.value:
            repairs.append({"kind": "json_answers_differ", "at": [found.start, match.start()]})
            raise ValueError(f"the answer holds {copies + 2} JSON answers that differ (at "
                             f"characters {found.start} and {match.start()}): which one the "
                             "judge meant is unknown")
        copies += 1
    if copies:
        repairs.append({"kind": "json_repeated", "copies": copies + 1})


def extract_json(text: str, repairs: list[dict]) -> Any:
    """The JSON value in `text`, stripping a BOM, code fences, surrounding prose and `//`
    comments; raises CutOff when the text ends inside a JSON document, ValueError when there is
    none or when it holds two answers that differ. A value that is a piece of a larger document
    which does not decode (a missing comma between entries, a key inside the list) comes with a
    `json_structure_broken` repair: what the rest held is not read. Each step taken is appended
    to `repairs`; objects keep the keys they repeat (`duplicate_keys`)."""
    if text.startswith("\ufeff"):
        text = text.lstrip("\ufeff")
        repairs.append({"kind": "bom_removed"})
    stripped = text.strip()
    try:
        return json.loads(stripped, object_pairs_hook=_object)
    except json.JSONDecodeError:
        pass
    fenced = _FENCE.match(stripped)
    if fenced:
        repairs.append({"kind": "code_fence_removed"})
        stripped = fenced.group(1).strip()
        try:
            return json.loads(stripped, object_pairs_hook=_object)
        except json.JSONDecodeError:
            pass
    found = _scan(stripped)
    if found.value is None or found.broken is not None:
        uncommented = _without_line_comments(stripped)
        retry = _scan(uncommented) if uncommented is not None else None
        if retry is not None and retry.value is not None and retry.broken is None:
            repairs.append({"kind": "json_comments_removed"})
            stripped, found = uncommented, retry
    if found.value is None:
        if found.cut_at is not None:
            chars = len(stripped) - found.cut_at
            repairs.append({"kind": "json_cut_off", "chars": chars})
            raise CutOff(f"the answer stops mid-JSON: cut off after {chars} characters of its "
                         "JSON")
        raise ValueError("no JSON object found in the response")
    before, after = stripped[:found.start].strip(), stripped[found.end:].strip()
    if before:
        repairs.append({"kind": "text_before_json_removed", "chars": len(before)})
    if after:
        repairs.append({"kind": "text_after_json_removed", "chars": len(after)})
    if found.broken is not None:
        repairs.append({"kind": "json_structure_broken", "at": found.broken[0],
                        "error": found.broken[2], "read": [found.start, found.end]})
    _other_answers(stripped, found, repairs)
    return found.value


def duplicate_keys(value: Any, where: str = "$") -> list[tuple[int, str, str, list]]:
    """(id of the object, where, key, the values given) for every key an object of `value`
    repeats, at any depth."""
    found = []
    if isinstance(value, dict):
        found += [(id(value), where, key, values)
                  for key, values in getattr(value, "duplicates", ())]
        for key, item in value.items():
            found += duplicate_keys(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += duplicate_keys(item, f"{where}[{index}]")
    return found


def key_conflict(key: str, values: list) -> str | None:
    """What is wrong with a key given several different values; None when they agree."""
    if all(v == values[0] for v in values[1:]):
        return None
    shown = ", ".join(json.dumps(v, ensure_ascii=False)[:40] for v in values)
    return (f"{json.dumps(key, ensure_ascii=False)} given {len(values)} times with different "
            f"values ({shown}): which the judge meant is unknown")


