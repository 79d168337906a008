"""Code-mixed prompts: the judge's wording with a controlled share of English in it.

Every prompt text exists in English and in the target language, key by key and list item by list
item (judges/data/prompts.<lang>.yaml). A *switchable segment* is one such text present in both:
a top-level text (system_role, rules, ...), one item of a list (a bias directive, a step), one
field of a judge_code_texts entry. The code-mixing degree CMD in [0, 1] is the share of switchable
segments kept in English: round(CMD x n) of them, chosen by a seeded shuffle, so a (language, CMD,
seed) triple always gives the same prompt. Not switchable, so answers parse the same at every
CMD: the output schema's field names and the input blocks' JSON keys (`output_fields`,
`input_keys`), the code ids, the accuracy labels and the taxonomy's own texts (these come from the
taxonomy package in the target language), and the {placeholders}; nor the languages' names and
the pairs layout's texts (code-mixing is studied on the code-comment prompt).

A code-mixed prompt is a `PromptTemplate` built in memory (name `<strategy>-cmd<CMD>-s<seed>`),
so runs, prompt versions and reports treat it like any other prompt variant.
"""
from __future__ import annotations

import copy
import hashlib
import json
import random

from judges.i18n import texts
from judges.templates import PromptTemplate

CMD_LEVELS = (0.0, 0.3, 0.6, 0.9, 1.0)
# besides the field names: the languages' names (the sentence's grammar) and the pairs layout's
# texts (code-mixing is studied on the code-comment prompt)
NOT_SWITCHABLE = ("output_fields", "input_keys", "language_names", "pairs")


def switchable_segments(lang: str, english: str = "en") -> list[tuple]:
    """Paths of the texts present in both languages, in a fixed order: (key,), (key, index),
    (judge_code_texts, code, field[, index])."""
    native, en = texts(lang), texts(english)
    paths: list[tuple] = []

    def walk(a, b, path: tuple) -> None:
        if isinstance(a, str) and isinstance(b, str):
            paths.append(path)
        elif isinstance(a, list) and isinstance(b, list):
            for i in range(min(len(a), len(b))):
                walk(a[i], b[i], path + (i,))
        elif isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) & set(b), key=str):
                walk(a[key], b[key], path + (key,))

    for key in sorted(native):
        if key not in NOT_SWITCHABLE and key in en:
            walk(native[key], en[key], (key,))
    return paths


def _get(table, path: tuple):
    for part in path:
        table = table[part]
    return table


def _set(table, path: tuple, value) -> None:
    for part in path[:-1]:
        table = table[part]
    table[path[-1]] = value


def code_mixed_texts(lang: str, cmd: float, seed: int = 0) -> tuple[dict, list[tuple]]:
    """(the prompt texts of `lang` with round(cmd x n) switchable segments in English, the paths
    switched). cmd outside [0, 1] is a ValueError."""
    if not 0.0 <= cmd <= 1.0:
        raise ValueError(f"code-mixing degree must be between 0 and 1, got {cmd}")
    paths = switchable_segments(lang)
    chosen = list(paths)
    random.Random(seed).shuffle(chosen)
    chosen = sorted(chosen[:round(cmd * len(paths))], key=paths.index)
    mixed, en = copy.deepcopy(texts(lang)), texts("en")
    for path in chosen:
        _set(mixed, path, _in_english(_get(en, path)))
    return mixed, chosen


def _in_english(text: str) -> str:
    """An English segment names the targets' language in English ({language_en})."""
    return text.replace("{language}", "{language_en}")


def code_mixed_template(strategy: str, lang: str, cmd: float, seed: int = 0) -> PromptTemplate:
    """A built-in strategy's prompt in `lang`, code-mixed to degree `cmd`, as a prompt variant."""
    mixed, _ = code_mixed_texts(lang, cmd, seed)
    digest = hashlib.sha256(json.dumps(mixed, sort_keys=True, ensure_ascii=False).encode())
    return PromptTemplate(f"{strategy}-cmd{cmd:g}-s{seed}", strategy, digest.hexdigest(),
                          f"code-mix:{lang}:{cmd:g}:{seed}", {lang: mixed})


def english_share(lang: str, mixed: dict) -> float:
    """Share of the switchable segments of `mixed` that are in English (and differ from the
    native text): the CMD a prompt actually has."""
    native, en = texts(lang), texts("en")
    differing = [p for p in switchable_segments(lang) if _get(native, p) != _get(en, p)]
    if not differing:
        return 0.0
    return sum(_get(mixed, p) == _in_english(_get(en, p)) for p in differing) / len(differing)
