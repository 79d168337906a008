"""The metrics runner on three executors: in this process, a local process pool and a local Ray
cluster started by the test. Same stored scores on each, a re-run scores nothing, an
interrupted run resumes, a failing shard is retried and one that keeps failing is reported
while the rest is stored. The executors and their driver on their own:
tests/metrics/test_parallel.py."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import delete, select

from metrics.config import ScoringConfig
from metrics.parallel import InProcessExecutor, ProcessPoolExecutor, RayExecutor
from metrics.runner import score_configuration, score_grid
from testing import shard_functions

LEXICAL = [ScoringConfig("bleu").validated(), ScoringConfig("rouge_l").validated(),
           ScoringConfig("chrf").validated()]
CONFIGS = LEXICAL + [ScoringConfig("bertscore", layer=3, context=c).validated()
                     for c in ("none", "full")]
# Loading torch and the encoder costs each fresh worker process ~20 s on a busy 2-core box, so
# BERTScore runs on the session's Ray workers (loaded once) and the process pool gets the
# lexical grid; both go through the same worker code (metrics.parallel.score_shard).
CONFIGS_FOR = {"process": LEXICAL, "ray": CONFIGS}
LANGUAGES = ("zh", "el", "nl")  # three targets, two models each: six generations
CHUNK = 2  # items per shard: three shards per configuration


def seed_grid_db(url: str) -> None:
    """Six generations in three languages; the first has an empty prediction (it scores 0)."""
    from db import session_scope
    from db.models import Generation
    from testing.synthetic import add_synthetic_corpus

    with session_scope(url) as session:
        add_synthetic_corpus(session, targets_per_language=1, languages=LANGUAGES,
                             models=("model-a", "model-b"))
        first = session.execute(select(Generation).order_by(Generation.id)).scalars().first()
        first.predicted_comment = "   "


def stored_scores(url: str) -> dict:
    """{(signature, generation id): (P, R, F, error)} of everything stored."""
    from db import session_scope
    from db.models import MetricRun, MetricScore

    query = (select(MetricRun.signature, MetricScore.generation_id, MetricScore.precision,
                    MetricScore.recall, MetricScore.f, MetricScore.error)
             .join(MetricRun, MetricScore.run_id == MetricRun.id))
    with session_scope(url) as session:
        return {(r[0], r[1]): tuple(r[2:]) for r in session.execute(query)}


def score_all(url, configs, executor=None, **kwargs):
    return [score_configuration(c, url, progress=False, chunk_size=CHUNK, executor=executor,
                                **kwargs) for c in configs]


def _executor(kind: str, request):
    if kind == "inprocess":
        return InProcessExecutor()
    if kind == "process":
        return ProcessPoolExecutor(workers=2)
    request.getfixturevalue("ray_cluster")
    return RayExecutor()


@pytest.fixture(scope="module")
def reference_scores(tmp_path_factory):
    """The grid scored by the runner's own in-process loop: what every executor must match."""
    url = f"sqlite:///{tmp_path_factory.mktemp('grid-ref') / 'ref.db'}"
    seed_grid_db(url)
    summaries = score_all(url, CONFIGS)
    assert [s.scored for s in summaries] == [6] * len(CONFIGS)
    return stored_scores(url)


@pytest.mark.slow
def test_reference_grid_is_complete_and_sane(reference_scores):
    assert len(reference_scores) == 6 * len(CONFIGS)
    assert not [key for key, (p, r, f, error) in reference_scores.items() if error]
    floors = [key for key, (p, r, f, error) in reference_scores.items() if (p, r, f) == (0, 0, 0)]
    assert len(floors) == len(CONFIGS)  # the empty prediction scores 0, once per configuration
    good = [f for (p, r, f, error) in reference_scores.values() if not error]
    assert all(0.0 <= f <= 1.0 + 1e-6 for f in good)
    assert any(f == pytest.approx(1.0) for f in good)  # unchanged predictions score the maximum


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["process", "ray"])
def test_executor_stores_the_same_scores_and_resumes(kind, request, tmp_path, reference_scores):
    from db import session_scope
    from db.models import MetricScore

    url = f"sqlite:///{tmp_path / 'grid.db'}"
    seed_grid_db(url)
    configs = CONFIGS_FOR[kind]
    signatures = {config.signature() for config in configs}
    reference = {k: v for k, v in reference_scores.items() if k[0] in signatures}
    with _executor(kind, request) as executor:
        summaries = score_all(url, configs, executor)
        assert [(s.scored, s.unscored) for s in summaries] == [(6, 0)] * len(configs)
        assert stored_scores(url) == reference  # bit for bit, every configuration

        again = score_all(url, configs, executor)
        assert [(s.skipped, s.scored) for s in again] == [(6, 0)] * len(configs)

        # an interrupted run: part of the last configuration missing, only that is re-scored
        run_id = summaries[-1].run_id
        generations = sorted({g for (_s, g) in reference})[:3]
        with session_scope(url) as session:
            dropped = session.execute(delete(MetricScore).where(
                MetricScore.run_id == run_id, MetricScore.generation_id.in_(generations))
            ).rowcount
        assert dropped == 3
        resumed = score_all(url, configs, executor)
        assert [s.scored for s in resumed] == [0] * (len(configs) - 1) + [3]
        assert stored_scores(url) == reference


class FlakyRayExecutor(RayExecutor):
    """Real Ray, running the runner's worker function wrapped so each shard fails once."""

    def submit(self, shard, function):
        return super().submit(shard, shard_functions.runner_fail_first)


@pytest.mark.slow
def test_runner_retries_failed_shards_on_ray(ray_cluster, tmp_path, reference_scores):
    url = f"sqlite:///{tmp_path / 'grid.db'}"
    seed_grid_db(url)
    summaries = score_grid(LEXICAL, url, progress=False, executor=FlakyRayExecutor())
    assert [(s.scored, s.unscored) for s in summaries] == [(6, 0)] * len(LEXICAL)
    fail_dir = Path(os.environ[shard_functions.FAIL_DIR_ENV])
    assert sorted(p.read_text() for p in fail_dir.glob("bleu-none-seed0-*")) == ["2"]  # 1 shard
    signatures = {c.signature() for c in LEXICAL}
    assert stored_scores(url) == {k: v for k, v in reference_scores.items() if k[0] in signatures}


def test_runner_reports_chunks_that_keep_failing(ray_cluster, tmp_path):
    url = f"sqlite:///{tmp_path / 'grid.db'}"
    seed_grid_db(url)
    config = ScoringConfig("bleu", seed=7).validated()  # its own attempt markers
    summary = score_configuration(config, url, progress=False, chunk_size=CHUNK,
                                  executor=FlakyRayExecutor(), retries=0)
    assert (summary.scored, summary.unscored) == (0, 6)
    assert "first attempt fails on purpose" in summary.error_examples[0]
    assert "6 not scored" in summary.line()
    assert stored_scores(url) == {}
    again = score_configuration(config, url, progress=False, chunk_size=CHUNK,
                                executor=FlakyRayExecutor(), retries=0)  # second attempts pass
    assert (again.skipped, again.scored, again.unscored) == (0, 6, 0)
