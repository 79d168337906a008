"""Fixtures for tests/metrics/.

Each section belongs to the module it serves; add yours as a new section.
"""
from __future__ import annotations

import pytest

# e5_small_encoder and smollm2_causal_lm (the packaged models) live in tests/conftest.py.
E5_SMALL_ID = "intfloat/multilingual-e5-small"
SMOLLM2_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"

# ---- metrics scoring (tokenize, lexical, bertscore, likelihood, noise, runner) --------------


@pytest.fixture(scope="session")
def e5_scorer(e5_small_encoder):
    """BERTScore with e5-small at layer 9 in torch (shares the hub's one loaded model)."""
    from metrics.bertscore import BertScorer

    model, tokenizer = e5_small_encoder
    return BertScorer(model, tokenizer, layer=9, model_name=E5_SMALL_ID, backend="torch")


@pytest.fixture(scope="session")
def e5_onnx_scorer(e5_small_encoder):
    """The same scorer on the ONNX Runtime backend (exported once into the model cache)."""
    from metrics.bertscore import BertScorer

    model, tokenizer = e5_small_encoder
    scorer = BertScorer(model, tokenizer, layer=9, model_name=E5_SMALL_ID, backend="onnx")
    assert scorer.backend == "onnx", "the ONNX export failed (see the warning above)"
    return scorer


@pytest.fixture(scope="session")
def smollm2_scorer(smollm2_causal_lm):
    from metrics.likelihood import CausalLMScorer

    model, tokenizer = smollm2_causal_lm
    return CausalLMScorer(model, tokenizer, model_name=SMOLLM2_ID)


@pytest.fixture(scope="session")
def tiny_bart():
    """A randomly initialised 1-layer BART over the e5 XLM-R tokenizer (built offline from a
    config: its numbers mean nothing, its plumbing can be checked exactly)."""
    import torch
    from transformers import AutoTokenizer, BartConfig, BartForConditionalGeneration

    from models import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(E5_SMALL_ID))
    config = BartConfig(
        vocab_size=len(tokenizer), d_model=16, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
        decoder_ffn_dim=32, max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    model = BartForConditionalGeneration(config).eval()
    return model, tokenizer


# Five languages, one small file each: (lang, file content, comment inside it, predictions).
SCORING_FILES = [
    ("en", "def fahrenheit(values):\n    # Convert every Celsius value to Fahrenheit\n"
           "    return [v * 9 / 5 + 32 for v in values]\n",
     "# Convert every Celsius value to Fahrenheit",
     ["# Convert Celsius values to Fahrenheit", "# Return the list"]),
    ("nl", "def gemiddelde(waarden):\n    # Bereken het gemiddelde van de waarden\n"
           "    return sum(waarden) / len(waarden)\n",
     "# Bereken het gemiddelde van de waarden", ["# Bereken het gemiddelde", "   "]),
    ("zh", "def total(items):\n    # 计算所有商品的总价\n    return sum(i.price for i in items)\n",
     "# 计算所有商品的总价", ["# 计算商品总价", "# 返回列表"]),
    ("el", "def mean(xs):\n    # Υπολογίζει τον μέσο όρο της λίστας\n    return sum(xs) / len(xs)\n",
     "# Υπολογίζει τον μέσο όρο της λίστας", ["# Υπολογίζει τον μέσο όρο", "# Επιστρέφει"]),
    ("pl", "def suma(xs):\n    # Zwraca sumę wszystkich elementów listy\n    return sum(xs)\n",
     "# Zwraca sumę wszystkich elementów listy", ["# Zwraca sumę elementów", "# Sortuje listę"]),
]


@pytest.fixture
def scoring_db(db_url):
    """A small corpus in a fresh database: 5 files, 5 targets, 10 generations (one is empty)."""
    return _fill_scoring_db(db_url)


@pytest.fixture
def any_scoring_db(any_db_url):
    return _fill_scoring_db(any_db_url)


def _fill_scoring_db(url):
    import hashlib

    from db import session_scope
    from db.models import Dataset, Generation, SourceFile, Target

    with session_scope(url) as session:
        dataset = Dataset(name="scoring-test")
        session.add(dataset)
        session.flush()
        for lang, content, comment, predictions in SCORING_FILES:
            f = SourceFile(dataset_id=dataset.id, natural_language=lang, programming_language="py",
                           repo="test", path=f"{lang}.py", content=content,
                           content_sha256=hashlib.sha256(content.encode()).hexdigest())
            session.add(f)
            session.flush()
            start = content.index(comment)
            t = Target(source_file_id=f.id, span_start=start, span_end=start + len(comment),
                       original_comment=comment, comment_kind="line")
            session.add(t)
            session.flush()
            for k, pred in enumerate(predictions):
                session.add(Generation(target_id=t.id, model=f"model-{k}", predicted_comment=pred))
    return url

# ---- end metrics scoring --------------------------------------------------------------------
