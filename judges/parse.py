"""Reading a judge's answer: lenient about form, strict about meaning, and never silent.

`parse_response` turns one raw answer into a status and one verdict per prediction. It repairs
what can be repaired without guessing (a byte-order mark, code fences, prose around the JSON,
field names in another prompt language, label/ID spelling) and records every repair; what it
cannot map (an unknown code, a label that is not on the scale) is reported and left out, never
replaced by a guess.

Statuses (JudgeResponse.status and JudgeVerdict.status):
- ok: usable JSON with at least one prediction judged;
- parse_error: no JSON object could be read, or it does not have the answer's shape, or its
  content is unusable (no entry names a known prediction, only unknown codes, an echoed
  placeholder of the example such as "<error code>");
- truncated: the model stopped at the token limit (finish_reason "length"), typically repeating
  itself; the answer is not used even if a prefix parses. Reports count it as a parse failure;
- empty: valid JSON, but nothing in it (no evaluations, or only blank ones);
- refused: the endpoint flagged a refusal (message.refusal, finish_reason "content_filter");
- api_error: no answer at all (set by the client, not here).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from db.models import JUDGE_STATUSES
from judges.i18n import field_aliases, normalise_field_key, placeholders, texts
from taxonomy import ACCURACY_LABELS, AccuracyLabel, TaxonomyError, normalise_code

# the statuses are defined once, in db.models; these names only spell them
OK, PARSE_ERROR, EMPTY, REFUSED, TRUNCATED, API_ERROR = JUDGE_STATUSES
# a failed response status wins over a worse one when several are merged (hierarchical)
STATUS_SEVERITY = {API_ERROR: 5, REFUSED: 4, TRUNCATED: 3, PARSE_ERROR: 2, EMPTY: 1, OK: 0}


@dataclass
class CodeFinding:
    code: str
    confidence: float | None = None
    justification: str | None = None

    def as_dict(self) -> dict:
        return {"code": self.code, "confidence": self.confidence,
                "justification": self.justification}


@dataclass
class PredictionVerdict:
    prediction_id: str
    status: str
    accuracy: str | None = None  # canonical: one of ACCURACY_LABELS
    codes: list[CodeFinding] = field(default_factory=list)
    reasoning: str | None = None
    error: str | None = None


@dataclass
class ParsedResponse:
    status: str
    verdicts: dict[str, PredictionVerdict]
    repairs: list[dict] = field(default_factory=list)
    error: str | None = None


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_PID = re.compile(r"^\s*(?:p|prediction|pred)?\s*[-_#]?\s*(\d+)\s*$", re.IGNORECASE)
_ALIASES = field_aliases()


def _failed(status: str, ids: Sequence[str], error: str, repairs: list[dict]) -> ParsedResponse:
    return ParsedResponse(status, {pid: PredictionVerdict(pid, status, error=error) for pid in ids},
                          repairs, error)


def extract_json(text: str, repairs: list[dict]) -> Any:
    """The JSON value in `text`, stripping a BOM, code fences and surrounding prose; raises
    ValueError when there is none. Each step taken is appended to `repairs`."""
    if text.startswith("\ufeff"):
        text = text.lstrip("\ufeff")
        repairs.append({"kind": "bom_removed"})
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    fenced = _FENCE.match(stripped)
    if fenced:
        repairs.append({"kind": "code_fence_removed"})
        stripped = fenced.group(1).strip()
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            pass
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", stripped):
        start = match.start()
        try:
            value, end = decoder.raw_decode(stripped, start)
        except json.JSONDecodeError:
            continue
        if not isinstance(value, (dict, list)) or (isinstance(value, list) and not value):
            continue
        before, after = stripped[:start].strip(), stripped[end:].strip()
        if before:
            repairs.append({"kind": "text_before_json_removed", "chars": len(before)})
        if after:
            repairs.append({"kind": "text_after_json_removed", "chars": len(after)})
        return value
    raise ValueError("no JSON object found in the response")


def _canonical_key(key: str, lang: str, repairs: list[dict], where: str) -> str | None:
    by_lang = _ALIASES.get(normalise_field_key(str(key)))
    if not by_lang:
        return None
    if lang in by_lang:
        canonical = by_lang[lang]
        if key != texts(lang)["output_fields"][canonical]:
            repairs.append({"kind": "field_name_normalised", "where": where, "from": key,
                            "to": canonical})
        return canonical
    canonical = next(iter(by_lang.values()))
    repairs.append({"kind": "field_name_from_other_language", "where": where, "from": key,
                    "languages": sorted(by_lang), "to": canonical})
    return canonical


def _canonical_dict(obj: dict, lang: str, repairs: list[dict], where: str) -> dict:
    out: dict[str, Any] = {}
    for key, value in obj.items():
        canonical = _canonical_key(key, lang, repairs, where)
        if canonical is None:
            repairs.append({"kind": "unknown_field_ignored", "where": where, "field": key})
        elif canonical in out:
            repairs.append({"kind": "duplicate_field_ignored", "where": where, "field": key})
        else:
            out[canonical] = value
    return out


def accuracy_lookup(tax, lang: str) -> dict[str, str]:
    """Label text (case-folded) -> canonical label, for the prompt language."""
    return {tax.accuracy_text(label, lang)[0].strip().casefold(): label for label in ACCURACY_LABELS}


def _parse_accuracy(value: Any, tax, lang: str, repairs: list[dict], pid: str) -> str:
    """Canonical label, or raises ValueError naming the value."""
    if not isinstance(value, str):
        raise ValueError(f"{pid}: accuracy {value!r} is not a label")
    text = value.strip()
    lookup = accuracy_lookup(tax, lang)
    if text.casefold() in lookup:
        label = lookup[text.casefold()]
        if text != tax.accuracy_text(label, lang)[0]:
            repairs.append({"kind": "accuracy_label_normalised", "prediction": pid,
                            "from": value, "to": label})
        return label
    try:  # other spellings, aliases and other languages' names, as the taxonomy knows them
        label = AccuracyLabel.parse(text)
    except (ValueError, KeyError, TaxonomyError):
        raise ValueError(f"{pid}: accuracy {value!r} is not one of {', '.join(lookup)}") from None
    label = getattr(label, "value", label)
    repairs.append({"kind": "accuracy_label_normalised", "prediction": pid, "from": value,
                    "to": label})
    return label


def _parse_pid(value: Any, ids: Sequence[str], repairs: list[dict]) -> str | None:
    if isinstance(value, str) and value in ids:
        return value
    match = _PID.match(str(value)) if isinstance(value, (str, int)) else None
    if match and f"P{int(match.group(1))}" in ids:
        pid = f"P{int(match.group(1))}"
        repairs.append({"kind": "prediction_id_normalised", "from": value, "to": pid})
        return pid
    repairs.append({"kind": "unknown_prediction_id", "value": value})
    return None


def _parse_confidence(value: Any, repairs: list[dict], pid: str, code: str) -> float | None:
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


def _parse_errors(value: Any, tax, lang: str, offered: Sequence[str], repairs: list[dict],
                  pid: str) -> list[CodeFinding]:
    if value is None:
        return []
    if isinstance(value, (str, dict)):
        value = [value]
        repairs.append({"kind": "errors_not_a_list", "prediction": pid})
    if not isinstance(value, list):
        raise ValueError(f"{pid}: errors is a {type(value).__name__}, not a list")
    findings: list[CodeFinding] = []
    seen: set[str] = set()
    for item in value:
        confidence = justification = None
        if isinstance(item, dict):
            entry = _canonical_dict(item, lang, repairs, f"{pid}.errors")
            raw_code = entry.get("code")
            justification = entry.get("justification")
            if justification is not None and not isinstance(justification, str):
                justification = json.dumps(justification, ensure_ascii=False)
        else:
            raw_code, entry = item, {}
        if not isinstance(raw_code, str) or not raw_code.strip():
            repairs.append({"kind": "error_without_code", "prediction": pid, "value": item})
            continue
        try:
            code = normalise_code(raw_code)
        except (TaxonomyError, ValueError):
            code = raw_code
        if code not in tax.codes:
            repairs.append({"kind": "unknown_code", "prediction": pid, "value": raw_code})
            continue
        if not tax.codes[code].labelable:  # a category or group: too coarse to assign
            repairs.append({"kind": "code_not_assignable", "prediction": pid, "value": code})
            continue
        if code != raw_code:
            repairs.append({"kind": "code_normalised", "prediction": pid, "from": raw_code,
                            "to": code})
        if code not in offered:
            repairs.append({"kind": "code_not_offered", "prediction": pid, "value": code})
            continue
        if code in seen:
            repairs.append({"kind": "duplicate_code", "prediction": pid, "value": code})
            continue
        seen.add(code)
        if "confidence" in entry:
            confidence = _parse_confidence(entry["confidence"], repairs, pid, code)
        findings.append(CodeFinding(code, confidence, justification))
    return findings


def _echoed_placeholder(entry: dict) -> str | None:
    """The first text of an evaluation that is one of the example's placeholders, if any."""
    known = placeholders()
    values = [entry.get("reasoning"), entry.get("accuracy")]
    errors = entry.get("errors")
    for item in errors if isinstance(errors, list) else [errors]:
        values.extend(item.values() if isinstance(item, dict) else [item])
    for value in values:
        if isinstance(value, str) and value.strip().casefold() in known:
            return value
    return None


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and not value)


