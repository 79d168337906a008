"""Scoring-model families (Figures 9-10): multilingual, language-specific, code or English models.

The table is data (`model_families.yaml` beside this module), extendable with the user's own YAML file whose
entries take precedence. A model no entry matches is in group "other"; metrics without a scoring
model (BLEU, ROUGE-L, ...) are "lexical".

>>> families = load_model_families()
>>> model_group("allegro/herbert-base-cased", families), model_group("microsoft/codebert-base", families)
('language-specific', 'code')
>>> model_group("", families), model_group("someone/unknown-model", families)
('lexical', 'other')
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import yaml

from nlce.cli import InputError, yaml_problem

DEFAULT_FAMILIES = Path(__file__).with_name("model_families.yaml")


@dataclass(frozen=True)
class ModelFamily:
    pattern: str
    family: str
    group: str
    languages: tuple[str, ...] = ()

    def matches(self, model: str) -> bool:
        return fnmatch.fnmatch(model.lower(), self.pattern.lower())


def _read(path: Path) -> list[ModelFamily]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as error:
        raise InputError(f"{path}: cannot read the model family table: "
                         f"{error.strerror or error}") from None
    except UnicodeDecodeError as error:
        line = error.object[:error.start].count(b"\n") + 1
        raise InputError(f"{path}: the model family table is not UTF-8 text (byte "
                         f"0x{error.object[error.start]:02x} on line {line}): save it as UTF-8"
                         ) from None
    except yaml.YAMLError as error:
        raise InputError(f"{path}: the model family table is {yaml_problem(error)}") from None
    entries = data.get("families") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise InputError(f"{path}: expected a mapping with a 'families' list")
    out = []
    for position, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not entry.get("pattern") or not entry.get("group"):
            raise InputError(f"{path}: family entry {position} needs 'pattern' and 'group', "
                             f"got {entry!r}")
        out.append(ModelFamily(str(entry["pattern"]), str(entry.get("family", "")),
                               str(entry["group"]), tuple(entry.get("languages") or ())))
    return out


def load_model_families(extra: str | Path | Sequence[str | Path] | None = None
                        ) -> tuple[ModelFamily, ...]:
    """The packaged table, with the entries of `extra` file(s) placed first (they win)."""
    paths = [] if extra is None else [extra] if isinstance(extra, (str, Path)) else list(extra)
    entries: list[ModelFamily] = []
    for path in paths:
        entries.extend(_read(Path(path)))
    entries.extend(_read(DEFAULT_FAMILIES))
    return tuple(entries)


def find_family(model: str, families: Sequence[ModelFamily]) -> ModelFamily | None:
    return next((f for f in families if f.matches(model)), None)


def model_group(model: str | None, families: Sequence[ModelFamily],
                language: str | None = None) -> str:
    """The group of a scoring model: the first matching entry's group, "lexical" for no model,
    "other" for an unknown one. (`language` is accepted for symmetry with the slices; a
    language-specific model stays language-specific on every slice.)"""
    if not model:
        return "lexical"
    family = find_family(str(model), families)
    return family.group if family else "other"
