"""Cut the predicted comment out of a model's raw output (a pure function).

The model was given the code before the comment plus the prime (the comment's first words), so
its output continues the comment. The prediction is `prime + output`, cut at the first of:
- a stop sentinel of the family (`<EOT>`, `<|file_separator|>`, `<|endoftext|>` ...): reason
  `sentinel` unless the comment closed before it;
- for block comments and docstrings, the closing marker (`*/`, the closing quotes), kept:
  reason `closed`;
- for a run of line comments, the first line that is not a line comment with the same marker
  (code, or a blank line): reason `code_resumed`;
- otherwise the end of the output: reason `end_of_output` (a budget cut-off, or EOS).
Trailing whitespace is dropped. The raw output is stored untouched beside it, so late
termination and code inside the comment stay visible to annotators.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class CutResult:
    comment: str  # the predicted comment, starting with the prime
    reason: str  # closed | sentinel | code_resumed | end_of_output


def _first_stop(text: str, stops: Sequence[str]) -> int | None:
    found = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(found) if found else None


def cut_comment(raw_output: str, *, prime: str, kind: str, opener: str, closer: str = "",
                stops: Sequence[str] = ()) -> CutResult:
    """The predicted comment for a target of `kind` (line | block | docblock | docstring)."""
    stop_at = _first_stop(raw_output, stops)
    text = raw_output if stop_at is None else raw_output[:stop_at]
    ended = "sentinel" if stop_at is not None else "end_of_output"
    full = prime + text

    if kind in ("block", "docblock", "docstring"):
        closer = closer or ("*/" if kind != "docstring" else '"""')
        at = full.find(closer, len(opener))  # after the opener: `"""` opens and closes
        if at >= 0:
            return CutResult(full[:at + len(closer)], "closed")
        return CutResult(full.rstrip(), ended)

    marker = opener.strip() or "//"
    lines = full.splitlines(keepends=True)
    kept = lines[:1]
    for line in lines[1:]:
        if not line.strip().startswith(marker):
            return CutResult("".join(kept).rstrip(), "code_resumed")
        kept.append(line)
    return CutResult("".join(kept).rstrip(), ended)


def cut_is_final(raw_output: str, *, prime: str, kind: str, opener: str, closer: str = "",
                 stops: Sequence[str] = ()) -> bool:
    """Has the cut rule fired for good, so that more output cannot change the prediction?

    Generation stops here (`corpus.backends`): the comment closed, a sentinel came, or a line
    that is not a comment line is complete (or already cannot become one: `}` or `int x`, not a
    lone `/` that may grow into `//`)."""
    cut = cut_comment(raw_output, prime=prime, kind=kind, opener=opener, closer=closer,
                      stops=stops)
    if cut.reason in ("closed", "sentinel"):
        return True
    if cut.reason != "code_resumed":
        return False
    stop_at = _first_stop(raw_output, stops)
    full = prime + (raw_output if stop_at is None else raw_output[:stop_at])
    marker = opener.strip() or "//"
    for line in full.splitlines(keepends=True)[1:]:
        if not line.strip().startswith(marker):
            if line.endswith("\n"):
                return True
            text = line.strip()
            return bool(text) and not marker.startswith(text)
    return False
