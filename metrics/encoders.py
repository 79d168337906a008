"""Encoder backends for BERTScore: OpenVINO (``openvino``), ONNX Runtime (``onnx``) or PyTorch
eager (``torch``).

The runtime backends share one export: the encoder, already cut to the scoring layer, exported
to ONNX once per (weights, layer, opset, library versions) into ``<model cache>/onnx/layer<L>-
<key>/`` (the key hashes the weights' bytes, not the path they were loaded from) under the model
cache's lock (models.cache), moved into place by an atomic rename, and reused by every later
process. OpenVINO compiles it for the CPU, ONNX Runtime runs it with all graph optimisations;
both use as many threads as torch. Measured on this project's 2-core CPU (bench/bertscore.py,
2,500 pairs in one call, quiet machine): the bert-score package 20.9 s, onnx 7.8 s, openvino
7.3 s, with F within 4e-7 of the package; under other jobs' load OpenVINO kept its CPU time
and ONNX Runtime did not. So ``openvino`` is the default on CPUs in float32 (onnx and openvino
are part of the default install), then ``onnx`` where only onnxruntime is installed, then torch.

A failed export or session start falls back to torch with a one-line warning; the scorer then
reports ``backend == "torch"`` so that what is stored names what ran.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import time
from pathlib import Path
from typing import Optional

from nlce.cli import InputError

log = logging.getLogger(__name__)

BACKENDS = ("torch", "onnx", "openvino")
RUNTIMES = {"onnx": "onnxruntime", "openvino": "openvino"}  # backend -> its package
ONNX_OPSET = 17
EXPORT_FORMAT = 1  # bump when the export below changes its output: older folders are rebuilt
EXPORT_MANIFEST = "nlce-export.json"  # written last into a finished export folder
INSTALL_HINTS = {"onnx": "pip install 'nlcomment-eval[onnx]' (onnx and onnxruntime)",
                 "openvino": "pip install onnx openvino (part of the default install)"}
DEFAULT_ORDER = ("openvino", "onnx")  # the fastest first (bench/bertscore.py), where installed


class BackendError(InputError):
    """A backend that cannot run here (unknown name, missing package, wrong device or dtype)."""


def onnx_available(runtime: str = "onnxruntime") -> bool:
    """Whether ``runtime`` (onnxruntime, or openvino) can be imported."""
    import importlib

    try:
        importlib.import_module(runtime)
    except ImportError:
        return False
    return True


def resolve_backend(device: str, dtype: str, backend: Optional[str] = None) -> str:
    """The backend to encode with. Default on a CPU in float32: ``openvino``, else ``onnx``,
    whichever is installed first (faster, within the 1e-4 bar), else ``torch`` (logged, not an
    error); elsewhere torch."""
    if backend is None:
        if device.startswith("cuda") or dtype != "float32":
            return "torch"
        for name in DEFAULT_ORDER:
            if onnx_available(RUNTIMES[name]):
                return name
        log.info("neither openvino nor onnxruntime is installed: BERTScore encodes with torch "
                 "(%s)", INSTALL_HINTS["openvino"])
        return "torch"
    if backend not in BACKENDS:
        raise BackendError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if backend in RUNTIMES:
        if not device.startswith("cpu"):
            raise BackendError(f"backend {backend} runs on the CPU only, not on {device}; "
                               f"use backend torch there")
        if dtype != "float32":
            raise BackendError(f"backend {backend} runs float32 only, not {dtype}; "
                               f"use backend torch")
        if not onnx_available(RUNTIMES[backend]):
            raise BackendError(f"backend {backend} needs {RUNTIMES[backend]}: "
                               f"{INSTALL_HINTS[backend]}")
    return backend


def backend_versions(backend: str) -> str:
    """The signature's extra library versions of a backend ('' for torch: its signature is as
    before backends existed)."""
    return f",{RUNTIMES[backend]}-{_version(RUNTIMES[backend])}" if backend in RUNTIMES else ""


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# ------------------------------------------------------------------------------- the export

def weights_key(encoder, layer: int) -> str:
    """A key for the exported graph: the bytes of every weight the export holds (the encoder
    cut to ``layer``), its config without the path it was loaded from, the layer, the opset and
    the library versions that shape the graph. The same weights reached by another path (a
    model id, its cache folder, a copy) give the same key, and so the same export."""
    import json

    import torch

    digest = hashlib.sha256()
    config = getattr(encoder, "config", None)
    settings = json.loads(config.to_json_string(use_diff=False)) if config is not None else {}
    for name in ("_name_or_path", "transformers_version", "_commit_hash"):
        settings.pop(name, None)
    digest.update(json.dumps(settings, sort_keys=True).encode())
    with torch.no_grad():
        for name, tensor in encoder.state_dict().items():
            digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype}".encode())
            digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
                          .numpy().data)
    versions = ",".join(f"{d}-{_version(d)}" for d in ("torch", "transformers", "onnx"))
    digest.update(f"layer={layer};opset={ONNX_OPSET};format={EXPORT_FORMAT};{versions}".encode())
    return digest.hexdigest()[:16]


def export_folder(layer: int, key: str) -> Path:
    """``<model cache>/onnx/layer<L>-<key>``: named by content alone (the model's name is in its
    manifest), so every path to the same weights finds it."""
    from models.cache import cache_root

    return cache_root() / "onnx" / f"layer{layer}-{key}"


def _is_complete(folder: Path) -> bool:
    return (folder / EXPORT_MANIFEST).is_file() and (folder / "model.onnx").is_file()


def _export(encoder, path: Path) -> None:
    """torch.onnx.export (TorchScript exporter: needs no onnxscript) with dynamic batch and
    length. Traced on a padded batch so the attention mask is applied in the graph."""
    import torch

    class _LastHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask)
            return out[0] if isinstance(out, tuple) else out.last_hidden_state

    ids = torch.full((2, 8), 5, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    axes = {0: "batch", 1: "tokens"}
    import warnings

    with warnings.catch_warnings():  # the tracer's warnings are about shapes we made dynamic
        warnings.simplefilter("ignore")
        torch.onnx.export(_LastHidden(encoder).eval(), (ids, mask), str(path),
                          input_names=["input_ids", "attention_mask"], output_names=["hidden"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "hidden": axes},
                          opset_version=ONNX_OPSET, dynamo=False)


def ensure_export(encoder, model_name: str, layer: int) -> Path:
    """The folder holding ``model.onnx`` for this encoder, exporting it first (once, under the
    model cache's lock) if no complete export is there."""
    from models.cache import build_once

    key = weights_key(encoder, layer)
    final = export_folder(layer, key)

    def export(scratch: Path) -> dict:
        log.warning("exporting %s (layers 1..%d) to ONNX into %s (once) ...", model_name, layer,
                    final)
        started = time.perf_counter()
        _export(encoder, scratch / "model.onnx")
        seconds = time.perf_counter() - started
        size = sum(p.stat().st_size for p in scratch.rglob("*") if p.is_file())
        log.warning("exported %s in %.1f s (%.0f MB)", model_name, seconds, size / 2**20)
        return {"model": model_name, "layer": layer, "opset": ONNX_OPSET,
                "export_format": EXPORT_FORMAT, "key": key,
                "versions": {d: _version(d) for d in ("torch", "transformers", "onnx")},
                "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "export_seconds": round(seconds, 1), "bytes": size}

    return build_once(final, f"onnx-{final.name}", EXPORT_MANIFEST, export, _is_complete)


# ------------------------------------------------------------------------------- the runtime

class OnnxEncoder:
    """Called like the truncated torch encoder: ``(input_ids=, attention_mask=)`` -> a tuple
    whose first element is the last hidden state (a torch tensor)."""

    def __init__(self, path: Path, threads: Optional[int] = None):
        import onnxruntime as ort
        import torch

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        # no busy-waiting between operators: on a shared 2-core CPU spinning threads took time
        # from the work itself (6.6 s against 7.7 s for the same batches, best of 3)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only
        self.path = path  # the export's model.onnx
        self.session = ort.InferenceSession(str(path), options,
                                            providers=["CPUExecutionProvider"])

    def __call__(self, input_ids, attention_mask=None):
        import torch

        ids = input_ids.cpu().numpy()
        mask = (attention_mask.cpu().numpy() if attention_mask is not None
                else ids * 0 + 1)
        hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return (torch.from_numpy(hidden),)


class OpenVinoEncoder:
    """The same exported graph compiled by OpenVINO for the CPU (float32 inference precision,
    torch's intra-op thread count, latency mode); called like `OnnxEncoder`."""

    def __init__(self, path: Path, threads: Optional[int] = None):
        import openvino as ov
        import torch

        self.path = path
        self.compiled = ov.Core().compile_model(str(path), "CPU", {
            "INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_NUM_THREADS": threads or torch.get_num_threads()})
        self.request = self.compiled.create_infer_request()

    def __call__(self, input_ids, attention_mask=None):
        import torch

        ids = input_ids.cpu().numpy()
        mask = attention_mask.cpu().numpy() if attention_mask is not None else ids * 0 + 1
        result = self.request.infer({"input_ids": ids, "attention_mask": mask})
        return (torch.from_numpy(result[self.compiled.output(0)].copy()),)


def onnx_encoder(encoder, model_name: str, layer: int, backend: str = "onnx"):
    """The ONNX Runtime (or OpenVINO) twin of ``encoder``, from the ONNX export (made on first
    use). Raises on failure; the caller falls back to torch."""
    path = ensure_export(encoder, model_name, layer) / "model.onnx"
    return OpenVinoEncoder(path) if backend == "openvino" else OnnxEncoder(path)
