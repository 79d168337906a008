"""testing/caches.py: in a test session every cache the project and its libraries use lies in
the session's own folder, never in the home folder (issue 41.10: an ONNX export the user had
made under another model name failed tests/metrics/test_encoders.py), and the commands tests
run as processes use the same folder."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from testing.caches import SESSION_ENV

HOME = Path.home().resolve()


def _inside(path, root: Path) -> bool:
    return Path(path).resolve().is_relative_to(root.resolve())


def test_every_cache_is_the_sessions_and_none_is_in_the_home_folder():
    import huggingface_hub.constants
    import matplotlib

    from metrics.wordnet import cache_dir
    from models.cache import cache_root
    from models.vocabs import vocab_folder

    session = Path(os.environ[SESSION_ENV])
    assert not _inside(session, HOME)
    places = {"models and ONNX exports": cache_root(), "vocabularies": vocab_folder(),
              "WordNet": cache_dir(), "Hugging Face hub": huggingface_hub.constants.HF_HUB_CACHE,
              "Hugging Face modules": huggingface_hub.constants.HF_HOME,
              "matplotlib": matplotlib.get_cachedir(),
              "judge responses": os.environ["NLCE_JUDGE_CACHE"],
              "pip": os.environ["PIP_CACHE_DIR"]}
    for what, place in places.items():
        assert _inside(place, session) and not _inside(place, HOME), (what, place)


def test_commands_run_as_processes_use_the_sessions_cache():
    shown = subprocess.run(
        [sys.executable, "-c", "from models.cache import cache_root; print(cache_root())"],
        capture_output=True, text=True, check=True, cwd=Path(__file__).parents[1],
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1]))).stdout.strip()
    assert _inside(shown, Path(os.environ[SESSION_ENV]))
