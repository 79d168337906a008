"""Code-mixed prompt texts: the share of English segments, determinism by seed, and what is never
switched."""
from __future__ import annotations

import pytest

from judges.codemix import code_mixed_template, code_mixed_texts, english_share, switchable_segments
from judges.i18n import texts


@pytest.mark.parametrize("lang", ["el", "zh"])
def test_cmd_is_the_share_of_switchable_segments_in_english(lang):
    n = len(switchable_segments(lang))
    for cmd in (0.0, 0.3, 0.6, 0.9, 1.0):
        mixed, switched = code_mixed_texts(lang, cmd, seed=1)
        assert len(switched) == round(cmd * n)
        assert english_share(lang, mixed) == pytest.approx(len(switched) / n, abs=1 / n)
    assert code_mixed_texts(lang, 0.0)[0] == texts(lang)


def test_deterministic_per_seed_and_nested_by_order():
    a, switched_a = code_mixed_texts("el", 0.3, seed=5)
    b, switched_b = code_mixed_texts("el", 0.3, seed=5)
    assert a == b and switched_a == switched_b
    _, other = code_mixed_texts("el", 0.3, seed=6)
    assert other != switched_a
    # the same seed switches a superset at a higher degree (one shuffled order, a longer prefix)
    _, more = code_mixed_texts("el", 0.6, seed=5)
    assert set(switched_a) <= set(more)


def test_schema_keys_and_placeholders_are_never_switched():
    mixed, switched = code_mixed_texts("el", 1.0, seed=0)
    assert mixed["output_fields"] == texts("el")["output_fields"]
    assert mixed["input_keys"] == texts("el")["input_keys"]
    # an English segment names the targets' language in English: "written in Greek"
    assert mixed["system_role"] == texts("en")["system_role"].replace("{language}",
                                                                      "{language_en}")
    assert all(path[0] not in ("output_fields", "input_keys", "language_names", "pairs")
               for path in switched)
    assert mixed["language_names"] == texts("el")["language_names"]
    assert "{mask}" in mixed["h_context"]


def test_a_degree_outside_0_1_is_an_error_and_templates_differ_by_degree():
    with pytest.raises(ValueError, match="between 0 and 1"):
        code_mixed_texts("el", 1.5)
    low, high = code_mixed_template("rubric", "el", 0.3), code_mixed_template("rubric", "el", 0.6)
    assert (low.name, low.base) == ("rubric-cmd0.3-s0", "rubric")
    assert low.sha256 != high.sha256
