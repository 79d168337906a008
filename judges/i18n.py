"""The judge's own wording in each prompt language, as data: judges/data/prompts.<lang>.yaml.

Taxonomy names, descriptions, criteria, cluster names and accuracy-label texts come from the
`taxonomy` package (also YAML); these files hold only the judge's instructions, bias directives,
Chain-of-Thought steps, rubric phrases, the JSON keys of the input blocks, the output schema's
field names, and `judge_code_texts`: a code's text as the judge should read it where the
taxonomy's wording addresses annotators (MISC's "explain it in the note"). Every file must have
every key of KEYS with the right shape; a file that does not is an error naming file and key.
Changing any string changes the prompt version.
"""
from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path

import yaml

from nlce.cli import InputError

PROMPT_LANGUAGES = ("en", "zh", "nl", "el", "pl")
DATA_DIR = Path(__file__).with_name("data")

# Where the comment was cut out of the code context: one language-neutral marker.
FIM_MASK = "<FIM_MASK>"

# Canonical (English) output field names; the prompt uses their translations.
OUTPUT_FIELDS = ("evaluations", "prediction_id", "reasoning", "errors", "code", "confidence",
                 "justification", "accuracy")
# Canonical keys of the JSON input blocks ("text": a pairs target's reference and predictions).
INPUT_KEYS = ("id", "name", "description", "inclusion", "exclusion", "comment", "text")
# the texts a pairs target's prompt (a reference and predictions, no code) uses instead of the
# code-comment ones: the `pairs` mapping of each file
PAIRS_KEYS = ("system_role", "bias", "h_original", "h_context", "standard_steps", "cot_steps",
              "rubric_steps")
CODE_TEXT_FIELDS = ("name", "description", "inclusion", "exclusion")

# key -> shape: "text", "list" (of texts), or a tuple of the sub-keys a mapping must have
KEYS: dict[str, object] = {
    "output_fields": OUTPUT_FIELDS, "input_keys": INPUT_KEYS,
    "system_role": "text", "rules": "text", "remember": "text", "bias": "list",
    "json_only": "text", "h_taxonomy": "text", "h_rubric": "text", "h_cluster": "text",
    "h_accuracy": "text", "h_original": "text", "h_context": "text", "h_predictions": "text",
    "h_output": "text", "steps_intro": "text", "standard_steps": "list", "cot_steps": "list",
    "rubric_steps": "list", "rubric_instruction": "text", "present_if": "text",
    "absent_if": "text", "none_listed": "text", "cluster_focus": "text",
    "output_instruction": "text", "ph_code": "text", "ph_reasoning": "text",
    "ph_justification": "text", "judge_code_texts": "code_texts",
    "language_names": "language_names", "pairs": "pairs",
}
# the {names} a text may use: judges.prompts fills these in ({language}: the targets' language,
# named by `language_name`)
FORMAT_NAMES = frozenset({"mask", "ids", "labels", "language", *OUTPUT_FIELDS})


class PromptTextError(InputError):
    """A prompt text file that cannot be used; the message names the file and the key."""


