"""Run signatures are the MetricRun's unique key: a refactor that changes one byte of them makes
every existing database score its finished runs again. These are the signatures commit 993aff5
built (tests/metrics/data/signatures_993aff5.txt) and main 861848c built for every metric with
non-default options and noise before the options moved onto the metric classes
(signatures_861848c.txt), library versions as placeholders, rebuilt here from the study grid and
from the recorded configurations."""
from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import yaml

from metrics.config import ScoringConfig, expand_grid
from metrics.registry import METRICS, metric_name

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted((Path(__file__).parent / "data").glob("signatures_*.txt"))


def _recorded():
    versions = {name.replace("-", "_"): importlib.metadata.version(name)
                for name in ("sacrebleu", "nltk", "torch", "transformers", "rouge-score",
                             "onnxruntime")}
    grid, extra = [], []
    lines = [line for path in RECORDED for line in path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if not line or line.startswith("#"):
            continue
        kind, *fields = line.split("\t")
        fields[-1] = fields[-1].format(**versions)
        (grid if kind == "grid" else extra).append(fields)
    return grid, extra


def test_study_grid_signatures_are_unchanged():
    spec = yaml.safe_load((ROOT / "metrics" / "grids" / "study.yaml").read_text(encoding="utf-8"))
    # dtype's default; the torch backend (runs on it keep their pre-backend signatures; the
    # openvino backend, the CPU default, adds `backend:openvino`)
    spec["defaults"] = {**(spec.get("defaults") or {}), "device": "cpu", "backend": "torch"}
    grid, _ = _recorded()
    built = [config.signature() for config in expand_grid(spec)]
    assert len(built) == 30
    assert built == [signature for (signature,) in grid]


def test_option_signatures_are_unchanged():
    _, extra = _recorded()
    assert len(extra) >= 26
    # every metric but those added since (evaluate: tests/metrics/test_hf_evaluate.py pins its own)
    assert {metric_name(json.loads(options)["metric"]) for options, _ in extra} == \
        set(METRICS) - {"evaluate"}
    for options, signature in extra:
        fields = json.loads(options)
        if fields.get("metric") == "bertscore":
            fields.setdefault("backend", "torch")  # see test_study_grid_signatures_are_unchanged
        assert ScoringConfig(**fields).validated().signature() == signature, options
