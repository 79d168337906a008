"""Generation stops when the cut rule fires (issue 13), and models without infilling training
get no FIM layout."""
from __future__ import annotations

import pytest

from corpus.cutting import cut_comment, cut_is_final
from corpus.fim import family_for_model

LINE = dict(prime="// Geeft de", kind="line", opener="//")


@pytest.mark.parametrize("raw, final", [
    (" naam", False),
    (" naam\n", False),  # the next line may still be a comment line
    (" naam\n  /", False),  # ... even once it starts: "/" may become "//"
    (" naam\n  // en meer", False),
    (" naam\n  // en meer\n  r", True),  # "r" cannot become "//": code resumed
    (" naam\n\n", True),  # a blank line ends the run
    (" naam\n  }", True),
])
def test_line_comment_run_is_final_only_when_code_resumed_for_good(raw, final):
    assert cut_is_final(raw, **LINE) is final
    if final:  # more output never changes the cut
        assert cut_comment(raw + "x = 1\n// later", **LINE) == cut_comment(raw, **LINE)


def test_block_comment_is_final_when_closed_or_at_a_sentinel():
    block = dict(prime="/** Berekent de", kind="docblock", opener="/**", closer="*/")
    assert not cut_is_final(" som *", **block)
    assert cut_is_final(" som */", **block)
    assert cut_is_final(" som<EOT>", **block, stops=["<EOT>"])


@pytest.mark.parametrize("model, family", [
    ("codellama/CodeLlama-7b-hf", "codellama"),
    ("codellama/CodeLlama-13b-Instruct-hf", "codellama"),
    ("codellama/CodeLlama-34b-hf", "plain"),
    ("codellama/CodeLlama-70b-Instruct-hf", "plain"),
    ("codellama/CodeLlama-7b-Python-hf", "plain"),
    ("google/codegemma-7b", "codegemma"),
    ("google/codegemma-2b", "codegemma"),
    ("google/codegemma-7b-it", "plain"),
    ("google/codegemma-1.1-7b-it", "plain"),
])
def test_models_not_trained_for_infilling_get_plain(model, family):
    assert family_for_model(model).name == family


@pytest.mark.slow
def test_smollm2_stops_at_the_end_of_the_comment(smollm2):
    """With the cut rule as stopping criterion the output is a prefix of the full greedy output,
    the cut is the same, and items whose comment ended stop before the budget."""
    from corpus.backends import HFBackend
    from corpus.fim import get_family

    model, tokenizer = smollm2
    backend = HFBackend("HuggingFaceTB/SmolLM2-135M-Instruct", model=model, tokenizer=tokenizer)
    stops = get_family("plain").stops
    items = [("def total(items):\n    # Add up the prices", dict(prime="# Add up the prices",
                                                                kind="line", opener="#")),
             ("int main() {\n    /* Print the", dict(prime="/* Print the", kind="block",
                                                      opener="/*", closer="*/")),
             ('def read(path):\n    """Read the', dict(prime='"""Read the', kind="docstring",
                                                       opener='"""', closer='"""'))]
    budget = 48
    full = backend.complete([p for p, _ in items], budget, stops)
    finished = [lambda raw, k=k: cut_is_final(raw, **k, stops=stops) for _, k in items]
    early = backend.complete([p for p, _ in items], budget, stops, finished)
    stopped_early = 0
    for (_, k), a, b in zip(items, full, early):
        assert a.text.startswith(b.text)
        assert cut_comment(b.text, **k, stops=stops) == cut_comment(a.text, **k, stops=stops)
        if b.finish_reason == "cut":
            assert b.tokens < budget
            stopped_early += 1
    assert stopped_early >= 1
