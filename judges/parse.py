"""Reading a judge's answer: lenient about form, strict about meaning, and never silent.

`parse_response` turns one raw answer into a status and one verdict per prediction. It repairs
what can be repaired without guessing (a byte-order mark, code fences, prose around the JSON,
`//` comments, field names in another prompt language, label/ID spelling: the JSON is found by
`judges.parse_json`) and records every repair; what it cannot map (an unknown code, a label that
is not on the scale) is reported and left out, never replaced by a guess. What a broken JSON
document held beyond the piece that could be read is `parse_error` for the predictions it lost
(not `empty`); two complete answers that differ are `parse_error`.

Shapes read besides the prompt's own (so answers of judges prompted elsewhere, such as the
study's, parse too): the evaluations under `results`, `evaluation_results`, `model_predictions`
or the answer's only list of objects; a prediction named by `model_name` (its model's name,
case-insensitive, given `prediction_models`); `overall_quality` for the accuracy
(correct / partially_correct / partial / incorrect); `explanation` for the reasoning; codes as
strings, objects (`code` or `error_id`) or a PRESENT/ABSENT map (`judges.parse_codes`). A
prediction whose codes cannot be read is parse_error with the reason, never `ok` with fewer codes.
A key an object repeats (`"accuracy": "correct", "accuracy": "incorrect"`) is recorded
(`duplicate_key`); with different values, the entry holding it is parse_error naming the key
(the whole answer where it is outside every entry), never read as its last value.

Statuses (JudgeResponse.status and JudgeVerdict.status):
- ok: usable JSON with at least one prediction judged;
- parse_error: no JSON object could be read, or it does not have the answer's shape, or its
  content is unusable (no entry names a known prediction, only unknown codes, an echoed
  placeholder of the example such as "<error code>");
- truncated: the model stopped at the token limit (finish_reason "length"), typically repeating
  itself, or the answer ends inside its JSON document whatever the finish_reason (none, in
  files written elsewhere): cut off. The answer is not used even if a prefix parses (no
  prediction is `ok` from a broken document). Reports count it as a parse failure;
- empty: valid JSON, but nothing in it (no evaluations, or only blank ones);
- refused: the endpoint flagged a refusal (message.refusal, finish_reason "content_filter");
- api_error: no answer at all (set by the client, not here); from a batch (judges.batch):
  batch_error (its line failed) and expired (the batch ended before answering it).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from db.models import JUDGE_STATUSES
from judges.i18n import field_aliases, normalise_field_key, placeholders, texts
from judges.parse_codes import CodeFinding, CodeReader
from judges.parse_json import CutOff, duplicate_keys, extract_json, key_conflict
from taxonomy import ACCURACY_LABELS, AccuracyLabel, TaxonomyError

# the statuses are defined once, in db.models; these names only spell them
OK, PARSE_ERROR, EMPTY, REFUSED, TRUNCATED, API_ERROR, BATCH_ERROR, EXPIRED = JUDGE_STATUSES
# a failed response status wins over a worse one when several are merged (hierarchical, juries)
STATUS_SEVERITY = {EXPIRED: 7, BATCH_ERROR: 6, API_ERROR: 5, REFUSED: 4, TRUNCATED: 3,
                   PARSE_ERROR: 2, EMPTY: 1, OK: 0}


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


_PID = re.compile(r"^\s*(?:p|prediction|pred)?\s*[-_#]?\s*(\d+)\s*$", re.IGNORECASE)
_ALIASES = field_aliases()
# names real judges give the answer's fields besides the prompts' own (any prompt language):
# the study's judges answer with model_name, overall_quality, explanation, error_id, results
OTHER_FIELD_NAMES = {"results": "evaluations", "evaluation_results": "evaluations",
                     "model_predictions": "evaluations", "model_name": "prediction_id",
                     "model": "prediction_id", "overall_quality": "accuracy",
                     "quality": "accuracy", "label": "accuracy", "explanation": "reasoning",
                     "error_id": "code", "error_code": "code"}


def _failed(status: str, ids: Sequence[str], error: str, repairs: list[dict]) -> ParsedResponse:
    return ParsedResponse(status, {pid: PredictionVerdict(pid, status, error=error) for pid in ids},
                          repairs, error)


def _canonical_key(key: str, lang: str, repairs: list[dict], where: str) -> str | None:
    by_lang = _ALIASES.get(normalise_field_key(str(key)))
    if not by_lang:
        canonical = OTHER_FIELD_NAMES.get(normalise_field_key(str(key)))
        if canonical is not None:
            repairs.append({"kind": "field_name_normalised", "where": where, "from": key,
                            "to": canonical})
        return canonical
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
        elif canonical in out and not (_blank(out[canonical]) and not _blank(value)):
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


def _parse_pid(value: Any, ids: Sequence[str], repairs: list[dict],
               models: Mapping[str, str]) -> str | None:
    """The prediction an entry names: its id (any spelling of P<n>) or, where `models` gives
    each prediction's model, the model's name (case-insensitive) when exactly one has it."""
    if isinstance(value, str) and value in ids:
        return value
    match = _PID.match(str(value)) if isinstance(value, (str, int)) else None
    if match and f"P{int(match.group(1))}" in ids:
        pid = f"P{int(match.group(1))}"
        repairs.append({"kind": "prediction_id_normalised", "from": value, "to": pid})
        return pid
    if isinstance(value, str) and models:
        named = [pid for pid in ids if models.get(pid, "").strip().casefold()
                 == value.strip().casefold()]
        if len(named) == 1:
            repairs.append({"kind": "prediction_named_by_model", "from": value, "to": named[0]})
            return named[0]
        if len(named) > 1:
            repairs.append({"kind": "ambiguous_model_name", "value": value, "predictions": named})
            return None
    repairs.append({"kind": "unknown_prediction_id", "value": value})
    return None


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
                   refusal: str | None = None, prediction_models: Mapping[str, str] | None = None,
                   code_variant: str | None = None, accuracy_asked: bool = True) -> ParsedResponse:
    """Classify one raw answer and read a verdict for each of `prediction_ids` from it.

    `prediction_models` (prediction id -> its model's name) lets entries name a prediction by
    its model, as judges shown model names do; `code_variant` is the taxonomy release the judge
    was prompted with (`judges.parse_codes`). `accuracy_asked=False` (a judge asked for error
    codes only, as some of the study's prompts did): an entry's errors list, even an empty one,
    is its verdict, and no accuracy label is missing."""
    ids = tuple(prediction_ids)
    repairs: list[dict] = []
    reader = CodeReader(tax, offered, repairs, lambda obj, where: _canonical_dict(
        obj, lang, repairs, where), code_variant)
    if refusal or finish_reason == "content_filter":
        return _failed(REFUSED, ids, f"refused: {refusal or 'content_filter'}", repairs)
    if finish_reason == "length":
        return _failed(TRUNCATED, ids, "stopped at the output token limit (finish_reason=length)",
                       repairs)
    if text is None or not text.strip():
        return _failed(PARSE_ERROR, ids, "the response has no text", repairs)
    try:
        value = extract_json(text, repairs)
    except CutOff as exc:
        return _failed(TRUNCATED, ids, f"{exc} (finish_reason={finish_reason or 'none'})",
                       repairs)
    except ValueError as exc:
        return _failed(PARSE_ERROR, ids, str(exc), repairs)
    duplicates = duplicate_keys(value)
    conflicts: dict[int, str] = {}  # id of an object -> what its repeated key leaves unknown
    for obj, where, key, values in duplicates:
        problem = key_conflict(key, values)
        repairs.append({"kind": "duplicate_key", "where": where, "key": key, "values": values,
                        "kept": None if problem else "the one value given"})
        if problem:
            conflicts.setdefault(obj, f"{where}: {problem}")

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
        elif len(lists := [k for k, v in value.items() if isinstance(v, list) and v
                           and all(isinstance(x, dict) for x in v)]) == 1:
            repairs.append({"kind": "evaluations_under_other_key", "key": lists[0]})
            evaluations = value[lists[0]]
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
    entry_conflict: dict[int, str] = {}  # index of an entry -> the first conflict inside it
    if conflicts:  # (rare: the entries are walked only then)
        objects = {index: [obj for obj, *_ in duplicate_keys(raw)]
                   for index, raw in enumerate(evaluations)}
        inside = {obj for found in objects.values() for obj in found}
        outside = [problem for obj, problem in conflicts.items() if obj not in inside]
        if outside:  # e.g. "evaluations" given twice: no entry can be trusted
            return _failed(PARSE_ERROR, ids, outside[0], repairs)
        entry_conflict = {index: next(conflicts[obj] for obj in found if obj in conflicts)
                          for index, found in objects.items()
                          if any(obj in conflicts for obj in found)}
    verdicts: dict[str, PredictionVerdict] = {}
    unmatched = 0  # entries that name no prediction of this request: content, but unusable
    for index, raw in enumerate(evaluations):
        if not isinstance(raw, dict):
            repairs.append({"kind": "evaluation_not_an_object", "index": index})
            continue
        entry = _canonical_dict(raw, lang, repairs, f"evaluations[{index}]")
        pid = _parse_pid(entry.get("prediction_id"), ids, repairs, prediction_models or {})
        if pid is None:
            unmatched += 1
            continue
        if pid in verdicts:
            repairs.append({"kind": "duplicate_prediction_ignored", "prediction": pid})
            continue
        conflict = entry_conflict.get(index)
        if conflict is not None:
            verdicts[pid] = PredictionVerdict(pid, PARSE_ERROR, error=f"{pid}: {conflict}")
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
            codes = reader.read(entry.get("errors"), pid)
            accuracy = None
            if _blank(entry.get("accuracy")):
                if accuracy_asked:
                    repairs.append({"kind": "missing_accuracy", "prediction": pid})
            else:
                accuracy = _parse_accuracy(entry["accuracy"], tax, lang, repairs, pid)
        except ValueError as exc:
            verdicts[pid] = PredictionVerdict(pid, PARSE_ERROR, error=str(exc), reasoning=reasoning)
            continue
        judged = reader.judged_absent or (not accuracy_asked and isinstance(entry.get("errors"),
                                                                             (list, dict)))
        if accuracy is None and not codes and not judged:
            if not _blank(entry.get("errors")):  # codes given, none usable: invalid, not empty
                verdicts[pid] = PredictionVerdict(pid, PARSE_ERROR, reasoning=reasoning,
                                                  error=f"{pid}: no accuracy label and no usable "
                                                        "error code")
            else:  # e.g. only a reasoning text: nothing to use
                verdicts[pid] = PredictionVerdict(pid, EMPTY, reasoning=reasoning,
                                                  error=f"{pid}: no accuracy label and no error codes")
            continue
        verdicts[pid] = PredictionVerdict(pid, OK, accuracy, codes, reasoning)

    broken = next((r for r in repairs if r["kind"] == "json_structure_broken"), None)
    for pid in ids:
        if pid in verdicts:
            continue
        if broken is not None:  # its entry was in the part of the answer that could not be read
            repairs.append({"kind": "prediction_lost", "prediction": pid})
            verdicts[pid] = PredictionVerdict(pid, PARSE_ERROR, error=(
                f"{pid}: not read: the answer's JSON breaks ({broken['error']}); only "
                f"characters {broken['read'][0]}-{broken['read'][1]} of it could be read"))
        else:
            repairs.append({"kind": "missing_prediction", "prediction": pid})
            verdicts[pid] = PredictionVerdict(pid, EMPTY, error=f"no evaluation for {pid}")
    if unmatched and all(v.status == EMPTY for v in verdicts.values()):
        return _failed(PARSE_ERROR, ids, f"{unmatched} evaluation(s) name no prediction of "
                       f"{', '.join(ids)}", repairs)
    statuses = {v.status for v in verdicts.values()}
    if OK in statuses:  # the error, if any, says why the others failed (reports show it)
        status = OK
        error = "; ".join(v.error for v in verdicts.values() if v.status != OK and v.error) or None
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
