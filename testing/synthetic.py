"""Synthetic corpora of the study's shape (files per language x models): 500 targets x 5
languages x 5 models = 12,500 generations, like the study's labelled set. Deterministic for a seed.

- `add_synthetic_corpus`: small made-up Python files with a few fixed comments (the app's tests
  and latency benchmarks: the texts repeat, which a metric's cache would make too cheap);
- `study_corpus` + `insert_corpus`: realistic texts for timing the metric grid, built from the
  demo's words and code (bench/study_grid.py): every comment distinct, files of 1.5-12 KB."""
from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from typing import Sequence

from sqlalchemy import insert
from sqlmodel import Session

from db import models as m

MODELS = ("codegemma", "codellama", "codeqwen1.5", "granitecode", "starcoder2")
COMMENTS = {
    "en": ["Returns the sum of two numbers", "Reads the configuration file",
           "Checks whether the user is logged in", "Sorts the list in place"],
    "nl": ["Geeft de som van twee getallen terug", "Leest het configuratiebestand",
           "Controleert of de gebruiker is ingelogd", "Sorteert de lijst ter plaatse"],
    "zh": ["返回两个数的和", "读取配置文件", "检查用户是否已登录", "原地排序列表"],
    "el": ["Επιστρέφει το άθροισμα δύο αριθμών", "Διαβάζει το αρχείο ρυθμίσεων",
           "Ελέγχει αν ο χρήστης έχει συνδεθεί", "Ταξινομεί τη λίστα επί τόπου"],
    "pl": ["Zwraca sumę dwóch liczb", "Czyta plik konfiguracyjny",
           "Sprawdza, czy użytkownik jest zalogowany", "Sortuje listę w miejscu"],
}


def _file(comment: str, k: int) -> tuple[str, int, int]:
    """A Python file with one line comment; returns the text and the comment's span."""
    head = "".join(f"import module_{j}\n" for j in range(k % 5 + 2))
    head += f"\n\nclass Service{k}:\n    def __init__(self, store):\n        self.store = store\n\n"
    head += f"    def handle_{k}(self, a, b):\n        "
    line = f"# {comment}"
    tail = ("\n        result = self.store.get(a) + b\n        return result\n\n"
            "    def close(self):\n        self.store.close()\n")
    text = head + line + tail
    return text, len(head), len(head) + len(line)


@dataclass(frozen=True)
class SyntheticTarget:
    """One source file with one target comment and a prediction per model."""

    lang: str
    index: int  # within its language: external id f"{lang}-{index}"
    programming_language: str
    content: str
    span: tuple[int, int]  # the target comment's [start, end) in content
    predictions: tuple[tuple[str, str, str], ...]  # (model, raw_output, predicted_comment)

    @property
    def comment(self) -> str:
        return self.content[self.span[0]:self.span[1]]


def add_synthetic_corpus(session: Session, *, targets_per_language: int,
                         languages=("en", "nl", "zh", "el", "pl"), models=MODELS, seed: int = 0,
                         dataset_name: str = "synthetic") -> int:
    """Insert a dataset with `targets_per_language` files per language, one target each, and one
    generation per model. Returns the number of generations. Bulk inserts: 12,500 in seconds."""
    rng = random.Random(seed)
    targets, k = [], 0
    for lang in languages:
        for i in range(targets_per_language):
            comment = COMMENTS[lang][i % len(COMMENTS[lang])]
            text, start, end = _file(comment, k)
            targets.append([lang, i, text, start, end])
            k += 1
    records = []
    for lang, i, text, start, end in targets:  # the predictions after all files (seeded order)
        predictions = []
        for model in models:
            words = text[start:end].split()
            if rng.random() < 0.4 and len(words) > 2:
                words[rng.randrange(1, len(words))] = rng.choice(["value", "data", "x"])
            predicted = " ".join(words)
            raw = predicted + ("\n        return None" if rng.random() < 0.2 else "")
            predictions.append((model, raw, predicted))
        records.append(SyntheticTarget(lang, i, "python", text, (start, end), tuple(predictions)))
    return insert_corpus(session, records, dataset_name)


