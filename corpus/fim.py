"""Fill-in-the-middle inputs per model family, and the language prime of the study (4.3).

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

The prime: the first 3 "words" of the reference comment are appended to the prefix so the model
writes in the target language. A word here is a whitespace-delimited run holding a letter or
digit, each CJK character counting as one word; comment markers (`//`, `/**`, `*`, `#`, quotes)
are not words but are kept in the prime. So for `/** Berekent de som van ... */` the prime is
`/** Berekent de som`. The study counted model tokens instead; `prime_end(..., tokenizer=tok)`
does that (first 3 tokenizer tokens that hold a letter or digit), at the price of primes that
differ between models. The default keeps the same prime for every model, so their outputs
compare.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path


class UnknownFamilyError(LookupError):
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
    """Register the families of a JSON file (a list of objects); returns them."""
    try:
        items = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot read FIM families from {path}: {error}") from None
    families = []
    for index, item in enumerate(items if isinstance(items, list) else [items]):
        try:
            family = FimFamily(name=item["name"], template=item["template"],
                               stops=tuple(item.get("stops", ())),
                               patterns=tuple(item.get("patterns", ())),
                               uses_suffix=bool(item.get("uses_suffix", True)),
                               source=item.get("source", str(path)))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}: family #{index}: {error}") from None
        register_family(family, replace=True)
        families.append(family)
    return families


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


_CJK = "\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_PRIME_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]*[^\W_{_CJK}][^\s{_CJK}]*")


def prime_end(comment: str, n_words: int = 3, *, closer: str = "", tokenizer=None) -> int:
    """Where the prime ends in `comment` (a character offset): after its n-th word (or token).

    The prime never reaches into the closing marker (`*/`, quotes)."""
    limit = len(comment) - len(closer) if closer and comment.endswith(closer) else len(comment)
    body = comment[:limit]
    if n_words <= 0:
        return 0
    if tokenizer is not None:
        encoded = tokenizer(body, add_special_tokens=False, return_offsets_mapping=True)
        count = 0
        for start, end in encoded["offset_mapping"]:
            if any(ch.isalnum() for ch in body[start:end]):
                count += 1
                if count == n_words:
                    return end
        return limit
    count = 0
    for match in _PRIME_WORD.finditer(body):
        count += 1
        if count == n_words:
            return match.end()
    return limit


@dataclass(frozen=True)
class FimInput:
    prompt: str  # exactly what the model is given
    prefix: str  # the code before the comment, plus the prime
    suffix: str
    prime: str  # the first words of the reference comment, also the start of the prediction
    family: str


def build_fim_prompt(content: str, span_start: int, span_end: int, family: FimFamily, *,
                     closer: str = "", n_words: int = 3, tokenizer=None) -> FimInput:
    """The FIM input for the comment at content[span_start:span_end]."""
    if not 0 <= span_start <= span_end <= len(content):
        raise ValueError(f"span {span_start}:{span_end} outside a text of {len(content)} chars")
    comment = content[span_start:span_end]
    cut = prime_end(comment, n_words, closer=closer, tokenizer=tokenizer)
    prime = comment[:cut]
    prefix = content[:span_start] + prime
    suffix = content[span_end:]
    return FimInput(family.render(prefix, suffix), prefix, suffix, prime, family.name)

