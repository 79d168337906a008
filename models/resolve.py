"""Id resolution: a local folder, the Hugging Face cache, the hub, or a packaged offline model."""
from __future__ import annotations

import os
from pathlib import Path

from models.cache import cache_folder, log, materialise, read_manifest
from models.errors import ModelUnavailableError
from models.registry import OFFLINE_MODELS, unknown_id_message

# Files `from_pretrained` needs; anything else in a hub repo (ONNX, TF, GGUF...) is skipped.
_HUB_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.tiktoken"]
_HUB_FALLBACK_WEIGHTS = ["pytorch_model*.bin"]


def hub_offline() -> bool:
    """True when the user asked for no hub access (read at call time, not import time)."""
    truthy = {"1", "true", "yes", "on"}
    return any(os.environ.get(v, "").strip().lower() in truthy
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _looks_like_path(name: str) -> bool:
    return (name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name
            or (os.sep != "/" and os.sep in name))


def _has_weights(folder: Path) -> bool:
    weights = any(folder.glob("*.safetensors")) or any(folder.glob("pytorch_model*.bin"))
    return (folder / "config.json").is_file() and weights


def _from_hub(model_id: str, *, local_only: bool) -> Path:
    """Snapshot folder of `model_id` from the HF cache (local_only) or the hub."""
    from huggingface_hub import snapshot_download

    folder = Path(snapshot_download(model_id, allow_patterns=_HUB_PATTERNS,
                                    local_files_only=local_only))
    if not _has_weights(folder):
        folder = Path(snapshot_download(model_id, allow_patterns=_HUB_FALLBACK_WEIGHTS,
                                        local_files_only=local_only))
    if not _has_weights(folder):
        raise ModelUnavailableError(f"hub snapshot {folder} has no config.json with weights")
    return folder


# the hub is asked once per id and process: a scorer resolves its model many times, and each
# failed try costs a network round trip and a line on stderr
_HUB_FAILED: dict[str, Exception] = {}


def resolve_model(name_or_path: str | os.PathLike) -> Path:
    """A local folder that `from_pretrained` can load, for a folder path or a hub model id."""
    name = os.fspath(name_or_path)
    if not name.strip():
        raise ModelUnavailableError("empty model name: give a hub id or a local folder")
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if path.is_file():
        raise ModelUnavailableError(
            f"{name!r} is a file; pass the folder that holds config.json and the weights")
    if _looks_like_path(name):
        raise ModelUnavailableError(f"no such model folder: {name!r}")
    try:
        return _from_hub(name, local_only=True)
    except Exception:  # not cached (or cache broken): try the next source
        pass
    hub_error = _HUB_FAILED.get(name)
    if hub_error is None and not hub_offline():
        try:
            return _from_hub(name, local_only=False)
        except Exception as exc:  # no network, unknown or gated repo
            hub_error = _HUB_FAILED[name] = exc
            if name in OFFLINE_MODELS:
                log(f"hub unavailable for {name}; using its packaged offline weights")
    if name in OFFLINE_MODELS:
        return materialise(name)
    raise ModelUnavailableError(unknown_id_message(name, hub_error))


def installed_tokenizer(model_id: str) -> Path | None:
    """A local folder, or the model's snapshot in the Hugging Face cache, holding a tokenizer
    (no weights needed, no network used); None when neither is there."""
    path = Path(model_id).expanduser()
    if path.is_dir():
        return path
    if _looks_like_path(model_id):
        return None
    if model_id in OFFLINE_MODELS and read_manifest(cache_folder(model_id)) is not None:
        return cache_folder(model_id)  # a packaged model, built
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(model_id, allow_patterns=_HUB_PATTERNS,
                                        local_files_only=True))
    except Exception:  # not in the cache (or the cache is broken)
        return None
    found = any((folder / name).is_file() for name in ("tokenizer.json", "tokenizer.model",
                                                         "vocab.json"))
    return folder if found else None


def describe_model(name_or_path: str | os.PathLike) -> str:
    """Short provenance of the weights `resolve_model` picks, for storing next to scores."""
    folder = resolve_model(name_or_path)
    manifest = read_manifest(folder)
    if manifest is not None:
        return f"{manifest['model_id']} (offline build from {manifest['source_package']} " \
               f"{manifest['source_file']})"
    if folder.parent.name == "snapshots":  # HF cache layout: .../models--org--name/snapshots/<sha>
        return f"{os.fspath(name_or_path)}@{folder.name}"
    return str(folder)
