"""A synthetic corpus of the study's shape (files per language x models), for the app's tests
and its latency benchmark: 500 targets x 5 languages x 5 models = 12,500 generations, like the
study's labelled set. The texts are small made-up code files, deterministic for a seed."""
from __future__ import annotations

import hashlib
import random

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


def add_synthetic_corpus(session: Session, *, targets_per_language: int,
                         languages=("en", "nl", "zh", "el", "pl"), models=MODELS, seed: int = 0,
                         dataset_name: str = "synthetic") -> int:
    """Insert a dataset with `targets_per_language` files per language, one target each, and one
    generation per model. Returns the number of generations. Bulk inserts: 12,500 in seconds."""
    rng = random.Random(seed)
    dataset = m.Dataset(name=dataset_name, description="synthetic corpus for tests and benchmarks")
    session.add(dataset)
    session.flush()
    files, k = [], 0
    for lang in languages:
        for i in range(targets_per_language):
            comment = COMMENTS[lang][i % len(COMMENTS[lang])]
            text, start, end = _file(comment, k)
            files.append((lang, i, text, start, end, comment))
            k += 1
    session.execute(insert(m.SourceFile), [
        {"dataset_id": dataset.id, "external_id": f"{lang}-{i}", "natural_language": lang,
         "programming_language": "python", "repo": f"example/{lang}", "path": f"src/file_{i}.py",
         "licence": "MIT", "content": text,
         "content_sha256": hashlib.sha256(text.encode()).hexdigest()}
        for lang, i, text, *_ in files])
    source_ids = dict(session.execute(
        m.SourceFile.__table__.select().with_only_columns(
            m.SourceFile.external_id, m.SourceFile.id).where(
            m.SourceFile.dataset_id == dataset.id)).all())
    session.execute(insert(m.Target), [
        {"source_file_id": source_ids[f"{lang}-{i}"], "span_start": start, "span_end": end,
         "original_comment": f"# {comment}", "comment_kind": "line"}
        for lang, i, text, start, end, comment in files])
    target_rows = session.execute(
        m.Target.__table__.select().with_only_columns(m.Target.id, m.Target.original_comment)
        .where(m.Target.source_file_id.in_(list(source_ids.values())))).all()
    generations = []
    for target_id, original in target_rows:
        for model in models:
            words = original.split()
            if rng.random() < 0.4 and len(words) > 2:
                words[rng.randrange(1, len(words))] = rng.choice(["value", "data", "x"])
            predicted = " ".join(words)
            raw = predicted + ("\n        return None" if rng.random() < 0.2 else "")
            generations.append({"target_id": target_id, "model": model, "fim_input": "",
                                "raw_output": raw, "predicted_comment": predicted,
                                "backend": "synthetic", "params": {}})
    for chunk in range(0, len(generations), 5000):
        session.execute(insert(m.Generation), generations[chunk:chunk + 5000])
    session.flush()
    return len(generations)
