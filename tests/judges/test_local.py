"""End to end with a real model: SmolLM2-135M-Instruct in this process (packaged offline weights).
It judges at chance, so only the pipeline is checked, exactly: one stored response per target
with its raw text, tokens and a status the parser gave it, five verdicts, cost 0, and a re-run
answered entirely from the cache."""
from __future__ import annotations

import pytest
from sqlmodel import select

from db import models
from db.engine import session_scope
from judges.cache import ResponseCache
from judges.client import JudgeClient, SamplingParams
from judges.local_backend import LocalBackend
from judges.parse import parse_response
from judges.prompts import offered_codes
from judges.runner import RunConfig, run_judge

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
MAX_TOKENS = 24

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def smollm_backend():
    return LocalBackend(MODEL, SamplingParams(max_tokens=MAX_TOKENS))


def test_local_backend_end_to_end(smollm_backend, judge_db, tax, tmp_path):
    client = JudgeClient(smollm_backend, ResponseCache(tmp_path / "cache.sqlite3"))
    # rubric in English: the shortest single-request prompt (~3,900 tokens), since a CPU shared
    # by the whole team prefills it slowly
    config = RunConfig(model=MODEL, strategy="rubric", lang="en", prompt_lang="en",
                       backend="local", sampling=smollm_backend.params)
    summary = run_judge(client, config, tax, judge_db, limit=1, concurrency=1, progress=False)
    assert smollm_backend.calls == 1 and summary.targets_judged == 1
    with session_scope(judge_db) as s:
        (run,) = s.exec(select(models.JudgeRun)).all()
        (response,) = s.exec(select(models.JudgeResponse)).all()
        verdicts = s.exec(select(models.JudgeVerdict)).all()
        assert run.backend == "local" and run.cost_usd == 0.0
        assert run.params["sampling"] == {"temperature": 0.0, "seed": 42, "max_tokens": MAX_TOKENS}
        assert run.prompt_tokens == response.prompt_tokens > 1000  # the whole taxonomy is in it
        assert 0 < response.completion_tokens <= MAX_TOKENS
        assert response.raw_response.strip() and not response.cached
        # the stored status is exactly what the parser makes of the stored text
        expected = parse_response(
            response.raw_response, lang="en", strategy="rubric", tax=tax,
            offered=offered_codes("rubric", tax), prediction_ids=[f"P{i}" for i in range(1, 6)],
            finish_reason="length" if response.completion_tokens == MAX_TOKENS else "stop")
        assert response.status == expected.status
        assert len(verdicts) == 5 and sorted(v.position for v in verdicts) == [1, 2, 3, 4, 5]
        assert {v.status for v in verdicts} <= {"ok", "parse_error", "truncated", "empty"}
    # greedy decoding: the same request again is answered from the cache, the model is not run
    with session_scope(judge_db) as s:
        s.delete(s.exec(select(models.JudgeRun)).one())
    again = run_judge(client, config, tax, judge_db, limit=1, progress=False)
    assert smollm_backend.calls == 1 and again.cached == 1


def test_a_prompt_longer_than_the_model_is_refused_before_generating(smollm_backend, judge_db,
                                                                      tax):
    """The Greek rubric prompt is ~20k SmolLM2 tokens; the model has 8,192 positions. It was
    generated on (past the model's positions: garbage, for minutes) and stored."""
    client = JudgeClient(smollm_backend, None)
    config = RunConfig(model=MODEL, strategy="rubric", lang="el", prompt_lang="el",
                       backend="local", sampling=smollm_backend.params)
    summary = run_judge(client, config, tax, judge_db, limit=1, concurrency=1, progress=False)
    (note,) = summary.too_long
    assert note["model_context"] == 8192 and note["prompt_tokens"] > 8192
    assert summary.failed and summary.run_id is None and summary.calls == 0
    assert summary.ways_out.startswith("1 prompt(s) do not fit HuggingFaceTB/SmolLM2-135M-"
                                       "Instruct's context of 8,192 tokens")
    assert "--prompt-lang en (this prompt: " in summary.ways_out
    with session_scope(judge_db) as s:
        assert s.exec(select(models.JudgeResponse)).all() == []
