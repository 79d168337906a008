"""Reading one evaluation's error codes, in the shapes real judges write them.

Accepted shapes of the errors field (each reshaping is recorded in the repairs):
- a list of code strings: `["SE-MD", "LG-GR4"]`;
- a list of objects with the code under `code` (or `error_id`, or the prompt language's name),
  optionally `confidence` and `justification`: `[{"error_id": "SE-TS", "confidence": 0.8}]`,
  or copies of the taxonomy's entries, the code under its `id`;
- a presence map, as rubric judges answer: `{"SE-MD": "PRESENT", "LG-GR6": "ABSENT"}` (the
  words of all five prompt languages, true/false and yes/no also read): the PRESENT codes count;
- one object or one string instead of a list; a string of codes separated by commas.

Codes go through the taxonomy's one mapping of other releases (`Taxonomy.resolve_code`): with
`variant` (the release the judge was prompted with, e.g. the study's `variant-gr6`) every code
is mapped as that release means it; without, only ids the current taxonomy lacks (ST-IF1,
LG-GR6, E) are looked up in its variants. A code that is no code of the taxonomy, a group (MS-RE:
assign one of its leaves) or a code the request did not offer is left out and recorded: the
verdict keeps only taxonomy codes. What cannot be read at all (an entry without a code, a
presence value that is neither PRESENT nor ABSENT) raises ValueError naming it: the prediction's
verdict is then parse_error, never `ok` with fewer codes.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from judges.i18n import PROMPT_LANGUAGES, normalise_field_key, texts
from taxonomy import TaxonomyError, normalise_code

# the rubric's PRESENT / ABSENT words as the prompts (judges/data/prompts.*.yaml) write them,
# plus the plain forms judges use (true/false, yes/no); compared folded, without accents
PRESENT_WORDS = frozenset({"present", "yes", "true", "aanwezig", "obecny", "obecna", "obecne",
                           "παρον", "παροντα", "存在"})
ABSENT_WORDS = frozenset({"absent", "no", "false", "afwezig", "nieobecny", "nieobecna",
                          "nieobecne", "απον", "αποντα", "不存在"})
NO_CODE_TEXTS = frozenset({"", "none", "null", "n/a", "-", "no errors"})
# the taxonomy block's "id" key in every prompt language: an error given as a copy of the
# taxonomy's entry ({"id": "ST-IF1", "name": ...}) names its code there
TAXONOMY_ID_KEYS = frozenset(normalise_field_key(texts(lang)["input_keys"]["id"])
                             for lang in PROMPT_LANGUAGES)


@dataclass
class CodeFinding:
    code: str
    confidence: float | None = None
    justification: str | None = None

    def as_dict(self) -> dict:
        return {"code": self.code, "confidence": self.confidence,
                "justification": self.justification}


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFD", text.strip().strip("【】[]\"'").casefold())
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def presence(value: Any) -> bool | None:
    """True (PRESENT), False (ABSENT) or None (neither) for one value of a presence map."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = _fold(value)
        if word in PRESENT_WORDS:
            return True
        if word in ABSENT_WORDS:
            return False
    return None


def _confidence(value: Any, repairs: list[dict], pid: str, code: str) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        repairs.append({"kind": "confidence_not_a_number", "prediction": pid, "code": code,
                        "value": value})
        return None
    if not 0.0 <= number <= 1.0:
        repairs.append({"kind": "confidence_out_of_range", "prediction": pid, "code": code,
                        "value": value})
        return None
    return number


