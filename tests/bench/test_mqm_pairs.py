"""bench/mqm_pairs.py: an MQM table (rater x segment x error rows) becomes pairs with labels."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "mqm_pairs.py"
HEADER = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"
ROWS = [  # system, seg, rater, target, category, severity
    ("ref", "1", "r1", "The cat sat.", "No-error", "No-error"),
    ("sysA", "1", "r1", "The cat sat.", "No-error", "No-error"),
    ("sysB", "1", "r1", "The <v>dog</v> sat.", "Accuracy/Mistranslation", "Major"),
    ("sysB", "1", "r2", "The dog sat<v>,</v>", "Fluency/Punctuation", "Minor"),
    ("sysC", "1", "r1", "<v>Le chat</v> sat.", "Non-translation!", "Major"),
    ("sysD", "2", "r1", "Hello.", "No-error", "No-error"),  # no reference for segment 2
]


def _load():
    spec = importlib.util.spec_from_file_location("mqm_pairs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_labels_follow_the_mean_mqm_score(tmp_path):
    table = tmp_path / "mqm.tsv"
    table.write_text(HEADER + "".join("\t".join((s, "d", "1", seg, r, "src", t, c, v)) + "\n"
                                      for s, seg, r, t, c, v in ROWS), encoding="utf-8")
    out = tmp_path / "pairs.jsonl"
    assert _load().main([str(table), "--lang", "en", "--out", str(out)]) == 0
    rows = {r["model"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert set(rows) == {"sysA", "sysB", "sysC"}  # ref is the reference; sysD has none
    assert rows["sysA"]["label"] == "correct"
    assert rows["sysB"]["label"] == "partial"  # (5 + 0.1) / 2 raters = 2.55
    assert rows["sysC"]["label"] == "incorrect"  # non-translation: 25
    assert rows["sysB"]["prediction"] == "The dog sat." and rows["sysB"]["reference"] == "The cat sat."
