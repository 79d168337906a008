"""Loaders: `(model, tokenizer)` in eval mode with gradients off, loaded once per process."""
from __future__ import annotations

import functools
import os

from models.resolve import resolve_model


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
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

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
