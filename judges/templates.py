"""Prompt variants from a file, so that an experimenter can try one without editing the package.

A template file (YAML) names the variant, the built-in strategy whose request layout and output
schema it uses, and the prompt texts it replaces, per language, under the same keys as
judges/data/prompts.<lang>.yaml; everything it does not replace is the built-in wording:

    name: rubric-strict          # stored as the run's strategy; not a built-in strategy name
    base: rubric                 # standard | cot | rubric | hierarchical
    texts:
      en:
        rubric_instruction: "..."

The variant is versioned by the SHA-256 of the file's bytes (written into the run and its
reports), and its prompt version hashes the rendered prompts, as for the built-in strategies.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from db.models import JUDGE_STRATEGIES
from judges.i18n import PROMPT_LANGUAGES, PromptTextError, texts, validate_texts, yaml_problem
from nlce.option_files import read_option_text

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    base: str  # a built-in strategy: request layout and output schema
    sha256: str  # of the file's bytes
    path: str
    overrides: dict = field(default_factory=dict, compare=False, hash=False)  # lang -> texts

    def texts(self, lang: str) -> dict:
        base, own = texts(lang), self.overrides.get(lang, {})
        merged = {**base, **own}
        for nested in ("pairs", "language_names"):  # a template replaces single texts of these
            if nested in own:
                merged[nested] = {**base[nested], **own[nested]}
        return merged

    def describe(self) -> dict:
        """What a run stores about its template (and reports show)."""
        return {"name": self.name, "base": self.base, "sha256": self.sha256,
                "file": Path(self.path).name}


def load_template(path: str | Path) -> PromptTemplate:
    """Read and check a template file; any problem is a PromptTextError naming file and key."""
    path = Path(path)
    raw = read_option_text(path, "prompt template", error=PromptTextError)
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise PromptTextError(f"{path}: {yaml_problem(exc)}") from None
    except RecursionError:
        raise PromptTextError(f"{path}: nested too deeply to read") from None
    if not isinstance(data, dict):
        raise PromptTextError(f"{path}: must be a mapping with name, base and texts")
    unknown = sorted(set(data) - {"name", "base", "texts"})
    if unknown:
        raise PromptTextError(f"{path}: unknown key(s) {', '.join(map(str, unknown))}")
    name, base = data.get("name"), data.get("base")
    if not isinstance(name, str) or not _NAME.match(name):
        raise PromptTextError(f"{path}: name: must be 1-64 lower-case letters, digits, '.', '_' "
                              "or '-'")
    if name in JUDGE_STRATEGIES:
        raise PromptTextError(f"{path}: name: {name!r} is a built-in strategy; choose another")
    if base not in JUDGE_STRATEGIES:
        raise PromptTextError(f"{path}: base: must be one of {', '.join(JUDGE_STRATEGIES)}")
    by_lang = data.get("texts") or {}
    if not isinstance(by_lang, dict):
        raise PromptTextError(f"{path}: texts: must map prompt languages to texts")
    for lang, table in by_lang.items():
        if lang not in PROMPT_LANGUAGES:
            raise PromptTextError(f"{path}: texts: unknown language {lang!r}; expected one of "
                                  f"{', '.join(PROMPT_LANGUAGES)}")
        validate_texts(table, f"{path}: texts.{lang}", partial=True)
    return PromptTemplate(name, base, hashlib.sha256(raw.encode()).hexdigest(), str(path), dict(by_lang))