@dataclass
class CodeReader:
    """Reads the errors field of the evaluations of one answer."""
    tax: Any
    offered: Sequence[str]
    repairs: list[dict]
    fields: Callable[[dict, str], dict]  # an object's keys -> canonical field names
    variant: str | None = None
    judged_absent: bool = False  # the last read was a presence map with every code ABSENT

    def read(self, value: Any, pid: str) -> list[CodeFinding]:
        self.judged_absent = False
        items = self._items(value, pid)
        findings: list[CodeFinding] = []
        for index, item in enumerate(items):
            where = f"{pid}: errors[{index}]"
            if isinstance(item, dict):
                entry = self.fields(item, f"{pid}.errors")
                raw_code = entry.get("code")
                if raw_code is None:
                    raw_code = next((v for k, v in item.items()
                                     if normalise_field_key(str(k)) in TAXONOMY_ID_KEYS), None)
                    if raw_code is not None:
                        self.repairs.append({"kind": "error_as_taxonomy_entry", "prediction": pid,
                                             "value": raw_code})
                if not isinstance(raw_code, str) or not raw_code.strip():
                    raise ValueError(f"{where} names no code: {json.dumps(item, ensure_ascii=False)[:80]}")
            elif isinstance(item, str):
                raw_code, entry = item, {}
            else:
                raise ValueError(f"{where} is a {type(item).__name__}, not a code")
            code = self._code(raw_code, pid)
            if code is None:
                continue
            if any(f.code == code for f in findings):
                self.repairs.append({"kind": "duplicate_code", "prediction": pid, "value": code})
                continue
            justification = entry.get("justification")
            if justification is not None and not isinstance(justification, str):
                justification = json.dumps(justification, ensure_ascii=False)
            findings.append(CodeFinding(code, _confidence(entry.get("confidence"), self.repairs,
                                                          pid, code), justification))
        return findings

    def _items(self, value: Any, pid: str) -> list:
        """The errors as a list of codes or code objects."""
        if value is None:
            return []
        if isinstance(value, str):
            parts = [p.strip() for p in re.split(r"[,;\n]", value)]
            parts = [p for p in parts if p.casefold() not in NO_CODE_TEXTS]
            self.repairs.append({"kind": "errors_not_a_list", "prediction": pid})
            return parts
        if isinstance(value, dict):
            entry = self.fields(value, f"{pid}.errors")
            if "code" in entry and set(entry) <= {"code", "confidence", "justification"}:
                self.repairs.append({"kind": "errors_not_a_list", "prediction": pid})
                return [value]
            return self._present(value, pid)
        if isinstance(value, list):
            return value
        raise ValueError(f"{pid}: errors is {json.dumps(value)[:40]}, not a list of codes")

    def _present(self, value: dict, pid: str) -> list[str]:
        """The PRESENT codes of a presence map; an unreadable value is an error."""
        present, absent = [], 0
        for key, state in value.items():
            found = presence(state)
            if found is None:
                raise ValueError(f"{pid}: errors.{key} is {json.dumps(state, ensure_ascii=False)[:40]}, "
                                 "not PRESENT or ABSENT")
            if found:
                present.append(str(key))
            else:
                absent += 1
        self.repairs.append({"kind": "errors_as_presence_map", "prediction": pid,
                             "present": present, "absent": absent})
        self.judged_absent = not present and absent > 0
        return present

    def _code(self, raw: str, pid: str) -> str | None:
        """The canonical code, or None (recorded) when it is not one this request can use."""
        try:
            code, variant = self.tax.resolve_code(raw, self.variant, other_releases=True)
        except TaxonomyError as exc:
            group = str(exc).endswith("assign one of its leaves")
            self.repairs.append({"kind": "code_not_assignable" if group else "unknown_code",
                                 "prediction": pid, "value": raw, "reason": str(exc)})
            return None
        if variant is not None and code != normalise_code(raw):
            self.repairs.append({"kind": "code_variant_mapped", "prediction": pid, "from": raw,
                                 "to": code, "variant": variant})
        elif code != raw:
            self.repairs.append({"kind": "code_normalised", "prediction": pid, "from": raw,
                                 "to": code})
        if code not in self.offered:
            self.repairs.append({"kind": "code_not_offered", "prediction": pid, "value": code})
            return None
        return code
