"""What the output tests share: a project JSONL whose dataset, models and judge are named like
spreadsheet formulas, running a command as a person does (`python -m ...`), and reading every
CSV under a folder with the csv module."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# names an attacker (or a careless export) puts where the reports show them: OWASP's examples
HOSTILE_MODELS = ['=HYPERLINK("http://host/x","click")', "+cmd|' /C calc'!A0", "-2+3"]
HOSTILE_DATASET = "@SUM(1+1)"
HOSTILE_JUDGE = "\t=1+1"
LABELS = ("incorrect", "partial", "correct", "correct")


def hostile_records(items: int = 12) -> list[dict]:
    """Pairs targets in en and nl, and in a second dataset (so that align names the datasets of
    models found in both), one generation per hostile model and an ordinary one, an expert
    label each, a BLEU-like metric run that follows the labels, and a judge run."""
    models = [*HOSTILE_MODELS, "plain-model"]
    records = [{"type": "dataset", "name": HOSTILE_DATASET}, {"type": "dataset", "name": "second"},
               {"type": "annotator", "username": "expert", "role": "expert"},
               {"type": "metric_run", "signature": "metric:bleu|ctx:none|noise:none",
                "metric": "bleu", "context": "none"},
               {"type": "judge_run", "signature": "judge:hostile", "model": HOSTILE_JUDGE,
                "strategy": "standard", "prompt_language": "en", "prompt_version": "v1"}]
    score = {"incorrect": 0.2, "partial": 0.5, "correct": 0.8}
    for dataset, lang in ((HOSTILE_DATASET, "en"), (HOSTILE_DATASET, "nl"), ("second", "en")):
        for i in range(items):
            key = {"dataset": dataset, "item": f"{lang}-{i}"}
            records.append({"type": "target", **key, "natural_language": lang,
                            "original_comment": f"returns the sum of item {i}"})
            for j, model in enumerate(models):
                label = LABELS[(i + j) % 4]
                gen = {**key, "model": model}
                records += [
                    {"type": "generation", **gen, "predicted_comment": f"sum {i} {j}"},
                    {"type": "annotation", **gen, "annotator": "expert", "accuracy": label},
                    {"type": "metric_score", "run": "metric:bleu|ctx:none|noise:none", **gen,
                     "f": score[label] + 0.01 * ((i * 7 + j) % 5)},
                    {"type": "judge_verdict", "run": "judge:hostile", **gen, "status": "ok",
                     "accuracy": LABELS[(i + j + (i % 3 == 0)) % 4], "codes": []}]
    return records


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


def run_module(*args: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """`python -m args...` from the repository root, as a person runs it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    env.pop("NLCE_DEBUG", None)
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout, **kwargs)


def csv_cells(folder: Path) -> dict[str, list[list[str]]]:
    """Every CSV file under `folder` (name relative to it) -> its rows, header included, as the
    csv module reads them."""
    out = {}
    for path in sorted(folder.rglob("*.csv")):
        with open(path, newline="", encoding="utf-8") as handle:
            out[path.relative_to(folder).as_posix()] = list(csv.reader(handle))
    return out
