"""The import benchmark runs end to end at a tiny size (its own checks: every generation
imported, one label and one history row each)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_benchmark_runs_small(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "import_release.py"),
                             "--rows", "4", "--subset", "2", "--keep", str(tmp_path)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "100 generations" in result.stdout and "ratio:" in result.stdout
    assert (tmp_path / "release" / "Greek" / "train-00000-of-00001.parquet").exists()