def parse_response(text: str | None, *, lang: str, strategy: str, tax, offered: Sequence[str],
                   prediction_ids: Sequence[str], finish_reason: str | None = None,
                   refusal: str | None = None) -> ParsedResponse:
    """Classify one raw answer and read a verdict for each of `prediction_ids` from it."""
    ids = tuple(prediction_ids)
    repairs: list[dict] = []
    if refusal or finish_reason == "content_filter":
        return _failed(REFUSED, ids, f"refused: {refusal or 'content_filter'}", repairs)
    if finish_reason == "length":
        return _failed(TRUNCATED, ids, "stopped at the output token limit (finish_reason=length)",
                       repairs)
    if text is None or not text.strip():
        return _failed(PARSE_ERROR, ids, "the response has no text", repairs)
    try:
        value = extract_json(text, repairs)
    except ValueError as exc:
        return _failed(PARSE_ERROR, ids, str(exc), repairs)

    if isinstance(value, list):
        repairs.append({"kind": "top_level_list_as_evaluations"})
        evaluations: Any = value
    elif isinstance(value, dict):
        top = _canonical_dict(value, lang, repairs, "top")
        if "evaluations" in top:
            evaluations = top["evaluations"]
        elif "prediction_id" in top:
            repairs.append({"kind": "single_evaluation_object"})
            evaluations = [value]
        elif not value:
            return _failed(EMPTY, ids, "the JSON object is empty", repairs)
        else:
            return _failed(PARSE_ERROR, ids, "no evaluations field; keys: "
                           + ", ".join(map(str, value)), repairs)
    else:
        return _failed(PARSE_ERROR, ids, f"the JSON value is a {type(value).__name__}", repairs)

    if _blank(evaluations):
        return _failed(EMPTY, ids, "the evaluations are empty", repairs)
    if not isinstance(evaluations, list):
        return _failed(PARSE_ERROR, ids, "evaluations is not a list", repairs)

    if not any(isinstance(raw, dict) for raw in evaluations):
        return _failed(PARSE_ERROR, ids, "the evaluations hold no JSON objects", repairs)
    verdicts: dict[str, PredictionVerdict] = {}
    unmatched = 0  # entries that name no prediction of this request: content, but unusable
    for index, raw in enumerate(evaluations):
        if not isinstance(raw, dict):
            repairs.append({"kind": "evaluation_not_an_object", "index": index})
            continue
        entry = _canonical_dict(raw, lang, repairs, f"evaluations[{index}]")
        pid = _parse_pid(entry.get("prediction_id"), ids, repairs)
        if pid is None:
            unmatched += 1
            continue
        if pid in verdicts:
            repairs.append({"kind": "duplicate_prediction_ignored", "prediction": pid})
            continue
        reasoning = entry.get("reasoning")
        reasoning = reasoning if isinstance(reasoning, str) or reasoning is None else json.dumps(
            reasoning, ensure_ascii=False)
        if all(_blank(entry.get(k)) for k in ("accuracy", "errors", "reasoning")):
            verdicts[pid] = PredictionVerdict(pid, EMPTY, error=f"{pid}: blank evaluation")
            continue
        echoed = _echoed_placeholder(entry)
        if echoed is not None:
            repairs.append({"kind": "placeholder_echoed", "prediction": pid, "value": echoed})
            verdicts[pid] = PredictionVerdict(pid, PARSE_ERROR, reasoning=reasoning,
                                              error=f"{pid}: echoes the example's {echoed!r}")
            continue
        try:
            codes = _parse_errors(entry.get("errors"), tax, lang, offered, repairs, pid)
            accuracy = None
            if _blank(entry.get("accuracy")):
                repairs.append({"kind": "missing_accuracy", "prediction": pid})
            else:
                accuracy = _parse_accuracy(entry["accuracy"], tax, lang, repairs, pid)
        except ValueError as exc:
            verdicts[pid] = PredictionVerdict(pid, PARSE_ERROR, error=str(exc), reasoning=reasoning)
            continue
        if accuracy is None and not codes:
            if not _blank(entry.get("errors")):  # codes given, none usable: invalid, not empty
                verdicts[pid] = PredictionVerdict(pid, PARSE_ERROR, reasoning=reasoning,
                                                  error=f"{pid}: no accuracy label and no usable "
                                                        "error code")
            else:  # e.g. only a reasoning text: nothing to use
                verdicts[pid] = PredictionVerdict(pid, EMPTY, reasoning=reasoning,
                                                  error=f"{pid}: no accuracy label and no error codes")
            continue
        verdicts[pid] = PredictionVerdict(pid, OK, accuracy, codes, reasoning)

    for pid in ids:
        if pid not in verdicts:
            repairs.append({"kind": "missing_prediction", "prediction": pid})
            verdicts[pid] = PredictionVerdict(pid, EMPTY, error=f"no evaluation for {pid}")
    if unmatched and all(v.status == EMPTY for v in verdicts.values()):
        return _failed(PARSE_ERROR, ids, f"{unmatched} evaluation(s) name no prediction of "
                       f"{', '.join(ids)}", repairs)
    statuses = {v.status for v in verdicts.values()}
    if OK in statuses:
        status, error = OK, None
    elif statuses == {EMPTY}:
        status, error = EMPTY, "no prediction has an evaluation"
    else:
        status = PARSE_ERROR
        error = "; ".join(v.error for v in verdicts.values() if v.error)
    return ParsedResponse(status, {pid: verdicts[pid] for pid in ids}, repairs, error)


