"""Fill-in-the-middle (FIM) layouts per model family: how a model that was trained for infilling
takes a prefix and a suffix. Knowledge about models, shared by `corpus` (which builds the prompts)
and `db` (which reads the FIM inputs of the study's release to locate each target).

A `FimFamily` is a template with `{prefix}` and `{suffix}` holes, the stop sentinels that end a
generation, and the model-id patterns that pick it. Built in (layouts as the model cards and
tokenizer configs define them):

| family        | input                                                            | stops |
|---------------|------------------------------------------------------------------|-------|
| starcoder2    | `<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>`           | `<|endoftext|>`, `<file_sep>`, FIM tokens |
| codellama     | `<PRE> {prefix} <SUF>{suffix} <MID>`                             | `<EOT>`, `</s>` |
| codegemma     | `<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>`     | `<|file_separator|>`, `<eos>`, FIM tokens |
| codeqwen1.5   | `<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>`           | `<|endoftext|>`, `<file_sep>`, `<fim_pad>`, FIM tokens |
| granite-code  | `<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>`           | `<|endoftext|>`, `<fim_pad>`, `<filename>`, FIM tokens |
| qwen2.5-coder | `<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>`     | `<|endoftext|>`, `<|fim_pad|>`, `<|file_sep|>`, FIM tokens |
| plain         | `{prefix}` (no FIM tokens: left-to-right continuation)           | the tokenizer's EOS only |

CodeLlama's sentinels are the tokens `▁<PRE>`, `▁<SUF>`, `▁<MID>`, `▁<EOT>`: written as text the
layout is "<PRE> " + prefix + " <SUF>" + suffix + " <MID>" (the spaces are those tokens' `▁`).
The tokenizer adds BOS (`<s>`, `<bos>`) itself; the stored input is the text without it.

`plain` is for models without FIM training (SmolLM2, the offline test model): the model sees the
code before the comment plus the prime and continues it; the suffix is not shown.

Users add a family with `register_family(FimFamily(...))` or a JSON file
(`load_families_file`): `[{"name": ..., "template": ..., "stops": [...], "patterns": [...]}]`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from nlce.cli import InputError, UserError


class UnknownFamilyError(UserError, LookupError):
    """No FIM family is known for a model id or family name."""


@dataclass(frozen=True)
class FimFamily:
    name: str
    template: str  # with {prefix} and {suffix}
    stops: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()  # regular expressions over the lower-cased model id
    uses_suffix: bool = True
    source: str = ""  # where the layout is documented

    def __post_init__(self):
        if "{prefix}" not in self.template:
            raise ValueError(f"FIM family {self.name!r}: template lacks {{prefix}}")
        if self.uses_suffix and "{suffix}" not in self.template:
            raise ValueError(f"FIM family {self.name!r}: template lacks {{suffix}}")

    def render(self, prefix: str, suffix: str) -> str:
        # str.replace, not str.format: source code is full of braces
        head, _, tail = self.template.partition("{prefix}")
        tail = tail.replace("{suffix}", suffix) if self.uses_suffix else tail
        return head + prefix + tail


_STARCODER_FIM = ("<fim_prefix>", "<fim_suffix>", "<fim_middle>")
_PIPE_FIM = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")

BUILTIN_FAMILIES: tuple[FimFamily, ...] = (
    FimFamily("starcoder2", "<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>",
              ("<|endoftext|>", "<file_sep>") + _STARCODER_FIM, (r"starcoder",),
              source="bigcode/starcoder2 model card and tokenizer special tokens"),
    FimFamily("codellama", "<PRE> {prefix} <SUF>{suffix} <MID>", ("<EOT>", "</s>"),
              (r"code-?llama",),
              source="codellama generation.py infilling format; tokenizer_config prefix/suffix/"
                     "middle/eot tokens ▁<PRE> ▁<SUF> ▁<MID> ▁<EOT>"),
    FimFamily("codegemma", "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>",
              ("<|file_separator|>", "<eos>", "<end_of_turn>") + _PIPE_FIM, (r"codegemma",),
              source="ai.google.dev CodeGemma prompt structure (FIM tokens, file separator)"),
    FimFamily("codeqwen1.5", "<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>",
              ("<|endoftext|>", "<file_sep>", "<fim_pad>") + _STARCODER_FIM, (r"codeqwen",),
              source="QwenLM/CodeQwen1.5 README, file-level completion (fill-in-the-middle)"),
    FimFamily("granite-code", "<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>",
              ("<|endoftext|>", "<fim_pad>", "<filename>") + _STARCODER_FIM,
              (r"granite.*code", r"code.*granite"),
              source="ibm-granite granite-code model cards (StarCoder tokenizer sentinels)"),
    FimFamily("qwen2.5-coder", "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>",
              ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|repo_name|>") + _PIPE_FIM,
              (r"qwen2\.5-coder", r"qwen3-coder"), source="Qwen2.5-Coder README"),
    FimFamily("plain", "{prefix}", (), (r"smollm",), uses_suffix=False,
              source="no FIM: left-to-right continuation of the code before the comment"),
)

_FAMILIES: dict[str, FimFamily] = {f.name: f for f in BUILTIN_FAMILIES}


def register_family(family: FimFamily, *, replace: bool = False) -> None:
    if family.name in _FAMILIES and not replace:
        raise ValueError(f"FIM family {family.name!r} exists; pass replace=True to override")
    _FAMILIES[family.name] = family


def load_families_file(path: str | Path) -> list[FimFamily]:
    """Register the families of a JSON file (a list of objects); returns them. A file that
    cannot be read, is not UTF-8 JSON, or holds a malformed family is an InputError naming the
    file (and the family), and registers nothing."""
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise InputError(f"cannot read FIM families from {path}: {error.strerror or error}"
                         ) from None
    try:
        items = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise InputError(f"{path}: the FIM families file is not UTF-8 text (byte "
                         f"0x{raw[error.start]:02x} on line {line}): save it as UTF-8") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: the FIM families file is not JSON: {error}") from None
    families = [_family_of(item, index, path)
                for index, item in enumerate(items if isinstance(items, list) else [items])]
    for family in families:
        register_family(family, replace=True)
    return families


def _strings(item: dict, key: str) -> tuple[str, ...]:
    value = item.get(key, ())
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key!r} must be a list of strings")
    return tuple(value)


def _family_of(item, index: int, path) -> FimFamily:
    """One family of a families file; InputError naming the file and the family."""
    try:
        if not isinstance(item, dict):
            raise ValueError(f"expected an object with 'name' and 'template', not "
                             f"{type(item).__name__}")
        if not isinstance(item.get("name"), str) or not isinstance(item.get("template"), str):
            raise ValueError("'name' and 'template' must be strings")
        patterns = _strings(item, "patterns")
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"pattern {pattern!r} is not a regular expression: {error}"
                                 ) from None
        return FimFamily(name=item["name"], template=item["template"],
                         stops=_strings(item, "stops"), patterns=patterns,
                         uses_suffix=bool(item.get("uses_suffix", True)),
                         source=str(item.get("source", path)))
    except ValueError as error:
        raise InputError(f"{path}: family #{index}: {error}") from None


def families() -> dict[str, FimFamily]:
    return dict(_FAMILIES)


def get_family(name: str) -> FimFamily:
    try:
        return _FAMILIES[name]
    except KeyError:
        raise UnknownFamilyError(f"unknown FIM family {name!r}; known: "
                                 f"{', '.join(sorted(_FAMILIES))}") from None


# Models whose names match a FIM family but that were not trained for infilling: CodeLlama 34B
# and 70B and the Python variants (the Code Llama paper trained infilling into the 7B and 13B
# base and Instruct models only), and the instruction-tuned CodeGemma `-it` models (the model
# card gives FIM prompts for the pretrained 2B and 7B). They get `plain`.
NO_INFILLING = (r"code-?llama-(34|70)b", r"code-?llama-\d+b-python", r"codegemma-.*\bit\b",
                r"codegemma.*-it$")


def family_for_model(model_id: str) -> FimFamily:
    """The family whose patterns match the model id (a hub id or a folder name); `plain` for a
    model of a FIM family that was not trained for infilling (`NO_INFILLING`)."""
    key = model_id.lower()
    if any(re.search(p, key) for p in NO_INFILLING):
        return _FAMILIES["plain"]
    for family in _FAMILIES.values():
        if any(re.search(p, key) for p in family.patterns):
            return family
    raise UnknownFamilyError(
        f"no FIM family known for model {model_id!r}; pass --family "
        f"({', '.join(sorted(_FAMILIES))}) or add one with --families-file")
