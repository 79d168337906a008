"""Tokenizer vocabularies of the target model families, for counting tokens without the weights.

llama.cpp keeps the real tokenizers of many model families as small vocabulary-only GGUF files
(`models/ggml-vocab-NAME.gguf`, checked by its own tests against the Hugging Face tokenizers), and
the source distribution of `llama-cpp-python` on PyPI carries them. `python -m models
prepare-vocabs` downloads that sdist with pip and keeps the families' files in
`$NLCE_CACHE_DIR/vocabs/`; `family_vocab(model_id)` then names the file for a model id, and
`corpus.tokens` counts with it through llama-cpp-python (`vocab_only`: no weights loaded).

Families (model ids matched) -> vocabulary, and how close it is to the model's own:
- StarCoder, Granite code (`bigcode/starcoder*`, `ibm-granite/granite-*code*`) -> `starcoder`
  (49,152 entries): StarCoder's own; StarCoder2's has the same size (not compared token by token);
- CodeLlama (`codellama/*`) -> `llama-spm` (32,000): Llama 2's SentencePiece, which CodeLlama
  extends by its FIM tokens only;
- Qwen2.5-Coder (`Qwen/Qwen2.5-Coder*`) -> `qwen2` (151,936): the same tokenizer;
- CodeGemma, Gemma (`google/codegemma*`, `google/gemma*`) -> `gemma-4` (262,144): the Gemma
  line's newer vocabulary; CodeGemma's own is Gemma 1's (256,000).
CodeQwen1.5 has a tokenizer of its own that no package carries.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from models.cache import cache_root
from models.errors import ModelUnavailableError

VOCAB_SDIST = "llama-cpp-python==0.3.36"
FAMILY_VOCABS: tuple[tuple[str, str], ...] = (  # (pattern of model ids, vocabulary name)
    (r"bigcode/starcoder|granite-.*code", "starcoder"),
    (r"code-?llama", "llama-spm"),
    (r"qwen2(\.5)?-coder", "qwen2"),
    (r"google/(code)?gemma", "gemma-4"),
)


def vocab_folder() -> Path:
    return cache_root() / "vocabs"


def vocab_path(name: str) -> Path:
    """Where the prepared vocabulary `name` (a family's, e.g. "gemma-4") is kept."""
    return vocab_folder() / f"ggml-vocab-{name}.gguf"


def vocab_names() -> list[str]:
    """Every family's vocabulary, once each."""
    return sorted({name for _, name in FAMILY_VOCABS})


def vocab_name(model_id: str) -> str | None:
    """The packaged vocabulary of the model's family, or None."""
    return next((name for pattern, name in FAMILY_VOCABS
                 if re.search(pattern, model_id, re.IGNORECASE)), None)


def family_vocab(model_id: str) -> Path | None:
    """The prepared vocabulary file of the model's family, or None (none, or not prepared)."""
    name = vocab_name(model_id)
    return vocab_path(name) if name and vocab_path(name).is_file() else None


def prepare_vocabs() -> list[Path]:
    """Download `VOCAB_SDIST` with pip and keep the families' vocabulary files (once)."""
    wanted = {vocab_path(name).name for name in vocab_names()}
    folder = vocab_folder()
    if all((folder / name).is_file() for name in wanted):
        return sorted(folder / name for name in wanted)
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                               "--no-binary", ":all:", VOCAB_SDIST, "-d", scratch],
                              capture_output=True, text=True)
        archives = list(Path(scratch).glob("*.tar.gz"))
        if done.returncode != 0 or not archives:
            why = (done.stderr.strip().splitlines() or ["no archive"])[-1]
            raise ModelUnavailableError(f"could not download {VOCAB_SDIST}: {why}")
        folder.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archives[0]) as archive:
            for member in archive.getmembers():
                name = member.name.rsplit("/", 1)[-1]
                if name in wanted and "/models/" in member.name and member.isfile():
                    part = folder / (name + ".part")
                    with archive.extractfile(member) as source, open(part, "wb") as out:
                        out.write(source.read())
                    part.replace(folder / name)  # whole or not at all
    missing = sorted(name for name in wanted if not (folder / name).is_file())
    if missing:
        raise ModelUnavailableError(f"{VOCAB_SDIST} holds no {', '.join(missing)}")
    return sorted(folder / name for name in wanted)