def _check_text(value, where: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise PromptTextError(f"{where}: must be a non-empty text")
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
    except ValueError as exc:
        raise PromptTextError(f"{where}: malformed {{placeholder}}: {exc}") from None
    unknown = sorted(names - FORMAT_NAMES)
    if unknown:
        raise PromptTextError(f"{where}: unknown placeholder(s) {', '.join(unknown)}; "
                              f"allowed: {', '.join(sorted(FORMAT_NAMES))}")


def _check_list(value, where: str) -> None:
    if not isinstance(value, list) or not value:
        raise PromptTextError(f"{where}: must be a non-empty list of texts")
    for i, item in enumerate(value):
        _check_text(item, f"{where}[{i}]")


def validate_texts(table, where: str, *, partial: bool = False) -> dict:
    """`table` checked against KEYS (all keys present unless `partial`, no others)."""
    if not isinstance(table, dict):
        raise PromptTextError(f"{where}: must be a mapping of prompt text keys")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise PromptTextError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}")
    missing = [] if partial else [k for k in KEYS if k not in table]
    if missing:
        raise PromptTextError(f"{where}: missing key(s) {', '.join(missing)}")
    for key, value in table.items():
        shape, at = KEYS[key], f"{where}: {key}"
        if shape == "text":
            _check_text(value, at)
        elif shape == "list":
            _check_list(value, at)
        elif shape == "language_names":
            if not isinstance(value, dict) or (not partial and not set(PROMPT_LANGUAGES) <= set(value)):
                raise PromptTextError(f"{at}: must map language codes to names, the five prompt "
                                      f"languages ({', '.join(PROMPT_LANGUAGES)}) included")
            for code, name in value.items():
                if not isinstance(name, str) or not name.strip() or "{" in name:
                    raise PromptTextError(f"{at}.{code}: must be a non-empty name")
        elif shape == "pairs":
            if not isinstance(value, dict):
                raise PromptTextError(f"{at}: must map text keys to the pairs prompt's texts")
            unknown = sorted(set(map(str, value)) - set(PAIRS_KEYS))
            missing = [] if partial else [k for k in PAIRS_KEYS if k not in value]
            if unknown or missing:
                raise PromptTextError(f"{at}: " + (f"unknown key(s) {', '.join(unknown)}" if unknown
                                                   else f"missing key(s) {', '.join(missing)}"))
            for sub, text in value.items():
                (_check_list if KEYS[sub] == "list" else _check_text)(text, f"{at}.{sub}")
        elif shape == "code_texts":
            if not isinstance(value, dict):
                raise PromptTextError(f"{at}: must map code ids to their texts")
            for code, fields in value.items():
                if not isinstance(fields, dict) or not set(fields) <= set(CODE_TEXT_FIELDS):
                    raise PromptTextError(f"{at}.{code}: may hold only {', '.join(CODE_TEXT_FIELDS)}")
                for name, text in fields.items():
                    (_check_list if name in ("inclusion", "exclusion") else _check_text)(
                        text, f"{at}.{code}.{name}")
        else:
            if not isinstance(value, dict) or set(value) != set(shape):
                raise PromptTextError(f"{at}: must have exactly the keys {', '.join(shape)}")
            for sub, text in value.items():
                _check_text(text, f"{at}.{sub}")
    return table


def yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: what is wrong with a YAML text and where."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"not valid YAML{where}: {getattr(exc, 'problem', None) or exc}".replace("\n", " ")


def read_text_file(path: Path, *, partial: bool = False) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PromptTextError(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise PromptTextError(f"{path}: {yaml_problem(exc)}") from None
    return validate_texts(data, str(path), partial=partial)


@lru_cache(maxsize=None)
def texts(lang: str) -> dict:
    """The judge's wording in one prompt language; an unknown language is a clear error."""
    if lang not in PROMPT_LANGUAGES:
        raise ValueError(
            f"unknown prompt language {lang!r}; expected one of {', '.join(PROMPT_LANGUAGES)}")
    return read_text_file(DATA_DIR / f"prompts.{lang}.yaml")


def language_name(code: str, lang: str, table: dict | None = None) -> str:
    """The language `code` as the prompt language `lang` names it in its sentences (its file's
    `language_names`); a language that has no entry there: its English name and its code."""
    from taxonomy.languages import ENGLISH_NAMES

    name = ((table or texts(lang)).get("language_names") or {}).get(code)
    if name is not None:
        return name
    english = ENGLISH_NAMES.get(code, code)
    return english if lang == "en" else f"{english} ({code})"


def field_name(canonical: str, lang: str) -> str:
    return texts(lang)["output_fields"][canonical]


def _key(name: str) -> str:
    """How field names are compared: case-folded, trimmed, spaces and hyphens as underscores."""
    return name.strip().casefold().replace(" ", "_").replace("-", "_")


def field_aliases() -> dict[str, dict[str, str]]:
    """Normalised field name -> {language: canonical name}, over all prompt languages."""
    aliases: dict[str, dict[str, str]] = {}
    for lang in PROMPT_LANGUAGES:
        for canonical, translated in texts(lang)["output_fields"].items():
            aliases.setdefault(_key(translated), {})[lang] = canonical
    return aliases


def placeholders(lang: str | None = None) -> frozenset[str]:
    """The example answer's placeholders ("<error code>", ...) in one or all languages: an
    answer that echoes one has not judged anything."""
    langs = PROMPT_LANGUAGES if lang is None else (lang,)
    return frozenset(f"<{texts(lg)[k]}>".casefold() for lg in langs
                     for k in ("ph_code", "ph_reasoning", "ph_justification"))


normalise_field_key = _key
