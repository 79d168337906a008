"""BERTScore's embedding cache keeps the references longest (issue 27): a reference is matched
again by every configuration over the same targets (each noise kind), a prediction once."""
from __future__ import annotations

import pytest

from metrics.context import build_segment


@pytest.mark.slow
def test_references_outlive_predictions_in_a_full_cache(e5_scorer):
    seg = lambda text: build_segment(text, "none")  # noqa: E731
    refs = [seg(f"Zwraca sumę elementów listy numer {k}") for k in range(3)]
    preds = [seg(f"Sortuje listę w miejscu numer {k}") for k in range(30)]
    budget = e5_scorer.cache_bytes
    e5_scorer.clear_cache()
    try:
        first = e5_scorer.score_segments(preds[:3], refs)
        one = e5_scorer._cache_used / 6  # about one segment's bytes
        e5_scorer.cache_bytes = int(one * 8)  # room for 8 segments
        for k in range(3, 30, 3):  # 27 later predictions (another configuration's)
            e5_scorer.embed(preds[k:k + 3])
        assert e5_scorer._cache_used <= e5_scorer.cache_bytes
        texts = e5_scorer.work["texts"]
        again = e5_scorer.score_segments(preds[:3], refs)  # an LRU would have evicted the refs
        assert e5_scorer.work["texts"] - texts == 3  # the 3 predictions only
        assert [s.f for s in again] == pytest.approx([s.f for s in first], abs=1e-6)
        e5_scorer.clear_cache(references=False)
        assert set(e5_scorer._kept) == set(refs) and not e5_scorer._cache
    finally:
        e5_scorer.cache_bytes = budget
        e5_scorer.clear_cache()