def insert_corpus(session: Session, records: Sequence[SyntheticTarget],
                  dataset_name: str = "synthetic") -> int:
    """Bulk-insert a dataset of `records` (files, one target each, their generations); returns
    the number of generations."""
    dataset = m.Dataset(name=dataset_name, description="synthetic corpus for tests and benchmarks")
    session.add(dataset)
    session.flush()
    extension = {"python": "py", "java": "java", "javascript": "js"}
    session.execute(insert(m.SourceFile), [
        {"dataset_id": dataset.id, "external_id": f"{r.lang}-{r.index}", "natural_language": r.lang,
         "programming_language": r.programming_language, "repo": f"example/{r.lang}",
         "path": f"src/file_{r.index}.{extension.get(r.programming_language, 'txt')}",
         "licence": "MIT", "content": r.content,
         "content_sha256": hashlib.sha256(r.content.encode()).hexdigest()}
        for r in records])
    source_ids = dict(session.execute(
        m.SourceFile.__table__.select().with_only_columns(
            m.SourceFile.external_id, m.SourceFile.id).where(
            m.SourceFile.dataset_id == dataset.id)).all())
    session.execute(insert(m.Target), [
        {"source_file_id": source_ids[f"{r.lang}-{r.index}"], "span_start": r.span[0],
         "span_end": r.span[1], "original_comment": r.comment, "comment_kind": "line"}
        for r in records])
    target_ids = dict(session.execute(
        m.Target.__table__.select().with_only_columns(m.Target.source_file_id, m.Target.id)
        .where(m.Target.source_file_id.in_(list(source_ids.values())))).all())
    generations = [{"target_id": target_ids[source_ids[f"{r.lang}-{r.index}"]], "model": model,
                    "fim_input": "", "raw_output": raw, "predicted_comment": predicted,
                    "backend": "synthetic", "params": {}}
                   for r in records for model, raw, predicted in r.predictions]
    for chunk in range(0, len(generations), 5000):
        session.execute(insert(m.Generation), generations[chunk:chunk + 5000])
    session.flush()
    return len(generations)


# ---------------------------------------------------------------- the study's shape

STUDY_LANGUAGES = ("en", "nl", "zh", "el", "pl")
_MARKERS = {"python": "#", "java": "//", "javascript": "//"}


def _demo_material() -> tuple[dict, dict, dict]:
    """From the shipped demo (db/demo/demo.jsonl): comment words per natural language, the
    demo's reference lengths in those units, and code lines (comments left out) per
    programming language."""
    import json

    from db.demo import DEMO_JSONL

    records = [json.loads(line) for line in DEMO_JSONL.read_text(encoding="utf-8").splitlines()]
    files = {r["path"]: r for r in records if r["type"] == "file"}
    words: dict = {}
    lengths: dict = {}
    code: dict = {}
    for r in records:
        if r["type"] not in ("target", "generation"):
            continue
        lang = files[r["path"]]["natural_language"]
        text = r.get("original_comment") or r.get("predicted_comment") or ""
        units = _units(lang, text.lstrip("#/ ").strip())
        words.setdefault(lang, set()).update(units)
        if r["type"] == "target":
            lengths.setdefault(lang, []).append(len(units))
    for f in files.values():
        lines = [line for line in f["content"].splitlines()
                 if line.strip() and not line.strip().startswith(("#", "//", "/*", "*", '"""'))]
        code.setdefault(f["programming_language"], []).extend(lines)
    if "zh" in words:  # Han characters only: a salad of Latin letters would tokenise longer
        words["zh"] = {c for c in words["zh"] if "\u4e00" <= c <= "\u9fff"}
    return ({lang: sorted(w) for lang, w in words.items()}, lengths, code)


def _units(lang: str, text: str) -> list[str]:
    return [c for c in text if not c.isspace()] if lang == "zh" else text.split()


def _join(lang: str, units: Sequence[str]) -> str:
    return ("" if lang == "zh" else " ").join(units)


