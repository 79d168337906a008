"""Issue 34.11: the context-window check drops no file that the target model's real tokenizer
keeps. With no tokenizer at hand, files are counted by a calibrated estimate that leans under the
real count (approx-bpe:v2 leans over by about 1.3x and dropped such files); a target model id
counts with its own tokenizer when installed, else its family's packaged vocabulary (the real
tokenizer, from llama-cpp-python's sdist), else the estimate. The Java file here is written for
this test."""
from __future__ import annotations

import pytest

from corpus.select import SelectionConfig, SourceText, select_targets
from corpus.tokens import ApproxTokenCounter, VocabTokenCounter, counter_for, make_counters


def zh_java(methods: int) -> str:
    """A cache class whose methods each carry a Chinese doc comment and two line comments."""
    body = "".join(
        f"    /**\n     * 读取第{i}组配置，如果缓存中没有就从数据库重新加载并写回缓存\n     */\n"
        f"    public String readGroup{i}(String key) {{\n"
        f"        // 先查缓存，命中时直接返回，避免重复访问数据库\n"
        f"        String value = values.get(\"group{i}.\" + key);\n"
        f"        if (value == null) {{\n"
        f"            // 缓存未命中：从数据库读取后保存\n"
        f"            value = loadFromDatabase(\"group{i}\", key);\n"
        f"            values.put(\"group{i}.\" + key, value);\n"
        f"        }}\n        return value;\n    }}\n\n" for i in range(methods))
    return ("package com.example.cache;\n\nimport java.util.HashMap;\nimport java.util.Map;\n\n"
            "public class ConfigCache {\n    private final Map<String, String> values = "
            "new HashMap<>();\n\n" + body + "    private String loadFromDatabase(String group, "
            "String key) {\n        return group + \":\" + key;\n    }\n}\n")


FILE = zh_java(28)  # about 3,850 tokens for the Gemma family's tokenizer, 5,842 for v2
CONFIG = SelectionConfig(language_check=False, mixed_language=False)


def _kept(counters) -> bool:
    source = SourceText(key="ConfigCache.java", text=FILE, programming_language="java")
    selected, report = select_targets([source], "zh", CONFIG, counters=counters)
    return bool(selected) and report.removed["context_window"] == 0


def test_the_estimate_keeps_a_file_that_fits_the_window():
    approx = ApproxTokenCounter()
    assert approx.count(FILE) > 4096  # why it was dropped
    assert approx.window_count(FILE) < 4096 - 100
    assert _kept([approx])


def test_the_estimate_still_drops_a_file_far_over_the_window():
    source = SourceText(key="Big.java", text=zh_java(60), programming_language="java")
    selected, report = select_targets([source], "zh", CONFIG)
    assert selected == [] and report.removed["context_window"] == 1


@pytest.mark.parametrize("model, vocab", [
    ("google/codegemma-7b", "gemma-4"), ("bigcode/starcoder2-7b", "starcoder"),
    ("codellama/CodeLlama-7b-hf", "llama-spm"), ("Qwen/Qwen2.5-Coder-7B", "qwen2"),
])
def test_a_target_model_counts_with_its_familys_real_tokenizer(vocabs, model, vocab):
    counter = counter_for(model)
    assert isinstance(counter, VocabTokenCounter) and not counter.is_approximation
    assert counter.name == f"gguf:ggml-vocab-{vocab} (family of {model})"
    real = counter.count(FILE)
    assert ApproxTokenCounter().window_count(FILE) <= real  # the estimate leans under
    if vocab != "llama-spm":  # Llama 2's 32k vocabulary needs over 5,000 tokens for it
        assert real < 4096 - 100 and _kept([counter])


def test_each_family_counts_differently_and_exactly(vocabs):
    text = "// 先查缓存，命中时直接返回\nint total = 12345;\n"
    counts = {vocab: counter_for(model).count(text) for model, vocab in [
        ("google/codegemma-7b", "gemma"), ("codellama/CodeLlama-7b-hf", "llama"),
        ("Qwen/Qwen2.5-Coder-7B", "qwen")]}
    assert counts["llama"] > counts["gemma"]  # Chinese costs Llama 2 far more tokens
    assert counter_for("google/codegemma-7b").count(text) == counts["gemma"]  # deterministic


def test_a_model_with_no_tokenizer_at_hand_gets_the_estimate(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    counters = make_counters(["someone/no-such-model"])
    assert [type(c) for c in counters] == [ApproxTokenCounter]


def test_a_tokenizer_only_snapshot_in_the_hub_cache_is_counted_with(monkeypatch, tmp_path):
    """Only a model's tokenizer files downloaded (no weights): they count its tokens, offline;
    resolving the model instead wanted its weights (the hub, or the estimate offline)."""
    import shutil

    import huggingface_hub.constants

    from corpus.tokens import HFTokenCounter
    from models import resolve_model

    packaged = resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct")
    snapshot = tmp_path / "models--acme--coder-7b" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(packaged / name, snapshot / name)
    (tmp_path / "models--acme--coder-7b" / "refs").mkdir()
    (tmp_path / "models--acme--coder-7b" / "refs" / "main").write_text("0123abcd")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    counter = counter_for("acme/coder-7b")
    assert isinstance(counter, HFTokenCounter) and counter.name == "hf:acme/coder-7b"
    text = "// 先查缓存，命中时直接返回\nint total = 12345;\n"
    assert counter.count(text) == HFTokenCounter("SmolLM2", folder=packaged).count(text)