def merge_cluster_verdicts(per_cluster: dict[str, ParsedResponse], prediction_id: str,
                           accuracy_policy: str = "worst") -> PredictionVerdict:
    """One prediction's verdict from the hierarchical strategy's per-cluster answers.

    Codes: the union over clusters whose answer was ok. Status: ok only if every cluster's
    verdict is ok; otherwise the most severe failure (a verdict built from 6 of 7 clusters is
    not comparable with the others). Accuracy (asked in every cluster for the prediction as a
    whole): `worst` takes the lowest label over all clusters, as the study's aggregation does;
    `semantic` takes the semantic_accuracy cluster's label.
    """
    verdicts = {name: r.verdicts[prediction_id] for name, r in per_cluster.items()}
    codes: list[CodeFinding] = []
    for v in verdicts.values():
        if v.status == OK:
            codes.extend(c for c in v.codes if c.code not in {x.code for x in codes})
    failed = [v for v in verdicts.values() if v.status != OK]
    if failed:
        worst = max(failed, key=lambda v: STATUS_SEVERITY[v.status])
        errors = "; ".join(f"{name}: {v.error}" for name, v in verdicts.items() if v.status != OK)
        return PredictionVerdict(prediction_id, worst.status, None, codes, error=errors)
    if accuracy_policy == "worst":
        labels = [v.accuracy for v in verdicts.values() if v.accuracy is not None]
        accuracy = min(labels, key=ACCURACY_LABELS.index) if labels else None
    elif accuracy_policy == "semantic":
        accuracy = verdicts.get("semantic_accuracy", PredictionVerdict(prediction_id, OK)).accuracy
    else:
        raise ValueError(f"unknown accuracy policy {accuracy_policy!r}; expected worst or semantic")
    return PredictionVerdict(prediction_id, OK, accuracy, codes)