def _study_prediction(rng: random.Random, lang: str, reference: list[str], pool: list[str],
                      n_units: int) -> str:
    """A generation shaped like the study's: primed with the reference's first 3 units, then a
    near copy, an early or late termination, a shuffle, or an unrelated comment."""
    head, rest = reference[:3], list(reference[3:])
    kind = rng.random()
    if kind < 0.45:  # near copy: one to three units replaced
        for _ in range(rng.randint(1, 3)):
            if rest:
                rest[rng.randrange(len(rest))] = rng.choice(pool)
    elif kind < 0.6:  # early termination
        rest = rest[:int(len(rest) * rng.uniform(0.3, 0.8))]
    elif kind < 0.75:  # late termination: it goes on
        rest += [rng.choice(pool) for _ in range(rng.randint(3, max(4, n_units)))]
    elif kind < 0.85:
        rng.shuffle(rest)
    else:  # unrelated
        rest = [rng.choice(pool) for _ in range(max(1, n_units - 3 + rng.randint(-3, 3)))]
    return _join(lang, head + rest)


def _study_file(rng: random.Random, code_lines: list[str], comments: list[str], marker: str,
                target: str, size: int) -> tuple[str, tuple[int, int]]:
    """About `size` characters of code: slices of the demo's code lines, some preceded by a
    comment in the file's language, and the target comment before one of the slices."""
    blocks = []
    total = 0
    while total < size:
        start = rng.randrange(len(code_lines))
        block = code_lines[start:start + rng.randint(4, 14)]
        if rng.random() < 0.3:
            indent = block[0][:len(block[0]) - len(block[0].lstrip())]
            block = [f"{indent}{marker} {rng.choice(comments)}"] + block
        blocks.append(block)
        total += sum(len(line) + 1 for line in block)
    at = rng.randrange(1, len(blocks)) if len(blocks) > 1 else 0
    before = "".join(line + "\n" for block in blocks[:at] for line in block)
    first = blocks[at][0]
    indent = first[:len(first) - len(first.lstrip())]
    comment = f"{marker} {target}"
    after = "".join(line + "\n" for block in blocks[at:] for line in block)
    start = len(before) + len(indent)
    return before + indent + comment + "\n" + after, (start, start + len(comment))


def study_corpus(targets_per_language: int = 500, *, languages=STUDY_LANGUAGES, models=MODELS,
                 seed: int = 0, min_chars: int = 1500,
                 max_chars: int = 12000) -> list[SyntheticTarget]:
    """A corpus shaped like the study's (and the demo's): per language `targets_per_language`
    files in Python, Java and JavaScript, each with one target line comment and one generation
    per model. Comments use the demo's words of that language at the demo's reference lengths
    (every text distinct, so no cache hit is free); files are log-uniformly `min_chars` to
    `max_chars` long (the study kept files within 4,096 CodeGemma tokens), so context ``full``
    fills a 512-token encoder window. Deterministic for a seed; a record does not depend on
    `targets_per_language` (index i is the same in a larger corpus)."""
    words, lengths, code = _demo_material()
    programming = ("python", "java", "javascript")
    out = []
    for lang in languages:
        if lang not in words:
            raise ValueError(f"no demo comments in language {lang!r} to shape a corpus from "
                             f"(the demo has {', '.join(sorted(words))})")
        pool, seen = words[lang], set()
        for i in range(targets_per_language):
            rng = random.Random(f"{seed}-{lang}-{i}")
            n_units = max(4, rng.choice(lengths[lang]) + rng.randint(-4, 4))
            reference = [rng.choice(pool) for _ in range(n_units)]
            while _join(lang, reference) in seen:
                reference[rng.randrange(n_units)] = rng.choice(pool)
            seen.add(_join(lang, reference))
            others = [_join(lang, [rng.choice(pool) for _ in range(rng.randint(4, n_units))])
                      for _ in range(8)]
            language = programming[i % len(programming)]
            size = int(math.exp(rng.uniform(math.log(min_chars), math.log(max_chars))))
            content, span = _study_file(rng, code[language], others, _MARKERS[language],
                                        _join(lang, reference), size)
            predictions = []
            for model in models:
                predicted = _study_prediction(rng, lang, reference, pool, n_units)
                predicted = f"{_MARKERS[language]} {predicted}"
                raw = predicted + (f"\n{rng.choice(code[language])}" if rng.random() < 0.2 else "")
                predictions.append((model, raw, predicted))
            out.append(SyntheticTarget(lang, i, language, content, span, tuple(predictions)))
    return out
